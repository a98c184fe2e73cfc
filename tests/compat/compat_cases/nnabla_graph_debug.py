"""NNabla's graph-inspection API: the gradients a backward leaves on intermediate Variables
(``need_grad``, ``persistent``, ``clear_buffer``, ``backward(grad=...)``), the functions a
Variable's ``parent`` is (``name``, ``info``, ``inputs``, ``outputs``, ``rank``, ``visit``),
and ``NdArray.zeroing`` / ``cast`` on a Variable's arrays; ``nnabla.utils.inspection.pprint``.
"""

import contextlib
import io
import re

import numpy as np

from compat_harness import nnabla_case

V = "nnabla.Variable."


def _graph(nn, F, r):
    x = nn.Variable.from_numpy_array(r.randn(2, 3), need_grad=True)
    h = F.sigmoid(x)
    h2 = F.tanh(h)
    y = F.reduce_sum(h2 * 2.0 + h)
    return x, h, h2, y


@nnabla_case(names=[V + "backward", V + "g", V + "persistent", V + "need_grad"])
def intermediate_gradients(nn, F, r):
    """After ``backward()`` an intermediate's ``.g`` is its gradient (overwritten by the next
    backward, where a leaf's accumulates); the root's ``.g`` is not written; ``grad=`` seeds
    (a number, a NumPy array, an NdArray, or None: the root's own ``.g``); with
    ``clear_buffer=True`` a ``persistent`` intermediate keeps its gradient (the others' are
    freed: NNabla shows whatever the memory holds, so they are not compared)."""
    r.touch(V + "backward", V + "g", V + "persistent", V + "need_grad")
    res = {}
    x, h, h2, y = _graph(nn, F, r)
    res["need_grad"] = [x.need_grad, h.need_grad, h2.need_grad, y.need_grad]
    y.forward()
    res["h.g before"] = h.g.copy()
    h.g = 5.0                                   # overwritten, not added to
    y.backward()
    res["h.g"], res["h2.g"], res["x.g"] = h.g.copy(), h2.g.copy(), x.g.copy()
    res["y.g"] = float(y.g)
    y.backward()
    res["h.g again"], res["x.g again"] = h.g.copy(), x.g.copy()
    y.backward(grad=3.0)
    res["h2.g grad=3"] = h2.g.copy()
    y.backward(grad=np.array(0.5, np.float32))
    res["h2.g numpy grad"] = h2.g.copy()
    y.backward(grad=nn.NdArray.from_numpy_array(np.array(2.0, np.float32)))
    res["h2.g NdArray grad"] = h2.g.copy()
    y.g = 7.0
    y.backward(grad=None)
    res["h2.g grad=None"], res["y.g after"] = h2.g.copy(), float(y.g)
    x, h, h2, y = _graph(nn, F, r)
    h.persistent = True
    y.forward(clear_no_need_grad=True)
    y.backward(clear_buffer=True)
    res["persistent h.g"], res["cleared x.g"] = h.g.copy(), x.g.copy()
    x, h, h2, y = _graph(nn, F, r)
    with nn.auto_forward():
        h = F.sigmoid(x)
        h2 = F.tanh(h)
        y = F.reduce_sum(h2 * 2.0 + h)
    y.backward()
    res["dynamic h.g"], res["dynamic h2.g"] = h.g.copy(), h2.g.copy()
    y.backward()
    res["dynamic h.g again"], res["dynamic x.g"] = h.g.copy(), x.g.copy()
    return res


@nnabla_case(names=[V + "parent", V + "rank", V + "visit"])
def function_nodes(nn, F, r):
    """A Variable's ``parent``: NNabla's type name (``name``, ``info.type_name``, ``str``),
    ``inputs`` and ``outputs`` as lists, ``rank`` (a Variable's is its parent's + 1, a leaf's
    0), ``visit`` in forward order; ``info.args`` where Stadyn's declaration and NNabla's agree
    (see ``_function.py`` for where they do not)."""
    r.touch(V + "parent", V + "rank", V + "visit")
    PF = r.module("nnabla.parametric_functions")
    x = nn.Variable((2, 3, 4, 4), need_grad=True)
    c = PF.convolution(x, 2, (3, 3), pad=(1, 1), name="conv")
    h = F.relu(c)
    a = PF.affine(h, 5, name="fc")
    p = F.max_pooling(c, (2, 2))
    t = nn.Variable((2, 1))
    y = F.mean(F.softmax_cross_entropy(a, t))
    z = x * 2.0
    ops = {"conv": c, "relu": h, "affine": a, "pool": p, "mean": y, "mul_scalar": z,
           "add2": x + z, "mul2": x * z, "rsub": 1.0 - x, "leaky_relu": F.leaky_relu(x),
           "elu": F.elu(x), "reshape": F.reshape(x, (2, -1)), "reduce_sum": F.reduce_sum(x),
           "reduce_mean": F.reduce_mean(x), "sigmoid": F.sigmoid(x), "tanh": F.tanh(x)}
    res = {}
    for k, v in ops.items():
        f = v.parent
        res[k] = [f.name, f.info.type_name, str(f), f.rank, v.rank, type(f.inputs).__name__,
                  type(f.outputs).__name__, [list(i.shape) for i in f.inputs],
                  [list(o.shape) for o in f.outputs]]
    # NNabla hands out new Python objects for the same variables (``is`` is False there):
    # the values are the ones compared.
    c.d = r.randn(2, 2, 4, 4)
    res["an input's value"] = h.parent.inputs[0].d.copy()
    res["an input's parent"] = y.parent.inputs[0].parent.name
    res["args"] = [h.parent.info.args, a.parent.info.args, z.parent.info.args,
                   ops["reshape"].parent.info.args]
    res["leaf"] = [x.rank, x.parent is None]
    seen = []
    y.visit(lambda f: seen.append([f.name, [list(i.shape) for i in f.inputs]]))
    res["visit"] = seen
    names = []
    F.sum(F.relu(x) * F.sigmoid(F.relu(x)) + F.tanh(z)).visit(lambda f: names.append(f.name))
    res["visit branches"] = names
    return res


@nnabla_case(names=["nnabla.NdArray.zeroing", "nnabla.NdArray.cast", V + "d"])
def variable_array_zeroing_and_cast(nn, F, r):
    """``x.grad.zero()`` leaves ``x.grad.zeroing`` True (a new NdArray each read, the same
    array under it) until the values are read or written; ``x.data.cast(dtype)`` changes the
    Variable's dtype."""
    r.touch("nnabla.NdArray.zeroing", "nnabla.NdArray.cast", V + "d")
    res = {}
    x = nn.Variable.from_numpy_array(r.randn(2, 3), need_grad=True)
    x.grad.zero()
    res["after zero"] = [x.grad.zeroing, x.data.zeroing]
    _ = x.g
    res["after reading g"] = x.grad.zeroing
    x.grad.zero()
    x.grad.fill(2.0)
    res["after fill"] = x.grad.zeroing
    x.grad.zero()
    y = F.sum(x * 2.0)
    y.forward()
    y.backward()
    res["after backward"] = x.grad.zeroing
    res["grad after backward"] = x.g.copy()
    x.data.zero()
    res["data zero"] = [x.data.zeroing, x.grad.zeroing]
    n = nn.Variable.from_numpy_array(np.arange(6).reshape(2, 3).astype(np.float32))
    cast = n.data.cast(np.int32)
    res["cast"] = cast.copy()
    res["cast dtypes"] = [str(n.d.dtype), str(n.data.dtype)]
    n.data.cast(np.float16)
    res["cast f16"] = n.d.copy()
    return res


_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def _printed(fn):
    """What ``fn()`` prints: the text with every number a ``#`` (NumPy 2 prints its scalars as
    ``np.float32(..)``: unwrapped first) and the numbers."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        fn()
    text = re.sub(r"np\.float\d+\(([^)]*)\)", r"\1", out.getvalue())
    depths = [int(v) for v in re.findall(r"Depth = (\d+)", text)]
    text = re.sub(r"Depth = \d+", "Depth = #", text)
    return _NUMBER.sub("#", text), np.array([float(v) for v in _NUMBER.findall(text)]), depths


@nnabla_case(names=["nnabla.utils.inspection.pprint"], rtol=1e-4, atol=1e-6,
             note="summary statistics of float32 values and gradients: rtol 1e-4")
def inspection_pprint(nn, F, r):
    """``pprint``: each function (scope of its parameter, type, depth, arguments, shapes, which
    inputs need a gradient) and, with ``summary``, the statistics of every input's and output's
    values and gradients after a forward and a backward."""
    I = r.module("nnabla.utils.inspection")
    PF = r.module("nnabla.parametric_functions")
    x = nn.Variable.from_numpy_array(r.randn(4, 3))
    with nn.parameter_scope("mlp"):
        h = F.tanh(PF.affine(x, 5, name="fc1"))
        y = F.relu(PF.affine(h, 2, name="fc2"))
    r.set_params(nn.get_parameters())
    plain, _, depths = _printed(lambda: I.pprint(y))
    text, numbers, after = _printed(lambda: I.pprint(y, forward=True, backward=True,
                                                     summary=True))
    p = I.pprint(y, hidden=True, printer=True)
    return {"text": text.splitlines(), "numbers": numbers, "plain": plain.splitlines(),
            "depths": depths, "depths after forward": after,
            "hidden": [[f["name"], [list(v.shape) for v in f["inputs"]],
                        [list(v.shape) for v in f["outputs"]]] for f in p.functions]}


_BASE = "nnabla.utils.inspection.FunctionHookCallbackBase"


@nnabla_case(names=[_BASE, _BASE + ".pre_hook", _BASE + ".post_hook"])
def inspection_hook_base(nn, F, r):
    """``FunctionHookCallbackBase``: its hooks raise ``NotImplementedError`` until a subclass
    gives them; a subclass's hooks run in ``forward``."""
    r.touch(_BASE + ".pre_hook", _BASE + ".post_hook")
    I = r.module("nnabla.utils.inspection")
    base = I.FunctionHookCallbackBase()
    res = {}
    for hook in ("pre_hook", "post_hook"):
        try:
            getattr(base, hook)
            res[hook] = "no error"
        except NotImplementedError:
            res[hook] = "NotImplementedError"

    class Names(I.FunctionHookCallbackBase):
        def __init__(self):
            self.seen = []

        @property
        def pre_hook(self):
            return lambda f: self.seen.append(f.info.type_name)

        @property
        def post_hook(self):
            return lambda f: self.seen.append(f.name + " done")

    names = Names()
    x = nn.Variable.from_numpy_array(r.randn(2, 3))
    y = F.relu(F.tanh(x) * 2.0)
    y.forward(function_pre_hook=names.pre_hook, function_post_hook=names.post_hook)
    res["seen"] = names.seen
    res["y"] = y.d.copy()
    return res
