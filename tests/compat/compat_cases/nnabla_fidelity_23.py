"""NNabla 1.39 fidelity: a backward from an inner Variable through random ops.

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

