"""NNabla 1.39 in a ``cpu:half`` context, mended in nnhalf41: the functions left computing
a step in float32 (fused batch normalisation's ``z``) or rounding an element-wise backward
once where NNabla's ``Half`` rounds each operation."""

import numpy as np

from compat_harness import nnabla_case

_HALF = ["nnabla.context_scope", "nnabla.ext_utils.get_extension_context"]

_G_DTYPE = ("a float32 leaf's gradient written by a function made in cpu:half is float16 on "
            "NNabla 1.39 (the function's backward casts the grad array to Half) and float32 "
            "in Stadyn, whose cast back to a leaf's dtype is autograd's (graph/_precision.py); "
            "the values are the same")


def _array(a):
    return [str(a.dtype), np.asarray(a, np.float32).ravel().tolist()]


def _f32(a):
    return np.asarray(a, np.float32)


_FBN = ["nnabla.functions.fused_batch_normalization",
        "nnabla.parametric_functions.fused_batch_normalization", "nnabla.clear_parameters"]


@nnabla_case(names=_HALF + _FBN, rtol=0.0, atol=0.0,
             known={"static g dtype": _G_DTYPE, "dyn g dtype": _G_DTYPE})
def half41__fused_batch_normalization(nn, F, r):
    """NNabla 1.39's ``FusedBatchNormalization<Half>`` normalises in float16 and then runs
    ``Add2`` and ``ReLU`` of its own type on the output (fused_batch_normalization.cpp,
    ``forward_impl``): ``z`` is read as float16 and the sum rounded (y 1.044921875, float16),
    and its backward hands ``z`` the float16 gradient.  Stadyn added a float32 ``z`` to the
    float16 normalised values in float32 (y 1.0453257561, float32; ``z.g`` the unrounded
    ``dy``).  Static and dynamic, with and without ``z``, training and inference, and
    ``PF.fused_batch_normalization``: outputs (dtype, values), the gradients of float32
    leaves for a seeded ``dy``."""
    EU = r.module("nnabla.ext_utils")
    PF = r.module("nnabla.parametric_functions")
    r.touch(*(_HALF + _FBN))
    half = EU.get_extension_context("cpu", type_config="half")
    rs = np.random.RandomState(4141)
    res = {}
    for dyn in (False, True):
        k = "dyn " if dyn else "static "
        nn.set_auto_forward(dyn)
        gdt = set()
        for i, (with_z, batch_stat) in enumerate(((True, True), (False, True), (True, False))):
            x = nn.Variable.from_numpy_array((rs.randn(4, 3, 5, 2) * 2 + 0.5)
                                             .astype(np.float32), need_grad=True)
            b = nn.Variable.from_numpy_array(rs.randn(1, 3, 1, 1).astype(np.float32),
                                             need_grad=True)
            g = nn.Variable.from_numpy_array((rs.rand(1, 3, 1, 1) + 0.5).astype(np.float32),
                                             need_grad=True)
            m = nn.Variable.from_numpy_array((rs.randn(1, 3, 1, 1) * 0.1).astype(np.float32))
            v = nn.Variable.from_numpy_array((rs.rand(1, 3, 1, 1) + 0.5).astype(np.float32))
            z = nn.Variable.from_numpy_array(rs.randn(4, 3, 5, 2).astype(np.float32),
                                             need_grad=True) if with_z else None
            with nn.context_scope(half):
                y = F.fused_batch_normalization(x, b, g, m, v, z, batch_stat=batch_stat)
            y.forward()
            leaves = [("x", x), ("b", b), ("g", g)] + ([("z", z)] if with_z else [])
            for _, leaf in leaves:
                leaf.grad.zero()
            y.backward(rs.randn(*y.shape).astype(np.float32))
            key = "%s%d z=%r batch_stat=%r" % (k, i, with_z, batch_stat)
            res[key + " y"] = _array(y.d)
            for name, leaf in leaves:
                res["%s %s.g" % (key, name)] = _f32(leaf.g)
                gdt.add(str(leaf.g.dtype))
            res[key + " running"] = [_f32(m.d), _f32(v.d)]
        nn.clear_parameters()
        x = nn.Variable.from_numpy_array(rs.randn(6, 4, 3).astype(np.float32), need_grad=True)
        z = nn.Variable.from_numpy_array(rs.randn(6, 4, 3).astype(np.float32), need_grad=True)
        with nn.context_scope(half):
            y = PF.fused_batch_normalization(x, z, name="fbn")
        y.forward()
        x.grad.zero()
        z.grad.zero()
        y.backward(rs.randn(6, 4, 3).astype(np.float32))
        res[k + "PF y"] = _array(y.d)
        res[k + "PF x.g"] = _f32(x.g)
        res[k + "PF z.g"] = _f32(z.g)
        gdt.update([str(x.g.dtype), str(z.g.dtype)])
        res[k + "g dtype"] = sorted(gdt)
        nn.clear_parameters()
        nn.set_auto_forward(False)
    return res
