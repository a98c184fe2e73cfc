"""NNabla 1.39 in a ``cpu:half`` context, mended in nnhalfbn40: its CPU
``BatchNormalization`` computes every step in float16."""

import numpy as np

from compat_harness import nnabla_case

_HALF = ["nnabla.context_scope", "nnabla.ext_utils.get_extension_context"]

_G_DTYPE = ("a float32 leaf's gradient written by a function made in cpu:half is float16 on "
            "NNabla 1.39 (the function's backward casts the grad array to Half) and float32 "
            "in Stadyn, whose cast back to a leaf's dtype is autograd's (graph/_precision.py); "
            "the values are the same")
_STAT_DTYPE = ("NNabla 1.39's training step casts the running mean and variance arrays to "
               "Half (cast_data_and_get_pointer<Half>: batch_normalization.cpp:184-187), so "
               "they become float16; Stadyn keeps the parameters' float32 arrays and stores "
               "the float16 values there (the values are the same)")

_BN = ["nnabla.functions.batch_normalization", "nnabla.parametric_functions.batch_normalization",
       "nnabla.clear_parameters"]


def _f32(a):
    return np.asarray(a, np.float32)


@nnabla_case(names=_HALF + _BN, rtol=0.0, atol=0.0,
             known={"static g dtype": _G_DTYPE, "dyn g dtype": _G_DTYPE,
                    "static stat dtype": _STAT_DTYPE, "dyn stat dtype": _STAT_DTYPE})
def half40c__batch_normalization(nn, F, r):
    """NNabla 1.39's CPU ``BatchNormalization<Half>`` (batch_normalization.cpp:190-211)
    folds ``m += x`` and ``v += x * x`` per channel in float16, ``m /= n`` (``n`` a Half),
    ``v = v / n - m * m``, normalises ``(x - m) * gamma / sqrt(v + eps) + beta`` rounding
    each step, moves the running statistics in float with the float ``decay_rate`` and
    rounds them to float16; its backward (:233-318) is the same formula in float16 folds,
    and without batch statistics its backward is ``Half`` functions (``PowScalar(-0.5)``,
    ``Mul2``, ``Sum``).  Stadyn normalised in float32 and rounded once, and kept float32
    statistics: outputs up to ~5 % relative off where the mean is large against the spread,
    gradients and running statistics too.  Static and dynamic, train and inference, with
    and without beta/gamma, a 2-d input, a (16, 8, 7, 7) input of mean 3 and
    ``PF.batch_normalization``: outputs, the gradients of float32 leaves for a seeded
    ``dy``, the running statistics after the step."""
    EU = r.module("nnabla.ext_utils")
    PF = r.module("nnabla.parametric_functions")
    r.touch(*(_HALF + _BN))
    half = EU.get_extension_context("cpu", type_config="half")
    rs = np.random.RandomState(4041)
    shapes = [((4, 3, 5, 6), 1.0, 2.0, True), ((16, 8, 7, 7), 3.0, 0.5, True),
              ((16, 5), 0.0, 1.0, True), ((6, 4, 3, 3), -1.0, 1.5, False)]
    res = {}
    for dyn in (False, True):
        k = "dyn " if dyn else "static "
        nn.set_auto_forward(dyn)
        gdt, sdt = set(), set()
        for i, (shape, loc, scale, affine) in enumerate(shapes):
            c = shape[1]
            ps = (1, c) + (1,) * (len(shape) - 2)
            x = (rs.randn(*shape) * scale + loc).astype(np.float32)
            b = rs.randn(*ps).astype(np.float32)
            g = (rs.rand(*ps) + 0.5).astype(np.float32)
            rm = (rs.randn(*ps) * 0.3 + loc).astype(np.float32)
            rv = (rs.rand(*ps) * scale * scale + 0.2).astype(np.float32)
            dy = rs.randn(*shape).astype(np.float32)
            for bs in (True, False):
                key = "%s%d %s " % (k, i, "train" if bs else "infer")
                vx = nn.Variable.from_numpy_array(x, need_grad=True)
                vb = nn.Variable.from_numpy_array(b, need_grad=True) if affine else None
                vg = nn.Variable.from_numpy_array(g, need_grad=True) if affine else None
                vm = nn.Variable.from_numpy_array(rm.copy())
                vv = nn.Variable.from_numpy_array(rv.copy())
                with nn.context_scope(half):
                    y = F.batch_normalization(vx, vb, vg, vm, vv, batch_stat=bs)
                if not dyn:
                    y.forward()
                y.backward(dy)
                res[key + "y"] = [str(y.d.dtype), _f32(y.d)]
                for name, v in (("x", vx), ("b", vb), ("g", vg)):
                    if v is not None:
                        res[key + "g" + name] = _f32(v.g)
                        gdt.add(str(v.g.dtype))
                res[key + "mean"] = _f32(vm.d)
                res[key + "var"] = _f32(vv.d)
                if bs:
                    sdt.add(str(vm.d.dtype))
                    sdt.add(str(vv.d.dtype))
        res[k + "g dtype"] = sorted(gdt)
        res[k + "stat dtype"] = sorted(sdt)
        nn.clear_parameters()
        x = (rs.randn(8, 6, 4, 4) * 0.7 + 2.0).astype(np.float32)
        dy = rs.randn(8, 6, 4, 4).astype(np.float32)
        vx = nn.Variable.from_numpy_array(x, need_grad=True)
        with nn.context_scope(half):
            y = PF.batch_normalization(vx, name="bn")
        if not dyn:
            y.forward()
        y.backward(dy)
        res[k + "PF y"] = _f32(y.d)
        res[k + "PF gx"] = _f32(vx.g)
        for name, p in sorted(nn.get_parameters(grad_only=False).items()):
            res[k + "PF " + name] = _f32(p.d)
            res[k + "PF g" + name] = _f32(p.g)
        nn.clear_parameters()
    nn.set_auto_forward(False)
    return res


@nnabla_case(names=_HALF + ["nnabla.functions.batch_normalization", "nnabla.functions.sum"],
             rtol=0.0, atol=0.0, known={"static g dtype": _G_DTYPE, "dyn g dtype": _G_DTYPE})
def half40c__batch_normalization_output_stat(nn, F, r):
    """``F.batch_normalization(..., output_stat=True)`` in ``cpu:half``: NNabla 1.39 returns
    its kernel's float16 batch mean and variance (the folds of
    batch_normalization.cpp:190-201) and adds their gradients into its backward's ``dvar``
    and ``dmean`` (:280-283) in float16.  Stadyn returned ``torch.mean`` of the float16 data
    and the one-pass variance from it (on other data of this shape: mean 2.98828 where
    NNabla's fold gives 2.98438, variance 0.28125 vs 0.296875) and took their gradients
    through those: here 763 of the 800 values of ``dx`` were off.
    Static and dynamic; ``y``, the statistics, the gradients of a loss reading all three."""
    r.touch(*(_HALF + ["nnabla.functions.batch_normalization", "nnabla.functions.sum"]))
    EU = r.module("nnabla.ext_utils")
    half = EU.get_extension_context("cpu", type_config="half")
    rs = np.random.RandomState(4042)
    x = (rs.randn(8, 4, 5, 5) * 0.5 + 3.0).astype(np.float32)
    b = rs.randn(1, 4, 1, 1).astype(np.float32)
    g = (rs.rand(1, 4, 1, 1) + 0.5).astype(np.float32)
    res = {}
    for dyn in (False, True):
        k = "dyn " if dyn else "static "
        nn.set_auto_forward(dyn)
        vs = [nn.Variable.from_numpy_array(a, need_grad=True) for a in (x, b, g)]
        vm = nn.Variable.from_numpy_array(np.zeros((1, 4, 1, 1), np.float32))
        vv = nn.Variable.from_numpy_array(np.ones((1, 4, 1, 1), np.float32))
        with nn.context_scope(half):
            y, bm, bv = F.batch_normalization(vs[0], vs[1], vs[2], vm, vv, batch_stat=True,
                                              output_stat=True)
            loss = F.sum(y * y) + F.sum(bm * 3.0) + F.sum(bv * 2.0)
        if not dyn:
            loss.forward()
        loss.backward()
        for name, v in (("y", y), ("bm", bm), ("bv", bv)):
            res[k + name] = [str(v.d.dtype), _f32(v.d)]
        res[k + "g dtype"] = sorted(set(str(v.g.dtype) for v in vs))
        for name, v in zip(("x", "b", "g"), vs):
            res[k + "g" + name] = _f32(v.g)
        res[k + "mean"] = _f32(vm.d)
        res[k + "var"] = _f32(vv.d)
    nn.set_auto_forward(False)
    return res
