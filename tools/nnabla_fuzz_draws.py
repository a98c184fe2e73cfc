"""The random draws of ``tools/nnabla_fuzz.py``: one generator per function, each a
``rng -> draw`` (the function, its inputs as arrays, which need a gradient, the positional
and keyword arguments, ``In(i)`` standing for input ``i``), and :func:`pattern`, the kinds of a
draw's arguments its mismatches are grouped by.  Python 3.6+ and NumPy only: NNabla's
interpreter imports it too.
"""

import numpy as np


class In:
    """An argument that is input ``i`` of the draw (a Variable on both sides)."""

    def __init__(self, i):
        self.i = i


def _axis(rng, ndim, allow_none=True, allow_tuple=True):
    c = rng.randint(4)
    if c == 0 and allow_none:
        return None
    if c == 1 and allow_tuple and ndim > 1:
        n = rng.randint(1, ndim + 1)
        axes = sorted(rng.choice(ndim, n, replace=False).tolist())
        return tuple(a - ndim if rng.rand() < 0.4 else a for a in axes)
    a = int(rng.randint(ndim))
    return a - ndim if rng.rand() < 0.4 else a


def _shape(rng, lo=1, hi=4, dmin=1, dmax=4):
    return tuple(int(s) for s in rng.randint(lo, hi + 1, rng.randint(dmin, dmax + 1)))


def _data(rng, shape, kind="normal"):
    if kind == "ties":
        return rng.randint(-2, 3, shape).astype(np.float32)
    if kind == "positive":
        return rng.uniform(0.5, 1.5, shape).astype(np.float32)
    return rng.randn(*shape).astype(np.float32)


def _draw(fn, inputs, args=(), kwargs=None, grads=None, pf=False):
    grads = [True] * len(inputs) if grads is None else grads
    return {"fn": fn, "inputs": inputs, "grads": grads, "args": list(args),
            "kwargs": kwargs or {}, "pf": pf}


def g_reduce(name):
    def gen(rng):
        shape = _shape(rng)
        kind = "ties" if name in ("max", "min") and rng.rand() < 0.5 else "normal"
        kw = {"axis": _axis(rng, len(shape)), "keepdims": bool(rng.randint(2))}
        if name in ("max", "min") and rng.rand() < 0.4:
            kw["with_index" if rng.rand() < 0.5 else "only_index"] = True
        if name == "prod":
            kind = "positive"
        return _draw(name, [_data(rng, shape, kind)], [In(0)], kw,
                     grads=[not kw.get("only_index")])
    return gen


def g_norm(rng):
    shape = _shape(rng)
    kw = {"p": [None, 1, 2, 3][rng.randint(4)], "axis": _axis(rng, len(shape)),
          "keepdims": bool(rng.randint(2))}
    return _draw("norm", [_data(rng, shape, "positive")], [In(0)], kw)


def _broadcast_pair(rng):
    shape = _shape(rng)
    other = list(shape)
    for i in range(len(other)):
        if rng.rand() < 0.4:
            other[i] = 1
    if rng.rand() < 0.3:  # a lower rank
        other = other[rng.randint(len(other)):] or [1]
    if rng.rand() < 0.1:  # invalid
        other[-1] = other[-1] + 1
    pair = [tuple(shape), tuple(other)]
    if rng.rand() < 0.5:
        pair.reverse()
    return pair


def g_binary(name):
    def gen(rng):
        a, b = _broadcast_pair(rng)
        kind = "positive" if name in ("pow2", "div2") else "normal"
        return _draw(name, [_data(rng, a, kind), _data(rng, b, kind)], [In(0), In(1)])
    return gen


def g_reshape(rng):
    shape = _shape(rng)
    n = int(np.prod(shape))
    new = list(rng.permutation(list(shape)))
    if rng.rand() < 0.3:
        new = [n]
    if rng.rand() < 0.3:
        new[rng.randint(len(new))] = -1
    if rng.rand() < 0.1:
        new = [n + 1]
    return _draw("reshape", [_data(rng, shape)], [In(0), tuple(int(s) for s in new)])


def g_transpose(rng):
    shape = _shape(rng)
    axes = [int(a) for a in rng.permutation(len(shape))]
    if rng.rand() < 0.3:
        axes = [a - len(shape) if rng.rand() < 0.5 else a for a in axes]
    return _draw("transpose", [_data(rng, shape)], [In(0), tuple(axes)])


def g_slice(rng):
    shape = _shape(rng, 1, 6)
    start, stop, step = [], [], []
    k = rng.randint(1, len(shape) + 1)
    for s in shape[len(shape) - k:]:  # the lists apply to the trailing axes
        st = int(rng.choice([1, 1, 2, -1, -2]))
        a, b = sorted(int(v) for v in rng.randint(-s, s + 1, 2))
        if st < 0:  # NNabla reads out of bounds from start = size
            a, b = min(b, s - 1), a
        start.append(a)
        stop.append(b)
        step.append(st)
    kw = {"start": tuple(start), "stop": tuple(stop), "step": tuple(step)}
    if rng.rand() < 0.15:  # NNabla wants all three lists or none
        kw = {}
    return _draw("slice", [_data(rng, shape)], [In(0)], kw)


def g_pad(rng):
    shape = _shape(rng, 2, 5)
    k = rng.randint(1, len(shape) + 1)
    mode = ["constant", "constant", "reflect", "repeat"][rng.randint(4)]
    hi = 3 if mode != "reflect" else 2
    if mode != "constant" and rng.rand() < 0.3:  # pads longer than the axis
        hi = 7
    width = tuple(int(v) for v in rng.randint(0, hi, 2 * k))
    kw = {"mode": mode}
    if mode == "constant" and rng.rand() < 0.5:
        kw["constant_value"] = round(float(rng.randn()), 2)
    return _draw("pad", [_data(rng, shape)], [In(0), width], kw)


def g_concat(name):
    def gen(rng):
        shape = _shape(rng)
        n = rng.randint(1, 4)
        ax = int(rng.randint(len(shape) + (1 if name == "stack" else 0)))
        if rng.rand() < 0.4:
            ax -= len(shape) + (1 if name == "stack" else 0)
        xs = []
        for _ in range(n):
            s = list(shape)
            if name == "concatenate" and ax >= 0 and rng.rand() < 0.5:
                s[ax] = int(rng.randint(1, 4))
            xs.append(_data(rng, tuple(s)))
        kw = {"axis": ax}
        if name == "concatenate" and rng.rand() < 0.15:
            kw = {}
        return _draw(name, xs, [In(i) for i in range(n)], kw)
    return gen


def g_split(rng):
    shape = _shape(rng)
    ax = int(rng.randint(-len(shape), len(shape)))
    return _draw("split", [_data(rng, shape)], [In(0)], {"axis": ax})


def g_tile(rng):
    shape = _shape(rng, 1, 3, 1, 3)
    reps = tuple(int(v) for v in rng.randint(1, 4, rng.randint(1, 5)))
    return _draw("tile", [_data(rng, shape)], [In(0), reps])


def g_flip(rng):
    shape = _shape(rng)
    axes = _axis(rng, len(shape))
    if isinstance(axes, int):
        axes = (axes,)
    return _draw("flip", [_data(rng, shape)], [In(0)], {"axes": axes})


def g_shift(rng):
    shape = _shape(rng, 2, 5)
    k = rng.randint(1, len(shape) + 1)
    shifts = tuple(int(v) for v in rng.randint(-3, 4, k))
    kw = {"shifts": shifts, "border_mode": ["nearest", "reflect"][rng.randint(2)]}
    return _draw("shift", [_data(rng, shape)], [In(0)], kw)


def g_pool(name):
    def gen(rng):
        nsp = rng.randint(1, 4)
        cl = bool(rng.rand() < 0.3)
        sp = tuple(int(v) for v in rng.randint(2, 7, nsp))
        lead = (2, 3) if rng.rand() < 0.8 else (3,)
        shape = (lead[:-1] + sp + lead[-1:]) if cl else lead + sp
        kernel = tuple(int(v) for v in rng.randint(1, 4, nsp))
        kw = {"ignore_border": bool(rng.randint(2))}
        if rng.rand() < 0.6:
            kw["stride"] = tuple(int(v) for v in rng.randint(1, 4, nsp))
        if rng.rand() < 0.5:
            kw["pad"] = tuple(int(rng.randint(0, k)) for k in kernel)
        if cl:
            kw["channel_last"] = True
        if name == "average_pooling" and rng.rand() < 0.6:
            kw["including_pad"] = bool(rng.randint(2))
        kind = "ties" if name == "max_pooling" and rng.rand() < 0.3 else "normal"
        return _draw(name, [_data(rng, shape, kind)], [In(0), kernel], kw)
    return gen


def g_conv(name):
    def gen(rng):
        nsp = rng.randint(1, 3)
        cl = bool(rng.rand() < 0.3) and nsp == 2
        group = int(rng.choice([1, 1, 2]))
        cin = group * int(rng.randint(1, 3))
        cout = group * int(rng.randint(1, 3))
        sp = tuple(int(v) for v in rng.randint(3, 7, nsp))
        k = tuple(int(v) for v in rng.randint(1, 4, nsp))
        x = (2,) + ((sp + (cin,)) if cl else ((cin,) + sp))
        if name == "convolution":
            w = (cout,) + ((k + (cin // group,)) if cl else ((cin // group,) + k))
        else:
            w = (cin,) + ((k + (cout // group,)) if cl else ((cout // group,) + k))
        kw = {}
        if rng.rand() < 0.5:
            kw["pad"] = tuple(int(v) for v in rng.randint(0, 3, nsp))
        if rng.rand() < 0.5:
            kw["stride"] = tuple(int(v) for v in rng.randint(1, 3, nsp))
        if rng.rand() < 0.4:
            kw["dilation"] = tuple(int(v) for v in rng.randint(1, 3, nsp))
        if group > 1:
            kw["group"] = group
        if cl:
            kw["channel_last"] = True
        if name == "deconvolution" and "stride" in kw and rng.rand() < 0.4:
            kw["output_padding"] = tuple(int(rng.randint(0, s)) for s in kw["stride"])
        inputs = [_data(rng, x), _data(rng, w)]
        args = [In(0), In(1)]
        if rng.rand() < 0.6:
            inputs.append(_data(rng, (cout,)))
            args.append(In(2))
        return _draw(name, inputs, args, kw)
    return gen


def g_batchnorm(rng):
    shape = _shape(rng, 2, 4, 2, 4)
    axes = [int(rng.randint(len(shape)))] if rng.rand() < 0.8 else [1, len(shape) - 1]
    axes = sorted(set(axes))
    pshape = tuple(s if i in axes else 1 for i, s in enumerate(shape))
    batch_stat = bool(rng.randint(2))
    kw = {"axes": axes, "batch_stat": batch_stat, "decay_rate": float(rng.choice([0.9, 0.5])),
          "eps": float(rng.choice([1e-5, 1e-2]))}
    inputs = [_data(rng, shape), _data(rng, pshape), _data(rng, pshape) + 1,
              _data(rng, pshape), _data(rng, pshape, "positive")]
    return _draw("batch_normalization", inputs, [In(i) for i in range(5)], kw,
                 grads=[True, True, True, False, False])


def g_mean_sub(rng):
    shape = _shape(rng, 2, 4, 2, 4)
    base = int(rng.randint(1, len(shape)))
    kw = {"base_axis": base, "update_running_mean": bool(rng.randint(2))}
    inputs = [_data(rng, shape), _data(rng, shape[base:]), np.array([rng.randint(0, 5)],
                                                                   np.float32)]
    return _draw("mean_subtraction", inputs, [In(0), In(1), In(2)], kw,
                 grads=[True, False, False])


def g_softmax(name):
    def gen(rng):
        shape = _shape(rng)
        kw = {}
        if rng.rand() < 0.8:
            kw["axis"] = int(rng.randint(-len(shape), len(shape)))
        return _draw(name, [_data(rng, shape)], [In(0)], kw)
    return gen


def g_sort(rng):
    shape = _shape(rng, 1, 5)
    kw = {"axis": int(rng.randint(-len(shape), len(shape))), "reverse": bool(rng.randint(2))}
    c = rng.randint(3)
    if c == 1:
        kw["with_index"] = True
    elif c == 2:
        kw["only_index"] = True
    return _draw("sort", [_data(rng, shape, "ties")], [In(0)], kw, grads=[c != 2])


def g_top_k(rng):
    shape = _shape(rng, 2, 5, 1, 3)
    base = int(rng.randint(0, len(shape)))
    n = int(np.prod(shape[base:]))
    kw = {"abs": bool(rng.randint(2)), "reduce": bool(rng.randint(2)), "base_axis": base,
          "largest": bool(rng.randint(2))}
    return _draw("top_k_data", [_data(rng, shape, "ties")], [In(0), int(rng.randint(1, n + 1))],
                 kw)


def g_interpolate(rng):
    nsp = rng.randint(1, 4)
    mode = ["linear", "nearest"][rng.randint(2)]
    if nsp == 3 and mode == "linear":
        nsp = 2
    cl = bool(rng.rand() < 0.25)
    sp = tuple(int(v) for v in rng.randint(2, 5, nsp))
    shape = ((2,) + sp + (2,)) if cl else ((2, 2) + sp)
    kw = {"mode": mode, "align_corners": bool(rng.randint(2))}
    if rng.rand() < 0.5:
        kw["output_size"] = tuple(int(v) for v in rng.randint(1, 8, nsp))
    else:
        kw["scale"] = tuple(float(v) for v in rng.choice([0.5, 1.5, 2.0, 3.0], nsp))
    if rng.rand() < 0.5:
        kw["half_pixel"] = True
    if mode == "nearest" and rng.rand() < 0.5:
        kw["half_pixel_for_nn"] = True
    if cl:
        kw["channel_last"] = True
    return _draw("interpolate", [_data(rng, shape)], [In(0)], kw)


def g_gather(rng):
    shape = _shape(rng, 2, 4, 1, 3)
    axis = int(rng.randint(0, len(shape)))
    bd = int(rng.randint(0, axis + 1)) if rng.rand() < 0.4 else 0
    ishape = shape[:bd] + _shape(rng, 1, 3, 1, 2)
    idx = rng.randint(0, shape[axis], ishape).astype(np.float32)
    kw = {"axis": axis}
    if bd:
        kw["batch_dims"] = bd
    return _draw("gather", [_data(rng, shape), idx], [In(0), In(1)], kw, grads=[True, False])


def g_gather_nd(rng):
    shape = _shape(rng, 2, 4, 1, 3)
    m = int(rng.randint(1, len(shape) + 1))
    n = int(rng.randint(1, 4))
    idx = np.stack([rng.randint(-s if rng.rand() < 0.3 else 0, s, n) for s in shape[:m]])
    return _draw("gather_nd", [_data(rng, shape), idx.astype(np.float32)], [In(0), In(1)],
                 grads=[True, False])


def g_scatter_nd(rng):
    shape = _shape(rng, 2, 4, 1, 3)
    m = int(rng.randint(1, len(shape) + 1))
    n = int(rng.randint(1, 4))
    add = bool(rng.randint(2))
    cols = [rng.permutation(s)[:n] if not add else rng.randint(0, s, n) for s in shape[:m]]
    n = min(len(c) for c in cols)
    idx = np.stack([c[:n] for c in cols])
    data = _data(rng, (n,) + shape[m:])
    return _draw("scatter_nd", [data, idx.astype(np.float32)], [In(0), In(1), shape],
                 {"add": add} if add else {}, grads=[True, False])


def g_one_hot(rng):
    shape = _shape(rng, 1, 3, 1, 2)
    k = int(rng.randint(1, 3))
    sizes = tuple(int(v) for v in rng.randint(2, 5, k))
    x = np.stack([rng.randint(0, s, shape) for s in sizes], -1).astype(np.int32)
    return _draw("one_hot", [x], [In(0), sizes], grads=[False])


def g_embed(rng):
    n = int(rng.randint(2, 6))
    x = rng.randint(0, n, _shape(rng, 1, 3, 1, 3)).astype(np.int32)
    w = _data(rng, (n,) + _shape(rng, 1, 3, 1, 2))
    return _draw("embed", [x, w], [In(0), In(1)], grads=[False, True])


def g_clip_value(rng):
    shape = _shape(rng)
    if rng.rand() < 0.5:
        lo, hi = -0.5, 0.7
        return _draw("clip_by_value", [_data(rng, shape)], [In(0), lo, hi])
    lo = _data(rng, shape) * 0.3 - 0.5
    return _draw("clip_by_value", [_data(rng, shape), lo, lo + 1.0], [In(0), In(1), In(2)])


def g_clip_norm(rng):
    shape = _shape(rng)
    kw = {"axis": _axis(rng, len(shape))}
    return _draw("clip_by_norm", [_data(rng, shape)], [In(0), float(rng.choice([0.5, 1.0, 5.0]))],
                 kw)


def g_cum(name):
    def gen(rng):
        shape = _shape(rng)
        kw = {"axis": int(rng.randint(-len(shape), len(shape))),
              "exclusive": bool(rng.randint(2)), "reverse": bool(rng.randint(2))}
        kind = "ties" if name == "cumprod" and rng.rand() < 0.5 else "normal"
        return _draw(name, [_data(rng, shape, kind)], [In(0)], kw)
    return gen


def g_broadcast(rng):
    shape = _shape(rng)
    x = tuple(s if rng.rand() < 0.5 else 1 for s in shape)
    return _draw("broadcast", [_data(rng, x)], [In(0), shape])


def g_norms(name):
    def gen(rng):
        shape = _shape(rng, 2, 4, 2, 4)
        if name == "layer_normalization":
            b = int(rng.randint(0, len(shape) - 1))
            ps = tuple(1 if i == b else s for i, s in enumerate(shape))
            kw = {"batch_axis": b}
        elif name == "instance_normalization":
            ca = int(rng.randint(1, len(shape)))
            ps = tuple(s if i == ca else 1 for i, s in enumerate(shape))
            kw = {"channel_axis": ca}
        else:
            shape = (2, 4) + shape[2:]
            ps = (1, 4) + (1,) * (len(shape) - 2)
            kw = {"num_groups": int(rng.choice([1, 2, 4]))}
        kw["eps"] = float(rng.choice([1e-5, 1e-2]))
        inputs = [_data(rng, shape), _data(rng, ps), _data(rng, ps)]
        return _draw(name, inputs, [In(0), In(1), In(2)], kw)
    return gen


def g_pf_conv(rng):
    nsp = rng.randint(1, 3)
    cl = bool(rng.rand() < 0.3) and nsp == 2
    group = int(rng.choice([1, 1, 2]))
    cin = group * int(rng.randint(1, 3))
    sp = tuple(int(v) for v in rng.randint(3, 6, nsp))
    x = (2,) + ((sp + (cin,)) if cl else ((cin,) + sp))
    kw = {"group": group, "with_bias": bool(rng.randint(2))}
    if rng.rand() < 0.5:
        kw["pad"] = tuple(int(v) for v in rng.randint(0, 2, nsp))
    if rng.rand() < 0.5:
        kw["stride"] = tuple(int(v) for v in rng.randint(1, 3, nsp))
    if rng.rand() < 0.3:
        kw["dilation"] = tuple(int(v) for v in rng.randint(1, 3, nsp))
    if cl:
        kw["channel_last"] = True
    name = "convolution" if rng.rand() < 0.6 else "deconvolution"
    k = tuple(int(v) for v in rng.randint(1, 4, nsp))
    return _draw(name, [_data(rng, x)], [In(0), group * int(rng.randint(1, 3)), k], kw, pf=True)


def g_pf_affine(rng):
    shape = _shape(rng, 2, 4, 2, 4)
    base = int(rng.randint(1, len(shape)))
    out = int(rng.randint(1, 4)) if rng.rand() < 0.7 else tuple(int(v) for v in
                                                             rng.randint(1, 3, 2))
    return _draw("affine", [_data(rng, shape)], [In(0), out],
                 {"base_axis": base, "with_bias": bool(rng.randint(2))}, pf=True)


def g_pf_bn(rng):
    shape = _shape(rng, 2, 4, 2, 4)
    kw = {"axes": [int(rng.randint(len(shape)))], "batch_stat": bool(rng.randint(2)),
          "decay_rate": 0.5}
    return _draw("batch_normalization", [_data(rng, shape)], [In(0)], kw, pf=True)


def g_pf_embed(rng):
    n = int(rng.randint(2, 6))
    x = rng.randint(0, n, _shape(rng, 1, 3, 1, 3)).astype(np.int32)
    return _draw("embed", [x], [In(0), n, int(rng.randint(1, 4))], grads=[False], pf=True)


GENERATORS = {
    "sum": g_reduce("sum"), "mean": g_reduce("mean"), "max": g_reduce("max"),
    "min": g_reduce("min"), "prod": g_reduce("prod"), "norm": g_norm,
    "add2": g_binary("add2"), "sub2": g_binary("sub2"), "mul2": g_binary("mul2"),
    "div2": g_binary("div2"), "pow2": g_binary("pow2"), "maximum2": g_binary("maximum2"),
    "minimum2": g_binary("minimum2"),
    "reshape": g_reshape, "transpose": g_transpose, "slice": g_slice, "pad": g_pad,
    "concatenate": g_concat("concatenate"), "stack": g_concat("stack"), "split": g_split,
    "tile": g_tile, "flip": g_flip, "shift": g_shift, "broadcast": g_broadcast,
    "max_pooling": g_pool("max_pooling"), "average_pooling": g_pool("average_pooling"),
    "sum_pooling": g_pool("sum_pooling"),
    "convolution": g_conv("convolution"), "deconvolution": g_conv("deconvolution"),
    "batch_normalization": g_batchnorm, "mean_subtraction": g_mean_sub,
    "layer_normalization": g_norms("layer_normalization"),
    "instance_normalization": g_norms("instance_normalization"),
    "group_normalization": g_norms("group_normalization"),
    "softmax": g_softmax("softmax"), "log_softmax": g_softmax("log_softmax"),
    "sort": g_sort, "top_k_data": g_top_k, "interpolate": g_interpolate,
    "gather": g_gather, "gather_nd": g_gather_nd, "scatter_nd": g_scatter_nd,
    "one_hot": g_one_hot, "embed": g_embed, "clip_by_value": g_clip_value,
    "clip_by_norm": g_clip_norm, "cumsum": g_cum("cumsum"), "cumprod": g_cum("cumprod"),
    "PF.conv": g_pf_conv, "PF.affine": g_pf_affine, "PF.batch_normalization": g_pf_bn,
    "PF.embed": g_pf_embed,
}


def _kind(v):
    if v is None or isinstance(v, (bool, str)):
        return repr(v)
    if isinstance(v, In):
        return "var"
    if isinstance(v, (int, np.integer)):
        return "neg-int" if v < 0 else "int"
    if isinstance(v, float):
        return "float"
    if isinstance(v, (tuple, list)):
        sub = sorted({_kind(e) for e in v})
        return "%s%d[%s]" % (type(v).__name__, len(v), ",".join(sub))
    return type(v).__name__


def pattern(d):
    """The draw's function and the kinds of its arguments (how mismatches are grouped)."""
    parts = ["%d-d" % d["inputs"][0].ndim]
    parts += [_kind(a) for a in d["args"][1:] if not isinstance(a, In)]
    parts += ["%s=%s" % (k, _kind(v)) for k, v in sorted(d["kwargs"].items())]
    return " ".join(parts)
