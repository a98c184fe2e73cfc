"""A pytest plugin that makes every static-graph trace fail: the check that a static == dynamic
test compares two different executions.

With it, a static graph can only run through the eager fallback, which warns ``a static graph
runs eagerly``; the suite's setting (``pyproject.toml``, ``tests/conftest.py``) turns that
warning into an error, so every test that runs a static graph must now fail -- a static ==
dynamic test that still passes compares eager with eager.  Tests marked ``eager_fallback`` (and
the whole-step programs of ``stadyn.compile``, which trace on their own) are not affected.

    PYTHONPATH=src:tools python -m pytest -p plant_trace_failure -n 0 \\
        tests/models/test_nnabla_tutorial.py::test_static_and_dynamic_losses_are_bit_identical ...

The plugin replaces ``make_fx`` before Stadyn is imported and fails only calls made from
``stadyn.graph`` (the static lowering), whatever module of that package makes them.
"""

from __future__ import annotations

import sys

import torch.fx.experimental.proxy_tensor as proxy_tensor

_make_fx = proxy_tensor.make_fx


def _failing_make_fx(*args, **kwargs):
    caller = sys._getframe(1).f_globals.get("__name__", "")
    if caller.startswith("stadyn.graph"):
        raise RuntimeError("planted trace failure (tools/plant_trace_failure.py)")
    return _make_fx(*args, **kwargs)


def pytest_configure(config):
    if any(name.startswith("stadyn") for name in sys.modules):
        raise RuntimeError("plant_trace_failure must be loaded before Stadyn is imported")
    proxy_tensor.make_fx = _failing_make_fx
