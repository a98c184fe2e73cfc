"""NNabla 1.39 fidelity, twentieth round: the backward of ``F.swish``, ``F.mul_n`` and
``F.prod`` reads the output ``y`` (NNabla's kernels: swish ``dy * (y + sigmoid(x) * (1 - y))``,
mul_n ``dy * y / x_i``, prod ``dy * y / x``, 0 where ``x`` is 0), so a ``y.d`` written before
the backward changes the gradient, static (one and two forwards) and dynamic; an input holding
a 0 shows each formula's own value there (mul_n's ``0 / 0``).  A ``y.d`` array is alive as
the output is written, so the write gives ``y`` new memory (the backward reads that).
"""

import os
import tempfile

import numpy as np

from compat_harness import nnabla_case

_F = "nnabla.functions."


def _inputs(nn, zero):
    a = (np.arange(6, dtype=np.float32).reshape(2, 3) - 2) / 6
    if not zero:
        a = a + np.float32(0.05)
    b = np.linspace(-1.5, 2.0, 6).astype(np.float32).reshape(2, 3)
    return (nn.Variable.from_numpy_array(a, need_grad=True),
            nn.Variable.from_numpy_array(b, need_grad=True))


# name -> (the function it touches, how it is called on the (2, 3) inputs a and b)
_OPS = {
    "swish": ("swish", lambda F, a, b: F.swish(a)),
    "mul_n": ("mul_n", lambda F, a, b: F.mul_n(a, b, a)),
    "prod axis 1": ("prod", lambda F, a, b: F.prod(a, axis=1)),
    "prod all": ("prod", lambda F, a, b: F.prod(b)),
    "prod axes 0 1 keepdims": ("prod", lambda F, a, b: F.prod(a, axis=(0, 1), keepdims=True)),
}


def _grads(nn, F, make, dynamic, forwards, write, zero):
    nn.set_auto_forward(dynamic)
    try:
        a, b = _inputs(nn, zero)
        y = make(F, a, b)
        loss = F.sum(F.mul2(y, y))
        if not dynamic:
            for _ in range(forwards):
                loss.forward()
        kept = y.d                          # (alive: y.d = 0.5 gives y new memory)
        if write:
            y.d = 0.5
        del kept
        a.grad.zero()
        b.grad.zero()
        loss.backward()
        return {"a.g": a.g.copy(), "b.g": b.g.copy(), "y.d": y.d.copy()}
    finally:
        nn.set_auto_forward(False)


@nnabla_case(names=sorted(set(_F + n for n, _ in _OPS.values())) + ["nnabla.Variable.d"],
             note="loss = sum(y * y); y.d = 0.5 written (or not) after one or two static "
                  "forwards, or in dynamic mode, inputs with and without a 0: the gradients "
                  "read y")
def written_outputs__swish_mul_n_prod_read_them(nn, F, r):
    r.touch(*[_F + n for n, _ in _OPS.values()])
    r.touch("nnabla.Variable.d")
    res = {}
    for key, (_, make) in _OPS.items():
        for zero in (False, True):
            for dynamic, forwards in ((False, 1), (False, 2), (True, 1)):
                for write in (True, False):
                    tag = "%s %s%s %s" % ("dynamic" if dynamic else "static x%d" % forwards,
                                          key, " (a 0)" if zero else "",
                                          "y.d = 0.5" if write else "as computed")
                    got = _grads(nn, F, make, dynamic, forwards, write, zero)
                    for k, v in got.items():
                        res[tag + " " + k] = v
    return res


def _reshape_of_exp(nn, F, dynamic, inplace, target, how):
    nn.set_auto_forward(dynamic)
    try:
        a = nn.Variable.from_numpy_array(np.arange(6, dtype=np.float32).reshape(2, 3),
                                         need_grad=True)
        e = F.exp(F.mul_scalar(a, 0.1))
        y = F.reshape(e, (3, 2), inplace=inplace)
        loss = F.sum(F.mul2(y, y))
        if not dynamic:
            loss.forward()
        v = y if target == "y" else e
        kept = v.d                          # (alive: = 5 and fill() give v new memory)
        if how == "= 5":
            v.d = 5
        elif how == "fill":
            v.data.fill(5)
        else:
            v.d[...] = 5
        del kept
        a.grad.zero()
        loss.backward()
        return {"a.g": a.g.copy(), "e.d": e.d.copy(), "y.d": y.d.copy()}
    finally:
        nn.set_auto_forward(False)


@nnabla_case(names=[_F + "reshape", _F + "exp", "nnabla.Variable.d",
                    "nnabla.NdArray.fill"],
             note="y = F.reshape(e, ..., inplace=True/False) of e = exp(0.1 a), loss = "
                  "sum(y * y); y's or e's value written (= 5 and fill() with a .d array "
                  "alive: new memory; d[...] = 5 in place) after the forward: what y, e and "
                  "the backward read (an in-place reshape holds e's array)")
def written_outputs__reshape_of_exp_shares_its_array(nn, F, r):
    r.touch("nnabla.NdArray.fill", "nnabla.Variable.d")
    res = {}
    for dynamic in (False, True):
        for inplace in (True, False):
            for target in ("y", "e"):
                for how in ("= 5", "fill", "d[...] = 5"):
                    tag = "%s inplace=%s %s.%s" % ("dynamic" if dynamic else "static",
                                                   inplace, target, how)
                    got = _reshape_of_exp(nn, F, dynamic, inplace, target, how)
                    for k, v in got.items():
                        res[tag + " " + k] = v
    return res


def _scatter_then_fill(nn, F, dynamic, make_x, how):
    nn.set_auto_forward(dynamic)
    try:
        idx = nn.Variable.from_numpy_array(np.array([[0, 2]]))
        data = nn.Variable.from_numpy_array(np.array([1.0, 2.0], np.float32), need_grad=True)
        a = nn.Variable.from_numpy_array(np.arange(4, dtype=np.float32), need_grad=True)
        x = make_x(F, a)
        y = F.scatter_nd(data, idx, out=x)
        loss = F.sum(F.mul2(y, y))
        if not dynamic:
            loss.forward()
        res = {"y": y.d.copy()}
        kept = x.d                          # (alive: fill() gives x new memory)
        if how == "fill":
            x.data.fill(3)
        else:
            x.d = 3
        res.update({"y after": y.d.copy(), "x after": x.d.copy(), "kept": kept.copy()})
        a.grad.zero()
        data.grad.zero()
        loss.backward()
        res.update({"a.g": a.g.copy(), "data.g": data.g.copy()})
        if not dynamic:
            loss.forward()
            res.update({"y after forward": y.d.copy(), "x after forward": x.d.copy()})
        return res
    finally:
        nn.set_auto_forward(False)


@nnabla_case(names=[_F + "scatter_nd", "nnabla.NdArray.fill"],
             note="y = F.scatter_nd(data, idx, out=x), x computed or a leaf; x given new "
                  "memory (fill(3), x.d = 3, with a kept x.d array) after the forward: y holds "
                  "x's array, so shows it and the backward reads it")
def scatter_nd__out_given_new_memory(nn, F, r):
    r.touch("nnabla.NdArray.fill")
    res = {}
    for dynamic in (False, True):
        for key, make in (("mul_scalar", lambda F, a: F.mul_scalar(a, 2.0)),
                          ("leaf", lambda F, a: a)):
            for how in ("fill", "= 3"):
                got = _scatter_then_fill(nn, F, dynamic, make, how)
                tag = "%s%s x %s" % ("dynamic " if dynamic else "", key, how)
                for k, v in got.items():
                    res[tag + ": " + k] = v
    return res


@nnabla_case(names=[_F + "fused_batch_normalization"], rtol=1e-4, atol=1e-5,
             note="x (2, 3, 4, 4) with z added or not, nonlinearity relu / '' (none), batch "
                  "statistics or running ones: the output, the running statistics after, "
                  "and the gradients of x, z, beta, gamma")
def fused_batch_normalization__activations(nn, F, r):
    res = {}
    for nonlin in ("relu", ""):
        for with_z in (True, False):
            for batch_stat in (True, False):
                x = nn.Variable.from_numpy_array(r.randn(2, 3, 4, 4), need_grad=True)
                z = nn.Variable.from_numpy_array(r.randn(2, 3, 4, 4), need_grad=True)
                beta = nn.Variable.from_numpy_array(r.randn(1, 3, 1, 1), need_grad=True)
                gamma = nn.Variable.from_numpy_array(r.randn(1, 3, 1, 1), need_grad=True)
                mean = nn.Variable.from_numpy_array(r.randn(1, 3, 1, 1))
                var = nn.Variable.from_numpy_array(np.abs(r.randn(1, 3, 1, 1)) + 0.5)
                tag = "%s z=%s batch_stat=%s" % (nonlin or "none", with_z, batch_stat)
                try:
                    y = F.fused_batch_normalization(x, beta, gamma, mean, var,
                                                    z if with_z else None,
                                                    batch_stat=batch_stat,
                                                    nonlinearity=nonlin)
                    loss = F.sum(F.mul2(y, y))
                    loss.forward()
                except RuntimeError:
                    res[tag + " refused"] = "RuntimeError"
                    continue
                for v in (x, z, beta, gamma):
                    v.grad.zero()
                loss.backward()
                res[tag + " y"] = y.d.copy()
                res[tag + " mean"] = mean.d.copy()
                res[tag + " var"] = var.d.copy()
                for k, v in (("x", x), ("beta", beta), ("gamma", gamma)):
                    res[tag + " " + k + ".g"] = v.g.copy()
                if with_z:
                    res[tag + " z.g"] = z.g.copy()
    return res


@nnabla_case(names=[_F + "top_k_data"],
             note="top_k_data with_index=True (values and their int indices, reduce or not, "
                  "abs or not, base_axis 1 and 2), ties included; gradient of the values")
def top_k_data__with_index(nn, F, r):
    res = {}
    base = np.array([[[3.0, -5.0, 1.0, 5.0, 2.0, -5.0], [0.5, 0.5, 0.5, -1.0, 2.0, 2.0]],
                     [[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [-6.0, 5.0, -4.0, 3.0, -2.0, 1.0]]],
                    np.float32)
    for reduce in (True, False):
        for use_abs in (False, True):
            for base_axis in (1, 2):
                x = nn.Variable.from_numpy_array(base, need_grad=True)
                tag = "reduce=%s abs=%s base_axis=%d" % (reduce, use_abs, base_axis)
                try:
                    y, idx = F.top_k_data(x, 3, abs=use_abs, reduce=reduce,
                                          base_axis=base_axis, with_index=True)
                except RuntimeError:
                    res[tag + " refused"] = "RuntimeError"
                    continue
                loss = F.sum(F.mul2(y, y))
                F.sink(loss, idx).forward()
                x.grad.zero()
                loss.backward()
                res[tag + " y"] = y.d.copy()
                res[tag + " index"] = idx.d.copy()
                res[tag + " x.g"] = x.g.copy()
    return res


_FUSED_CONV_ACTS = (("identity", []), ("", []), ("relu", []), ("sigmoid", []), ("tanh", []),
                    ("leaky_relu", [0.2]), ("elu", [0.7]), ("relu6", []), ("leaky_relu", []),
                    ("swish", []))


@nnabla_case(names=[_F + "fused_convolution"], rtol=1e-4, atol=1e-5,
             note="fused_convolution of x (2, 3, 5, 5), 4 maps 3x3 pad 1, with a bias (and z) "
                  "or batch normalisation (batch statistics) and z, each nonlinearity NNabla "
                  "1.39 implements (with its nonlinearity_args), a missing argument and an "
                  "unknown one; a bias with batch normalisation (refused): the output and the "
                  "gradients of x and the weight")
def fused_convolution__activations(nn, F, r):
    res = {}
    for act, args in _FUSED_CONV_ACTS:
        for how in ("bias", "bias+z", "bn+z", "bias+bn"):
            x = nn.Variable.from_numpy_array(r.randn(2, 3, 5, 5), need_grad=True)
            w = nn.Variable.from_numpy_array(r.randn(4, 3, 3, 3) * 0.3, need_grad=True)
            b = nn.Variable.from_numpy_array(r.randn(4), need_grad=True)
            z = nn.Variable.from_numpy_array(r.randn(2, 4, 5, 5))
            bn = [None] * 4
            if "bn" in how:
                bn = [nn.Variable.from_numpy_array(r.randn(1, 4, 1, 1)),
                      nn.Variable.from_numpy_array(r.randn(1, 4, 1, 1) + 1.0),
                      nn.Variable.from_numpy_array(np.zeros((1, 4, 1, 1), np.float32)),
                      nn.Variable.from_numpy_array(np.ones((1, 4, 1, 1), np.float32))]
            tag = "%s%s %s" % (act or "''", " " + str(args) if args else "", how)
            try:
                y = F.fused_convolution(x, w, b if "bias" in how else None, *bn,
                                        z=z if "z" in how else None, pad=(1, 1),
                                        nonlinearity=act, nonlinearity_args=args)
                loss = F.sum(F.mul2(y, y))
                loss.forward()
            except RuntimeError:
                res[tag + " refused"] = "RuntimeError"
                continue
            x.grad.zero()
            w.grad.zero()
            loss.backward()
            res[tag + " y"] = y.d.copy()
            res[tag + " x.g"] = x.g.copy()
            res[tag + " w.g"] = w.g.copy()
    return res


@nnabla_case(names=["nnabla.save_parameters", "nnabla.parameter.save_parameters"],
             note="nn.save_parameters to each suffix: .h5 and .protobuf written (and loaded "
                  "back), any other NNabla's AssertionError, no extension / '.h' / '.p' (its "
                  "saver's substring test) its ValueError; whether a file was left")
def save_parameters__suffixes(nn, F, r):
    r.touch("nnabla.parameter.save_parameters")
    folder = tempfile.mkdtemp()
    res = {}
    for suffix in (".h5", ".protobuf", ".nntxt", ".prototxt", ".nnp", ".txt", "", ".h", ".p"):
        nn.clear_parameters()
        with nn.parameter_scope("net"):
            nn.parameter.get_parameter_or_create("W", (2,)).d = [1.0, 2.0]
        path = os.path.join(folder, "params" + suffix)
        try:
            nn.save_parameters(path)
            nn.clear_parameters()
            nn.load_parameters(path)
            res[suffix + " loaded"] = nn.get_parameters()["net/W"].d.tolist()
        except AssertionError as e:
            res[suffix + " AssertionError"] = str(e)
        except ValueError as e:
            res[suffix + " ValueError"] = str(e)
        res[suffix + " file left"] = os.path.exists(path)
    return res
