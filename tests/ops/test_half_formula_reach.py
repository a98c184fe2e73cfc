"""NNabla's ``Half`` expressions of the element-wise ops (``ops/_half_elementwise.py``) apply
to NNabla's ``cpu:half`` functions only (a node bound to a float16 context:
``OpSpec.half_formula``), not to every float16 CPU tensor: Stadyn's own float16 graphs, in a
float16 context or not, dynamic or static, compute torch's float16 kernels (values and
gradients bit for bit torch's, and their cost: a bias's gradient over (16, 16, 28, 28) was
NNabla's one-addition-at-a-time fold, 100x torch's sum).  The NNabla side stays bit-exact
against NNabla 1.39 (cases ``nnabla_half_41``)."""

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.functions as F


def _data():
    rs = np.random.RandomState(3)
    x = (rs.randn(6, 40) * 1.5).astype(np.float16)
    b = (rs.randn(1, 40) + 3).astype(np.float16)
    dy = rs.rand(6, 40).astype(np.float16) + np.float16(0.5)
    return x, b, dy


_OPS = {"tanh": (torch.tanh, F.tanh), "sigmoid": (torch.sigmoid, F.sigmoid),
        "pow_scalar": (lambda x: torch.pow(x, 3.0), lambda x: F.pow_scalar(x, 3.0)),
        "div2": (torch.div, lambda x, b: x / b), "add2": (torch.add, lambda x, b: x + b),
        "mul2": (torch.mul, lambda x, b: x * b)}


def _torch(name, xs, dy):
    ts = [torch.from_numpy(a).requires_grad_() for a in xs]
    y = _OPS[name][0](*ts)
    y.backward(torch.from_numpy(dy))
    return [y.detach().numpy()] + [t.grad.numpy() for t in ts]


def _stadyn(name, xs, dy, static):
    vs = [sd.Variable.from_numpy_array(a, need_grad=True) for a in xs]
    y = _OPS[name][1](*vs)
    y.forward()
    y.backward(dy)
    return [y.d] + [v.g for v in vs]


@pytest.mark.parametrize("static", [False, True])
@pytest.mark.parametrize("in_context", [False, True])
@pytest.mark.parametrize("name", sorted(_OPS))
def test_stadyn_float16_graphs_compute_torchs_float16_kernels(name, static, in_context):
    x, b, dy = _data()
    xs = (x, b) if name in ("div2", "add2", "mul2") else (x,)
    context = sd.context("cpu", dtype="float16") if in_context else _nothing()
    with context, sd.auto_forward(not static):
        got = _stadyn(name, xs, dy, static)
    want = _torch(name, xs, dy)
    assert got[0].dtype == np.float16
    for what, g, w in zip(("y", "x.g", "b.g"), got, want):
        # the gradients as torch's float16 backward gives them (the leaf's .g float32 of them)
        np.testing.assert_array_equal(g, w.astype(g.dtype), err_msg=f"{name} {what}")


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("static", [False, True])
@pytest.mark.parametrize("in_context", [False, True])
def test_stadyn_float16_swish_nnabla_rule_computes_torchs_float16_kernels(static, in_context):
    """``F.swish(x, rule="nnabla")`` of Stadyn's own float16 values: torch's float16
    ``x * sigmoid(x)`` and the rule's backward ``dy * (y + sigmoid(x) * (1 - y))`` in torch's
    float16 ops (it computed NNabla's ``Half`` steps for any float16 CPU input: 100 of the
    240 values of ``y`` apart here); NNabla's ``cpu:half`` keeps them (case
    ``nnabla_half_41.half41__activations_in_half``)."""
    x, _, dy = _data()
    context = sd.context("cpu", dtype="float16") if in_context else _nothing()
    with context, sd.auto_forward(not static):
        v = sd.Variable.from_numpy_array(x, need_grad=True)
        y = F.swish(v, rule="nnabla")
        y.forward()
        y.backward(dy)
    t, g = torch.from_numpy(x), torch.from_numpy(dy)
    want_y = t * torch.sigmoid(t)
    want_g = g * (want_y + torch.sigmoid(t) * (1 - want_y))
    np.testing.assert_array_equal(y.d, want_y.numpy())
    np.testing.assert_array_equal(v.g, want_g.numpy().astype(v.g.dtype))
