"""NNabla 1.39 fidelity: a backward from an inner Variable through random ops, arrays of another
dtype given to op outputs, a PythonFunction's ``accum``.

NNabla's ``y.backward()`` after ``loss.forward()`` (``y`` an inner Variable of the loss) runs no
forward: it differentiates with the draws of the forward that ran (a dropout's mask, a random
crop's offsets, ``F.rand``'s numbers), and the generators stay where that forward left them, so
the next ``loss.forward()`` draws the next mask.  Stadyn runs ``y``'s forward again there
(``graph/_runner.backward``); it drew anew (another mask, another crop, the stream moved on one
draw) until the run was given the generators' states of the forward it repeats
(``graph/_draw_states.py``).

A second backward through one dropout after its first is left out: NNabla 1.39's dropout frees
its mask after its backward, and a second backward reads freed memory (its numbers change from
run to run).

An ``nn.NdArray`` of another dtype than the function's (float16, int32) given to an op output
(``y.data = nd``, ``F.op(..., outputs=[nd])``): NNabla shows its values in its dtype until the
op runs, which casts the array to float32 and writes it; ``nd`` and ``y`` then hold one array (a
write into ``nd`` shows in ``y.d`` and in the backward).  Stadyn's run gave ``y`` new memory and
left ``nd`` as it was; a dynamic or imperative call wrote the values into ``nd`` in its own
dtype (a float16 output, or torch's RuntimeError for an int array).  In dynamic mode (any dtype,
float32 too) the backward of an op reading its output (tanh) did not read what was written into
``nd`` after the call.

A ``PythonFunction``'s ``backward_impl`` gets ``accum[i]`` False for a leaf input whose gradient
was zeroed and not written since (``x.grad.zero()``, ``x.g = 0``, a solver's ``zero_grad``): NNabla
writes such an array instead of adding to it.  Stadyn said True for every leaf.  Where another
function reading the same input ran its backward first, NNabla's ``backward_impl`` sees that
function's gradient in ``inputs[i].g`` with ``accum`` True; Stadyn's saw the leaf's gradient
from before the backward (or zeros, an inner Variable's, with ``accum`` False) until its
backward waited for those functions (``graph/_reader_order.py``; more cases in
``nnabla_fidelity_27b.python_function__readers_in_backward_order``).
"""

import numpy as np

from compat_harness import nnabla_case
from compat_cases.nnabla_pyfunc_helpers import square, write_square_grad

_F = "nnabla.functions."

# name -> (the function it touches, h made from x)
_OPS = {
    "dropout seed=3": ("dropout", lambda F, x: F.dropout(x, p=0.5, seed=3)),
    "dropout nn.seed": ("dropout", lambda F, x: F.dropout(x, p=0.5)),
    "random_crop seed=7": ("random_crop", lambda F, x: F.random_crop(x, shape=(2, 2), seed=7)),
    "rand seed=5": ("rand", lambda F, x: x * F.rand(shape=(2, 4), seed=5)),
    "randn nn.seed": ("randn", lambda F, x: x * F.randn(shape=(2, 4))),
}

# flow -> (dynamic, whether the loss's backward runs before y's, whether a dropout may take it)
_FLOWS = {
    "loss forward, y backward": (False, False, True),
    "dynamic: loss forward, y backward": (True, False, True),
    "loss forward, loss backward, y backward": (False, True, False),
}


def _run(nn, F, make, dynamic, loss_backward):
    nn.set_auto_forward(dynamic)
    try:
        nn.seed(11)
        x = nn.Variable.from_numpy_array(
            np.arange(1, 9, dtype=np.float32).reshape(2, 4), need_grad=True)
        y = make(F, x) * 2.0
        loss = F.sum(y * y)
        loss.forward()
        out = {"y.d": y.d.copy()}
        x.grad.zero()
        if loss_backward:
            loss.backward()
            out["x.g loss"] = x.g.copy()
        y.backward()
        out["x.g"] = x.g.copy()
        loss.forward()                  # the generators are where the first forward left them
        out["y.d next forward"] = y.d.copy()
        return out
    finally:
        nn.set_auto_forward(False)


@nnabla_case(names=sorted({_F + f for f, _ in _OPS.values()}
                          | {"nnabla.Variable.backward", "nnabla.Variable.forward"}),
             note="x = arange(1, 9) in (2, 4), h = a random op of x, y = h * 2, "
                  "loss = sum(y * y); loss.forward(), (loss.backward(),) y.backward(), then "
                  "loss.forward() again: the draws of the forward that ran (static; dynamic "
                  "after s.forward())")
def backward_from_intermediate__random_ops_keep_forward_draws(nn, F, PF, r):
    res = {}
    for key, (func, make) in _OPS.items():
        r.touch(_F + func)
        for flow, (dynamic, loss_backward, dropout_too) in _FLOWS.items():
            if func == "dropout" and not dropout_too:
                continue
            for k, v in _run(nn, F, make, dynamic, loss_backward).items():
                res["%s: %s %s" % (flow, key, k)] = v
    r.touch("nnabla.Variable.backward", "nnabla.Variable.forward")
    return res


def _given(nn, F, dt, how):
    out = {}
    x = nn.Variable.from_numpy_array(np.array([0.5, -1.0, 2.0], np.float32), need_grad=True)
    nd = nn.NdArray.from_numpy_array(np.array([7, 8, 9]).astype(dt))
    if how == "imperative":
        a = nn.NdArray.from_numpy_array(np.array([0.5, -1.0, 2.0], np.float32))
        r = F.tanh(a, outputs=[nd])
        return {"r": r.data.copy(), "nd": nd.data.copy()}
    nn.set_auto_forward(how == "dynamic outputs")
    try:
        if how == "y.data":
            y = F.tanh(x)
            y.data = nd
        else:
            y = F.tanh(x, outputs=[nd])
        out["y.d given"] = y.d.copy()
        out["nd given"] = nd.data.copy()
        if how != "dynamic outputs":
            y.forward()
        out["nd run"] = nd.data.copy()
        nd.data[0] = 0.25               # one array: y.d and tanh's backward (1 - y^2) read it
        out["y.d"] = y.d.copy()
        x.grad.zero()
        y.backward()
        out["x.g"] = x.g.copy()
        if how != "dynamic outputs":
            y.forward()
            out["nd forward again"] = nd.data.copy()
        return out
    finally:
        nn.set_auto_forward(False)


@nnabla_case(names=["nnabla.Variable.data", "nnabla.NdArray.data", _F + "tanh"],
             note="x = [0.5, -1, 2], nd = NdArray of [7, 8, 9] in float16 / int32 / float32; "
                  "y.data = nd on y = tanh(x), or tanh(x, outputs=[nd]) static, dynamic, on "
                  "an NdArray: y.d and nd before and after the run (dtypes too), "
                  "nd.data[0] = 0.25 then y.d and y.backward(), forward again")
def given_array_of_another_dtype__cast_by_the_run(nn, F, PF, r):
    res = {}
    for dt in (np.float16, np.int32, np.float32):
        for how in ("y.data", "static outputs", "dynamic outputs", "imperative"):
            for k, v in _given(nn, F, dt, how).items():
                res["%s %s: %s" % (how, dt.__name__, k)] = v
    r.touch("nnabla.Variable.data", "nnabla.NdArray.data", _F + "tanh")
    return res


def _square(PythonFunction, seen):
    def backward(inputs, outputs, propagate_down, accum):
        seen.append((bool(accum[0]), inputs[0].g.copy()))
        write_square_grad(inputs, outputs, accum)
    return square(PythonFunction, backward)


# how the leaf's gradient stands before the loss's backward -> what is done to it
_LEAF_GRADS = ("fresh", "x.grad.zero()", "x.g = 0", "x.grad.fill(0)", "x.g = 1",
               "backward twice", "solver zero_grad", "fresh parameter")


def _python_function(nn, F, S, PythonFunction, dynamic, how):
    nn.clear_parameters()
    nn.set_auto_forward(dynamic)
    seen = []
    try:
        if how == "fresh parameter":
            x = nn.parameter.get_parameter_or_create(
                "w", (3,), np.array([1.0, 2.0, 3.0], np.float32), True)
        else:
            x = nn.Variable.from_numpy_array(np.array([1.0, 2.0, 3.0], np.float32),
                                             need_grad=True)
        if how.startswith("inner"):
            h = x * 2.0
            if how == "inner, read after":
                loss = F.sum(h * 3.0) + F.sum(_square(PythonFunction, seen)(h))
            else:
                loss = F.sum(_square(PythonFunction, seen)(h)) + F.sum(h * 3.0)
        elif how == "leaf read by another first":
            a = F.sum(x * 3.0)
            loss = a + F.sum(_square(PythonFunction, seen)(x))
        else:
            loss = F.sum(_square(PythonFunction, seen)(x))
        loss.forward()
        if how in ("x.grad.zero()", "leaf read by another first") or how.startswith("inner"):
            x.grad.zero()
        elif how == "x.g = 0":
            x.g = 0
        elif how == "x.grad.fill(0)":
            x.grad.fill(0)
        elif how == "x.g = 1":
            x.g = 1.0
        elif how == "solver zero_grad":
            solver = S.Sgd()
            solver.set_parameters({"x": x})
            x.g = 5.0
            solver.zero_grad()
        loss.backward()
        if how == "backward twice":
            loss.backward()
        out = {"x.g": x.g.copy()}
        for k, (accum, g) in enumerate(seen):
            out["backward_impl %d accum" % k] = accum
            out["backward_impl %d inputs[0].g" % k] = g
        return out
    finally:
        nn.set_auto_forward(False)
        nn.clear_parameters()


@nnabla_case(names=["nnabla.function.PythonFunction", "nnabla.Variable.backward",
                    "nnabla.NdArray.zero", "nnabla.solvers.Sgd"],
             note="x = [1, 2, 3] (a Variable or a parameter), y = Square(x) (a PythonFunction "
                  "whose backward adds where accum, else writes), loss = sum(y); the leaf's "
                  "gradient fresh, zeroed, set, filled, a solver's zero_grad, or a second "
                  "backward: the accum and inputs[0].g backward_impl sees, x.g; x (or h = 2x) "
                  "read by another function too")
def python_function__accum_of_zeroed_leaf_gradients(nn, F, PF, r):
    PythonFunction = r.module("nnabla.function").PythonFunction
    S = r.module("nnabla.solvers")
    res = {}
    for dynamic in (False, True):
        mode = "dynamic" if dynamic else "static"
        for how in _LEAF_GRADS + ("leaf read by another first", "inner, read first",
                                  "inner, read after"):
            for k, v in _python_function(nn, F, S, PythonFunction, dynamic, how).items():
                res["%s: %s: %s" % (mode, how, k)] = v
    r.touch("nnabla.function.PythonFunction", "nnabla.Variable.backward",
            "nnabla.NdArray.zero", "nnabla.solvers.Sgd")
    return res
