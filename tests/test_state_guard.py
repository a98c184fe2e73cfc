"""The guard against tests that leave process-wide state changed (``state_guard.py``, used by
``conftest.py`` around every test and by the compat harness around every case)."""

import importlib

import torch

import stadyn as sd
import stadyn.solvers as S
import state_guard
from stadyn.graph import set_function_pre_hook, set_global_recompute, unset_function_pre_hook


def test_a_leak_is_named_and_restored():
    before = state_guard.snapshot()
    sd.set_auto_forward(True)
    set_global_recompute(True)
    set_function_pre_hook("leak", print)
    S.set_solver_post_hook("leak", print)
    sd.set_default_context(sd.context("cpu", dtype="bfloat16"))
    torch.set_grad_enabled(False)
    try:
        after = state_guard.snapshot()
        changed = state_guard.changes(before, after)
        names = [line.split(":")[0] for line in changed]
        assert names == ["stadyn auto_forward (set_auto_forward)",
                         "stadyn global recompute (set_global_recompute)",
                         "stadyn recompute flag of new Variables",
                         "stadyn default context (set_default_context)",
                         "stadyn function pre hooks (set_function_pre_hook)",
                         "stadyn solver post hooks (set_solver_post_hook)",
                         "torch grad mode (set_grad_enabled)"], changed
        assert changed[0].endswith("False -> True")
        state_guard.restore(before, after)
        assert state_guard.changes(before, state_guard.snapshot()) == []
        assert not sd.get_auto_forward() and sd.Variable((1,)).recompute is False
        assert sd.get_current_context().dtype == "float32" and torch.is_grad_enabled()
    finally:                       # should the restore be broken, the next test still runs clean
        sd.set_auto_forward(False)
        set_global_recompute(False)
        unset_function_pre_hook("leak")
        S.unset_solver_post_hook("leak")
        sd.set_default_context(sd.Context())
        torch.set_grad_enabled(True)


def test_an_unchanged_state_reports_nothing():
    with sd.auto_forward(), sd.training(False), sd.parameter_scope("net"):
        pass
    a, b = state_guard.snapshot(), state_guard.snapshot()
    assert a == b and state_guard.changes(a, b) == []


def test_items_of_modules_not_yet_imported_start_as_those_modules_do():
    """A module's global reads as its declared initial value until the module is imported:
    importing it (and finding the same value) is no change."""
    for name, get, _ in state_guard.ITEMS:
        declared = get()
        if name.startswith(("cntk compat", "image backend", "distributed")):
            module = {"cntk compat fixed": "stadyn.compat.cntk._cntk_py",
                      "cntk compat trace": "stadyn.compat.cntk.logging",
                      "cntk compat global": "stadyn.compat.cntk._defaults",
                      "cntk compat excluded": "stadyn.compat.cntk.device",
                      "cntk compat checked": "stadyn.compat.cntk._checked_mode",
                      "image backend": "stadyn.io._image_utils",
                      "distributed timeout": "stadyn.distributed._env"}
            prefix = next(k for k in module if name.startswith(k))
            importlib.import_module(module[prefix])
            assert get() == declared, name
