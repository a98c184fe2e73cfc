"""NNabla 1.39 fidelity, eighteenth round: a backward reads what the user wrote into an op's
output (``y.d = v``, ``y.d[...] = v``, ``y.data.fill(v)``, a kept ``y.d`` array written),
for the outputs of NNabla's copying ops (``F.transpose``, ``F.slice``, ``x[i]``, ``F.split``,
``F.identity``, ``F.broadcast``, ``F.reshape(..., inplace=False)``) and the others, after a
first forward and after a second one (Stadyn's static backward read the run's own tensor: a
view of the input, or the value before the write).
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


# Dynamic mode, y.d = 5 / fill() while a NumPy array of y.d is alive: NNabla gives y's array
# new memory (the kept array keeps the old values) and the backward reads the new; Stadyn's
# dynamic output takes the new memory in its autograd graph (graph.renew_value), which torch's
# saved tensors see where the tensor is an op's input, not where it is a torch view (an
# in-place reshape's output) or saved as its op's own output (exp's backward reads exp(x)).
_KEPT_DYNAMIC = "dynamic mode, y.d = 5 or fill() with a y.d NumPy array alive: the autograd " \
                "graph keeps reading the old memory (a torch view, or an output its own op saves)"
_KNOWN = dict(("dynamic %s %s %s" % (op, how, what), _KEPT_DYNAMIC)
              for op, whats in (("getitem", ("a.g",)), ("reshape", ("a.g", "a.d")),
                                ("reshape of add_scalar", ("a.g",)), ("exp", ("a.g",)))
              for how in ("y.d = 5", "fill") for what in whats)


@nnabla_case(names=sorted(set(_F + n for n, _ in _OPS.values())) + ["nnabla.Variable.d"],
             note="y.d written (5 ways) after one or two static forwards, or in dynamic "
                  "mode, then loss = sum(y * y) backward: a.g reads the written y",
             known=_KNOWN)
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
