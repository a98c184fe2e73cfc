"""Test-suite set-up and fixtures shared by every test.

Under pytest-xdist (``make test`` runs two workers on CI's two cores) each worker gets one torch
thread, so the workers do not oversubscribe the cores.

Fixtures:

* ``fresh_parameters``: the test runs in a new, empty parameter registry (yielded); the one it
  replaces is back afterwards.  Use it as an argument or with
  ``@pytest.mark.usefixtures("fresh_parameters")`` (``pytestmark`` for a whole module).
* ``one_torch_thread``: the test runs on one intra-op torch thread; the thread count is restored
  afterwards.  Tiny tensors on a loaded two-core machine spend far more time waiting in torch's
  thread pool than computing, and single-threaded references match single-threaded workers.

A static graph whose trace fails runs eagerly with the warning ``a static graph runs eagerly:
...``; ``pyproject.toml`` turns that warning into an error for every test, so a static == dynamic
test always compares two different executions.  A test that exercises the fallback on purpose
says so with ``@pytest.mark.eager_fallback`` (the warning is then ignored for that test).
"""

import os

import pytest
import torch

import stadyn as sd

if os.environ.get("PYTEST_XDIST_WORKER"):
    torch.set_num_threads(1)
    os.environ.setdefault("OMP_NUM_THREADS", "1")   # inherited by subprocesses tests start


@pytest.fixture
def fresh_parameters():
    """A new, empty parameter registry for the test."""
    registry = sd.ParameterRegistry()
    with sd.parameter_registry(registry):
        yield registry


@pytest.fixture
def one_torch_thread():
    """One intra-op torch thread for the test."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


EAGER_FALLBACK_WARNING = "a static graph runs eagerly"


def pytest_collection_modifyitems(items):
    for item in items:
        if item.get_closest_marker("eager_fallback") is not None:
            item.add_marker(pytest.mark.filterwarnings(
                f"ignore:{EAGER_FALLBACK_WARNING}:RuntimeWarning"))
