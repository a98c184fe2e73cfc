"""Every docstring example in the package runs and prints what it shows.

Some test modules run their own package's examples too; this one makes sure no module's examples
are left out (a module added later is picked up by the walk).
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import stadyn

_SKIP = ("stadyn.bench.peers",)      # scripts for the peers' own Pythons (NNabla, MXNet)


def _modules_with_examples() -> list[str]:
    finder = doctest.DocTestFinder()
    names = []
    for info in pkgutil.walk_packages(stadyn.__path__, "stadyn."):
        if info.name.startswith(_SKIP) or info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        if any(test.examples for test in finder.find(module)):
            names.append(info.name)
    return names


_MODULES = _modules_with_examples()


def test_the_walk_finds_the_packages_examples():
    assert len(_MODULES) > 50
    assert {"stadyn.graph._variable", "stadyn._fileutil", "stadyn.io._files"} <= set(_MODULES)


@pytest.mark.parametrize("name", _MODULES)
def test_docstring_examples(name):
    # Each module's examples register parameters in a registry of their own: in the global one
    # they stayed, and a later test of the same worker comparing sd.get_parameters() with a
    # model's met them (get_parameter_or_create's demo_gpoc/W).
    import stadyn as sd
    with sd.parameter_registry(sd.ParameterRegistry()):
        result = doctest.testmod(importlib.import_module(name),
                                 optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
