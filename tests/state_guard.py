"""The process-wide state a test may change and must leave as it found it.

Stadyn keeps its switches in context variables and module globals (the mode, ``no_grad``, the
phase, recompute, the default context, the scope and parameter registry, function and solver
hooks, numerics checking, ...), and torch keeps its own (grad mode, default dtype, ...).  A test
that sets one and does not restore it (``set_auto_forward(True)`` without the reset, a hook left
registered when the test fails half-way) changes what every later test in the same process
runs; under pytest-xdist, which tests those are depends on the schedule, so the failure is
order-dependent and shows up once in a while.

``tests/conftest.py`` takes a :func:`snapshot` before each test and after it; a test after which
any item differs fails (naming each item, before and after) and the state is put back with
:func:`restore`, so one leak fails one test instead of some unrelated later one.  A snapshot is
one getter call per item (about 40 items, a few microseconds in all).

Each item is ``(name, get, set)``.  Items of modules that only some tests import (the CNTK
compat layer: 1.4 s to import) are read once that module is imported and have their initial
value until then, so the guard imports nothing of its own.  Random-generator state is not an
item: every test that draws random numbers changes it, and a test that needs particular numbers
seeds them itself (or compares with a tolerance that holds for any draw).
"""

from __future__ import annotations

import os
import sys

import torch

import stadyn._random as _random
import stadyn.graph._context as _context
import stadyn.graph._function_hooks as _function_hooks
import stadyn.graph._labels as _labels
import stadyn.graph._location as _location
import stadyn.graph._mode as _mode
import stadyn.graph._numerics as _numerics
import stadyn.graph._recompute as _recompute
import stadyn.graph._scope as _scope
import stadyn.layers._options as _options
import stadyn.learners._learner as _learner
import stadyn.parametric._registry as _registry
import stadyn.solvers._hooks as _solver_hooks


def _var(name, var):
    return (name, var.get, var.set)


def _cell(name, cell, index=0):
    """A one-element list used as a mutable module global (``_depth = [0]``)."""
    def put(value):
        cell[index] = value
    return (name, lambda: cell[index], put)


def _ordered(name, mapping):
    """A registry dict (hooks): compared as its items, restored in place."""
    def put(items):
        mapping.clear()
        mapping.update(items)
    return (name, lambda: tuple(mapping.items()), put)


def _seq(name, items):
    def put(value):
        items[:] = list(value)
    return (name, lambda: tuple(items), put)


def _late(name, module, attribute, initial, index=None):
    """A global of ``module`` (``attribute``, or its element ``index``), read only once
    something imported the module: until then it is ``initial``, the value the module starts
    with (``test_state_guard.py`` checks the two agree).  Dicts and lists compare as tuples."""
    def get():
        m = sys.modules.get(module)
        if m is None:
            return initial
        value = getattr(m, attribute)
        if index is not None:
            return value[index]
        if isinstance(value, dict):
            return tuple(value.items())
        return tuple(value) if isinstance(value, list) else value

    def put(value):
        m = sys.modules.get(module)
        if m is None:
            return
        held = getattr(m, attribute)
        if index is not None:
            held[index] = value
        elif isinstance(held, dict):
            held.clear()
            held.update(value)
        elif isinstance(held, list):
            held[:] = list(value)
        else:
            setattr(m, attribute, value)
    return (name, get, put)


def _deterministic():
    return (torch.are_deterministic_algorithms_enabled(),
            torch.is_deterministic_algorithms_warn_only_enabled())


def _set_deterministic(value):
    torch.use_deterministic_algorithms(value[0], warn_only=value[1])


def _set_inference_mode(value):
    # torch has no global switch for it: only a leaked ``torch.inference_mode().__enter__()``
    # turns it on, and nothing here can close that; the failure names it.
    pass


ITEMS = (
    _var("stadyn auto_forward (set_auto_forward)", _mode._auto_forward),
    _var("stadyn no_grad", _mode._no_grad),
    _var("stadyn training phase (set_training)", _mode._training),
    _var("stadyn recompute block", _recompute._block),
    _var("stadyn global recompute (set_global_recompute)", _recompute._global),
    _var("stadyn recompute flag of new Variables", _recompute._now),
    _var("stadyn default context (set_default_context)", _context._current),
    _var("stadyn open 'with ctx:' blocks", _context._entered),
    _var("stadyn name/parameter scope", _scope._scope),
    _var("stadyn parameter registry (parameter_registry)", _registry._current),
    _var("stadyn default unit gain (set_default_unit_gain_value)", _learner._UNIT_GAIN),
    _var("stadyn layer default_options", _options._stack),
    _ordered("stadyn function pre hooks (set_function_pre_hook)", _function_hooks._PRE),
    _ordered("stadyn function post hooks (set_function_post_hook)", _function_hooks._POST),
    _ordered("stadyn solver pre hooks (set_solver_pre_hook)", _solver_hooks._PRE),
    _ordered("stadyn solver post hooks (set_solver_post_hook)", _solver_hooks._POST),
    _cell("stadyn check_numerics depth", _numerics._depth),
    _seq("stadyn check_numerics checks (nan_only, error, op_by_op)", _numerics._policy),
    _cell("stadyn profiler op labels (set_labels)", _labels._active),
    _seq("stadyn fixed source locations (source_location)", _location._fixed),
    _cell("cntk fixed random seed (set_fixed_random_seed)", _random._fixed),
    _late("cntk compat trace level (set_trace_level)", "stadyn.compat.cntk.logging",
          "_trace_level", 1, 0),
    _late("cntk compat global options (set_global_option)", "stadyn.compat.cntk._defaults",
          "_GLOBAL", ()),
    _late("cntk compat excluded devices (set_excluded_devices)", "stadyn.compat.cntk.device",
          "_EXCLUDED", ()),
    _late("cntk compat checked mode (set_checked_mode)", "stadyn.compat.cntk._checked_mode",
          "_ON", False, 0),
    _late("image backend (set_backend)", "stadyn.io._image_utils", "_state", None, "chosen"),
    _late("distributed timeout", "stadyn.distributed._env", "_timeout", 600.0, 0),
    ("torch grad mode (set_grad_enabled)", torch.is_grad_enabled, torch.set_grad_enabled),
    ("torch inference mode", torch.is_inference_mode_enabled, _set_inference_mode),
    ("torch default dtype (set_default_dtype)", torch.get_default_dtype,
     torch.set_default_dtype),
    ("torch anomaly detection (set_detect_anomaly)", torch.is_anomaly_enabled,
     torch.set_anomaly_enabled),
    ("torch deterministic algorithms", _deterministic, _set_deterministic),
    ("torch intra-op threads (set_num_threads)", torch.get_num_threads, torch.set_num_threads),
    ("working directory (os.chdir)", os.getcwd, os.chdir),
)

_GETTERS = tuple(get for _, get, _ in ITEMS)


def snapshot() -> tuple:
    """The value of every item, in :data:`ITEMS` order."""
    return tuple([get() for get in _GETTERS])


def changes(before: tuple, after: tuple) -> list[str]:
    """``'name: before -> after'`` for each item that differs (empty when none does)."""
    if before == after:
        return []
    return [f"{name}: {a!r} -> {b!r}" for (name, _, _), a, b in zip(ITEMS, before, after)
            if a != b]


def restore(before: tuple, after: tuple) -> None:
    """Put back each item that differs."""
    for (_, _, put), a, b in zip(ITEMS, before, after):
        if a != b:
            put(a)
