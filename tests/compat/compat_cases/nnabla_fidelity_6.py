"""NNabla 1.39's arithmetic where Stadyn computed otherwise, found comparing again:

* batch normalisation takes the batch variance in one pass, ``mean(x * x) - mean(x) ** 2``
  in float32 (``BatchNormalization::forward_impl_batch``), which cancels where the values are
  large against their spread: ``[3.0, 3.001]`` normalises to +-0.15810, not +-0.15616; its
  gradient is NNabla's formula on that variance, and the running variance moves by it
  (``F.batch_normalization``, ``F.fused_batch_normalization``, ``PF.batch_normalization``,
  static and dynamic), and ``F.tensor_normalization``, which is NNabla's batch normalisation;
* ``nnabla.functions`` has none of Stadyn's ``cast``, ``classification_error``,
  ``clip_by_value_scalar``, ``cross_entropy_with_softmax``, ``flatten``, ``grad``, ``sqrt``;
* ``F.bit_shift`` shifts uint16, uint32 and uint64 as it does uint8;
* ``F.norm`` is ``Abs``, ``PowScalar``, ``Sum``, ``PowScalar`` with their gradients (1 at a
  zero for p = 1, NaN for a zero norm), ``F.norm_normalization`` is ``x / F.norm(x)`` with
  ``eps`` unused;
* ``F.batch_inv`` of a singular matrix gives infinities and NaN, as NNabla's LU does;
* a registered parameter a program puts in a graph itself after setting its ``need_grad``
  False gets no gradient and a solver leaves it;
* a leaf's gradient array is kept through ``need_grad`` switched off and on;
* ``F.deconvolution`` refuses an output of size 0 on a spatial axis.
"""

import numpy as np

from compat_harness import nnabla_case

FN = "nnabla.functions."


def _near(r, shape, centre):
    """Values ``centre + 0.001 * k`` (k small integers, float32): large against their spread,
    two per normalised channel so that every summation order gives the same sums."""
    return (centre + 0.001 * r.randint(-3, 4, shape)).astype(np.float32)


@nnabla_case(names=[FN + "batch_normalization", FN + "fused_batch_normalization",
                    "nnabla.parametric_functions.batch_normalization"],
             rtol=1e-4, atol=1e-5,
             note="batch statistics of two values per channel (the sums are then the same in "
                  "any order): NNabla's one-pass variance cancels to 0 or a few ulps where "
                  "Stadyn's two-pass one kept 2.5e-7 (outputs +-0.15616 against +-0.15810)")
def batch_norm__one_pass(nn, F, PF, r):
    res = {}
    x_np = _near(r, (2, 3), 3.0)
    x_np[:, 0] = [3.0, 3.001]
    x4_np = _near(r, (2, 2, 1, 1), 7.0)
    xa_np = _near(r, (3, 2, 4), 5.0)
    dy, dy4, dya = r.randn(2, 3), r.randn(2, 2, 1, 1), r.randn(3, 2, 4)
    for dynamic in (False, True):
        mode = "dynamic " if dynamic else ""
        nn.clear_parameters()
        nn.set_auto_forward(dynamic)
        try:
            x = nn.Variable.from_numpy_array(x_np, need_grad=True)
            beta = nn.Variable.from_numpy_array(r.randn(1, 3), need_grad=True)
            gamma = nn.Variable.from_numpy_array(r.rand(1, 3, low=0.5, high=1.5),
                                                 need_grad=True)
            mean = nn.Variable.from_numpy_array(np.zeros((1, 3), np.float32))
            var = nn.Variable.from_numpy_array(np.ones((1, 3), np.float32))
            y = F.batch_normalization(x, beta, gamma, mean, var, batch_stat=True)
            if not dynamic:
                y.forward()
            for v in (x, beta, gamma):
                v.grad.zero()
            y.backward(dy)
            res[mode + "bn y"] = y.d.copy()
            res[mode + "bn dx"], res[mode + "bn dbeta"] = x.g.copy(), beta.g.copy()
            res[mode + "bn dgamma"] = gamma.g.copy()
            res[mode + "bn running"] = [mean.d.copy(), var.d.copy()]
            # the batch statistics as outputs
            y, bm, bv = F.batch_normalization(x, beta, gamma, mean, var, batch_stat=True,
                                              output_stat=True)
            if not dynamic:
                nn.forward_all([y, bm, bv])
            res[mode + "bn stats"] = [bm.d.copy(), bv.d.copy()]
            # several axes (NNabla's adapter): channels on axes 0 and 2, two values each
            xa = nn.Variable.from_numpy_array(np.transpose(xa_np, (0, 2, 1))[:, :, :2].copy(),
                                              need_grad=True)
            stat = np.zeros((3, 4, 1), np.float32)
            ya = F.batch_normalization(
                xa, nn.Variable.from_numpy_array(stat), nn.Variable.from_numpy_array(stat + 1),
                nn.Variable.from_numpy_array(stat), nn.Variable.from_numpy_array(stat + 1),
                axes=[0, 1], batch_stat=True)
            if not dynamic:
                ya.forward()
            xa.grad.zero()
            ya.backward(np.transpose(dya, (0, 2, 1))[:, :, :2].copy())
            res[mode + "bn axes (0, 1)"] = [ya.d.copy(), xa.g.copy()]
            # fused, with z
            x4 = nn.Variable.from_numpy_array(x4_np, need_grad=True)
            z = nn.Variable.from_numpy_array(0.1 * r.randn(2, 2, 1, 1), need_grad=True)
            s = np.zeros((1, 2, 1, 1), np.float32)
            fm, fv = nn.Variable.from_numpy_array(s), nn.Variable.from_numpy_array(s + 1)
            yf = F.fused_batch_normalization(x4, nn.Variable.from_numpy_array(s + 0.2),
                                             nn.Variable.from_numpy_array(s + 1.0), fm, fv, z,
                                             batch_stat=True)
            if not dynamic:
                yf.forward()
            x4.grad.zero()
            z.grad.zero()
            yf.backward(dy4)
            res[mode + "fused"] = [yf.d.copy(), x4.g.copy(), z.g.copy(), fv.d.copy()]
            # PF, its running variance
            xp = nn.Variable.from_numpy_array(x4_np, need_grad=True)
            yp = PF.batch_normalization(xp, batch_stat=True, name="bn6")
            if not dynamic:
                yp.forward()
            xp.grad.zero()
            yp.backward(dy4)
            params = nn.get_parameters(grad_only=False)
            res[mode + "PF"] = [yp.d.copy(), xp.g.copy(), params["bn6/bn/var"].d.copy(),
                                params["bn6/bn/gamma"].g.copy()]
        finally:
            nn.set_auto_forward(False)
    return res


@nnabla_case(names=[FN + "tensor_normalization"], rtol=1e-4, atol=1e-5,
             note="NNabla's tensor_normalization is its batch normalisation (one-pass "
                  "variance); two values per normalised slice")
def tensor_normalization__one_pass(nn, F, r):
    res = {}
    x_np = _near(r, (2, 3), 5.0)
    dy = r.randn(2, 3)
    for axes in ([1], [0]):
        x = nn.Variable.from_numpy_array(x_np if axes == [1] else x_np[:, :2].copy(),
                                         need_grad=True)
        y, m, v = F.tensor_normalization(x, axes, output_stat=True)
        nn.forward_all([y, m, v])
        x.grad.zero()
        y.backward(dy if axes == [1] else dy[:, :2].copy())
        res["axes %s" % axes] = [y.d.copy(), v.d.copy(), x.g.copy()]
    return res


@nnabla_case(names=[FN + "gather", FN + "reshape"],
             note="NNabla 1.39 has none of cast, classification_error, clip_by_value_scalar, "
                  "cross_entropy_with_softmax, flatten, grad, sqrt in nnabla.functions "
                  "(Stadyn's own ops, which its F offered): a program naming one gets an "
                  "AttributeError, as a typo does")
def functions_nnabla_lacks__more(nn, F, r):
    res = {"has gather": callable(F.gather), "has reshape": callable(F.reshape)}
    for name in ("cast", "classification_error", "clip_by_value_scalar",
                 "cross_entropy_with_softmax", "flatten", "grad", "sqrt"):
        try:
            getattr(F, name)
            res["F." + name] = "found"
        except AttributeError:
            res["F." + name] = "AttributeError"
    return res


@nnabla_case(names=[FN + "bit_shift"],
             note="every unsigned type NNabla computes in, shifted both ways, in both modes, "
                  "bits shifted out of the type lost (Stadyn refused uint16, uint32 and uint64: "
                  "torch's shift kernels take none of them)")
def bit_shift__wide_unsigned(nn, F, r):
    res = {}
    for dynamic in (False, True):
        mode = "dynamic " if dynamic else ""
        nn.set_auto_forward(dynamic)
        try:
            for dt in (np.uint8, np.uint16, np.uint32, np.uint64):
                top = np.iinfo(dt).max
                x = nn.Variable.from_numpy_array(
                    np.array([1, 200, 255, 7, top, top - 3, 12345 % (int(top) + 1)], dt))
                s = nn.Variable.from_numpy_array(np.array([1, 1, 2, 9, 1, 5, 3], dt))
                for direction in ("LEFT", "RIGHT"):
                    y = F.bit_shift(x, s, direction=direction)
                    if not dynamic:
                        y.forward()
                    res["%s%s %s" % (mode, np.dtype(dt).name, direction)] = y.d.copy()
        finally:
            nn.set_auto_forward(False)
    return res


@nnabla_case(names=[FN + "norm", FN + "norm_normalization"],
             note="NNabla 1.39 composes Norm as Abs, PowScalar, Sum, PowScalar: a 1-norm "
                  "passes 1 to a zero (Abs's gradient there), a norm of zeros NaN for p > 1; "
                  "NormNormalization is x / Norm(x), eps unused (an all-zero row is NaN); "
                  "Stadyn gave 0 gradients at zeros and added eps")
def norm__zeros(nn, F, r):
    res = {}
    x_np = np.array([[3.0, 4.0, -2.0], [0.0, 0.0, 0.0], [-1.0, 0.0, 0.5]], np.float32)
    dy = r.randn(3, 3)
    for dynamic in (False, True):
        mode = "dynamic " if dynamic else ""
        nn.set_auto_forward(dynamic)
        try:
            x = nn.Variable.from_numpy_array(x_np, need_grad=True)
            for p in (1, 2, 3):
                n = F.norm(x, p=p, axis=1, keepdims=True)
                if not dynamic:
                    n.forward()
                x.grad.zero()
                n.backward(dy[:, :1].copy())
                res["%snorm p=%d" % (mode, p)] = [n.d.copy(), x.g.copy()]
                for eps in (1e-12, 0.5):
                    y = F.norm_normalization(x, p=p, axes=1, eps=eps)
                    if not dynamic:
                        y.forward()
                    x.grad.zero()
                    y.backward(dy)
                    res["%snorm_normalization p=%d eps=%g" % (mode, p, eps)] = [y.d.copy(),
                                                                                x.g.copy()]
        finally:
            nn.set_auto_forward(False)
    return res


@nnabla_case(names=[FN + "batch_inv"],
             note="a singular matrix is inverted as NNabla's LU (Eigen, partial pivoting) "
                  "goes, to infinities and NaN, in both modes (Stadyn raised torch's error)")
def batch_inv__singular(nn, F, r):
    res = {}
    a = np.array([[[1.0, 2.0], [2.0, 4.0]], [[1.0, 0.0], [0.0, 2.0]], [[0.0, 0.0], [0.0, 0.0]],
                  [[0.0, 1.0], [0.0, 0.0]]], np.float32)
    b = np.arange(1.0, 10.0, dtype=np.float32).reshape(1, 3, 3)
    for dynamic in (False, True):
        mode = "dynamic " if dynamic else ""
        nn.set_auto_forward(dynamic)
        try:
            for name, m in (("2x2", a), ("3x3", b)):
                y = F.batch_inv(nn.Variable.from_numpy_array(m))
                if not dynamic:
                    y.forward()
                res[mode + name] = y.d.copy()
        finally:
            nn.set_auto_forward(False)
    return res


@nnabla_case(names=["nnabla.get_parameters", "nnabla.Variable.need_grad",
                    "nnabla.functions.affine"],
             note="the registered W itself put in a graph (F.affine(x, W, b)) with "
                  "W.need_grad = False, set before or after the graph was built: NNabla 1.39 "
                  "writes no gradient to W and a solver given it before leaves it; x's "
                  "gradient and the listing agree")
def registered_parameter_in_graph__need_grad_false(nn, F, PF, S, r):
    r.touch("nnabla.Variable.need_grad")
    res = {}
    for dynamic in (False, True):
        mode = "dynamic " if dynamic else ""
        for when in ("before", "after"):
            nn.clear_parameters()
            nn.set_auto_forward(dynamic)
            try:
                x = nn.Variable.from_numpy_array(np.array([[3.0, 4.0]], np.float32),
                                                 need_grad=True)
                with nn.parameter_scope("fc"):
                    PF.affine(x, 2)
                params = nn.get_parameters()
                w, b = params["fc/affine/W"], params["fc/affine/b"]
                w.d = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
                b.d = np.zeros(2, np.float32)
                solver = S.Sgd(0.1)
                solver.set_parameters(nn.get_parameters())
                if when == "before":
                    w.need_grad = False
                loss = F.sum(F.affine(x, w, b))
                if when == "after":
                    w.need_grad = False
                solver.zero_grad()
                if not dynamic:
                    loss.forward()
                loss.backward()
                res["%sW.g %s" % (mode, when)] = w.g.copy()
                solver.update()
                res["%sW after %s" % (mode, when)] = w.d.copy()
                res["%sx.g %s" % (mode, when)] = x.g.copy()
                res["%slisted %s" % (mode, when)] = sorted(nn.get_parameters().keys())
            finally:
                nn.set_auto_forward(False)
    return res


@nnabla_case(names=["nnabla.Variable.need_grad", "nnabla.Variable.g"],
             note="a leaf's gradient array is kept through need_grad switched off and on "
                  "(NNabla reads it back; a backward then accumulates onto it); Stadyn read "
                  "zeros while the flag was off and lost what it held when switched on")
def leaf_gradient__kept_through_need_grad(nn, F, r):
    r.touch("nnabla.Variable.need_grad")
    r.touch("nnabla.Variable.g")
    res = {}
    for dynamic in (False, True):
        mode = "dynamic " if dynamic else ""
        nn.set_auto_forward(dynamic)
        try:
            x = nn.Variable.from_numpy_array(np.array([3.0, 4.0], np.float32), need_grad=True)
            u = nn.Variable.from_numpy_array(np.array([1.0, 2.0], np.float32), need_grad=True)
            x.g = np.array([5.0, 5.0], np.float32)
            x.need_grad = False
            res[mode + "x.g off"] = x.g.copy()
            loss = F.sum(x * u)
            if not dynamic:
                loss.forward()
            loss.backward()
            res[mode + "x.g after backward off"] = x.g.copy()
            x.need_grad = True
            res[mode + "x.g on"] = x.g.copy()
            z = nn.Variable.from_numpy_array(np.array([3.0, 4.0], np.float32))
            z.g = np.array([5.0, 5.0], np.float32)
            loss = F.sum(z * u)
            z.need_grad = True
            if not dynamic:
                loss.forward()
            loss.backward()
            res[mode + "z.g switched on"] = z.g.copy()
        finally:
            nn.set_auto_forward(False)
    return res


@nnabla_case(names=[FN + "deconvolution"],
             note="found by tools/nnabla_fuzz.py --seed 4: an output of size 0 on a spatial "
                  "axis is refused (Deconvolution::setup_impl checks size > 0), in both "
                  "modes; Stadyn computed an empty output")
def deconvolution__empty_output_refused(nn, F, r):
    res = {}
    calls = (("pad 2 group 2", dict(pad=(2,), dilation=(1,), group=2), (2, 2, 3), (2, 1, 2)),
             ("pad (1, 2) stride (2, 1)", dict(pad=(1, 2), stride=(2, 1)), (2, 1, 3, 4),
              (1, 1, 2, 1)),
             ("pad (1, 1) stride (2, 1)", dict(pad=(1, 1), stride=(2, 1)), (2, 1, 3, 4),
              (1, 1, 2, 3)),
             ("output_padding", dict(pad=(1,), output_padding=(1,), stride=(2,)), (1, 1, 2),
              (1, 1, 1)))
    for dynamic in (False, True):
        mode = "dynamic " if dynamic else ""
        nn.set_auto_forward(dynamic)
        try:
            for label, kw, xs, ws in calls:
                x = nn.Variable.from_numpy_array(r.randn(*xs))
                w = nn.Variable.from_numpy_array(r.randn(*ws))
                try:
                    y = F.deconvolution(x, w, **kw)
                    if not dynamic:
                        y.forward()
                    res[mode + label] = y.d.copy()
                except RuntimeError:
                    res[mode + label] = "RuntimeError"
        finally:
            nn.set_auto_forward(False)
    return res
