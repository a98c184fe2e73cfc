"""The API reference (``make docs``): Sphinx builds it without a warning, and every name in every
public module's ``__all__`` has an entry in it.

Sphinx is in the ``test`` extra, so ``make test`` (and CI) installs it; without it (a bare
environment) these tests skip.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import subprocess
import sys
import types
import zlib

import pytest

import stadyn

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCE = os.path.join(ROOT, "docs", "api")

# Modules with no "_" in their path that the reference leaves out, and why.
NOT_IN_REFERENCE = {
    "stadyn.cli": "the command line; `stadyn COMMAND --help` documents it",
    "stadyn.bench": "the harness behind `stadyn bench`; docs/performance.md documents it",
    "stadyn.__main__": "`python -m stadyn`",
    "stadyn.distributed.run": "the launcher script `python -m stadyn.distributed.run`",
    "stadyn.compat.cntk.train.training_session": "CNTK's module of that name is also its "
                                                 "function training_session (the train page)",
    "stadyn.compat.cntk.eval.evaluator": "where CNTK defines its Evaluator: the same class as "
                                         "on the eval page",
    "stadyn.compat.cntk.default_options": "CNTK's module of that name is also its function "
                                          "default_options (the package's page)",
}


def _public_modules() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(stadyn.__path__, "stadyn."):
        parts = info.name.split(".")
        if any(p.startswith("_") for p in parts[1:]) and parts[-1] != "__main__":
            continue
        if any(info.name == n or info.name.startswith(n + ".") for n in NOT_IN_REFERENCE):
            continue
        names.append(info.name)
    return ["stadyn"] + names


def _inventory(path: str) -> dict[str, str]:
    """``{full name: role}`` from Sphinx's ``objects.inv`` (version 2: four header lines, then
    zlib-compressed lines ``name domain:role priority uri display-name``)."""
    with open(path, "rb") as f:
        for _ in range(4):
            f.readline()
        text = zlib.decompress(f.read()).decode("utf-8")
    entries = {}
    for line in text.splitlines():
        name, role = line.split(" ", 2)[:2]
        entries[name] = role
    return entries


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    pytest.importorskip("sphinx", reason="Sphinx is in the test extra: pip install -e '.[test]'")
    out = tmp_path_factory.mktemp("api-html")
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html",
                           "-q", SOURCE, str(out)], capture_output=True, text=True, timeout=600,
                          cwd=ROOT)
    return proc, out


def test_the_reference_builds_without_a_warning(built):
    proc, out = built
    assert proc.returncode == 0, proc.stderr[-6000:]
    assert "WARNING" not in proc.stderr and "ERROR" not in proc.stderr, proc.stderr[-6000:]
    assert (out / "index.html").is_file()


def test_every_public_name_has_an_entry(built):
    proc, out = built
    assert proc.returncode == 0, proc.stderr[-6000:]
    inventory = _inventory(str(out / "objects.inv"))
    modules = [m for m in _public_modules() if hasattr(importlib.import_module(m), "__all__")]
    assert {"stadyn", "stadyn.functions", "stadyn.io.transforms", "stadyn.compat.cntk.layers",
            "stadyn.compat.nnabla.utils.data_iterator"} <= set(modules)
    missing = []
    for name in modules:
        assert inventory.get(name) == "py:module", f"{name} has no page"
        module = importlib.import_module(name)
        for attr in module.__all__:
            full, obj = f"{name}.{attr}", getattr(module, attr)
            if isinstance(obj, types.ModuleType) and inventory.get(obj.__name__) == "py:module":
                continue                                   # a public module with its own page
            if isinstance(obj, types.ModuleType) and not obj.__name__.startswith("stadyn"):
                continue               # another project's module, re-exported (cntk.layers' np)
            if full not in inventory:
                missing.append(full)
            if isinstance(obj, types.ModuleType):          # a private module exported by a name
                missing += [f"{full}.{sub}" for sub in getattr(obj, "__all__", ())
                            if f"{full}.{sub}" not in inventory]
    assert not missing, f"{len(missing)} public names are not in the reference: {missing[:40]}"


def test_a_module_without_all_is_a_namespace_only():
    """A public module without ``__all__`` would slip past the check above: only packages that
    hold nothing but other modules may lack one."""
    for name in _public_modules():
        module = importlib.import_module(name)
        if not hasattr(module, "__all__"):
            own = [k for k, v in vars(module).items() if not k.startswith("_")
                   and not isinstance(v, types.ModuleType)
                   and getattr(v, "__module__", name) == name]
            assert not own, f"{name} defines {own} but has no __all__"
