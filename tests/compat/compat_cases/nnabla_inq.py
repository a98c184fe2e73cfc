"""Incremental network quantisation: ``F.inq_affine``, ``F.inq_convolution`` and their
``PF`` layers over several forwards of one static graph with a plain SGD step between them
(the schedule of ``inq_iterations``: which weights become fixed when, their power-of-two values,
the undoing of a fixed weight's update, outputs and gradients at every step), a dynamic-mode
call (each call is a new function: its run count starts at 0), and ``selection_algorithm=
"random"`` through properties only (NNabla's generator is not Stadyn's).
"""

import numpy as np

from compat_harness import nnabla_case

P = "nnabla.parametric_functions."


def _steps(nn, y, x, w, i, b, r, res, steps, lr=0.1):
    """``steps`` forwards of ``y``; after each, the output, ``W``, ``I`` and the gradients,
    then ``W -= lr * dW`` (and ``b``)."""
    wy = r.weights_like(np.zeros(y.shape, np.float32))
    for k in range(steps):
        y.forward()
        res["out %d" % k] = y.d.copy()
        res["W %d" % k] = w.d.copy()
        res["I %d" % k] = i.d.astype(np.float32)   # NNabla 1.39 reads them back as int32
        for v in (x, w) + ((b,) if b is not None else ()):
            v.g = 0
        y.backward(wy)
        res["grad x %d" % k] = x.g.copy()
        res["grad W %d" % k] = w.g.copy()
        w.d = w.d - lr * w.g
        if b is not None:
            res["grad b %d" % k] = b.g.copy()
            b.d = b.d - lr * b.g


def _f_case(name, kind, x_shape, w_shape, bias, steps, **opts):
    def fn(nn, F, r):
        x = nn.Variable.from_numpy_array(r.randn(*x_shape), need_grad=True)
        w = nn.Variable.from_numpy_array(r.randn(*w_shape), need_grad=True)
        i = nn.Variable.from_numpy_array(np.zeros(w_shape, np.float32))
        b = None
        if bias:
            b = nn.Variable.from_numpy_array(r.randn(w_shape[0] if kind == "conv"
                                                     else w_shape[-1]), need_grad=True)
        f = F.inq_convolution if kind == "conv" else F.inq_affine
        y = f(x, w, i, b, **opts)
        res = {"shape": list(y.shape)}
        _steps(nn, y, x, w, i, b, r, res, steps)
        return res
    fn.__name__ = name
    nnabla_case(name=name, names=["nnabla.functions.inq_" + (
        "convolution" if kind == "conv" else "affine")])(fn)


_f_case("inq_affine", "affine", (2, 3), (3, 4), True, 7, inq_iterations=(1, 3, 5))
_f_case("inq_affine__options", "affine", (2, 2, 3), (3, 2, 5), False, 4, base_axis=2,
        num_bits=3, inq_iterations=(0, 2), selection_algorithm="largest_abs")
_f_case("inq_affine__zero_bits", "affine", (2, 4), (4, 6), True, 3, num_bits=2,
        inq_iterations=(0, 1, 2))
_f_case("inq_convolution", "conv", (2, 3, 5, 5), (4, 3, 3, 3), True, 6,
        inq_iterations=(1, 2, 4), num_bits=5, pad=(1, 1), stride=(2, 1))
_f_case("inq_convolution__group", "conv", (1, 4, 6, 6), (4, 2, 2, 3), False, 4,
        inq_iterations=(0, 1, 2, 3), group=2, dilation=(2, 1))


@nnabla_case(names=["nnabla.functions.inq_affine"])
def inq_affine__dynamic(nn, F, r):
    """In dynamic mode every call is a new function: its count starts at 0 each time."""
    x = nn.Variable.from_numpy_array(r.randn(2, 4), need_grad=True)
    w = nn.Variable.from_numpy_array(r.randn(4, 4), need_grad=True)
    i = nn.Variable.from_numpy_array(np.zeros((4, 4), np.float32))
    res = {}
    with nn.auto_forward():
        for k in range(3):
            y = F.inq_affine(x, w, i, inq_iterations=(0, 5))
            res["out %d" % k] = y.d.copy()
            res["W %d" % k] = w.d.copy()
            res["I %d" % k] = i.d.astype(np.float32)
    return res


def _powers_of_two(values, num_bits):
    """Whether every value is 0 or +-2^e with e in NNabla's window below max |values|."""
    top = np.abs(values).max()
    n1 = int(np.floor(np.log2(top)) + (np.log2(top) - np.floor(np.log2(top)) >= np.log2(1.5)))
    n2 = n1 + 1 - 2 ** (num_bits - 2)
    nonzero = np.abs(values[values != 0])
    e = np.log2(nonzero)
    return bool(np.all(e == np.round(e)) and np.all((e >= n2) & (e <= n1)))


@nnabla_case(names=["nnabla.functions.inq_affine"])
def inq_affine__random(nn, F, r):
    """``selection_algorithm="random"``: properties only.  At the first step about half of the
    weights become fixed, at the last all; fixed weights are powers of two (or 0), the others
    keep their values."""
    x = nn.Variable.from_numpy_array(r.randn(2, 16), need_grad=True)
    w0 = r.randn(16, 16)
    w = nn.Variable.from_numpy_array(w0.copy(), need_grad=True)
    i = nn.Variable.from_numpy_array(np.zeros((16, 16), np.float32))
    y = F.inq_affine(x, w, i, inq_iterations=(1, 2), selection_algorithm="random", seed=3)
    res = {}
    for k in range(3):
        y.forward()
        fixed = i.d.astype(np.float32) == 1
        res["indicators are 0 or 1 %d" % k] = bool(np.isin(i.d, (0, 1)).all())
        res["fraction fixed within 0.3-0.7 %d" % k] = bool(0.3 < fixed.mean() < 0.7)
        res["all fixed %d" % k] = bool(fixed.all())
        res["none fixed %d" % k] = bool(not fixed.any())
        res["fixed are powers of two %d" % k] = _powers_of_two(w.d[fixed], 4) if fixed.any() \
            else True
        res["learnable unchanged %d" % k] = bool(np.array_equal(w.d[~fixed], w0[~fixed]))
        if k == 0:                      # later, the quantised weights depend on the draws
            x.g = 0
            y.backward(r.weights_like(y.d))
            res["grad x"] = x.g.copy()
        w0 = w.d.copy()
    return res


def _pf_case(name, build, x_shape, steps, names):
    def fn(nn, PF, r):
        x = nn.Variable.from_numpy_array(r.randn(*x_shape), need_grad=True)
        y = build(PF, x)
        params = nn.get_parameters(grad_only=False)
        res = {"params": r.set_params(dict((k, v) for k, v in params.items()
                                           if not k.endswith("/I"))),
               "need_grad": sorted([k, bool(v.need_grad)] for k, v in params.items()),
               "initial I": sorted([k, float(np.abs(v.d).max())] for k, v in params.items()
                                   if k.endswith("/I")),
               "shape": list(y.shape)}
        get = dict((k.split("/")[-1], v) for k, v in params.items())
        _steps(nn, y, x, get["W"], get["I"], get.get("b"), r, res, steps)
        return res
    fn.__name__ = name
    nnabla_case(name=name, names=names)(fn)


_pf_case("PF_inq_affine",
         lambda PF, x: PF.inq_affine(x, 4, inq_iterations=(1, 2, 3),
                                     selection_algorithm="largest_abs"), (2, 5), 4,
         [P + "inq_affine"])
_pf_case("PF_inq_affine__options",
         lambda PF, x: PF.inq_affine(x, (2, 3), base_axis=2, num_bits=3, inq_iterations=(0, 2),
                                     selection_algorithm="largest_abs", with_bias=False,
                                     name="q"), (2, 2, 3), 3, [P + "inq_affine"])
_pf_case("PF_inq_convolution",
         lambda PF, x: PF.inq_convolution(x, 3, (3, 3), pad=(1, 1), num_bits=5,
                                          inq_iterations=(1, 3),
                                          selection_algorithm="largest_abs"), (2, 2, 4, 4), 4,
         [P + "inq_convolution"])
_pf_case("PF_inq_convolution__no_bias",
         lambda PF, x: PF.inq_convolution(x, 2, (2, 2), stride=(2, 2), with_bias=False,
                                          inq_iterations=(0, 1),
                                          selection_algorithm="largest_abs"), (1, 3, 4, 4), 2,
         [P + "inq_convolution"])


@nnabla_case(names=[P + "inq_affine", P + "inq_convolution"])
def PF_inq__random_default(nn, PF, r):
    """The layers' default selection is ``"random"``: properties only (see above); before the
    first step in the schedule nothing is fixed, at its last everything is."""
    x = nn.Variable.from_numpy_array(r.randn(2, 3, 4, 4), need_grad=True)
    y = PF.inq_affine(PF.inq_convolution(x, 2, (3, 3), inq_iterations=(1, 2)), 3,
                      inq_iterations=(1, 2))
    params = nn.get_parameters(grad_only=False)
    res = {"params": r.set_params(dict((k, v) for k, v in params.items()
                                       if not k.endswith("/I")))}
    for k in range(3):
        y.forward()
        for name, v in sorted(params.items()):
            if name.endswith("/I"):
                res["%s fixed none/all %d" % (name, k)] = [bool((v.d == 0).all()),
                                                          bool((v.d == 1).all())]
    return res
