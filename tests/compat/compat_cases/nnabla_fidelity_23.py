"""NNabla 1.39 fidelity: a backward from an inner Variable through random ops, arrays of another
dtype given to op outputs.

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
"""

import numpy as np

from compat_harness import nnabla_case

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

