"""``d[key] = value`` on the image, base64 image, CBF and HTK deserializers (CNTK 2.7's
configuration dictionaries, ``io/_settings.py``).  What CNTK 2.7 delivers after each key is
held by case ``io40__dict_settings``; here Stadyn's refusals and warnings."""

import os

import numpy as np
import pytest

from stadyn.io import (CBFDeserializer, ImageDeserializer, StreamDef, StreamDefs, encode_image,
                       write_cbf)


def _image(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)     # (map lines name images from the working folder, as CNTK's)
    (tmp_path / "a.png").write_bytes(encode_image(np.full((2, 2, 3), (200, 100, 10), np.uint8),
                                                  ".png"))
    (tmp_path / "map.txt").write_text("a.png\t1\n")
    return ImageDeserializer("map.txt", StreamDefs(
        x=StreamDef(field="image", transforms=[]), y=StreamDef(field="label", shape=2)))


def test_grayscale_decodes_one_channel_of_luma(tmp_path, monkeypatch):
    d = _image(tmp_path, monkeypatch)
    d["grayscale"] = True
    # OpenCV's BGR to gray: 0.114 B + 0.587 G + 0.299 R = 84.49, rounded
    assert d.read(0)["x"].tolist() == [[[84, 84], [84, 84]]]
    assert d["grayscale"] is True
    d["grayscale"] = False
    assert d.read(0)["x"][:, 0, 0].tolist() == [200, 100, 10]


def test_keys_cntk_acts_on_that_stadyn_does_not_are_refused(tmp_path, monkeypatch):
    d = _image(tmp_path, monkeypatch)
    for key in ("multiViewCrop", "file", "input", "type"):
        with pytest.raises(ValueError, match=f"ImageDeserializer: '{key}' is read by CNTK 2.7"):
            d[key] = "x"
    assert d["type"] == "ImageDeserializer"
    assert d["file"] == "map.txt" and os.path.isabs(d.path)     # as given, as CNTK's


def test_engine_keys_are_taken_and_others_kept_with_a_warning(tmp_path):
    path = tmp_path / "a.cbf"
    write_cbf(str(path), {"x": [np.ones((1, 1), np.float32)]})
    d = CBFDeserializer(str(path), StreamDefs(x=StreamDef(field="x", shape=1)))
    d["keepDataInMemory"] = True
    d["traceLevel"] = 3
    with pytest.warns(UserWarning, match="'keepDataInMemry' is not a setting CNTK 2.7's reader "
                                         "reads"):
        d["keepDataInMemry"] = True
    assert (d["keepDataInMemory"], d["traceLevel"], d["keepDataInMemry"]) == (True, 3, True)
    assert d["type"] == "CNTKBinaryFormatDeserializer"
    # a key never set is None, as CNTK 2.7's dictionary gives it (case io40r__dict_unset_keys)
    assert d["maxErrors"] is None


def test_a_key_set_after_the_source_is_made_changes_nothing_under_it(tmp_path, monkeypatch):
    # CNTK 2.7 makes its reader from the configuration when the MinibatchSource is made (the
    # text format's and HTK's keys: case io41__settings_after_source); before, grayscale set
    # later changed the source's images to one channel under its 3-channel stream
    from stadyn.io import MinibatchSource
    d = _image(tmp_path, monkeypatch)
    src = MinibatchSource(d, randomize=False, max_sweeps=1)
    d["grayscale"] = True
    assert src.next_minibatch(1)["x"].data[0, :, 0, 0].tolist() == [200, 100, 10]
    assert d.read(0)["x"].tolist() == [[[84, 84], [84, 84]]]    # (the deserializer's own)
    later = MinibatchSource(d, randomize=False, max_sweeps=1)
    assert later.next_minibatch(1)["x"].data[0].tolist() == [[[84, 84], [84, 84]]]
