"""The runnable examples in the brainscript package's docstrings stay correct."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["stadyn.brainscript", "stadyn.brainscript._ast", "stadyn.brainscript._parser",
           "stadyn.brainscript._evaluator", "stadyn.brainscript._network",
           "stadyn.brainscript._library", "stadyn.brainscript._config",
           "stadyn.brainscript._blocks", "stadyn.brainscript._sgd_block",
           "stadyn.brainscript._reader_blocks", "stadyn.brainscript._block_values",
           "stadyn.brainscript._layer_library", "stadyn.brainscript._model_files",
           "stadyn.brainscript._windows"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
