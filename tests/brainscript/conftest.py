"""Make ``stadyn.brainscript`` importable however the package around it stands.

The brainscript package imports nothing from Stadyn but ``stadyn._errors``.  When Stadyn is not
installed, ``src`` is put on the path; when ``stadyn/__init__.py`` cannot be imported (the core
is being written), a bare ``stadyn`` package object is registered so that the two modules load
without running it.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_SRC = _HERE.parents[1] / "src"


def _importable() -> bool:
    try:
        import stadyn.brainscript  # noqa: F401
    except Exception:  # noqa: BLE001 - any failure of the package init means "bootstrap"
        return False
    return True


def _bootstrap() -> None:
    if str(_HERE) not in sys.path:
        sys.path.insert(0, str(_HERE))
    if _importable():
        return
    if str(_SRC) not in sys.path:
        sys.path.insert(0, str(_SRC))
    for name in [m for m in sys.modules if m == "stadyn" or m.startswith("stadyn.")]:
        del sys.modules[name]
    if _importable():
        return
    for name in [m for m in sys.modules if m == "stadyn" or m.startswith("stadyn.")]:
        del sys.modules[name]
    package = types.ModuleType("stadyn")
    package.__path__ = [str(_SRC / "stadyn")]
    sys.modules["stadyn"] = package
    import stadyn.brainscript  # noqa: F401


_bootstrap()
