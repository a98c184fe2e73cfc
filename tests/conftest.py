"""Test-suite set-up shared by every test.

Under pytest-xdist (``make test`` runs two workers on CI's two cores) each worker gets one torch
thread, so the workers do not oversubscribe the cores.
"""

import os

import torch

if os.environ.get("PYTEST_XDIST_WORKER"):
    torch.set_num_threads(1)
    os.environ.setdefault("OMP_NUM_THREADS", "1")   # inherited by subprocesses tests start
