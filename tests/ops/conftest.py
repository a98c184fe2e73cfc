"""Fixtures of the op harness."""

import pytest


@pytest.fixture(autouse=True)
def _ops_on_one_torch_thread(one_torch_thread):
    """Run each op test on one intra-op thread (the root ``one_torch_thread`` fixture).

    The harness's tensors are tiny; on a loaded 2-core machine torch's thread pool spends far more
    time waiting than computing (the gradient checks ran 6x slower with the default pool).
    """
