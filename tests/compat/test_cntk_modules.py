"""CNTK 2.7's modules import by their paths, and their star imports bind what CNTK 2.7's bind.

The reference is CNTK 2.7's own: ``tests/compat/refs/modules_cntk.json``, written by
``tests/compat/refgen/list_modules.py`` under CNTK 2.7 (every ``cntk.*`` module and what
``from <module> import *`` binds there).  CNTK's modules have no ``__all__``, so their star
imports hand out the modules they imported, and CNTK's own programs rely on it
(``ConvNet_CIFAR10_DataAug_Distributed.py`` uses ``sys`` from ``from
cntk.train.training_session import *``; ``from cntk.core import Value`` opens
DeepQNeuralNetwork.py and the object-detection scripts).
"""

import importlib
import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "refs", "modules_cntk.json")) as f:
    REFERENCE = json.load(f)
MODULES = REFERENCE["modules"]

# CNTK 2.7 modules Stadyn does not offer, and why (docs/cntk-names.md)
NOT_OFFERED = {
    "cntk.cntk_py_init": "initialises CNTK's native library",
    "cntk.internal": "CNTK's internal argument helpers (sanitize_*, typemap)",
    "cntk.internal.sanitize": "CNTK's internal argument helpers",
    "cntk.internal.swig_helper": "CNTK's SWIG glue",
    "cntk.internal.utils": "CNTK's internal helpers",
    "cntk.misc": "converters of CNTK's native model nodes",
    "cntk.misc.converter": "converters of CNTK's native model nodes",
    "cntk.misc.optimized_rnnstack_converter": "converts cuDNN RNN stacks inside CNTK models",
    "cntk.sample_installer": "downloads CNTK's samples",
    "cntk.tensor": "the mixins of CNTK's Variables (Stadyn's have their own operators)",
}
# modules a star import hands out that are left out (cntk/compat/cntk/_star_imports.py says why)
LEFT_OUT = {"cntk.cntk_py_init", "cntk.internal", "cntk.internal.utils", "cntk.misc",
            "cntk.sample_installer", "cntk.tensor", "scipy.sparse", "cntk.cntk_py"}
# names a Stadyn module has but keeps out of its star import, and why
HIDDEN = {("cntk", "optimized_rnnstack"): "not in __all__ until tests/compat has a case for it",
          ("cntk.ops", "optimized_rnnstack"): "as above"}
OFFERED = sorted(set(MODULES) - set(NOT_OFFERED) - {"cntk.cntk_py"})


def ours(name):
    return "stadyn.compat." + name


def star(name):
    scope = {}
    exec("from %s import *" % name, scope)
    return scope


def test_the_reference_is_cntk_27s():
    assert REFERENCE["version"] == "2.7" and len(MODULES) == 47 and not REFERENCE["unimportable"]
    assert MODULES["cntk.train.training_session"]["sys"] == "module sys"


@pytest.mark.parametrize("name", OFFERED + ["cntk.cntk_py"])
def test_each_cntk_module_imports_by_its_path(name):
    module = importlib.import_module(ours(name))       # (cntk.ops.sequence is cntk.sequence,
    assert module.__name__.startswith(ours("cntk"))   # cntk.cntk_py the native module's stand-in)


def test_modules_not_offered_are_named_with_a_reason():
    assert set(NOT_OFFERED) <= set(MODULES)
    for name in NOT_OFFERED:
        with pytest.raises(ImportError):
            importlib.import_module(ours(name))


def _expected_module(described):
    """The module Stadyn's star import should bind where CNTK's binds ``described``."""
    target = described[len("module "):]
    if target == "posixpath":
        return sys.modules["os"].path
    if target == "cntk.cntk_py":
        return importlib.import_module(ours("cntk._cntk_py"))
    if target == "cntk" or target.startswith("cntk."):
        return importlib.import_module(ours(target))
    return importlib.import_module(target)


@pytest.mark.parametrize("name", OFFERED)
def test_star_imports_hand_out_the_modules_cntk_hands_out(name):
    scope = star(ours(name))
    wrong = {}
    for key, described in MODULES[name].items():
        if not described.startswith("module ") or described[len("module "):] in LEFT_OUT:
            continue
        if scope.get(key) is not _expected_module(described):
            wrong[key] = (described, scope.get(key))
    assert not wrong


@pytest.mark.parametrize("name", OFFERED)
def test_star_imports_hide_none_of_cntks_names_the_module_has(name):
    module, scope = importlib.import_module(ours(name)), star(ours(name))
    hidden = [key for key in MODULES[name] if key not in scope and hasattr(module, key)
              and (name, key) not in HIDDEN]
    assert hidden == []


def test_a_program_taking_sys_from_a_star_import_runs():
    """The opening of CNTK's ConvNet_CIFAR10_DataAug_Distributed.py (before: NameError)."""
    program = ("from %s.train.training_session import *\n"
               "from %s.logging import *\nfrom %s.debugging import *\n"
               "sys.path.append('.')\nstart = time.time()\nfound = os.path.isdir('.')\n"
               % ((ours("cntk"),) * 3))
    scope = {}
    exec(program, scope)
    assert scope["found"] is True and scope["sys"] is sys


def test_the_modules_behind_the_names_are_the_packages_objects():
    import stadyn.compat.cntk as C
    from stadyn.compat.cntk.core import Value
    from stadyn.compat.cntk.layers.blocks import LSTM
    from stadyn.compat.cntk.layers.layers import Dense
    from stadyn.compat.cntk.train.trainer import Trainer
    assert (Value, LSTM, Dense, Trainer) == (C.Value, C.layers.LSTM, C.layers.Dense, C.Trainer)
    import stadyn.compat.cntk.default_options  # noqa: F401 - the module, imported by its path,
    assert callable(C.default_options)         # does not take the function's name
