"""NNabla 1.39 fidelity, eighteenth round: a backward reads what the user wrote into an op's
output (``y.d = v``, ``y.d[...] = v``, ``y.data.fill(v)``, a kept ``y.d`` array written),
for the outputs of NNabla's copying ops (``F.transpose``, ``F.slice``, ``x[i]``, ``F.split``,
``F.identity``, ``F.broadcast``, ``F.reshape(..., inplace=False)``) and the others, after a
first forward and after a second one (Stadyn's static backward read the run's own tensor: a
view of the input, or the value before the write); ``nn.load_parameters`` of a path no NNabla
loader takes; ``F.scatter_nd(..., out=x)`` of a computed ``x`` (one array with the result) and
of an ``x`` another function reads (refused), of a ``PythonFunction``'s or ``F.meshgrid``'s
output.
"""

import logging
import os
import tempfile

import numpy as np

from compat_harness import nnabla_case

_F = "nnabla.functions."

# op name -> (the function name it touches, how it is called on the (2, 3) input ``a``)
_OPS = {
    "transpose": ("transpose", lambda F, a: F.transpose(a, (1, 0))),
    "slice": ("slice", lambda F, a: F.slice(a, (0, 1), (2, 3))),
    "getitem": ("slice", lambda F, a: a[1]),
    "split": ("split", lambda F, a: F.split(a, axis=0)[0]),
    "reshape inplace=False": ("reshape", lambda F, a: F.reshape(a, (3, 2), inplace=False)),
    "reshape": ("reshape", lambda F, a: F.reshape(a, (3, 2))),
    "reshape of add_scalar": ("reshape", lambda F, a: F.reshape(F.add_scalar(a, 1.0), (3, 2))),
    "identity": ("identity", lambda F, a: F.identity(a)),
    "broadcast": ("broadcast", lambda F, a: F.broadcast(a[0:1], (2, 3))),
    "add_scalar": ("add_scalar", lambda F, a: F.add_scalar(a, 1.0)),
    "exp": ("exp", lambda F, a: F.exp(F.mul_scalar(a, 0.1))),
}


def _write(y, how, kept):
    if how == "y.d = 5":
        y.d = 5
    elif how == "y.d = array":
        y.d = np.full(y.shape, 5, np.float32)
    elif how == "y.d[...] = 5":
        y.d[...] = 5
    elif how == "fill":
        y.data.fill(5)
    else:                                   # a y.d array kept from the first forward
        kept[...] = 5


def _backward_reads(nn, F, make, dynamic, how, forwards):
    nn.set_auto_forward(dynamic)
    try:
        a = nn.Variable.from_numpy_array(np.arange(6, dtype=np.float32).reshape(2, 3),
                                         need_grad=True)
        y = make(F, a)
        loss = F.sum(F.mul2(y, y))
        if not dynamic:
            loss.forward()
        kept = y.d
        if forwards == 2:
            loss.forward()
        _write(y, how, kept)
        a.grad.zero()
        loss.backward()
        return {"a.g": a.g.copy(), "y.d": y.d.copy(), "a.d": a.d.copy()}
    finally:
        nn.set_auto_forward(False)


@nnabla_case(names=sorted(set(_F + n for n, _ in _OPS.values())) + ["nnabla.Variable.d"],
             note="y.d written (5 ways) after one or two static forwards, or in dynamic "
                  "mode, then loss = sum(y * y) backward: a.g reads the written y")
def written_outputs__backward_reads_them(nn, F, r):
    r.touch(*[_F + n for n, _ in _OPS.values()])
    r.touch("nnabla.Variable.d")
    res = {}
    for key, (_, make) in _OPS.items():
        for how in ("y.d = 5", "y.d = array", "y.d[...] = 5", "fill", "kept"):
            runs = [(False, 1), (False, 2), (True, 1)]
            for dynamic, forwards in runs:
                if dynamic and how == "kept":
                    continue
                got = _backward_reads(nn, F, make, dynamic, how, forwards)
                tag = "%s %s %s" % ("dynamic" if dynamic else "static x%d" % forwards,
                                    key, how)
                for k, v in got.items():
                    res[tag + " " + k] = v
    return res


class _Messages(logging.Handler):
    def __init__(self):
        logging.Handler.__init__(self)
        self.messages = []

    def emit(self, record):
        self.messages.append("%s: %s" % (record.levelname, record.getMessage()))


@nnabla_case(names=["nnabla.load_parameters", "nnabla.parameter.load_parameters"],
             note="a path of no parameter format (nnabla-examples factorized-layers' default "
                  "-t tmp.monitor, a folder, a missing file) is passed over with a warning")
def load_parameters__unknown_extension_omitted(nn, F, r):
    folder = tempfile.mkdtemp()
    with open(os.path.join(folder, "tmp.monitor"), "w") as f:
        f.write("not parameters")
    os.mkdir(os.path.join(folder, "run.monitor"))
    nn.clear_parameters()
    with nn.parameter_scope("net"):
        nn.parameter.get_parameter_or_create("W", (2,)).d = [1.0, 2.0]
    messages = _Messages()
    logging.getLogger("nnabla").addHandler(messages)
    try:
        for name in ("tmp.monitor", "run.monitor", "missing.monitor", "noext.txt"):
            path = os.path.join(folder, name)
            nn.load_parameters(path)
        nn.parameter.load_parameters(os.path.join(folder, "tmp.monitor"))
    finally:
        logging.getLogger("nnabla").removeHandler(messages)
    params = nn.get_parameters()
    return {"messages": [m.replace(folder, "<dir>") for m in messages.messages],
            "params": sorted(params), "W": params["net/W"].d.tolist()}


def _scatter_out(nn, F, dynamic, make_x, reader):
    """``y = F.scatter_nd(data, idx, out=x)`` with ``x = make_x(a)``; ``reader``: "before"
    (a kept function reads x first), "after" (one reads it after the call), "dropped" (one
    read x and was let go), or None.  Returns what x and y show through writes and a backward,
    or where NNabla refused."""
    res = {}
    idx = nn.Variable.from_numpy_array(np.array([[0, 2]]))
    data = nn.Variable.from_numpy_array(np.array([1.0, 2.0], np.float32), need_grad=True)
    nn.set_auto_forward(dynamic)
    try:
        a = nn.Variable.from_numpy_array(np.arange(4, dtype=np.float32), need_grad=True)
        x = make_x(F, a)
        z = None
        if reader == "before":
            z = F.add_scalar(x, 1.0)
        elif reader == "dropped":
            F.add_scalar(x, 1.0)
        stage = "call"
        try:
            y = F.scatter_nd(data, idx, out=x)
            if reader == "after":
                z = F.add_scalar(x, 1.0)
            stage = "forward"
            if not dynamic:
                y.forward()
            res["y"] = y.d.copy()
            res["x"] = x.d.copy()
            if z is not None:
                if not dynamic:
                    z.forward()
                res["z"] = z.d.copy()
            y.d = np.full(4, 7.0, np.float32)
            res["x after y.d = 7"] = x.d.copy()
            x.d = np.full(4, 3.0, np.float32)
            res["y after x.d = 3"] = y.d.copy()
            stage = "loss.forward"
            loss = F.sum(F.mul2(y, y))
            loss.forward()
            res["loss"] = float(loss.d)
            res["x after loss.forward"] = x.d.copy()
            a.grad.zero()
            data.grad.zero()
            loss.backward()
            res["a.g"] = a.g.copy()
            res["data.g"] = data.g.copy()
        except RuntimeError:
            res["refused at"] = stage
        return res
    finally:
        nn.set_auto_forward(False)


_OUTS = {
    "mul_scalar": lambda F, a: F.mul_scalar(a, 2.0),
    "add2": lambda F, a: F.add2(a, a),
    "exp of no-grad": lambda F, a: F.exp(F.mul_scalar(a.get_unlinked_variable(need_grad=False),
                                                      0.5)),
    "leaf": lambda F, a: a,
}


@nnabla_case(names=[_F + "scatter_nd"],
             note="F.scatter_nd(data, idx, out=x) with x computed (or a leaf), x read by "
                  "another function before or after the call (NNabla: 'In-placing at a "
                  "branching variable'), or not: what x and y share, static and dynamic")
def scatter_nd__out_computed_shares(nn, F, r):
    res = {}
    for dynamic in (False, True):
        for key, make_x in _OUTS.items():
            for reader in (None, "before", "after", "dropped"):
                got = _scatter_out(nn, F, dynamic, make_x, reader)
                tag = "%s%s%s" % ("dynamic " if dynamic else "", key,
                                  " (reader %s)" % reader if reader else "")
                for k, v in got.items():
                    res[tag + ": " + k] = v
    return res


def _python_twice(PythonFunction, reads_output):
    class Twice(PythonFunction):
        @property
        def name(self):
            return "Twice"

        def min_outputs(self):
            return 1

        def setup_impl(self, inputs, outputs):
            outputs[0].reset_shape(inputs[0].shape, True)

        def forward_impl(self, inputs, outputs):
            outputs[0].d = 2 * inputs[0].d

        def backward_impl(self, inputs, outputs, propagate_down, accum):
            pass

        def grad_depends_output_data(self, i, o):
            return reads_output

        def grad_depends_input_data(self, i, j):
            return False

    return Twice


@nnabla_case(names=[_F + "scatter_nd", _F + "meshgrid",
                    "nnabla.function.PythonFunction.grad_depends_output_data"],
             note="out= the output of a PythonFunction whose grad_depends_output_data is "
                  "True or False, or of F.meshgrid, an input needing a gradient or not")
def scatter_nd__out_of_python_function_or_meshgrid(nn, F, r):
    r.touch("nnabla.function.PythonFunction.grad_depends_output_data")
    PythonFunction = r.module("nnabla.function").PythonFunction
    res = {}
    idx = nn.Variable.from_numpy_array(np.array([[0, 1]]))
    data = nn.Variable.from_numpy_array(np.array([5.0, 6.0], np.float32))
    for dynamic in (False, True):
        for need_grad in (True, False):
            makers = [("python reads its output",
                       lambda a: _python_twice(PythonFunction, True)()(a)),
                      ("python reads no output",
                       lambda a: _python_twice(PythonFunction, False)()(a)),
                      ("meshgrid 0", lambda a: F.meshgrid(a, a)[0]),
                      ("meshgrid 1", lambda a: F.meshgrid(a, a)[1])]
            for key, make in makers:
                label = "%s%s%s" % ("dynamic " if dynamic else "", key,
                                    "" if need_grad else " (no grad)")
                nn.set_auto_forward(dynamic)
                try:
                    a = nn.Variable.from_numpy_array(np.array([1.0, 2.0], np.float32),
                                                     need_grad=need_grad)
                    x = make(a)
                    try:
                        y = F.scatter_nd(data, idx if x.ndim == 1 else
                                         nn.Variable.from_numpy_array(np.array([[0, 1],
                                                                                [1, 0]])),
                                         out=x)
                        if not dynamic:
                            y.forward()
                        res[label] = y.d.copy()
                    except RuntimeError:
                        res[label] = "RuntimeError"
                finally:
                    nn.set_auto_forward(False)
    return res


@nnabla_case(names=[_F + "transpose", _F + "slice", _F + "identity", _F + "add_scalar",
                    "nnabla.Variable.reset_shape"],
             note="y.d = 5 then backward, after a forward of a new input shape (Stadyn runs "
                  "such a graph eagerly first) and in a graph holding a PythonFunction (run "
                  "eagerly for good)")
def written_outputs__eager_runs_read_them(nn, F, r):
    r.touch("nnabla.Variable.reset_shape")
    PythonFunction = r.module("nnabla.function").PythonFunction
    makers = {"transpose": lambda a: F.transpose(a, (1, 0)),
              "slice": lambda a: F.slice(a, (0, 1), (2, 3)),
              "identity": lambda a: F.identity(a),
              "add_scalar": lambda a: F.add_scalar(a, 1.0)}
    res = {}
    for key, make in makers.items():
        for how in ("new shape", "python function"):
            a = nn.Variable.from_numpy_array(np.arange(6, dtype=np.float32).reshape(2, 3),
                                             need_grad=True)
            y = make(a)
            loss = F.sum(F.mul2(y, y))
            if how == "python function":
                loss = F.add2(loss, F.sum(_python_twice(PythonFunction, False)()(a)))
            loss.forward()
            if how == "new shape":
                a.reset_shape((3, 3), force=True)
                a.d = np.arange(9, dtype=np.float32).reshape(3, 3)
                loss.forward()
            y.d = 5
            a.grad.zero()
            loss.backward()
            res["%s, %s: a.g" % (key, how)] = a.g.copy()
            res["%s, %s: y.d" % (key, how)] = y.d.copy()
    return res
