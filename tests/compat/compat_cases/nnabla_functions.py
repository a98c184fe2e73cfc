"""``nnabla.functions``: every function on seeded inputs in a static graph -- its output and the
gradients of ``sum(out * w)`` w.r.t. each input (``y.backward(w)``).

Stadyn's catalog also has CNTK-only ops under ``nnabla.functions`` (``sqrt``, ``flatten``,
``cross_entropy_with_softmax``, ...): NNabla 1.39 has no such names, so on the real side those
cases compute the same quantity with NNabla's own functions (``if r.real:``, in the note).
"""

import numpy as np

from compat_harness import nnabla_case


def fn_case(name, expr, shapes, data=None, grads=True, names=None, real=None, **kw):
    """Register a case for ``expr(F, *inputs)`` on inputs of ``shapes``.

    ``data``: per input, ``None`` (standard normal) or ``f(r, shape)``.  ``grads``: True (every
    input), False, or the indices of the inputs to differentiate.  ``real``: the expression to
    use on the real NNabla instead (for Stadyn's extra names).  Results: ``out``, ``shape`` and
    ``grad<i>``.
    """
    op = name.split("__")[0]
    names = names or ["nnabla.functions." + op]
    wrt = list(range(len(shapes))) if grads is True else list(grads or [])

    def fn(nn, F, r):
        xs = [nn.Variable.from_numpy_array(v, need_grad=i in wrt)
              for i, v in enumerate(r.inputs(shapes, data))]
        if r.real and real is not None:
            r.touch(*names)
            y = real(F, *xs)
        else:
            y = expr(F, *xs)
        y.forward()
        res = {"out": y.d.copy(), "shape": list(y.shape)}
        if wrt:
            for i in wrt:
                xs[i].g = 0
            y.backward(r.weights_like(y.d))
            for i in wrt:
                res["grad%d" % i] = xs[i].g.copy()
        return res

    fn.__name__ = name
    nnabla_case(name=name, names=names, **kw)(fn)


def positive(r, s):
    return r.rand(*s, low=0.3, high=2.0)


def probability(r, s):
    return r.rand(*s, low=0.05, high=0.95)


def binary(r, s):
    return r.randint(0, 2, s).astype(np.float32)


def labels(classes):
    return lambda r, s: r.randint(0, classes, s).astype(np.int32)


S23 = [(2, 3)]
S234 = [(2, 3, 4)]

# -- element-wise -------------------------------------------------------------------------------
fn_case("relu", lambda F, x: F.relu(x), S23)
fn_case("relu6", lambda F, x: F.relu6(x * 4.0), S23, names=["nnabla.functions.relu6"])
fn_case("sigmoid", lambda F, x: F.sigmoid(x), S23)
fn_case("tanh", lambda F, x: F.tanh(x), S23)
fn_case("softplus", lambda F, x: F.softplus(x), S23)
fn_case("softplus__beta", lambda F, x: F.softplus(x, beta=2.0), S23)
fn_case("elu", lambda F, x: F.elu(x, alpha=0.7), S23)
fn_case("selu", lambda F, x: F.selu(x), S23)
fn_case("gelu", lambda F, x: F.gelu(x), S23, tols={"out": (1e-5, 1e-5), "grad0": (1e-4, 1e-5)},
        note="NNabla's gelu is the tanh approximation; fp32 rounding of its polynomial")
fn_case("swish", lambda F, x: F.swish(x), S23)
fn_case("leaky_relu", lambda F, x: F.leaky_relu(x), S23)
fn_case("leaky_relu__alpha", lambda F, x: F.leaky_relu(x, alpha=0.3), S23)
fn_case("exp", lambda F, x: F.exp(x), S23)
fn_case("log", lambda F, x: F.log(x), S23, data=[positive])
fn_case("abs", lambda F, x: F.abs(x), S23)
fn_case("identity", lambda F, x: F.identity(x) * 2.0, S23)

# -- arithmetic -----------------------------------------------------------------------------
fn_case("add2", lambda F, x, y: F.add2(x, y), [(2, 3), (2, 3)])
fn_case("add2__broadcast", lambda F, x, y: F.add2(x, y), [(2, 3), (1, 3)])
fn_case("sub2", lambda F, x, y: F.sub2(x, y), [(2, 3), (2, 3)])
fn_case("sub2__broadcast", lambda F, x, y: F.sub2(x, y), [(2, 1), (2, 3)])
fn_case("mul2", lambda F, x, y: F.mul2(x, y), [(2, 3), (2, 3)])
fn_case("div2", lambda F, x, y: F.div2(x, y), [(2, 3), (2, 3)], data=[None, positive])
fn_case("pow2", lambda F, x, y: F.pow2(x, y), [(2, 3), (2, 3)], data=[positive, None])
fn_case("maximum2", lambda F, x, y: F.maximum2(x, y), [(2, 3), (2, 3)])
fn_case("minimum2", lambda F, x, y: F.minimum2(x, y), [(2, 3), (2, 3)])
fn_case("add_scalar", lambda F, x: F.add_scalar(x, 1.5), S23)
fn_case("mul_scalar", lambda F, x: F.mul_scalar(x, -2.5), S23)
fn_case("pow_scalar", lambda F, x: F.pow_scalar(x, 3.0), S23)
fn_case("pow_scalar__fraction", lambda F, x: F.pow_scalar(x, 1.5), S23, data=[positive])
fn_case("r_sub_scalar", lambda F, x: F.r_sub_scalar(x, 2.0), S23)
fn_case("r_div_scalar", lambda F, x: F.r_div_scalar(x, 3.0), S23, data=[positive])
fn_case("r_pow_scalar", lambda F, x: F.r_pow_scalar(x, 2.0), S23)
fn_case("maximum_scalar", lambda F, x: F.maximum_scalar(x, 0.2), S23)
fn_case("minimum_scalar", lambda F, x: F.minimum_scalar(x, 0.2), S23)
fn_case("operators", lambda F, x, y: (x + y) * (x - 2.0) / (y * y + 1.0) - (-x) ** 2,
        [(2, 3), (2, 3)], names=["nnabla.Variable"],
        note="Variable's +, -, *, /, unary -, ** map to the arithmetic functions")

# -- reductions and shapes ------------------------------------------------------------------
fn_case("sum", lambda F, x: F.sum(x), S234)
fn_case("sum__axis", lambda F, x: F.sum(x, axis=1, keepdims=True), S234)
fn_case("sum__axes", lambda F, x: F.sum(x, axis=[0, 2]), S234)
fn_case("mean", lambda F, x: F.mean(x, axis=2), S234)
fn_case("mean__all", lambda F, x: F.mean(x), S234)
fn_case("max", lambda F, x: F.max(x, axis=1), S234)
fn_case("max__keepdims", lambda F, x: F.max(x, axis=2, keepdims=True), S234)


@nnabla_case(names=["nnabla.functions.max"],
             note="NNabla's indices are uint64 (size_t): compat nnabla _index_dtypes")
def max__only_index(nn, F, r):
    y = F.max(nn.Variable.from_numpy_array(r.randn(2, 3, 4)), axis=2, only_index=True)
    y.forward()
    return {"out": y.d.astype(np.int64), "dtype": str(y.d.dtype)}



fn_case("min", lambda F, x: F.min(x, axis=0), S234)
fn_case("prod", lambda F, x: F.prod(x, axis=1), S234)
fn_case("reshape", lambda F, x: F.reshape(x, (4, 6)), S234)
fn_case("reshape__infer", lambda F, x: F.reshape(x, (2, -1)), S234)
fn_case("transpose", lambda F, x: F.transpose(x, (2, 0, 1)), S234)
fn_case("broadcast", lambda F, x: F.broadcast(x, (2, 3, 4)), [(2, 1, 4)])
fn_case("concatenate", lambda F, x, y: F.concatenate(x, y, axis=1), [(2, 3), (2, 2)])
fn_case("concatenate__default_axis", lambda F, x, y: F.concatenate(x, y), [(2, 3), (2, 2)])
fn_case("stack", lambda F, x, y: F.stack(x, y, axis=1), [(2, 3), (2, 3)])
fn_case("slice", lambda F, x: F.slice(x, start=(0, 1, 0), stop=(2, 3, 4), step=(1, 1, 2)), S234)
fn_case("pad", lambda F, x: F.pad(x, (1, 2), constant_value=0.5), S234)
fn_case("pad__reflect", lambda F, x: F.pad(x, (1, 1, 2, 0), mode="reflect"), S234)
fn_case("one_hot", lambda F, x: F.one_hot(x, (5,)), [(4, 1)], data=[labels(5)], grads=False)
# ids in [-n, -1] count from the end of their axis; outside [-n, n - 1] on any axis: all zeros
fn_case("one_hot__out_of_range", lambda F, x: F.one_hot(x, (3,)), [(7, 1)], grads=False,
        data=[lambda r, s: np.array([[-1], [-2], [-3], [-4], [3], [5], [0]], np.int32)])
fn_case("one_hot__out_of_range_2d", lambda F, x: F.one_hot(x, (2, 3)), [(6, 2)], grads=False,
        data=[lambda r, s: np.array([[0, -1], [1, 3], [-1, 0], [2, 0], [0, 2], [1, -3]],
                                    np.int32)])
fn_case("constant", lambda F, x: F.constant(1.5, (2, 3)) * x, S23)
def _split(nn, F, r):
    x = nn.Variable.from_numpy_array(r.randn(2, 3, 4), need_grad=True)
    parts = F.split(x, axis=1)
    y = F.stack(*[p * float(i + 1) for i, p in enumerate(parts)], axis=0)
    y.forward()
    x.g = 0
    y.backward(r.weights_like(y.d))
    return {"n": len(parts), "shapes": [list(p.shape) for p in parts], "out": y.d.copy(),
            "grad0": x.g.copy()}


nnabla_case(name="split", names=["nnabla.functions.split", "nnabla.functions.stack"])(_split)

# -- softmax and losses ---------------------------------------------------------------------
fn_case("softmax", lambda F, x: F.softmax(x), S234)
fn_case("softmax__axis", lambda F, x: F.softmax(x, axis=1), S234)
fn_case("log_softmax", lambda F, x: F.log_softmax(x, axis=2), S234)
fn_case("squared_error", lambda F, x, y: F.squared_error(x, y), [(2, 3), (2, 3)])
fn_case("absolute_error", lambda F, x, y: F.absolute_error(x, y), [(2, 3), (2, 3)])
fn_case("huber_loss", lambda F, x, y: F.huber_loss(x, y, delta=0.5), [(3, 4), (3, 4)])
fn_case("binary_cross_entropy", lambda F, x, t: F.binary_cross_entropy(x, t),
        [(2, 3), (2, 3)], data=[probability, binary], grads=[0], tols={"grad0": (1e-4, 1e-6)})
fn_case("sigmoid_cross_entropy", lambda F, x, t: F.sigmoid_cross_entropy(x, t),
        [(2, 3), (2, 3)], data=[None, binary], grads=[0])
# NNabla reads the target as an int label: 0.7 is 0, -0.5 is 0, 1.7 is 1, 2.4 is 2.
fn_case("sigmoid_cross_entropy__fractional_target",
        lambda F, x, t: F.sigmoid_cross_entropy(x, t), [(3, 4), (3, 4)],
        data=[None, lambda r, s: r.rand(*s, low=-1.5, high=2.5)], grads=[0])
fn_case("softmax_cross_entropy", lambda F, x, t: F.softmax_cross_entropy(x, t),
        [(4, 5), (4, 1)], data=[None, labels(5)], grads=[0])
fn_case("softmax_cross_entropy__axis", lambda F, x, t: F.softmax_cross_entropy(x, t, axis=1),
        [(2, 5, 3), (2, 1, 3)], data=[None, labels(5)], grads=[0])
fn_case("categorical_cross_entropy", lambda F, x, t: F.categorical_cross_entropy(x, t),
        [(4, 5), (4, 1)], data=[lambda r, s: r.rand(*s, low=0.05, high=1.0), labels(5)],
        grads=[0])
fn_case("top_n_error", lambda F, x, t: F.top_n_error(x, t), [(6, 5), (6, 1)],
        data=[None, labels(5)], grads=False)
fn_case("top_n_error__n", lambda F, x, t: F.top_n_error(x, t, n=2), [(6, 5), (6, 1)],
        data=[None, labels(5)], grads=False)

# -- neural-network functions ---------------------------------------------------------------
fn_case("affine", lambda F, x, w, b: F.affine(x, w, b), [(3, 4), (4, 5), (5,)])
fn_case("affine__base_axis", lambda F, x, w, b: F.affine(x, w, b, base_axis=2),
        [(2, 3, 4), (4, 2, 3), (2, 3)])
fn_case("affine__no_bias", lambda F, x, w: F.affine(x, w), [(3, 2, 2), (4, 5)])
fn_case("batch_matmul", lambda F, a, b: F.batch_matmul(a, b), [(2, 3, 4), (2, 4, 5)])
fn_case("batch_matmul__transpose", lambda F, a, b: F.batch_matmul(a, b, transpose_a=True,
                                                                   transpose_b=True),
        [(2, 4, 3), (2, 5, 4)])
fn_case("convolution", lambda F, x, w, b: F.convolution(x, w, b), [(2, 3, 5, 5), (4, 3, 3, 3),
                                                                   (4,)])
fn_case("convolution__pad_stride_dilation", lambda F, x, w: F.convolution(
    x, w, pad=(1, 2), stride=(2, 1), dilation=(1, 2)), [(2, 2, 6, 7), (3, 2, 3, 2)])
fn_case("convolution__group", lambda F, x, w: F.convolution(x, w, group=2),
        [(2, 4, 5, 5), (6, 2, 3, 3)])
fn_case("deconvolution", lambda F, x, w, b: F.deconvolution(x, w, b), [(2, 3, 4, 4),
                                                                       (3, 2, 3, 3), (2,)])
fn_case("deconvolution__stride_pad", lambda F, x, w: F.deconvolution(x, w, stride=(2, 2),
                                                                     pad=(1, 1)),
        [(2, 3, 4, 4), (3, 2, 3, 3)])
fn_case("max_pooling", lambda F, x: F.max_pooling(x, (2, 2)), [(2, 3, 4, 6)])
fn_case("max_pooling__stride_pad", lambda F, x: F.max_pooling(x, (3, 3), stride=(2, 2),
                                                              pad=(1, 1)), [(2, 2, 5, 5)])
fn_case("max_pooling__no_ignore_border", lambda F, x: F.max_pooling(x, (2, 2),
                                                                    ignore_border=False),
        [(1, 2, 5, 5)])
fn_case("average_pooling", lambda F, x: F.average_pooling(x, (2, 2)), [(2, 3, 4, 6)])
fn_case("average_pooling__pad", lambda F, x: F.average_pooling(x, (3, 3), stride=(1, 1),
                                                               pad=(1, 1)), [(1, 2, 4, 4)])
fn_case("average_pooling__excluding_pad", lambda F, x: F.average_pooling(
    x, (3, 3), stride=(1, 1), pad=(1, 1), including_pad=False), [(1, 2, 4, 4)])
fn_case("global_average_pooling", lambda F, x: F.global_average_pooling(x), [(2, 3, 4, 5)])
fn_case("embed", lambda F, x, w: F.embed(x, w), [(2, 3), (7, 4)], data=[labels(7), None],
        grads=[1])
fn_case("batch_normalization", lambda F, x, beta, gamma, mean, var: F.batch_normalization(
    x, beta, gamma, mean, var, batch_stat=True), [(4, 3, 2, 2), (1, 3, 1, 1), (1, 3, 1, 1),
                                                  (1, 3, 1, 1), (1, 3, 1, 1)],
    data=[None, None, None, None, positive], grads=[0, 1, 2], tols={"grad0": (1e-4, 1e-5)})
fn_case("batch_normalization__inference", lambda F, x, beta, gamma, mean, var:
        F.batch_normalization(x, beta, gamma, mean, var, batch_stat=False),
        [(4, 3, 2, 2), (1, 3, 1, 1), (1, 3, 1, 1), (1, 3, 1, 1), (1, 3, 1, 1)],
        data=[None, None, None, None, positive], grads=[0, 1, 2])
fn_case("batch_normalization__axes", lambda F, x, beta, gamma, mean, var: F.batch_normalization(
    x, beta, gamma, mean, var, axes=[2], batch_stat=True),
    [(3, 2, 4), (1, 1, 4), (1, 1, 4), (1, 1, 4), (1, 1, 4)],
    data=[None, None, None, None, positive], grads=[0, 1, 2], tols={"grad0": (1e-4, 1e-5)})


@nnabla_case(names=["nnabla.functions.batch_normalization"])
def batch_normalization__running_stats(nn, F, r):
    """Training-mode batch norm moves the running mean and variance (NNabla: decay_rate, the
    unbiased batch variance)."""
    x = nn.Variable.from_numpy_array(r.randn(5, 3, 2) * 2.0 + 1.0)
    shape = (1, 3, 1)
    beta = nn.Variable.from_numpy_array(np.zeros(shape, np.float32))
    gamma = nn.Variable.from_numpy_array(np.ones(shape, np.float32))
    mean = nn.Variable.from_numpy_array(r.randn(*shape))
    var = nn.Variable.from_numpy_array(r.rand(*shape, low=0.5, high=2.0))
    y = F.batch_normalization(x, beta, gamma, mean, var, decay_rate=0.8, batch_stat=True)
    y.forward()
    return {"out": y.d.copy(), "mean": mean.d.copy(), "var": var.d.copy()}


@nnabla_case(names=["nnabla.functions.batch_normalization", "nnabla.functions.binary_tanh",
                    "nnabla.functions.binary_sigmoid"],
             tols={"out": (1e-6, 0.0), "inference": (1e-6, 0.0)})
def batch_normalization__at_the_mean(nn, F, r):
    """An element equal to the mean normalises to exactly ``beta`` (NNabla computes
    ``(x - mean) * gamma / std + beta``), so ``binary_tanh``/``binary_sigmoid`` after it
    give NNabla's signs (BinaryNet): small integers, means exact, one channel constant."""
    x_value = np.array([[3] * 16,                                            # constant
                        [1, 1, 1, 1, 3, -1, 2, 0, 1, 5, -3, 1, 2, 0, 1, 1],   # mean 1
                        [2, 2, 0, 4, 2, 5, -1, 2, 3, 1, 2, 2, 0, 4, 2, 2]],   # mean 2
                       np.float32).reshape(3, 4, 2, 2).transpose(1, 0, 2, 3).copy()
    x = nn.Variable.from_numpy_array(x_value)
    shape = (1, 3, 1, 1)
    beta = nn.Variable.from_numpy_array(np.array([0.0, 0.0, 0.25], np.float32).reshape(shape))
    gamma = nn.Variable.from_numpy_array(r.rand(*shape, low=0.5, high=2.0))
    mean = nn.Variable.from_numpy_array(np.zeros(shape, np.float32))
    var = nn.Variable.from_numpy_array(np.ones(shape, np.float32))
    y = F.batch_normalization(x, beta, gamma, mean, var, batch_stat=True)
    bt, bs = F.binary_tanh(y), F.binary_sigmoid(y)
    nn.forward_all([bt, bs])
    # with the running statistics: x equal to the running mean
    rm = nn.Variable.from_numpy_array(np.array([3.0, 2.0, -1.0], np.float32).reshape(shape))
    yi = F.batch_normalization(x, beta, gamma, rm, var, batch_stat=False)
    bti = F.binary_tanh(yi)
    bti.forward()
    return {"out": y.d.copy(), "binary_tanh": bt.d.copy(), "binary_sigmoid": bs.d.copy(),
            "exactly_beta": int((y.d == beta.d).sum()), "running mean": mean.d.copy(),
            "running var": var.d.copy(), "inference": yi.d.copy(),
            "inference binary_tanh": bti.d.copy()}


@nnabla_case(names=["nnabla.functions.sync_batch_normalization"],
             note="alone (no communicator) it is batch normalisation; NNabla needs a "
                  "communicator (an MPI build) to make one, so the real side runs "
                  "batch_normalization")
def sync_batch_normalization(nn, F, r):
    x = nn.Variable.from_numpy_array(r.randn(4, 3, 2), need_grad=True)
    params = [nn.Variable.from_numpy_array(v) for v in (
        r.randn(1, 3, 1), r.randn(1, 3, 1), r.randn(1, 3, 1), r.rand(1, 3, 1, low=0.5, high=2))]
    if r.real:
        r.touch("nnabla.functions.sync_batch_normalization")
        y = F.batch_normalization(x, *params, batch_stat=True)
    else:
        y = F.sync_batch_normalization(x, *params, comm=None, batch_stat=True)
    y.forward()
    x.g = 0
    y.backward(r.weights_like(y.d))
    return {"out": y.d.copy(), "grad": x.g.copy(), "mean": params[2].d.copy()}


def _dropout(nn, F, r):
    x = nn.Variable.from_numpy_array(r.rand(4, 50, 40, low=0.5, high=1.5), need_grad=True)
    y = F.dropout(x, p=0.3)
    y.forward()
    kept = y.d != 0
    x.g = 0
    y.backward(np.ones(y.shape, np.float32))
    return {"scale": np.unique(np.round(y.d[kept] / x.d[kept], 4)),
            "zero_fraction": np.float32(1.0 - kept.mean()),
            "grad_matches_mask": bool(np.array_equal(x.g != 0, kept))}


nnabla_case(name="dropout", names=["nnabla.functions.dropout"],
            tols={"zero_fraction": (0, 0.02)},
            note="random masks differ: compared are the scale, the fraction dropped (+-0.02 of "
                 "8000) and that the gradient follows the mask")(_dropout)


@nnabla_case(names=["nnabla.functions.relu", "nnabla.auto_forward"])
def dynamic_mode(nn, F, r):
    """The same ops computed at once under auto_forward."""
    with nn.auto_forward():
        x = nn.Variable.from_numpy_array(r.randn(3, 4), need_grad=True)
        y = F.sum(F.relu(x) * F.tanh(x), axis=1)
        value = y.d.copy()
    x.g = 0
    y.backward(r.weights_like(value))
    return {"out": value, "grad": x.g.copy()}


# -- comparisons and selection (NNabla 1.39's names) -----------------------------------------
def _ties(r, s):
    return np.round(r.randn(*s) * 2.0).astype(np.float32)   # whole numbers: some pairs tie


fn_case("greater", lambda F, x, y: F.greater(x, y), [(2, 3), (2, 3)], data=[_ties, _ties],
        grads=False)
fn_case("greater_equal", lambda F, x, y: F.greater_equal(x, y), [(2, 3), (1, 3)],
        data=[_ties, _ties], grads=False)
fn_case("less", lambda F, x, y: F.less(x, y), [(2, 3), (2, 3)], data=[_ties, _ties],
        grads=False)
fn_case("where", lambda F, c, x, y: F.where(c, x, y), [(2, 3), (2, 3), (2, 3)],
        data=[binary, None, None], grads=[1, 2])
fn_case("where__leading_condition", lambda F, c, x, y: F.where(c, x, y),
        [(2,), (2, 3), (2, 3)], data=[binary, None, None], grads=[1, 2],
        note="a condition of lower rank covers the leading axes (NNabla's rule)")
