"""The examples in the docstrings of stadyn.io run and give what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["stadyn.io.transforms", "stadyn.io._random", "stadyn.io._streams",
           "stadyn.io._image", "stadyn.io._files", "stadyn.io._mean_file", "stadyn.io._transforms",
           "stadyn.io._map_file", "stadyn.io._image_deserializer", "stadyn.io._ctf",
           "stadyn.io._ctf_values", "stadyn.io._ctf_errors", "stadyn.io._ctf_index",
           "stadyn.io._recordio", "stadyn.io._recordio_index", "stadyn.io._recordio_images",
           "stadyn.io._rec_deserializer", "stadyn.io._numpy_deserializer",
           "stadyn.io._source", "stadyn.io._tools", "stadyn.io._htk_file",
           "stadyn.io._htk_deserializer", "stadyn.io._mlf", "stadyn.io._cbf",
           "stadyn.io._base64_image", "stadyn.io._frame_mode", "stadyn.io._chunked"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0
