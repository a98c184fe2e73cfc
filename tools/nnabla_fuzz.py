"""Differential random testing of ``nnabla.functions`` / ``parametric_functions``: Stadyn's
``stadyn.compat.nnabla`` against the real NNabla 1.39.

    python tools/nnabla_fuzz.py --nnabla /work/peers/nnabla/bin/python [--draws 20] [--seed 0]
        [--only sum,convolution] [--show 3]

For every function of ``GENERATORS`` it draws ``--draws`` random argument sets (shapes, axes
negative and tuple, keepdims, pads, strides, groups, modes, ...; some invalid on purpose),
runs each draw forward and backward (``y.backward(w)`` for a seeded ``w``; the gradients of
every input with ``need_grad``, and every input's data after the forward, which catches
running statistics) in NNabla 1.39 and in Stadyn (static graph and ``nn.set_auto_forward``),
and prints the mismatches grouped by function and argument pattern (the kinds of the
arguments: ``axis=neg-int``, ``keepdims=True``, ...).  An error on one side only is a
mismatch too.  The same file is the worker on both sides (``--worker nnabla|stadyn``): the
draws travel as a pickle.  Not run by CI (it needs NNabla); what it finds becomes a case under
``tests/compat/compat_cases/`` (``nnabla_fuzz_found.py``).
"""

import argparse
import os
import pickle
import subprocess
import sys
import tempfile
import zlib
from collections import defaultdict

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")


# ---------------------------------------------------------------- draws -----------------------

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


# ---------------------------------------------------------------- worker ----------------------

def _param_value(index, name, shape):
    rng = np.random.RandomState(zlib.crc32(("%d/%s" % (index, name)).encode()))
    return rng.randn(*shape).astype(np.float32) * 0.5


def run_one(nn, F, PF, index, d, dynamic=False):
    """Run draw ``d``: outputs, input grads, inputs' data after the forward, parameters.

    In dynamic mode the call itself computes (no ``forward()``); parametric functions are
    left out there (their parameters get the draw's values only after the call)."""
    if dynamic and d["pf"]:
        return {"skipped": True}
    nn.clear_parameters()
    xs = [nn.Variable.from_numpy_array(v, need_grad=bool(g))
          for v, g in zip(d["inputs"], d["grads"])]
    args = [xs[a.i] if isinstance(a, In) else a for a in d["args"]]
    mod = PF if d["pf"] else F
    with nn.parameter_scope("fz"):
        y = getattr(mod, d["fn"])(*args, **d["kwargs"])
    params = nn.get_parameters(grad_only=False)
    for name in sorted(params):
        p = params[name]
        p.d = _param_value(index, name, p.shape)
    ys = list(y) if isinstance(y, (tuple, list)) else [y]
    for x in xs:
        x.g = 0
    for p in params.values():
        p.g = 0
    if not dynamic:
        for v in ys:
            v.forward()
    res = {"out%d" % i: np.array(v.d, copy=True) for i, v in enumerate(ys)}
    for i, x in enumerate(xs):
        res["in%d.d" % i] = np.array(x.d, copy=True)
    for name in sorted(params):
        res["param " + name + ".d"] = np.array(params[name].d, copy=True)
    wrng = np.random.RandomState(index)
    floats = [v for v in ys if np.issubdtype(np.asarray(v.d).dtype, np.floating)]
    if floats and (any(d["grads"]) or params):
        if len(floats) == 1:
            floats[0].backward(wrng.randn(*floats[0].shape).astype(np.float32))
        else:
            loss = None
            for v in floats:
                w = nn.Variable.from_numpy_array(wrng.randn(*v.shape).astype(np.float32))
                term = F.sum(F.mul2(v, w))
                loss = term if loss is None else F.add2(loss, term)
            if not dynamic:
                loss.forward()
            loss.backward()
        for i, x in enumerate(xs):
            if d["grads"][i]:
                res["in%d.g" % i] = np.array(x.g, copy=True)
        for name in sorted(params):
            res["param " + name + ".g"] = np.array(params[name].g, copy=True)
    res["params"] = sorted([n, list(p.shape)] for n, p in params.items())
    return res


def worker(side, path_in, path_out, start, dynamic):
    if side == "nnabla":
        import nnabla as nn
        import nnabla.functions as F
        import nnabla.parametric_functions as PF
    else:
        sys.path.insert(0, os.environ.get("NNABLA_FUZZ_SRC", SRC))
        import stadyn.compat.nnabla as nn
        import stadyn.compat.nnabla.functions as F
        import stadyn.compat.nnabla.parametric_functions as PF
    import warnings
    warnings.simplefilter("ignore")
    nn.set_auto_forward(bool(dynamic))
    with open(path_in, "rb") as f:
        draws = pickle.load(f)
    with open(path_out, "ab") as out:
        for index in range(start, len(draws)):
            try:
                res = run_one(nn, F, PF, index, draws[index], bool(dynamic))
            except Exception as e:  # noqa: BLE001 - an error is a result here
                res = {"error": "%s: %s" % (type(e).__name__, str(e).strip().split("\n")[0][:200])}
            pickle.dump((index, res), out, protocol=4)
            out.flush()


def run_side(python, side, draws_path, n, dynamic=False):
    """Every draw's result on one side; a crash of the worker marks its draw and resumes."""
    results = {}
    fd, out_path = tempfile.mkstemp(suffix=".pkl", dir=os.path.dirname(draws_path))
    os.close(fd)
    start = 0
    while start < n:
        subprocess.run([python, os.path.abspath(__file__), "--worker", side, draws_path, out_path,
                        str(start), str(int(dynamic))],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env=dict(os.environ, OMP_NUM_THREADS="1"))
        with open(out_path, "rb") as f:
            while True:
                try:
                    i, r = pickle.load(f)
                except (EOFError, pickle.UnpicklingError):
                    break
                results[i] = r
        done = max(results) + 1 if results else 0
        if done < n:
            results[max(done, start)] = {"error": "crash"}
            start = max(done, start) + 1
        else:
            start = n
    os.unlink(out_path)
    return results


# ---------------------------------------------------------------- compare ---------------------

# Results where NNabla 1.39 itself is wrong: compared by neither side, counted apart.
def _several_axes(d):
    return len(d["kwargs"].get("axes", [1])) > 1


NNABLA_BUGS = [  # (function, result, the draws it applies to, why)
    ("sort", "in0.g", lambda d: True,
     "NNabla 1.39's Sort backward writes x.g[i] = y.g[index[i]] (the inverse permutation's "
     "gradient; right only where the sort permutation is its own inverse); Stadyn passes "
     "y.g[j] back to x[index[j]]"),
    ("batch_normalization", "in3.d", _several_axes,
     "NNabla 1.39's batch_normalization over several axes updates transposed copies of the "
     "running mean and variance (BatchNormalizationInOutAdapter), never the Variables given; "
     "Stadyn updates those"),
    ("batch_normalization", "in4.d", _several_axes, "(the running variance, as in3.d)"),
]
# Looser tolerances, with the reason: gradients through 1/sqrt(var + eps) with eps = 1e-5 over
# one or two values scale float32 rounding by ~300.
TOLERANCES = {"group_normalization": (1e-3, 1e-3), "instance_normalization": (1e-3, 1e-3),
              "layer_normalization": (1e-3, 1e-3), "batch_normalization": (1e-3, 1e-3)}

def compare(ref, got, rtol=1e-4, atol=1e-5, skip=()):
    """``None`` when ``got`` matches ``ref``, else a short reason.  What NNabla 1.39's CPU
    build has not implemented (``not_implemented error``) is no mismatch."""
    if "skipped" in got or "not_implemented" in ref.get("error", ""):
        return None
    if "error" in ref or "error" in got:
        if "error" in ref and "error" in got:
            return None
        if "error" in ref:
            return "Stadyn accepts what NNabla refuses (%s)" % ref["error"][:100]
        return "Stadyn raises %s" % got["error"][:160]
    if ref.get("params") != got.get("params"):
        return "parameters %s != %s" % (got.get("params"), ref.get("params"))
    keys = [k for k in ref if k != "params" and k not in skip]
    missing = [k for k in keys if k not in got]
    if missing:
        return "missing " + ",".join(missing)
    for k in keys:
        a, b = np.asarray(ref[k]), np.asarray(got[k])
        if a.shape != b.shape:
            return "%s shape %s != %s" % (k, b.shape, a.shape)
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        if not np.allclose(b64, a64, rtol=rtol, atol=atol, equal_nan=True):
            err = np.nanmax(np.abs(a64 - b64)) if a.size else 0
            return "%s values (max abs err %.3g)" % (k, err)
    return None


def dtype_notes(ref, got):
    if "error" in ref or "error" in got:
        return []
    return ["%s %s->%s" % (k, np.asarray(ref[k]).dtype, np.asarray(got[k]).dtype)
            for k in ref if k in got and k.startswith("out")
            and np.asarray(ref[k]).dtype != np.asarray(got[k]).dtype]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nnabla", default=os.environ.get("STADYN_NNABLA_PYTHON",
                                                        "/work/peers/nnabla/bin/python"))
    ap.add_argument("--stadyn", default=sys.executable)
    ap.add_argument("--src", default=SRC, help="the Stadyn source tree to test (default: this "
                                              "checkout's src)")
    ap.add_argument("--draws", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", default="")
    ap.add_argument("--show", type=int, default=2, help="examples printed per mismatch class")
    ap.add_argument("--no-dynamic", action="store_true")
    ap.add_argument("--worker", nargs=5, metavar=("SIDE", "IN", "OUT", "START", "DYNAMIC"))
    a = ap.parse_args(argv)
    if a.worker:
        side, pin, pout, start, dyn = a.worker
        worker(side, pin, pout, int(start), int(dyn))
        return 0
    os.environ["NNABLA_FUZZ_SRC"] = os.path.abspath(a.src)
    names = [n for n in GENERATORS if not a.only or n in a.only.split(",")]
    draws = []
    for fi, name in enumerate(names):
        for k in range(a.draws):
            rng = np.random.RandomState([a.seed, fi, k])
            d = GENERATORS[name](rng)
            d["label"] = name
            draws.append(d)
    tmp = tempfile.mkdtemp(prefix="nnabla_fuzz_")
    path = os.path.join(tmp, "draws.pkl")
    with open(path, "wb") as f:
        pickle.dump(draws, f, protocol=4)
    ref = run_side(a.nnabla, "nnabla", path, len(draws))
    sides = [("static", run_side(a.stadyn, "stadyn", path, len(draws)))]
    if not a.no_dynamic:
        sides.append(("dynamic", run_side(a.stadyn, "stadyn", path, len(draws), True)))
    classes = defaultdict(list)
    dtypes = defaultdict(set)
    bad = set()
    nnabla_errors = not_implemented = bugs = 0
    for i, d in enumerate(draws):
        nnabla_errors += "error" in ref[i]
        not_implemented += "not_implemented" in ref[i].get("error", "")
        for mode, got in sides:
            skip = [k for (fn, k, when, _) in NNABLA_BUGS if fn == d["label"] and when(d)]
            bugs += len(skip) and mode == "static" and "error" not in ref[i]
            why = compare(ref[i], got[i], *TOLERANCES.get(d["label"], (1e-4, 1e-5)),
                          skip=skip)
            if why:
                bad.add(i)
                classes[(d["label"], pattern(d), why.split(" (")[0][:60])].append((i, mode, why))
            for note in dtype_notes(ref[i], got[i]):
                dtypes[d["label"]].add(note)
    print("nnabla_fuzz: %d functions, %d draws (seed %d), NNabla refused %d (%d not implemented "
          "in NNabla, not compared), %d draws mismatch (%d classes)"
          % (len(names), len(draws), a.seed, nnabla_errors, not_implemented, len(bad),
             len(classes)))
    for (label, pat, _), items in sorted(classes.items()):
        modes = sorted({m for _, m, _ in items})
        print("\n[%s] %s  (%d; %s)" % (label, pat, len(items), "/".join(modes)))
        seen = set()
        for i, mode, why in items:
            if i in seen or len(seen) >= a.show:
                continue
            seen.add(i)
            d = draws[i]
            print("   #%d %s%s args=%s kwargs=%s shapes=%s\n      %s" % (
                i, "PF." if d["pf"] else "F.", d["fn"],
                [("x%d" % v.i) if isinstance(v, In) else v for v in d["args"]], d["kwargs"],
                [tuple(x.shape) for x in d["inputs"]], why))
    if bugs:
        print("\n%d draws reach NNabla 1.39's own bugs (not compared there):" % bugs)
        for fn, key, _, why in NNABLA_BUGS:
            print("  %s %s: %s" % (fn, key, why))
    if dtypes:
        print("\noutput dtypes that differ (not counted):")
        for label, notes in sorted(dtypes.items()):
            print("  %s: %s" % (label, ", ".join(sorted(notes))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
