"""Harness entries of NNabla's INQ layers (``inq_affine``, ``inq_convolution``), merged into
``test_ops.ENTRIES``.

The reference follows NNabla 1.39's C++ forward of one first run, element by element (a fresh
node: run count 0, nothing fixed before): the schedule step, the power-of-two rounding of the
fixed weights, then the plain layer.  tests/compat's ``nnabla_inq`` cases compare whole
schedules over several runs with NNabla's own numbers.
"""

from __future__ import annotations

import math

import numpy as np

from op_harness_types import Data

_D = Data(39)
_LOG2_1_5 = math.log2(1.5)


def _rounded_exponent(value: float) -> int:
    b = math.log2(value)
    return int(math.floor(b) + (b - math.floor(b) >= _LOG2_1_5))


def first_run_weights(w, ind, num_bits=4, inq_iterations=(), selection_algorithm="largest_abs"):
    """``(weights, indicators)`` after a node's first run (count 0), as NNabla computes them."""
    w, ind = w.astype(np.float64).ravel().copy(), ind.astype(np.float64).ravel().copy()
    schedule = list(inq_iterations)
    if 0 in schedule:
        if schedule[-1] == 0:
            ind[:] = 1
        else:
            assert selection_algorithm == "largest_abs"
            order = sorted(range(w.size), key=lambda k: -abs(w[k]))
            half = int((ind == 0).sum()) // 2
            fixed = 0
            for k in order:
                if ind[k] == 0:
                    ind[k] = 1
                    fixed += 1
                if fixed >= half:
                    break
    top = max(abs(v) for v in w) or 1.0
    n1 = _rounded_exponent(top)
    n2 = n1 + 1 - 2 ** (num_bits - 2)
    for k in range(w.size):
        if ind[k] == 1:
            if abs(w[k]) < 2.0 ** (n2 - 1):
                w[k] = 0.0
            else:
                e = min(max(_rounded_exponent(abs(w[k])), n2), n1)
                w[k] = math.copysign(2.0 ** e, w[k])
    return w, ind


def inq_entries(Case, Entry, ref_affine, ref_convolution) -> dict:
    def split(attrs):
        inq = {k: attrs[k] for k in ("num_bits", "inq_iterations", "selection_algorithm")
               if k in attrs}
        rest = {k: v for k, v in attrs.items() if k not in inq and k != "seed"}
        return inq, rest

    def weights(w, ind, attrs):
        inq, _ = split(attrs)
        values, fixed = first_run_weights(w, ind, **inq)
        return values.reshape(w.shape), fixed.reshape(ind.shape)

    def affine(x, w, ind, b=None, **attrs):
        return ref_affine(x, weights(w, ind, attrs)[0], b, **split(attrs)[1])

    def convolution(x, w, ind, b=None, **attrs):
        return ref_convolution(x, weights(w, ind, attrs)[0], b, **split(attrs)[1])

    def updates(x, w, ind, b=None, **attrs):
        values, fixed = weights(w, ind, attrs)
        return {1: values, 2: fixed}

    mixed = (_D.normal(3, 4) > 0).astype(np.float32)
    why = ("the weight's gradient is the layer's with the rounded weights (NNabla's), not the "
           "derivative of the rounding; the indicators take none")
    no_grad = "weights are rounded in this case: finite differences see steps (" + why + ")"
    return {
        "inq_affine": Entry(
            [Case((_D.normal(2, 3), _D.normal(3, 4), np.zeros((3, 4), np.float32),
                   _D.normal(4))),
             Case((_D.normal(2, 3), _D.normal(3, 4), mixed, _D.normal(4)),
                  {"num_bits": 3}, no_grad=no_grad),
             Case((_D.normal(2, 2, 3), _D.normal(3, 2, 5), np.zeros((3, 2, 5), np.float32)),
                  {"base_axis": 2, "inq_iterations": (0, 4)}, no_grad=no_grad),
             Case((_D.normal(2, 5), _D.normal(5, 3), np.zeros((5, 3), np.float32), None),
                  {"num_bits": 2, "inq_iterations": (0,)}, no_grad=no_grad)],
            affine, updates=updates, grad_inputs=(0, 1, 3), why_not_others=why),
        "inq_convolution": Entry(
            [Case((_D.normal(2, 3, 5, 5), _D.normal(4, 3, 3, 3),
                   np.zeros((4, 3, 3, 3), np.float32), _D.normal(4)),
                  {"pad": (1, 1)}),
             Case((_D.normal(1, 4, 6, 6), _D.normal(4, 2, 2, 3),
                   np.zeros((4, 2, 2, 3), np.float32), None),
                  {"stride": (2, 1), "dilation": (1, 2), "group": 2, "num_bits": 5,
                   "inq_iterations": (0, 3)}, no_grad=no_grad)],
            convolution, updates=updates, grad_inputs=(0, 1, 3), why_not_others=why),
    }
