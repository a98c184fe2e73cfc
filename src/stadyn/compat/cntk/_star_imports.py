"""The modules CNTK 2.7's star imports hand out, bound the same way here.

CNTK 2.7's modules have no ``__all__`` (but a few), so ``from cntk.<module> import *`` binds
every public global of the module, the modules it imported included, and CNTK's own programs
rely on it: Examples/Image/Classification/ConvNet/Python/ConvNet_CIFAR10_DataAug_Distributed.py
calls ``sys.path.append`` with ``sys`` from ``from cntk.train.training_session import *``, and
Examples/LanguageUnderstanding uses ``np`` from ``from cntk.layers import *``.  Stadyn's modules
keep ``__all__`` lists; :data:`IMPORTED` says, per CNTK module, which modules its star import
binds and under what name, and :func:`bind` (called once by the package) gives each of
Stadyn's modules those attributes and ``__all__`` entries.

The facts are CNTK 2.7's: ``tests/compat/refgen/list_modules.py`` lists them into
``tests/compat/refs/modules_cntk.json``, which ``tests/compat/test_cntk_modules.py`` checks this
table against.  Left out: CNTK's native module's initialiser (``cntk_py_init``), its internal
helpers (``cntk.internal``, ``utils``), its model converters (``cntk.misc``), the sample
installer, ``cntk.tensor`` (the mixins Stadyn's Variables do not share), ``scipy.sparse``
(importing SciPy would slow every ``import stadyn.compat.cntk`` for a name no program was seen
to take from a star import), and the native module ``cntk_py`` that CNTK's submodules hand
out (``cntk.cntk_py``, ``import cntk.cntk_py`` and the package's star import give it).
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["IMPORTED", "bind"]

_C, _PY = "cntk", "cntk.cntk_py"

#: Per CNTK module (its path under ``cntk``; ``""`` is the package): the name each module its
#: star import binds goes by, and that module (``cntk...`` meaning Stadyn's compat module).
IMPORTED: dict[str, dict[str, str]] = {
    "": {"C": _C, "axis": "cntk.axis", "cntk_py": _PY, "core": "cntk.core",
         "ctypes": "ctypes", "debugging": "cntk.debugging", "device": "cntk.device",
         "distributed": "cntk.train.distributed", "enum": "enum", "eval": "cntk.eval",
         "evaluator": "cntk.eval.evaluator", "functions": "cntk.ops.functions",
         "initializer": "cntk.initializer", "io": "cntk.io", "layers": "cntk.layers",
         "learners": "cntk.learners", "logging": "cntk.logging", "losses": "cntk.losses",
         "metrics": "cntk.metrics", "np": "numpy", "numbers": "numbers", "ops": "cntk.ops",
         "os": "os", "platform": "platform", "random": "cntk.random",
         "sequence": "cntk.ops.sequence", "sys": "sys", "train": "cntk.train",
         "trainer": "cntk.train.trainer", "variables": "cntk.variables",
         "warnings": "warnings"},
    "core": {"np": "numpy", "numbers": "numbers", "warnings": "warnings"},
    "debugging": {"debug": "cntk.debugging.debug",
                  "profiler": "cntk.debugging.profiler", "sys": "sys"},
    "debugging.debug": {"sys": "sys"},
    "eval": {"evaluator": "cntk.eval.evaluator"},
    "io": {"cntk": _C, "np": "numpy", "transforms": "cntk.io.transforms",
           "uuid": "uuid", "warnings": "warnings"},
    "layers": {"C": _C, "attention": "cntk.layers.models.attention",
               "blocks": "cntk.layers.blocks",
               "higher_order_layers": "cntk.layers.higher_order_layers",
               "layers": "cntk.layers.layers", "models": "cntk.layers.models", "np": "numpy",
               "sequence": "cntk.ops.sequence", "typing": "cntk.layers.typing"},
    "layers.blocks": {"np": "numpy"},
    "layers.layers": {"C": _C, "np": "numpy", "sequence": "cntk.ops.sequence"},
    "layers.models": {"C": _C, "attention": "cntk.layers.models.attention"},
    "layers.models.attention": {"C": _C},
    "layers.sequence": {"np": "numpy", "sequence": "cntk.ops.sequence"},
    "layers.typing": {"np": "numpy"},
    "learners": {"np": "numpy", "warnings": "warnings"},
    "logging": {"core": "cntk.core", "graph": "cntk.logging.graph", "os": "os",
                "progress_print": "cntk.logging.progress_print", "sys": "sys", "time": "time"},
    "logging.graph": {"os": "os", "sys": "sys"},
    "logging.progress_print": {"core": "cntk.core", "sys": "sys",
                               "time": "time"},
    "losses": {"C": _C, "np": "numpy"},
    "ops": {"functions": "cntk.ops.functions", "np": "numpy",
            "numbers": "numbers", "sequence": "cntk.ops.sequence"},
    "ops.functions": {"cntk": _C, "collections": "collections",
                      "path": "os.path", "sys": "sys", "warnings": "warnings"},
    "ops.sequence": {"np": "numpy"},
    "random": {"np": "numpy"},
    "train": {"ctypes": "ctypes", "distributed": "cntk.train.distributed",
              "enum": "enum", "platform": "platform", "sys": "sys",
              "trainer": "cntk.train.trainer"},
    "train.distributed": {"ctypes": "ctypes", "platform": "platform",
                          "trainer": "cntk.train.trainer"},
    "train.training_session": {"enum": "enum", "sys": "sys"},
    "variables": {"np": "numpy"},
}


def _module(name: str, package: str) -> ModuleType:
    """The module ``name`` (``cntk...`` names: the compat package ``package``'s own)."""
    if name == _C or name.startswith(_C + "."):
        name = package + name[len(_C):]
    return importlib.import_module(name)


def bind(package: str) -> None:
    """Give each module of the compat package ``package`` the modules CNTK 2.7's module of the
    same path hands out to a star import (:data:`IMPORTED`), as attributes and in ``__all__``.
    A name the module already has keeps its value (``cntk.layers.sequence``, ...).

    Example:
        >>> import importlib, sys
        >>> ts = importlib.import_module("stadyn.compat.cntk.train.training_session")
        >>> ts.sys is sys and "sys" in ts.__all__
        True
    """
    for path, names in IMPORTED.items():
        module = _module(_C + ("." + path if path else ""), package)
        exported = getattr(module, "__all__", None)
        for name, target in names.items():
            if not hasattr(module, name):
                setattr(module, name, _module(target, package))
            if exported is not None and name not in exported:
                exported = [*exported, name]
        if exported is not None:
            module.__all__ = exported
