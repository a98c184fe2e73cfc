"""Run an NNabla program unchanged on Stadyn.

    python examples/nnabla/on_stadyn.py PROGRAM.py [ARGS ...]

The program's own ``import nnabla``, ``import nnabla.functions as F``, ``from nnabla.monitor
import ...`` lines then load Stadyn's compat layer (``stadyn.compat.nnabla`` and its
submodules) under NNabla's names; nothing in the program changes.  The same file runs on NNabla
1.39 with ``python PROGRAM.py [ARGS ...]``.  (This is what the tutorial test does by editing
the import lines; here the imports stay as NNabla users write them.)
"""

import importlib
import importlib.abc
import importlib.util
import os
import runpy
import sys

# NNabla's packages and Stadyn's: ``nnabla`` and its CPU extension ``nnabla_ext``
_PACKAGES = {"nnabla": "stadyn.compat.nnabla", "nnabla_ext": "stadyn.compat.nnabla_ext"}


def _package(name):
    """The NNabla package that ``name`` is or is in, or None."""
    top = name.split(".")[0]
    return top if top in _PACKAGES else None


class _CompatNames(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``nnabla``, ``nnabla_ext`` and their submodules as the compat layer's modules of
    the same path."""

    def find_spec(self, name, path=None, target=None):
        if _package(name) is None:
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec):
        real = _package(spec.name)
        compat = _PACKAGES[real]
        module = importlib.import_module(compat + spec.name[len(real):])
        # Submodules the compat package imported itself are known under NNabla's names too, so
        # importing one does not rebind the package's attribute (``nnabla.logger`` is a logger).
        for loaded in list(sys.modules):
            if loaded.startswith(compat + "."):
                sys.modules.setdefault(real + loaded[len(compat):], sys.modules[loaded])
        return module

    def exec_module(self, module):
        """The compat module is already executed."""


def install():
    """Make ``import nnabla...`` load Stadyn's compat layer in this process."""
    if not any(isinstance(f, _CompatNames) for f in sys.meta_path):
        sys.meta_path.insert(0, _CompatNames())


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        sys.exit(__doc__)
    install()
    sys.argv = argv
    sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
    runpy.run_path(argv[0], run_name="__main__")


if __name__ == "__main__":
    main()
