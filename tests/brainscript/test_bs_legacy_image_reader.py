"""CNTK's legacy ``readerType = "ImageReader"`` (ResNet*_ImageNet1K.cntk, BN-Inception.cntk):
the feature block's keys go to CNTK's transformers Crop, Scale, Color and Mean in that order
(``ImageReader.cpp``), which is the ``ImageDeserializer`` written with those transforms; both
forms must deliver the same minibatches."""

from __future__ import annotations

import numpy as np
import pytest

from stadyn._errors import ConfigError
from stadyn.brainscript import parse_config, reader_config
from stadyn.brainscript._readers import make_source
from stadyn.io import encode_image, write_mean_file

LEGACY = """reader = {
    readerType = "ImageReader"
    file = "%(map)s"
    randomize = "None"
    features = {
        width = 16 ; height = 16 ; channels = 3
        cropType = "Center" ; sideRatio = 0.875
        interpolations = "linear"
        meanFile = "%(mean)s"
    }
    labels = { labelDim = 5 }
}"""

DESERIALIZER = """reader = {
    randomize = "None"
    deserializers = ({
        type = "ImageDeserializer" ; module = "ImageReader" ; file = "%(map)s"
        input = {
            features = { transforms = (
                { type = "Crop" ; cropType = "Center" ; sideRatio = 0.875 } :
                { type = "Scale" ; width = 16 ; height = 16 ; channels = 3 ;
                  interpolations = "linear" } :
                { type = "Mean" ; meanFile = "%(mean)s" } :
                { type = "Transpose" }) }
            labels = { labelDim = 5 }
        }
    })
}"""


@pytest.fixture
def images(tmp_path):
    rng = np.random.default_rng(5)
    lines = []
    for i in range(4):
        image = rng.integers(0, 256, (24 + 2 * i, 20, 3), dtype=np.uint8)
        (tmp_path / f"{i}.png").write_bytes(encode_image(image))
        lines.append(f"{tmp_path / f'{i}.png'}\t{i}\n")
    (tmp_path / "map.txt").write_text("".join(lines))
    write_mean_file(tmp_path / "mean.xml", np.full((16, 16, 3), 90.0))
    return {"map": tmp_path / "map.txt", "mean": tmp_path / "mean.xml"}


def test_legacy_image_reader_is_the_image_deserializer_with_cntks_transforms(images):
    legacy = reader_config(parse_config(LEGACY % images)["reader"])
    modern = reader_config(parse_config(DESERIALIZER % images)["reader"])
    image = legacy.deserializers[0]
    assert image.type == "ImageDeserializer" and image.file == str(images["map"])
    assert [t.type for t in image.stream("features").transforms] == ["Crop", "Scale", "Mean"]
    assert image.stream("labels").label_dim == 5 and not legacy.randomize
    assert not legacy.extra                          # the stream blocks are consumed
    a = make_source(legacy).next_minibatch(4)
    b = make_source(modern).next_minibatch(4)
    assert a["features"].data.shape == (4, 3, 16, 16)
    np.testing.assert_array_equal(a["features"].data, b["features"].data)
    np.testing.assert_array_equal(a["labels"].data, b["labels"].data)


def test_legacy_image_reader_errors(images):
    text = (LEGACY % images).replace('interpolations = "linear"', 'intensityFile = "pca.xml"')
    with pytest.raises(ConfigError, match="intensityFile.*not supported"):
        reader_config(parse_config(text)["reader"])
    text = (LEGACY % images).replace("labels = { labelDim = 5 }", "")
    with pytest.raises(ConfigError, match="one feature block .* and one label block"):
        reader_config(parse_config(text)["reader"])


def test_the_map_file_around_the_reader_is_read(images):
    # ImageConfigHelper.cpp:81 reads config(L"file"), which looks in the blocks around the
    # reader (Config.h:992-1005: a key not found goes to the parent); at 1154ef55 a ConfigError
    # ('file' missing).  The reader block's own file wins
    text = (LEGACY % images).replace(f'file = "{images["map"]}"', "")
    outer = reader_config(parse_config(f'train = {{ file = "{images["map"]}"\n{text} }}',
                                       "job.cntk")["train"]["reader"])
    assert outer.deserializers[0].file == str(images["map"])
    own = reader_config(parse_config(f'train = {{ file = "elsewhere.txt"\n{LEGACY % images} }}',
                                     "job.cntk")["train"]["reader"])
    assert own.deserializers[0].file == str(images["map"])
    legacy = reader_config(parse_config(LEGACY % images)["reader"])
    np.testing.assert_array_equal(make_source(outer).next_minibatch(4)["features"].data,
                                  make_source(legacy).next_minibatch(4)["features"].data)
    with pytest.raises(ConfigError, match="file"):
        reader_config(parse_config(f"train = {{ {text} }}", "job.cntk")["train"]["reader"])
