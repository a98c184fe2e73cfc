"""NNabla 1.39 fidelity, nineteenth round: in the dynamic mode, an op whose backward reads its
own output (``F.exp``, ``F.tanh``, ``F.sigmoid``, ``F.softmax``), its output given new memory
(``y.d = 5``, ``y.data.fill(5)``) while a ``y.d`` NumPy array is alive, once or twice, then
backward (Stadyn's read the old memory, which torch had saved); the value
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
