"""CNTK 2.7's RMSProp with ``max=np.inf`` (its ``learner_test.py`` makes one): a step size
that keeps its sign grows by ``inc`` until it overflows, the tensor's mean ratio is then inf
and CNTK's ``ScaleAndAdd(-lr / inf)`` is MKL's ``saxpy`` with ``alpha = -0``, which returns at
once (``Source/Math/CPUMatrixImpl.h:5390``): the parameter stops moving.  Stadyn's
``w + (-0) (g a)`` made it NaN (``0 * inf``) from that update on.

The expected values are CNTK 2.7's, printed by this script run on it::

    w = C.parameter(shape=(3,), init=np.array([1., 2., 3.], dt), dtype=dt)
    l = C.rmsprop([w], lr=C.learning_parameter_schedule(1), gamma=0.1, inc=3.0, dec=0.1,
                  max=np.inf, min=1e-8)
    for i in range(90): l.update({w: np.array([1e-3, -1e-3, 0.0], dt)}, 1)
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.learners as L
from stadyn.solvers import functional as Fn

GRADIENT = [1e-3, -1e-3, 0.0]
#: CNTK 2.7's parameter after 90 updates (float32: frozen after the 81st; float64's steps
#: overflow later than 90)
CNTK_90 = {np.float32: [0.8806563019752502, 2.1193346977233887, 3.0],
           np.float64: [0.8656570797718949, 2.134342920228112, 3.0]}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rmsprop_with_an_overflowed_step_stops_as_cntk(dtype):
    w = sd.Variable.from_tensor(torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64).to(
        torch.float32 if dtype is np.float32 else torch.float64), need_grad=True)
    learner = L.rmsprop([w], L.learning_parameter_schedule(1), gamma=0.1, inc=3.0, dec=0.1,
                        max=math.inf, min=1e-8)
    for _ in range(90):
        learner.update({w: np.array(GRADIENT, dtype)}, 1)
    assert np.asarray(w.d).tolist() == CNTK_90[dtype]


@pytest.mark.parametrize("foreach", [True, False])
def test_torch_path_leaves_a_tensor_of_infinite_ratios_as_it_is(foreach):
    # the torch path (GPU, compiled steps) of the same update, once the steps are inf: CNTK's
    # axpy of alpha -0 leaves w, where w + (-0) (g a) is NaN
    w = torch.tensor([1.0, 2.0, 3.0])
    v = torch.full((3,), 1e-6)
    signs = torch.tensor([1.0, -1.0, 0.0])
    steps = torch.tensor([math.inf, math.inf, 1e-8])
    Fn.rmsprop_adaptive([w], [torch.tensor(GRADIENT)], [v], [signs], [steps], lr=1.0,
                        gamma=0.1, inc=3.0, dec=0.1, max_step=math.inf, min_step=1e-8,
                        first=0.0, average_multiplier=True, foreach=foreach)
    assert w.tolist() == [1.0, 2.0, 3.0]
