"""CNTK 2.7 raises a RuntimeError for bad input to its CBF, image and HTK readers (the
harness's ``io_errors__*`` cases hold CNTK's outcome); Stadyn's readers raise a
:class:`ReaderError`, a RuntimeError and still a DataError (a ValueError) naming the file and
line, also from a worker process."""

from __future__ import annotations

import pytest

from stadyn._errors import DataError
from stadyn.io import (CBFDeserializer, HTKFeatureDeserializer, ImageDeserializer,
                       MinibatchSource, ReaderError, StreamDef, StreamDefs)
from stadyn.io import transforms as T


def _image_streams():
    return StreamDefs(features=StreamDef(field="image", transforms=[T.scale(8, 8, 3)]),
                      labels=StreamDef(field="label", shape=5))


def _bad(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _made(tmp_path):
    """What each bad input gives when its deserializer is made: (path named, make)."""
    streams = StreamDefs(x=StreamDef(field="x", shape=1))
    not_cbf = _bad(tmp_path, "text.cbf", b"0 |x 1\n")
    bad_line = _bad(tmp_path, "map.txt", b"junk.jpg\n")
    scp = _bad(tmp_path, "a.scp", b"u0.mfc=absent.htk[0,2]\n")
    return {
        "cbf_missing": (tmp_path / "none.cbf", lambda: CBFDeserializer(tmp_path / "none.cbf",
                                                                      streams)),
        "cbf_not_cbf": (not_cbf, lambda: CBFDeserializer(not_cbf, streams)),
        "map_missing": (tmp_path / "none.txt",
                        lambda: ImageDeserializer(tmp_path / "none.txt", _image_streams())),
        "map_bad_line": (bad_line, lambda: ImageDeserializer(bad_line, _image_streams())),
        "scp_missing": (tmp_path / "none.scp", lambda: HTKFeatureDeserializer(StreamDefs(
            f=StreamDef(shape=2, scp=str(tmp_path / "none.scp"))))),
        # (the feature file as the script line spells it: relative to the working folder)
        "htk_missing": ("absent.htk", lambda: HTKFeatureDeserializer(StreamDefs(
            f=StreamDef(shape=2, scp=str(scp))))),
    }


@pytest.mark.parametrize("what", ["cbf_missing", "cbf_not_cbf", "map_missing", "map_bad_line",
                                  "scp_missing", "htk_missing"])
def test_bad_reader_input_is_cntks_runtime_error_and_a_data_error(tmp_path, what):
    path, make = _made(tmp_path)[what]
    with pytest.raises(RuntimeError) as err:      # CNTK 2.7's type (case io_errors__*)
        make()
    assert isinstance(err.value, ReaderError)
    assert isinstance(err.value, DataError) and isinstance(err.value, ValueError)
    assert err.value.path == str(path)
    assert str(err.value).startswith(str(path))


@pytest.mark.parametrize("workers", [0, 2])
def test_an_image_that_cannot_be_opened_is_a_reader_error_in_workers_too(ten_images, workers):
    lines = (ten_images / "map.txt").read_text().splitlines()
    lines[6] = lines[6].replace("06.png", "missing.png")
    (ten_images / "map.txt").write_text("\n".join(lines) + "\n")
    des = ImageDeserializer(ten_images / "map.txt", _image_streams())
    with MinibatchSource(des, randomize=False, num_workers=workers) as src:
        src.next_minibatch(4)
        with pytest.raises(RuntimeError) as err:  # CNTK: next_minibatch (io_errors__image_map)
            src.next_minibatch(4)
    assert type(err.value) is ReaderError
    assert (err.value.path, err.value.line) == (str(ten_images / "map.txt"), 7)
