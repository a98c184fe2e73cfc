"""NNabla's data sources, caches, loaders and images on bad input and at their edges (what
the compat harness cannot compare: errors, files left behind, hangs).  The orders and
values themselves are held to NNabla 1.39's in tests/compat (nnabla_data.py)."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from stadyn._errors import DataError, StadynError
from stadyn.io import (CacheDataSource, CsvDataSource, DataSourceWithFileCache,
                       DataSourceWithFileCacheError, DownloadError, FileReader,
                       SimpleDataSource, data_iterator_csv_dataset, data_iterator_simple,
                       download, imread, imsave)


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return str(path)


# -- CSV data sets ----------------------------------------------------------------------------

def test_a_short_csv_row_names_the_file_and_line(tmp_path):
    path = _write(tmp_path / "train.csv", "x,y\n1,0\n2\n")
    source = CsvDataSource(path)
    source.next()
    with pytest.raises(DataError) as err:
        source.next()
    assert f"{path}:3" in str(err.value) and "1 values where the header has 2" in str(err.value)


def test_a_cell_that_is_neither_number_nor_known_file_names_the_line(tmp_path):
    path = _write(tmp_path / "train.csv", "x,y\n1,0\nfoo.xyz,1\n")
    it = data_iterator_csv_dataset(path, 2, with_file_cache=False, with_memory_cache=False,
                                   use_thread=False)
    with pytest.raises(DataError, match=r"train\.csv:3: 'foo\.xyz' is neither a number"):
        it.next()


def test_a_missing_image_named_in_a_csv_says_which_csv(tmp_path):
    path = _write(tmp_path / "train.csv", "x:image,y\nnone.png,0\n")
    with pytest.raises(FileNotFoundError, match=r"none\.png \(named in .*train\.csv\)"):
        CsvDataSource(path).next()


def test_an_empty_csv_is_refused_with_its_name(tmp_path):
    path = _write(tmp_path / "train.csv", "")
    with pytest.raises(DataError, match=r"train\.csv:1: the data set CSV file is empty"):
        CsvDataSource(path)


def test_comment_columns_are_dropped_and_images_read_relative_to_the_csv(tmp_path):
    os.makedirs(tmp_path / "img")
    imsave(str(tmp_path / "img" / "a.png"), np.full((2, 3), 255, np.uint8))
    path = _write(tmp_path / "train.csv", "#id,x:image,y\n7,img/a.png,1\n")
    source = CsvDataSource(path, normalize=True)
    assert source.variables == ("x", "y")
    x, y = source.next()
    assert x.shape == (1, 2, 3) and float(x.max()) == 1.0 and y == [1.0]


# -- remote files and downloads ---------------------------------------------------------------

@pytest.mark.parametrize("uri", ["https://example.org/train.csv", "s3://bucket/train.csv"])
def test_remote_data_sets_are_refused_with_what_to_do(uri):
    with pytest.raises(DownloadError) as err:
        FileReader(uri)
    assert isinstance(err.value, OSError) and isinstance(err.value, StadynError)
    assert "local path" in str(err.value) and uri in str(err.value)


def test_a_download_whose_file_is_missing_says_where_to_put_it(tmp_path):
    target = str(tmp_path / "mnist.zip")
    with pytest.raises(DownloadError) as err:
        download("https://example.org/data/mnist.zip", target)
    assert target in str(err.value) and "https://example.org/data/mnist.zip" in str(err.value)
    assert not os.path.exists(target)


def test_download_with_allow_overwrite_refuses_and_keeps_the_file(tmp_path):
    target = _write(tmp_path / "a.csv", "kept")
    with pytest.raises(DownloadError, match="allow_overwrite"):
        download("https://example.org/a.csv", target, allow_overwrite=True)
    assert open(target).read() == "kept"


# -- file caches ------------------------------------------------------------------------------

def test_a_file_cache_of_samples_with_different_shapes_names_the_variable_and_file(tmp_path):
    source = SimpleDataSource(lambda i: (np.zeros(i + 1),), 3)
    with pytest.raises(DataSourceWithFileCacheError) as err:
        DataSourceWithFileCache(source, cache_dir=str(tmp_path))
    assert "'x0'" in str(err.value) and "cache_00000000_00000002.npy" in str(err.value)
    assert not os.path.exists(tmp_path / "cache_00000000_00000002.npy")   # nothing half-written


def test_a_temporary_file_cache_is_removed_on_close():
    it = data_iterator_simple(lambda i: (np.array([i]),), 5, 2, with_file_cache=True,
                              use_thread=False)
    folder = it._source._cache_dir
    assert any(n.endswith(".npy") for n in os.listdir(folder))
    it.close()
    assert not os.path.exists(folder)


def test_a_given_cache_folder_is_kept_and_read_back(tmp_path):
    it = data_iterator_simple(lambda i: (np.array([i, 2 * i]),), 250, 100, use_thread=False,
                              with_file_cache=True, cache_dir=str(tmp_path))
    it.close()
    assert sorted(os.listdir(tmp_path)) == [
        "cache_00000000_00000099.npy", "cache_00000100_00000199.npy",
        "cache_00000200_00000249.npy", "cache_index.csv", "cache_info.csv"]
    source = CacheDataSource(str(tmp_path))
    assert source.size == 250 and source.get(201)[0].tolist() == [201, 402]


def test_a_bad_cache_index_line_is_named(tmp_path):
    _write(tmp_path / "cache_info.csv", "x\n")
    _write(tmp_path / "cache_index.csv", "cache_a.npy,3\ncache_b.npy\n")
    with pytest.raises(DataError, match=r"cache_index\.csv:2: expected 'file name,number"):
        CacheDataSource(str(tmp_path))


def test_a_cache_folder_that_does_not_exist_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="no cache folder"):
        CacheDataSource(str(tmp_path / "nowhere"))


# -- stop_exhausted with the thread -------------------------------------------------------------

def test_next_after_stop_iteration_raises_again_with_the_thread_instead_of_hanging():
    # NNabla 1.39 waits forever on its queue here; Stadyn raises StopIteration again.  Run in a
    # child process under a timeout, so a regression fails instead of hanging the suite.
    code = textwrap.dedent("""
        import numpy as np
        from stadyn.io import data_iterator_simple
        it = data_iterator_simple(lambda i: (np.array([i]),), 8, 4, stop_exhausted=True,
                                  use_thread=True)
        out = [it.next()[0].ravel().tolist(), it.next()[0].ravel().tolist()]
        for _ in range(2):
            try:
                it.next()
            except StopIteration:
                out.append("stop")
        print(out)
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[[0, 1, 2, 3], [4, 5, 6, 7], 'stop', 'stop']"


# -- images -----------------------------------------------------------------------------------

def test_imsave_refuses_floats_outside_0_1_and_leaves_no_file(tmp_path):
    path = str(tmp_path / "a.png")
    with pytest.raises(DataError, match=r"a\.png: imsave: float pixel values must lie in"):
        imsave(path, np.array([[0.5, 1.5]]))
    assert os.listdir(tmp_path) == []


def test_imsave_with_an_unknown_extension_leaves_no_file(tmp_path):
    with pytest.raises(DataError, match="extension"):
        imsave(str(tmp_path / "a.nope"), np.zeros((2, 2), np.uint8))
    assert os.listdir(tmp_path) == []


def test_imread_of_a_missing_file_or_a_non_image_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="no image file"):
        imread(str(tmp_path / "none.png"))
    bad = _write(tmp_path / "bad.png", "not an image")
    with pytest.raises(DataError, match=r"bad\.png"):
        imread(bad)


# -- audio ------------------------------------------------------------------------------------

def test_a_wav_cell_is_read_as_frames_by_channels(tmp_path):
    import wave
    path = str(tmp_path / "a.wav")
    with wave.open(path, "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(np.array([1, -2, 3, -4, 5, -6], np.int16).tobytes())
    csv_path = _write(tmp_path / "train.csv", "x,y\na.wav,1\n")
    x, y = CsvDataSource(csv_path).next()
    assert x.dtype == np.int16 and x.tolist() == [[1, -2], [3, -4], [5, -6]]
