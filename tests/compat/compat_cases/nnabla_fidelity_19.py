"""NNabla 1.39 fidelity, nineteenth round: in the dynamic mode, an op whose backward reads its
own output (``F.exp``, ``F.tanh``, ``F.sigmoid``, ``F.softmax``), its output given new memory
(``y.d = 5``, ``y.data.fill(5)``) while a ``y.d`` NumPy array is alive, once or twice, then
backward (Stadyn's read the old memory, which torch had saved); ``F.scatter_nd(..., out=x)``
of an ``x`` viewing another Variable's array (Stadyn's result had an array of its own); the value
``nn.load_parameters`` returns (NNabla's ``NNablaProtoBuf``; Stadyn's returned None) and a path
with no extension (NNabla's ValueError), ``nn.save_parameters`` of a ``.protobuf`` path (Stadyn
wrote its own format there).
"""

import os
import shutil

import numpy as np

from compat_harness import nnabla_case

_F = "nnabla.functions."

_SELF_READING = {
    "exp": lambda F, a: F.exp(F.mul_scalar(a, 0.1)),
    "tanh": lambda F, a: F.tanh(a),
    "sigmoid": lambda F, a: F.sigmoid(a),
    "softmax": lambda F, a: F.softmax(a, axis=1),
}


def _renew(y, how):
    if how == "y.d = 5":
        y.d = 5
    elif how == "fill":
        y.data.fill(5)
    else:                                   # two fills, each with a y.d array alive
        y.data.fill(5)
        kept_again = y.d
        y.d = 7
        return kept_again.copy()
    return None


@nnabla_case(names=[_F + n for n in _SELF_READING] + ["nnabla.NdArray.fill"],
             note="dynamic mode: y = op(a) whose backward reads y, y.d = 5 / fill(5) / two "
                  "renewals while a y.d array is alive, loss = sum(y * y) backward: a.g reads "
                  "the written y")
def dynamic_self_reading_outputs__backward_reads_written(nn, F, r):
    r.touch(*[_F + n for n in _SELF_READING])
    r.touch("nnabla.NdArray.fill")
    res = {}
    nn.set_auto_forward(True)
    try:
        for key, make in _SELF_READING.items():
            for how in ("y.d = 5", "fill", "twice"):
                a = nn.Variable.from_numpy_array(
                    np.linspace(-1.0, 1.0, 6, dtype=np.float32).reshape(2, 3), need_grad=True)
                y = make(F, a)
                kept = y.d
                loss = F.sum(F.mul2(y, y))
                between = _renew(y, how)
                a.grad.zero()
                loss.backward()
                tag = "%s %s " % (key, how)
                res[tag + "a.g"] = a.g.copy()
                res[tag + "y.d"] = y.d.copy()
                res[tag + "kept"] = kept.copy()
                if between is not None:
                    res[tag + "kept between"] = between
    finally:
        nn.set_auto_forward(False)
    return res


def _params(nn):
    return sorted([k, v.d.tolist(), v.need_grad]
                  for k, v in nn.get_parameters(grad_only=False).items())


def _entries(proto):
    return [[p.variable_name, list(p.shape.dim), list(p.data), p.need_grad]
            for p in proto.parameter]


@nnabla_case(names=["nnabla.load_parameters", "nnabla.parameter.load_parameters",
                    "nnabla.save_parameters"],
             note="save_parameters' .protobuf file (byte for byte); the value "
                  "load_parameters returns (NNabla's NNablaProtoBuf: a .protobuf's parameters, "
                  "an .h5's with needs_proto=True, an omitted file's empty; a given proto "
                  "merged into and returned), a file object, and a path with no extension or "
                  "a partial one (NNabla's ValueError)")
def load_parameters__returns_the_protobuf_message(nn, F, r):
    r.touch("nnabla.parameter.load_parameters", "nnabla.save_parameters")
    res = {}
    with r.tempdir() as folder:
        nn.clear_parameters()
        with nn.parameter_scope("net"):
            nn.parameter.get_parameter_or_create("W", (2,), need_grad=True).d = [1.0, 2.0]
            nn.parameter.get_parameter_or_create("b", (1,), need_grad=False).d = [3.0]
        for ext in (".h5", ".protobuf"):
            nn.save_parameters(os.path.join(folder, "p" + ext))
        shutil.copy(os.path.join(folder, "p.h5"), os.path.join(folder, "noext"))
        with open(os.path.join(folder, "p.protobuf"), "rb") as f:
            res["saved .protobuf bytes"] = np.frombuffer(f.read(), np.uint8).copy()
        for name in ("p.h5", "p.protobuf", "x.monitor", "noext", "missing", "p.h", "p.p"):
            for needs in (False, True):
                tag = "%s needs_proto=%s" % (name, needs)
                nn.clear_parameters()
                try:
                    proto = nn.load_parameters(os.path.join(folder, name), needs_proto=needs)
                    res[tag] = [type(proto).__name__, _entries(proto), proto.ByteSize()]
                except ValueError as e:
                    res[tag] = ["ValueError", str(e)]
                res[tag + " params"] = _params(nn)
        nn.clear_parameters()
        given = nn.load_parameters(os.path.join(folder, "p.protobuf"))
        with nn.parameter_scope("again"):
            back = nn.parameter.load_parameters(os.path.join(folder, "p.h5"), proto=given,
                                                needs_proto=True)
        res["given proto"] = [back is given, _entries(back)]
        res["given proto params"] = _params(nn)
        nn.clear_parameters()
        with open(os.path.join(folder, "p.protobuf"), "rb") as f:
            proto = nn.load_parameters(f, extension=".protobuf")
        res["file object"] = [_entries(proto), _params(nn)]
    return res


def _scatter_into_view(nn, F, dynamic, computed, unlinked):
    """``y = F.scatter_nd(data, idx, out=x)`` with ``x = v.reshape((6,), unlink=True)`` (or,
    ``unlinked``, ``v.get_unlinked_variable()`` of a (6,) ``v``), ``v`` a leaf or computed:
    what ``y``, ``x`` and ``v`` show through writes, a second forward and a backward."""
    res = {}
    nn.set_auto_forward(dynamic)
    try:
        a = nn.Variable.from_numpy_array(np.arange(6, dtype=np.float32).reshape(
            (6,) if unlinked else (2, 3)), need_grad=True)
        v = F.mul_scalar(a, 2.0) if computed else a
        if computed and not dynamic:
            v.forward()
        x = v.get_unlinked_variable() if unlinked else v.reshape((6,), unlink=True)
        idx = nn.Variable.from_numpy_array(np.array([[0, 2]]))
        data = nn.Variable.from_numpy_array(np.array([10.0, 20.0], np.float32), need_grad=True)
        y = F.scatter_nd(data, idx, out=x)
        if not dynamic:
            y.forward()
        res["y, x, v"] = [y.d.copy(), x.d.copy(), v.d.copy()]
        y.d = np.full(6, 7.0, np.float32)
        res["y.d = 7: x, v"] = [x.d.copy(), v.d.copy()]
        v.d = np.full(v.shape, 3.0, np.float32)
        res["v.d = 3: y, x"] = [y.d.copy(), x.d.copy()]
        x.d = np.full(6, 4.0, np.float32)
        res["x.d = 4: y, v"] = [y.d.copy(), v.d.copy()]
        if not dynamic:
            y.forward()
            res["forward again: y, x, v"] = [y.d.copy(), x.d.copy(), v.d.copy()]
        loss = F.sum(F.mul2(y, y))
        loss.forward()
        res["loss"] = float(loss.d)
        data.grad.zero()
        a.grad.zero()
        loss.backward()
        res["data.g, a.g"] = [data.g.copy(), a.g.copy()]
    finally:
        nn.set_auto_forward(False)
    return res


@nnabla_case(names=[_F + "scatter_nd", "nnabla.Variable.reshape",
                    "nnabla.Variable.get_unlinked_variable"],
             note="F.scatter_nd(data, idx, out=x), x = v.reshape(shape, unlink=True) or "
                  "v.get_unlinked_variable(), of a leaf or computed v, static and dynamic: y, "
                  "x and v hold one array (writes to any of them, a second forward, a "
                  "backward)")
def scatter_nd__out_view_shares(nn, F, r):
    r.touch("nnabla.Variable.reshape", "nnabla.Variable.get_unlinked_variable")
    res = {}
    for dynamic in (False, True):
        for computed in (False, True):
            for unlinked in (False, True):
                tag = "%s%s%s: " % ("dynamic " if dynamic else "",
                                    "computed v" if computed else "leaf v",
                                    ", get_unlinked_variable" if unlinked else "")
                for k, v in _scatter_into_view(nn, F, dynamic, computed, unlinked).items():
                    res[tag + k] = v
    return res
