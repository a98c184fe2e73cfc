"""NNabla's ``DATA_ITERATOR`` settings (``nnabla.conf``, ``nnabla_config.set``) shape the file
caches compat.nnabla's data iterators and ``CreateCache`` write, as in NNabla 1.39.

``tests/fixtures/nnabla_cache_config/caches.json`` records what the real NNabla 1.39 writes and
reads (``make_caches.py`` there): ``cache_file_format`` (``.h5`` files, no ``cache_info.csv``),
``data_source_file_cache_size`` (samples per file, and so the file names, ``cache_index.csv``
and a shuffled order, which shuffles the files and the samples within each) and
``data_source_file_cache_location`` (where a cache without ``cache_dir`` makes its temporary
folder).  Before, Stadyn wrote ``.npy`` files of 100 samples in the system's temporary folder
whatever they said.
"""

from __future__ import annotations

import json
import os

import h5py
import numpy as np
import pytest

from stadyn.compat.nnabla.config import nnabla_config
from stadyn.compat.nnabla.utils.create_cache import CreateCache
from stadyn.compat.nnabla.utils.data_iterator import data_iterator_csv_dataset

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "nnabla_cache_config")
KEYS = ("cache_file_format", "data_source_file_cache_size", "data_source_file_cache_location")


@pytest.fixture
def expected():
    with open(os.path.join(FIXTURES, "caches.json")) as f:
        return json.load(f)


@pytest.fixture
def configure():
    saved = {k: nnabla_config.get("DATA_ITERATOR", k) for k in KEYS}

    def set_(fmt, size, location=""):
        nnabla_config.set("DATA_ITERATOR", "cache_file_format", fmt)
        nnabla_config.set("DATA_ITERATOR", "data_source_file_cache_size", str(size))
        nnabla_config.set("DATA_ITERATOR", "data_source_file_cache_location", location)
    yield set_
    for k, v in saved.items():
        nnabla_config.set("DATA_ITERATOR", k, v)


@pytest.fixture
def data_csv(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("x__0,x__1,y\n" + "".join("%d,%d,%d\n" % (i, 10 * i + 1, i % 3)
                                              for i in range(10)))
    return str(path)


def _text(path):
    with open(path) as f:
        return f.read()


def _batches(it, n):
    return [[x.tolist(), y.tolist()] for x, y in (it.next() for _ in range(n))]


def test_h5_files_of_three_samples(tmp_path, data_csv, configure, expected):
    want = expected["h5"]
    configure(".h5", 3)
    cache = tmp_path / "h5"
    cache.mkdir()
    with data_iterator_csv_dataset(data_csv, 4, shuffle=False, cache_dir=str(cache),
                                   use_thread=False) as it:
        assert sorted(os.listdir(cache)) == want["files"]
        assert _text(cache / "cache_index.csv") == want["cache_index"]
        for name, datasets in want["contents"].items():
            with h5py.File(cache / name, "r") as h5:
                assert sorted(h5) == sorted(datasets)
                for k, v in datasets.items():
                    np.testing.assert_array_equal(h5[k][()], np.array(v), err_msg=name + k)
        assert _batches(it, 3) == want["batches"]


def test_npy_files_of_four_samples_shuffled(tmp_path, data_csv, configure, expected):
    want = expected["npy_shuffled"]
    configure(".npy", 4)
    cache = tmp_path / "npy"
    cache.mkdir()
    with data_iterator_csv_dataset(data_csv, 2, shuffle=True, rng=np.random.RandomState(5),
                                   cache_dir=str(cache), use_thread=False) as it:
        assert sorted(os.listdir(cache)) == want["files"]
        assert _text(cache / "cache_index.csv") == want["cache_index"]
        assert _text(cache / "cache_info.csv") == want["cache_info"]
        assert _batches(it, 10) == want["batches"]


def test_create_cache_reads_the_size_when_made_and_the_format_when_writing(
        tmp_path, data_csv, configure, expected):
    want = expected["create_cache"]
    configure(".npy", 3)
    maker = CreateCache(data_csv, shuffle=False)
    configure(".h5", 100)
    cache = tmp_path / "created"
    cache.mkdir()
    maker.create(str(cache))
    assert sorted(os.listdir(cache)) == want["files"]
    assert _text(cache / "cache_index.csv") == want["cache_index"]


def test_a_temporary_cache_goes_to_the_cache_location(tmp_path, data_csv, configure, expected):
    want = expected["location"]
    location = tmp_path / "location"
    location.mkdir()
    configure(".npy", 3, str(location))
    it = data_iterator_csv_dataset(data_csv, 5, shuffle=False, use_thread=False)
    made = sorted(os.listdir(location))
    assert len(made) == want["made"]
    assert sorted(os.listdir(location / made[0])) == want["files"]
    assert _batches(it, 2) == want["batches"]
    it.close()
    assert sorted(os.listdir(location)) == want["after_close"]


def test_a_cache_file_format_nnabla_cannot_read_back_is_refused(tmp_path, data_csv, configure):
    # NNabla 1.39 writes any other format as .npy data under that suffix, then reads it back as
    # HDF5 and fails: Stadyn refuses it at once, naming the setting
    configure(".npz", 3)
    with pytest.raises(ValueError, match="cache_file_format"):
        data_iterator_csv_dataset(data_csv, 2, cache_dir=str(tmp_path), use_thread=False)
