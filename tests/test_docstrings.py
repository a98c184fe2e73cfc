"""Every docstring example in the package runs and prints what it shows.

Some test modules run their own package's examples too; this one makes sure no module's examples
are left out (a module added later is picked up by the walk).
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import pathlib

import pytest

import stadyn

_SKIP = ("stadyn.bench.peers",)      # scripts for the peers' own Pythons (NNabla, MXNet)


def _module_names() -> list[str]:
    """Every module of the package but ``_SKIP``'s and ``__main__``s, from its files (nothing
    imported)."""
    root = pathlib.Path(stadyn.__file__).parent
    names = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if not (name.startswith(_SKIP) or name.endswith("__main__")):
            names.append(name)
    return names


def _modules_with_examples() -> list[str]:
    """The modules whose source has a ``>>>`` line: found without importing them, since
    importing all ~830 (scikit-learn with them) and searching them cost each collecting
    pytest-xdist worker ~3.5 s of CPU.  ``test_the_walk_finds_the_packages_examples`` checks
    this is exactly the modules doctest finds examples in."""
    names = []
    for name in _module_names():
        spec = importlib.util.find_spec(name)
        with open(spec.origin, encoding="utf-8") as f:
            if any(line.lstrip().startswith(">>>") for line in f):
                names.append(name)
    return names


_MODULES = _modules_with_examples()


def test_the_walk_finds_the_packages_examples():
    assert len(_MODULES) > 50
    assert {"stadyn.graph._variable", "stadyn._fileutil", "stadyn.io._files"} <= set(_MODULES)
    finder = doctest.DocTestFinder()
    found = [name for name in _module_names()
             if any(test.examples for test in finder.find(importlib.import_module(name)))]
    assert _MODULES == found


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
