"""Fixtures of the op harness."""

import pytest
import torch


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Run each op test on one intra-op thread.

    The harness's tensors are tiny; on a loaded 2-core machine torch's thread pool spends far more
    time waiting than computing (the gradient checks ran 6x slower with the default pool).
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
