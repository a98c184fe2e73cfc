"""NNabla 1.39's arithmetic where Stadyn computed otherwise, found comparing again:

* ``F.layer_normalization``, ``F.instance_normalization`` and ``F.group_normalization`` (and
  their ``PF`` functions) are NNabla's batch normalisation over the kept axes
  (``TensorNormalization``), so they take the variance in one pass too, ``mean(x * x) -
  mean(x) ** 2`` in float32: rows ``[3, 3.001]`` and ``[5, 5.001]`` normalise to +-0.15810
  and -0.13445/0.13458, where the two-pass variance gave +-0.15616 and -0.15609/0.15624; the
  gradients (first and second: MAML's) are NNabla's formula on that variance;
* ``F.abs``'s gradient is ``x < 0 ? -1 : 1`` (include/nbla/function/abs.hpp): 1 at 0, -0.0
  and NaN, where torch's ``sign`` gave 0 at all three;
* ``need_grad`` of a registered parameter a program put in a graph itself (``F.affine(x, W,
  b)``) is read when the backward runs, static (the graph replayed) and dynamic: set True
  again after the graph was built with it False, W gets its gradient and a solver moves it
  (Stadyn's graph had kept W's flag of the build); a plain Variable's flag likewise;
* a function's ``info.args`` (and so the profiler CSV's ``args_info`` column) are NNabla's
  arguments: its names (``axes``/``keep_dims``, ``no_scale``/``no_bias``), its order, the
  defaults its wrapper resolves (``stride`` [1, 1], a pooling's stride its kernel, every axis,
  the last axis) and its float32 values (``decay_rate`` 0.8999999761581421); ``F.constant``'s
  and ``F.randn``'s ``parent`` is a Function with ``info``.
"""

import numpy as np

from compat_harness import nnabla_case

FN = "nnabla.functions."
PFN = "nnabla.parametric_functions."


def _near(r, shape, centre):
    """Values ``centre + 0.001 * k`` (k small integers, float32): large against their spread.
    Every normalised slice below holds two values, so the sums do not depend on their order."""
    return (centre + 0.001 * r.randint(-3, 4, shape)).astype(np.float32)


def _run(nn, dynamic, outputs, leaves, dy):
    """Forward (static graphs), zero the leaves' gradients, backward ``dy`` from the first."""
    if not dynamic:
        nn.forward_all(outputs)
    for v in leaves:
        v.grad.zero()
    outputs[0].backward(dy)
    return [o.d.copy() for o in outputs] + [v.g.copy() for v in leaves]


@nnabla_case(names=[FN + "layer_normalization", FN + "instance_normalization",
                    FN + "group_normalization", PFN + "layer_normalization",
                    PFN + "instance_normalization", PFN + "group_normalization"],
             rtol=1e-4, atol=1e-5,
             note="two values per normalised slice: NNabla's one-pass variance cancels to 0 or "
                  "a few ulps where Stadyn's two-pass one kept 2.5e-7 (+-0.15616 against "
                  "+-0.15810 for [3, 3.001]); static and dynamic, forward, backward, "
                  "output_stat and nn.grad's second derivative")
def normalization__one_pass(nn, F, PF, r):
    res = {}
    x2 = np.array([[3.0, 3.001], [5.0, 5.001]], np.float32)
    x3 = _near(r, (2, 3, 2), 7.0)                    # (N, C, 2): instance, layer over (1,)
    x4 = _near(r, (2, 4, 1), 4.0)                    # (N, C, 1): two groups of two channels
    dy2, dy3, dy4 = r.randn(2, 2), r.randn(2, 3, 2), r.randn(2, 4, 1)
    for dynamic in (False, True):
        mode = "dynamic " if dynamic else ""
        nn.clear_parameters()
        nn.set_auto_forward(dynamic)
        try:
            x = nn.Variable.from_numpy_array(x2, need_grad=True)
            res[mode + "ln plain"] = _run(nn, dynamic, [F.layer_normalization(x, None, None)],
                                          [x], dy2)
            # layer normalisation over axes 1 and 2 of (N, 1, 2), with parameters and stats
            xl = nn.Variable.from_numpy_array(x3[:, :1].copy(), need_grad=True)
            beta = nn.Variable.from_numpy_array(r.randn(1, 1, 2), need_grad=True)
            gamma = nn.Variable.from_numpy_array(r.rand(1, 1, 2, low=0.5, high=1.5),
                                                 need_grad=True)
            outs = F.layer_normalization(xl, beta, gamma, output_stat=True)
            res[mode + "ln stats"] = _run(nn, dynamic, list(outs), [xl, beta, gamma],
                                          dy3[:, :1].copy())
            # instance normalisation: per sample and channel over the last axis
            xi = nn.Variable.from_numpy_array(x3, need_grad=True)
            bi = nn.Variable.from_numpy_array(r.randn(1, 3, 1), need_grad=True)
            gi = nn.Variable.from_numpy_array(r.rand(1, 3, 1, low=0.5, high=1.5),
                                              need_grad=True)
            outs = F.instance_normalization(xi, bi, gi, output_stat=True)
            res[mode + "in stats"] = _run(nn, dynamic, list(outs), [xi, bi, gi], dy3)
            # group normalisation: channels in two groups of two
            xg = nn.Variable.from_numpy_array(x4, need_grad=True)
            bg = nn.Variable.from_numpy_array(r.randn(1, 4, 1), need_grad=True)
            gg = nn.Variable.from_numpy_array(r.rand(1, 4, 1, low=0.5, high=1.5),
                                              need_grad=True)
            outs = F.group_normalization(xg, bg, gg, 2, output_stat=True)
            res[mode + "gn stats"] = _run(nn, dynamic, list(outs), [xg, bg, gg], dy4)
            # the PF forms
            xp = nn.Variable.from_numpy_array(x3, need_grad=True)
            yl = PF.layer_normalization(nn.Variable.from_numpy_array(x3[:, :1].copy()),
                                        name="ln7")
            yi = PF.instance_normalization(xp, name="in7")
            yg = PF.group_normalization(nn.Variable.from_numpy_array(x4, need_grad=True), 2,
                                        name="gn7")
            res[mode + "PF in"] = _run(nn, dynamic, [yi], [xp], dy3)
            if not dynamic:
                nn.forward_all([yl, yg])
            res[mode + "PF ln, gn"] = [yl.d.copy(), yg.d.copy()]
            # second derivative (MAML's): d/dx sum((dL/dx)^2) with L = sum(y * dy), on binary
            # fractions (exact sums; on the values above it is 9e7 +- 1e4 of rounding)
            xs = nn.Variable.from_numpy_array((2.0 + 0.25 * r.randint(-3, 4, (2, 3, 2))
                                               ).astype(np.float32), need_grad=True)
            ys = F.instance_normalization(xs, None, None)
            w = nn.Variable.from_numpy_array(dy3)
            g, = nn.grad([F.sum(ys * w)], [xs])
            loss = F.sum(g * g)
            if not dynamic:
                loss.forward()
            xs.grad.zero()
            loss.backward()
            res[mode + "second derivative"] = [g.d.copy(), xs.g.copy()]
        finally:
            nn.set_auto_forward(False)
    return res


@nnabla_case(names=[FN + "abs"],
             note="Abs's gradient is x < 0 ? -dy : dy: 1 at 0, -0.0 and NaN (torch's sign "
                  "gives 0 there)")
def abs__gradient_at_zero(nn, F, r):
    res = {}
    x_np = np.array([-1.5, 0.0, -0.0, np.nan, 2.0, -np.inf, np.inf], np.float32)
    dy = np.arange(1.0, 8.0).astype(np.float32)
    for dynamic in (False, True):
        mode = "dynamic " if dynamic else ""
        nn.set_auto_forward(dynamic)
        try:
            x = nn.Variable.from_numpy_array(x_np, need_grad=True)
            y = F.abs(x)
            # arrays under keys of their own (the harness's list comparison takes inf - inf)
            res[mode + "abs y"], res[mode + "abs dx"] = _run(nn, dynamic, [y], [x], dy)
            res[mode + "abs signbit"] = np.signbit(y.d).tolist()
        finally:
            nn.set_auto_forward(False)
    return res


@nnabla_case(names=[FN + "weight_standardization"], rtol=1e-4, atol=1e-5,
             note="NNabla 1.39's weight standardisation is its tensor normalisation over the "
                  "channels, the variance in one pass: [3, 3.001] gives +-0.15810 where the "
                  "two-pass variance gave +-0.15616; static and dynamic, forward and backward")
def weight_standardization__one_pass(nn, F, PF, r):
    res = {}
    w2 = np.array([[3.0, 3.001], [5.0, 5.001]], np.float32)
    dy = r.randn(2, 2)
    for dynamic in (False, True):
        mode = "dynamic " if dynamic else ""
        nn.set_auto_forward(dynamic)
        try:
            w = nn.Variable.from_numpy_array(w2, need_grad=True)
            res[mode + "ws"] = _run(nn, dynamic, [F.weight_standardization(w, channel_axis=0)],
                                    [w], dy)
        finally:
            nn.set_auto_forward(False)
    return res


@nnabla_case(names=["nnabla.get_parameters", "nnabla.Variable.need_grad",
                    "nnabla.functions.affine", "nnabla.functions.mul2"],
             note="need_grad set after the graph was built is read by the backward: the "
                  "registered W put in F.affine itself, False at the build and True after "
                  "(W gets its gradient, the solver moves it), then False again before a "
                  "replay of the static graph (none); plain Variables switched either way")
def need_grad_after_build__read_by_the_backward(nn, F, PF, S, r):
    r.touch("nnabla.Variable.need_grad")
    res = {}
    for dynamic in (False, True):
        mode = "dynamic " if dynamic else ""
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
            w.need_grad = False
            loss = F.sum(F.affine(x, w, b))
            w.need_grad = True
            solver.zero_grad()
            if not dynamic:
                loss.forward()
            loss.backward()
            res[mode + "W.g on again"] = w.g.copy()
            res[mode + "x.g on again"] = x.g.copy()
            solver.update()
            res[mode + "W after on again"] = w.d.copy()
            res[mode + "listed"] = sorted(nn.get_parameters().keys())
            if not dynamic:                  # the static graph run again, W off once more
                w.need_grad = False
                solver.zero_grad()
                loss.forward()
                loss.backward()
                res["W.g off at the replay"] = w.g.copy()
                solver.update()
                res["W after off at the replay"] = w.d.copy()
            u = nn.Variable.from_numpy_array(np.array([1.0, 2.0], np.float32), need_grad=True)
            v = nn.Variable.from_numpy_array(np.array([5.0, 6.0], np.float32))
            y = F.sum(F.mul2(u, v) * 2.0)
            u.need_grad = False
            v.need_grad = True
            if not dynamic:
                y.forward()
            u.g = 0
            v.g = 0
            y.backward()
            res[mode + "plain u.g switched off"] = u.g.copy()
            res[mode + "plain v.g switched on"] = v.g.copy()
        finally:
            nn.set_auto_forward(False)
    nn.clear_parameters()
    return res


def _args_of(y):
    """``y``'s function's type name and ``info.args`` as ``[name, value]`` pairs, in order."""
    f = y.parent
    return [f.info.type_name, [[k, list(a) if isinstance(a, tuple) else a]
                               for k, a in f.info.args.items()]]


@nnabla_case(names=["nnabla.Variable.parent", "nnabla.functions.constant",
                    "nnabla.functions.randn"],
             note="info.args of 68 functions, in order: NNabla's names, resolved defaults "
                  "and float32 values, where Stadyn showed its op attributes (stride None, "
                  "axis/keepdims, output_stat, decay_rate 0.9); F.constant's and F.randn's "
                  "parent had no info")
def function_info_args__nnabla_names(nn, F, PF, r):
    r.touch("nnabla.Variable.parent")
    x = nn.Variable.from_numpy_array(r.randn(2, 3, 6, 6), need_grad=True)
    v = nn.Variable.from_numpy_array(r.randn(2, 5), need_grad=True)
    t = nn.Variable.from_numpy_array(r.randint(0, 5, (2, 1)))

    def stats():
        return [nn.Variable.from_numpy_array(np.zeros((1, 3, 1, 1), np.float32))
                for _ in range(4)]

    ys = [PF.convolution(x, 4, (3, 3), name="c"),
          PF.convolution(x, 4, (3, 3), pad=(1, 1), stride=(2, 2), name="c2"),
          PF.deconvolution(x, 2, (3, 3), name="d"), PF.affine(x, 4, name="a"),
          PF.batch_normalization(x, name="bn"),
          PF.batch_normalization(x, batch_stat=False, name="bn"),
          F.batch_normalization(x, *stats()),
          F.batch_normalization(x, None, None, *stats()[2:]),
          F.fused_batch_normalization(x, *stats()),
          F.max_pooling(x, (2, 2)), F.average_pooling(x, (2, 2)), F.sum_pooling(x, (2, 2)),
          F.max_pooling(x, (3, 3), stride=(1, 1), pad=(1, 1)),
          F.global_average_pooling(x), F.relu(x), F.leaky_relu(x), F.leaky_relu(x, 0.3),
          F.elu(x), F.sigmoid(x), F.tanh(x), F.softmax(v), F.softmax(x, axis=1),
          F.log_softmax(v), F.mean(x), F.mean(x, axis=1, keepdims=True), F.sum(x),
          F.sum(x, axis=(1, 2)), F.max(x, axis=1), F.min(x), F.prod(v, axis=0),
          F.softmax_cross_entropy(v, t),
          F.sigmoid_cross_entropy(v, nn.Variable.from_numpy_array(np.ones((2, 5),
                                                                          np.float32))),
          F.squared_error(v, v), F.categorical_cross_entropy(F.softmax(v), t),
          F.add2(x, x), F.mul2(x, x), F.sub2(x, x), F.div2(x, x), x + 1.0, x * 2.0,
          x ** 2.0, 1.0 - x, F.reshape(x, (2, -1)), F.transpose(x, (0, 2, 3, 1)),
          F.concatenate(x, x, axis=1), F.dropout(x, 0.5), F.identity(x),
          F.slice(x, (0, 0, 0, 0), (1, 3, 6, 6)), F.split(x, axis=1)[0],
          PF.embed(t, 5, 3, name="e"), F.top_n_error(v, t), F.exp(x), F.log(F.abs(x)),
          F.broadcast(F.mean(x, axis=1, keepdims=True), (2, 3, 6, 6)),
          PF.layer_normalization(x, name="ln"), F.interpolate(x, output_size=(12, 12)),
          F.interpolate(x, scale=(2, 2)), F.pad(x, (1, 1)),
          F.batch_matmul(v.reshape((1, 2, 5)), v.reshape((1, 5, 2))),
          F.softplus(x), F.swish(x), F.gelu(x), PF.prelu(x, name="p"), F.stack(v, v),
          F.where(F.greater_scalar(v, 0.0), v, v), F.greater_scalar(v, 0.0),
          F.randn(shape=(2, 3)), F.constant(1.0, (2, 3)), F.one_hot(t, (5,)),
          F.tile(v, (2, 1)), F.flip(x), F.flip(x, axes=(1, 2)), F.sort(v), F.cumsum(v, 1)]
    return {"info.args": [_args_of(y) for y in ys]}


_KEPT64 = ("NNabla 1.39 keeps the float64 array a program gives a leaf (from_numpy_array, "
           "v.d = ..., a float64 .h5 parameter) as that leaf's array until something writes "
           "it in float32 (a solver's update), so .d shows float64 with every digit; Stadyn's "
           "leaf holds one torch tensor, float32, so .d shows the values rounded to float32 "
           "(a float64 tensor would make the ops compute in float64, and a float64 copy kept "
           "beside it would lose what a program writes into .d in place)")


@nnabla_case(names=["nnabla.Variable.from_numpy_array", "nnabla.Variable.d",
                    "nnabla.Variable.g", "nnabla.NdArray.from_numpy_array",
                    "nnabla.NdArray.cast", "nnabla.functions.mul_scalar",
                    "nnabla.functions.add2", "nnabla.functions.exp", "nnabla.functions.sum"],
             note="float64 data given to NNabla: the functions read it as float32 and give "
                  "float32 (values and gradients of float32), static and dynamic; an NdArray "
                  "and a cast keep float64; the leaves' own float64 arrays are known "
                  "differences",
             known={k: _KEPT64 for k in ("leaf .d", "leaf .d dtype", "assigned .d",
                                         "assigned .d dtype", "leaf .d after a forward")})
def float64_data__computed_in_float32(nn, F, r):
    r.touch("nnabla.Variable.d")
    r.touch("nnabla.Variable.g")
    r.touch("nnabla.NdArray.cast")
    r.touch("nnabla.Variable.from_numpy_array")
    r.touch("nnabla.NdArray.from_numpy_array")
    a64 = np.array([1.0 + 1e-12, 2.0, 1e-300, 3.0], np.float64)
    res = {}
    v = nn.Variable.from_numpy_array(a64, need_grad=True)
    res["leaf .d"] = v.d.copy()
    res["leaf .d dtype"] = str(v.d.dtype)
    w = nn.Variable((4,))
    w.d = a64
    res["assigned .d"] = w.d.copy()
    res["assigned .d dtype"] = str(w.d.dtype)
    for dynamic in (False, True):
        mode = "dynamic " if dynamic else ""
        nn.set_auto_forward(dynamic)
        try:
            u = nn.Variable.from_numpy_array(a64, need_grad=True)
            ys = {"mul_scalar": F.mul_scalar(u, 1.0 + 1e-10), "add2": F.add2(u, u),
                  "exp": F.exp(u), "sum": F.sum(u * 2.0)}
            for name, y in sorted(ys.items()):
                if not dynamic:
                    y.forward()
                res[mode + name] = y.d.copy()
                res[mode + name + " dtype"] = str(y.d.dtype)
            u.g = 0
            ys["sum"].backward()
            res[mode + "gradient"] = u.g.copy()
            res[mode + "gradient dtype"] = str(u.g.dtype)
            if not dynamic:
                res["leaf .d after a forward"] = str(u.d.dtype)
        finally:
            nn.set_auto_forward(False)
    nd = nn.NdArray.from_numpy_array(a64)
    res["NdArray"] = [str(nd.dtype), nd.data.copy()]
    c = nn.Variable((2,))
    c.data.cast(np.float64)
    res["cast .d dtype"] = str(c.d.dtype)
    return res


@nnabla_case(names=["nnabla.grad", "nnabla.get_parameters", "nnabla.functions.affine"],
             note="nn.grad with respect to registered parameters a program gave F.affine "
                  "itself (the meta-learning pattern): their gradients, a MAML step's loss "
                  "on the fast weights, and a double backward through nn.grad into W.g; "
                  "after nnfid7 static mode gave zeros (the graph held W's program view, "
                  "nn.grad asked for W)")
def grad__of_registered_parameters_given_to_f(nn, F, PF, r):
    r.touch("nnabla.grad")
    res = {}
    for dynamic in (False, True):
        mode = "dynamic " if dynamic else ""
        nn.clear_parameters()
        nn.set_auto_forward(dynamic)
        try:
            x = nn.Variable.from_numpy_array(np.array([[1.0, 2.0, -1.0], [0.5, 1.0, 3.0]],
                                                      np.float32))
            PF.affine(x, 2, name="fc")
            params = nn.get_parameters()
            w, b = params["fc/affine/W"], params["fc/affine/b"]
            w.d = np.array([[0.5, -1.0], [2.0, 0.25], [1.0, 1.5]], np.float32)
            b.d = np.array([0.1, -0.2], np.float32)
            loss = F.sum(F.affine(x, w, b) ** 2)
            gw, gb = nn.grad([loss], [w, b])
            if not dynamic:
                F.sink(gw, gb).forward()
            res[mode + "grad W"], res[mode + "grad b"] = gw.d.copy(), gb.d.copy()
            fast = F.sum(F.affine(x, w - 0.01 * gw, b - 0.01 * gb))
            if not dynamic:
                fast.forward()
            res[mode + "loss on fast weights"] = np.array(fast.d, np.float32)
            penalty = F.sum(nn.grad([loss], [w])[0] ** 2)
            w.grad.zero()
            if not dynamic:
                penalty.forward()
            penalty.backward()
            res[mode + "W.g of the gradient penalty"] = w.g.copy()
        finally:
            nn.set_auto_forward(False)
    nn.clear_parameters()
    return res
