"""More draws for ``tools/nnabla_fuzz.py`` (see ``nnabla_fuzz_draws.py``): activations with
parameters, int32 inputs, losses (with ignored class ids), matrix products, the remaining
normalisations, and functions with many flags (``unique``).  Python 3.6+ and NumPy only.
"""

import numpy as np

from nnabla_fuzz_draws import In, _broadcast_pair, _data, _draw, _shape, _axis


def g_unary(name, **params):
    """An elementwise function; each of ``params`` a list of values to draw from."""
    def gen(rng):
        shape = _shape(rng)
        kw = {k: v[rng.randint(len(v))] for k, v in params.items() if rng.rand() < 0.7}
        if name == "celu" and "axis" in kw:
            kw["axis"] = int(kw["axis"]) % len(shape) - (len(shape) if rng.rand() < 0.5 else 0)
        return _draw(name, [_data(rng, shape)], [In(0)], kw)
    return gen


def g_int(name):
    """Integer inputs (int32) to a reduction or an arithmetic function: no gradients."""
    def gen(rng):
        if name in ("add2", "sub2", "mul2", "maximum2", "minimum2"):
            a, b = _broadcast_pair(rng)
            b = tuple(b) if len(b) == len(a) else a
            xs = [rng.randint(-4, 5, a).astype(np.int32), rng.randint(-4, 5, b).astype(np.int32)]
            return _draw(name, xs, [In(0), In(1)], grads=[False, False])
        shape = _shape(rng)
        kw = {"axis": _axis(rng, len(shape)), "keepdims": bool(rng.randint(2))}
        return _draw(name, [rng.randint(-4, 5, shape).astype(np.int32)], [In(0)], kw,
                     grads=[False])
    return gen


def g_softmax_ce(name):
    def gen(rng):
        shape = _shape(rng, 2, 4, 2, 4)
        axis = int(rng.randint(len(shape)))
        tshape = tuple(1 if i == axis else s for i, s in enumerate(shape))
        kw = {"axis": axis - len(shape) if rng.rand() < 0.3 else axis}
        if rng.rand() < 0.2:
            kw = {}
            axis = len(shape) - 1
            tshape = shape[:-1] + (1,)
        t = rng.randint(0, shape[axis], tshape).astype(np.int32)
        if name != "top_n_error" and rng.rand() < 0.3:  # NNabla ignores negative class ids
            t[rng.rand(*tshape) < 0.3] = -1
        if name == "top_n_error":
            kw["n"] = int(rng.randint(1, shape[axis] + 1))
            return _draw(name, [_data(rng, shape, "ties"), t], [In(0), In(1)], kw,
                         grads=[False, False])
        x = _data(rng, shape)
        if name == "categorical_cross_entropy":  # probabilities, some 0 or below
            x = np.where(rng.rand(*shape) < 0.2, np.float32(0), np.abs(x) / 4).astype(np.float32)
        return _draw(name, [x, t], [In(0), In(1)], kw, grads=[True, False])
    return gen


def g_kl(rng):
    shape = _shape(rng, 2, 4, 2, 4)
    base = int(rng.randint(1, len(shape)))
    p = rng.dirichlet(np.ones(int(np.prod(shape[base:]))), shape[:base]).reshape(shape)
    q = rng.dirichlet(np.ones(int(np.prod(shape[base:]))), shape[:base]).reshape(shape)
    return _draw("kl_multinomial", [p.astype(np.float32), q.astype(np.float32)],
                 [In(0), In(1)], {"base_axis": base})


def g_pair_loss(name, **params):
    def gen(rng):
        shape = _shape(rng)
        args = [In(0), In(1)]
        kw = {}
        for k, v in params.items():
            value = v[rng.randint(len(v))]
            if k == "epsilon":
                args.append(value)
            else:
                kw[k] = value
        return _draw(name, [_data(rng, shape), _data(rng, shape)], args, kw)
    return gen


def g_affine(rng):
    shape = _shape(rng, 1, 4, 2, 4)
    base = int(rng.randint(1, len(shape)))
    n_in = int(np.prod(shape[base:]))
    out = _shape(rng, 1, 3, 1, 2)
    inputs = [_data(rng, shape), _data(rng, (n_in,) + out)]
    if rng.rand() < 0.5:
        inputs.append(_data(rng, out))
    return _draw("affine", inputs, [In(i) for i in range(len(inputs))], {"base_axis": base})


def g_batch_matmul(rng):
    batch = _shape(rng, 1, 3, 1, 2)
    m, k, n = (int(v) for v in rng.randint(1, 4, 3))
    ta, tb = bool(rng.randint(2)), bool(rng.randint(2))
    bb = tuple(1 if rng.rand() < 0.3 else s for s in batch)
    a = batch + ((k, m) if ta else (m, k))
    b = bb + ((n, k) if tb else (k, n))
    return _draw("batch_matmul", [_data(rng, a), _data(rng, b)], [In(0), In(1)],
                 {"transpose_a": ta, "transpose_b": tb})


def g_depthwise(rng):
    nsp = rng.randint(1, 3)
    c = int(rng.randint(1, 4))
    mult = int(rng.randint(1, 3))
    sp = tuple(int(v) for v in rng.randint(3, 7, nsp))
    k = tuple(int(v) for v in rng.randint(1, 4, nsp))
    kw = {"multiplier": mult}
    for key, lo, hi in (("pad", 0, 3), ("stride", 1, 3), ("dilation", 1, 3)):
        if rng.rand() < 0.5:
            kw[key] = tuple(int(v) for v in rng.randint(lo, hi, nsp))
    inputs = [_data(rng, (2, c) + sp), _data(rng, (c * mult,) + k)]
    if rng.rand() < 0.5:
        inputs.append(_data(rng, (c * mult,)))
    return _draw("depthwise_convolution", inputs, [In(i) for i in range(len(inputs))], kw)


def g_unpooling(rng):
    nsp = rng.randint(1, 4)
    cl = bool(rng.rand() < 0.3)
    sp = tuple(int(v) for v in rng.randint(1, 4, nsp))
    shape = ((2,) + sp + (2,)) if cl else ((2, 2) + sp)
    kernel = tuple(int(v) for v in rng.randint(1, 4, nsp))
    return _draw("unpooling", [_data(rng, shape)], [In(0), kernel],
                 {"channel_last": True} if cl else {})


def g_where(rng):
    a, b = _broadcast_pair(rng)
    c = (rng.rand(*a) < 0.5).astype(np.float32)
    return _draw("where", [c, _data(rng, a), _data(rng, a)], [In(0), In(1), In(2)],
                 grads=[False, True, True])


def g_trilu(rng):
    shape = _shape(rng, 1, 5, 2, 4)
    return _draw("trilu", [_data(rng, shape)], [In(0)],
                 {"k": int(rng.randint(-3, 4)), "upper": bool(rng.randint(2))})


def g_searchsorted(rng):
    batch = _shape(rng, 1, 3, 0, 2)
    seq = np.sort(_data(rng, batch + (int(rng.randint(1, 6)),), "ties"), axis=-1)
    values = _data(rng, batch + (int(rng.randint(1, 5)),), "ties")
    kw = {"right": bool(rng.randint(2))} if rng.rand() < 0.7 else {}
    return _draw("searchsorted", [seq, values], [In(0), In(1)], kw, grads=[False, False])


def g_norm_normalization(rng):
    shape = _shape(rng)
    kw = {"p": [None, 1, 2, 3][rng.randint(4)], "axes": _axis(rng, len(shape))}
    return _draw("norm_normalization", [_data(rng, shape)], [In(0)], kw)


def g_tensor_normalization(rng):
    shape = _shape(rng, 2, 4, 2, 4)
    axes = sorted(set(int(a) for a in rng.randint(0, len(shape), rng.randint(1, 3))))
    ps = tuple(s if i in axes else 1 for i, s in enumerate(shape))
    inputs = [_data(rng, shape)]
    args = [In(0), axes]
    for _ in range(2):
        if rng.rand() < 0.6:
            inputs.append(_data(rng, ps))
            args.append(In(len(inputs) - 1))
        else:
            args.append(None)
    return _draw("tensor_normalization", inputs, args, {"eps": 1e-2})


def g_weight_std(rng):
    shape = _shape(rng, 2, 4, 2, 4)
    return _draw("weight_standardization", [_data(rng, shape)], [In(0)],
                 {"channel_axis": int(rng.randint(-len(shape), len(shape))), "eps": 1e-2})


def g_prelu(rng):
    shape = _shape(rng, 2, 4, 2, 4)
    base = int(rng.randint(0, len(shape)))
    w = (1,) if rng.rand() < 0.4 else (shape[base],)
    return _draw("prelu", [_data(rng, shape), _data(rng, w)], [In(0), In(1)], {"base_axis": base})


def g_n_ary(name):
    def gen(rng):
        shape = _shape(rng)
        xs = [_data(rng, shape) for _ in range(rng.randint(1, 4))]
        return _draw(name, xs, [In(i) for i in range(len(xs))])
    return gen


def g_broadcast_to(rng):
    shape = _shape(rng, 2, 4, 2, 4)
    k = int(rng.randint(1, len(shape) + 1))
    axis = int(rng.randint(0, len(shape) - k + 1))
    kw = {"axis": axis} if rng.rand() < 0.7 else {}
    if not kw:
        axis = len(shape) - k
    y = _data(rng, shape[axis:axis + k])
    return _draw("broadcast_to", [_data(rng, shape), y], [In(0), In(1)], kw,
                 grads=[False, True])


def g_unique(rng):
    shape = _shape(rng, 1, 4, 1, 3)
    kw = {"flatten": bool(rng.randint(2)), "sorted": bool(rng.randint(2)),
          "with_index": bool(rng.randint(2)), "with_inverse": bool(rng.randint(2)),
          "with_counts": bool(rng.randint(2))}
    kw["axis"] = int(rng.randint(-len(shape), len(shape)))  # NNabla wants one even if flatten
    return _draw("unique", [_data(rng, shape, "ties")], [In(0)], kw, grads=[False])


def g_matrix(name):
    def gen(rng):
        n = int(rng.randint(1, 4))
        x = _data(rng, (int(rng.randint(1, 3)), n, n)) + 2 * np.eye(n, dtype=np.float32)
        if name == "matrix_diag":
            x = _data(rng, _shape(rng, 1, 3, 1, 3))
        return _draw(name, [x], [In(0)])
    return gen


def g_global_avg(rng):
    return _draw("global_average_pooling", [_data(rng, _shape(rng, 1, 4, 2, 5))], [In(0)])



GENERATORS = {
    "leaky_relu": g_unary("leaky_relu", alpha=[0.1, -0.5, 2.0]),
    "elu": g_unary("elu", alpha=[1.0, 0.3, -1.0]),
    "celu": g_unary("celu", alpha=[1.0, 0.5], axis=[0, 1, 2, 3]),
    "softplus": g_unary("softplus", beta=[1.0, 2.0, 0.5]),
    "selu": g_unary("selu", scale=[1.0, 1.5], alpha=[1.0, 2.0]),
    "sign": g_unary("sign", alpha=[1.0, 0.0, -2.0]),
    "gelu": g_unary("gelu"), "mish": g_unary("mish"), "hard_sigmoid": g_unary("hard_sigmoid"),
    "relu6": g_unary("relu6"), "log_sigmoid": g_unary("log_sigmoid"),
    "tanh_shrink": g_unary("tanh_shrink"),
    "int sum": g_int("sum"), "int max": g_int("max"), "int mean": g_int("mean"),
    "int add2": g_int("add2"), "int mul2": g_int("mul2"), "int sub2": g_int("sub2"),
    "int maximum2": g_int("maximum2"),
    "softmax_cross_entropy": g_softmax_ce("softmax_cross_entropy"),
    "categorical_cross_entropy": g_softmax_ce("categorical_cross_entropy"),
    "top_n_error": g_softmax_ce("top_n_error"), "kl_multinomial": g_kl,
    "huber_loss": g_pair_loss("huber_loss", delta=[1.0, 0.5, 2.0]),
    "epsilon_insensitive_loss": g_pair_loss("epsilon_insensitive_loss", epsilon=[0.0, 0.5]),
    "squared_error": g_pair_loss("squared_error"),
    "absolute_error": g_pair_loss("absolute_error"),
    "affine": g_affine, "batch_matmul": g_batch_matmul, "depthwise_convolution": g_depthwise,
    "unpooling": g_unpooling, "global_average_pooling": g_global_avg, "where": g_where,
    "trilu": g_trilu, "searchsorted": g_searchsorted,
    "norm_normalization": g_norm_normalization,
    "tensor_normalization": g_tensor_normalization,
    "weight_standardization": g_weight_std, "prelu": g_prelu,
    "add_n": g_n_ary("add_n"), "mul_n": g_n_ary("mul_n"), "broadcast_to": g_broadcast_to,
    "unique": g_unique, "matrix_diag": g_matrix("matrix_diag"),
    "batch_det": g_matrix("batch_det"), "batch_inv": g_matrix("batch_inv"),
}
