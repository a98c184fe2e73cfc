"""List CNTK 2.7's importable modules and what ``from <module> import *`` binds in each, as JSON.

Run under CNTK 2.7's interpreter (see tests/compat/README.md)::

    LD_LIBRARY_PATH=/work/peers/cntk27/shimlib /work/peers/cntk27/venv36/bin/python -W ignore \
        tests/compat/refgen/list_modules.py

writes ``tests/compat/refs/modules_cntk.json``: ``{"version": ..., "modules": {"cntk.core":
{"Value": "cntk.core", "np": "module numpy", ...}, ...}}``.

CNTK 2.7's modules have no ``__all__`` (but a few), so a star import binds every public global of
the module, the modules it imported included: ``from cntk.train.training_session import *``
binds ``sys``, and CNTK's own ``ConvNet_CIFAR10_DataAug_Distributed.py`` calls
``sys.path.append`` with no ``import sys`` of its own.  Each bound name is recorded with what
it is: ``"module numpy"`` for a module (by its ``__name__``), else the ``__module__`` of a
function or class (``"cntk.core"``), else ``"object <type>"``.

A module is every ``cntk.*`` module ``pkgutil.walk_packages`` finds, less CNTK's tests, its
``contrib`` packages, and modules that fail to import here (listed under ``"unimportable"``).

This file must parse under Python 3.6 (CNTK's interpreter).
"""

import importlib
import inspect
import json
import os
import pkgutil
import subprocess
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
SKIP = (".tests", ".contrib", "cntk.conftest")


def what(obj):
    if isinstance(obj, types.ModuleType):
        return "module " + obj.__name__
    if inspect.isclass(obj) or inspect.isfunction(obj) or inspect.isbuiltin(obj):
        return getattr(obj, "__module__", None) or "object " + type(obj).__name__
    return "object " + type(obj).__name__


def walk():
    """Print every ``cntk.*`` module's name (run in a child process: ``walk_packages`` imports
    each package to look inside it, CNTK's test packages too, which would then show up as
    attributes of their parents)."""
    import cntk
    for m in pkgutil.walk_packages(cntk.__path__, "cntk."):
        print(m.name)


def main():
    child = subprocess.run([sys.executable, "-W", "ignore", __file__, "--walk"],
                           stdout=subprocess.PIPE, universal_newlines=True, check=True)
    found = ["cntk"] + sorted(child.stdout.split())
    import cntk
    modules, unimportable = {}, []
    for name in found:
        if any(s in name for s in SKIP):
            continue
        try:
            importlib.import_module(name)
            scope = {}
            exec("from %s import *" % name, scope)
        except Exception:  # noqa: BLE001 - a module that needs what this machine lacks
            unimportable.append(name)
            continue
        modules[name] = {k: what(v) for k, v in scope.items() if not k.startswith("_")}
    out = {"version": cntk.__version__, "modules": modules, "unimportable": unimportable}
    target = os.path.join(HERE, "..", "refs", "modules_cntk.json")
    with open(target, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    print("cntk %s: %d modules (%d unimportable) -> %s"
          % (cntk.__version__, len(modules), len(unimportable), os.path.normpath(target)))


if __name__ == "__main__":
    walk() if sys.argv[1:] == ["--walk"] else main()
