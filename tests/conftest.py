"""Test-suite set-up shared by every test.

Under pytest-xdist (``make test`` runs two workers on CI's two cores) each worker gets one torch
thread, so the workers do not oversubscribe the cores.

A static graph whose trace fails runs eagerly with the warning ``a static graph runs eagerly:
...``; ``pyproject.toml`` turns that warning into an error for every test, so a static == dynamic
test always compares two different executions.  A test that exercises the fallback on purpose
says so with ``@pytest.mark.eager_fallback`` (the warning is then ignored for that test).
"""

import os

import pytest
import torch

if os.environ.get("PYTEST_XDIST_WORKER"):
    torch.set_num_threads(1)
    os.environ.setdefault("OMP_NUM_THREADS", "1")   # inherited by subprocesses tests start

EAGER_FALLBACK_WARNING = "a static graph runs eagerly"


def pytest_collection_modifyitems(items):
    for item in items:
        if item.get_closest_marker("eager_fallback") is not None:
            item.add_marker(pytest.mark.filterwarnings(
                f"ignore:{EAGER_FALLBACK_WARNING}:RuntimeWarning"))
