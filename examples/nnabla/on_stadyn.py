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

_REAL, _COMPAT = "nnabla", "stadyn.compat.nnabla"


class _CompatNames(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``nnabla`` and ``nnabla.*`` as the compat layer's modules of the same path."""

    def find_spec(self, name, path=None, target=None):
        if name != _REAL and not name.startswith(_REAL + "."):
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec):
        module = importlib.import_module(_COMPAT + spec.name[len(_REAL):])
        # Submodules the compat package imported itself are known under NNabla's names too, so
        # importing one does not rebind the package's attribute (``nnabla.logger`` is a logger).
        for loaded in list(sys.modules):
            if loaded.startswith(_COMPAT + "."):
                sys.modules.setdefault(_REAL + loaded[len(_COMPAT):], sys.modules[loaded])
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
