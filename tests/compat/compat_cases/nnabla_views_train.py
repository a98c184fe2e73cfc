"""Views of a parameter train in both modes, whatever the order of forward and ``zero_grad``.

``get_parameter_or_create`` hands out views sharing the registered parameter's value and
gradient arrays, and ``get_unlinked_variable`` of a leaf does the same: a backward through a
view reaches the parameter, in the dynamic mode too, and ``solver.zero_grad()`` zeroes the
shared array wherever it comes (NNabla's own loop, and nnabla-examples' VQ-VAE, run the forward
before it).  A parameter no backward reached since ``zero_grad`` is skipped by the solver.
Stadyn's views once gave zero gradients in the dynamic mode, and in the static mode when the
forward came before ``zero_grad`` (71db724); then a view frozen after one step kept moving
under Adam's state (fe8d42a).
"""

import numpy as np

from compat_harness import nnabla_case

_MODES = (("dynamic", True), ("static", False))


@nnabla_case(names=["nnabla.parameter.get_parameter_or_create", "nnabla.solvers.Sgd",
                    "nnabla.set_auto_forward"],
             rtol=1e-6, atol=0.0,
             note="sum(w ** 2) over a view under SGD(0.1), three steps, zero_grad before or "
                  "after the forward, both modes: the view's and the registered parameter's "
                  "gradient and value after each step")
def parameter_view_trains(nn, F, S, r):
    res = {}
    for mode, auto_forward in _MODES:
        for order, zero_first in (("zero_grad-forward", True), ("forward-zero_grad", False)):
            nn.clear_parameters()
            nn.set_auto_forward(auto_forward)
            with nn.parameter_scope("vq"):
                w = nn.parameter.get_parameter_or_create("W", (3,), np.array([1.0, -2.0, 0.5]))
            registered = nn.get_parameters()["vq/W"]
            solver = S.Sgd(0.1)
            solver.set_parameters(nn.get_parameters())
            for step in range(3):
                if zero_first:
                    solver.zero_grad()
                loss = F.sum(w ** 2)
                if not auto_forward:
                    loss.forward()
                if not zero_first:
                    solver.zero_grad()
                loss.backward(clear_buffer=True)
                grads = [registered.g.copy(), w.g.copy()]
                solver.update()
                res["%s %s step %d" % (mode, order, step)] = np.stack(
                    grads + [registered.d.copy(), w.d.copy()])
    nn.set_auto_forward(False)
    return res


@nnabla_case(names=["nnabla.Variable.get_unlinked_variable"],
             rtol=1e-6, atol=0.0,
             note="sum(u ** 2) of an unlinked view u of a leaf x: both get the gradient, both "
                  "modes")
def unlinked_leaf_shares_its_gradient(nn, F, r):
    r.touch("nnabla.Variable.get_unlinked_variable")
    res = {}
    for mode, auto_forward in _MODES:
        nn.set_auto_forward(auto_forward)
        x = nn.Variable.from_numpy_array(np.array([1.0, 2.0, 3.0], np.float32), need_grad=True)
        x.g = 0
        u = x.get_unlinked_variable()
        loss = F.sum(u ** 2)
        if not auto_forward:
            loss.forward()
        loss.backward()
        res[mode + " u.g"] = u.g.copy()
        res[mode + " x.g"] = x.g.copy()
    nn.set_auto_forward(False)
    return res


@nnabla_case(names=["nnabla.parameter.get_parameter_or_create", "nnabla.solvers.Adam"],
             rtol=1e-6, atol=0.0,
             note="a view frozen after the first step (need_grad = False, fine-tuning's "
                  "freeze) under Adam(0.1) from ones, both modes (zero_grad before the forward "
                  "in the dynamic mode, after it in the static): no backward writes its "
                  "gradient, so the solver skips it and it keeps the first step's value "
                  "(Adam's first step is lr * sign(g)) though Adam's state would move it")
def parameter_view_frozen_after_a_step(nn, F, S, r):
    res = {}
    for mode, auto_forward in _MODES:
        nn.clear_parameters()
        nn.set_auto_forward(auto_forward)
        w = nn.parameter.get_parameter_or_create("W", (2,), np.ones(2, np.float32))
        solver = S.Adam(0.1)
        solver.set_parameters(nn.get_parameters())
        for step in range(3):
            w.need_grad = step == 0
            if auto_forward:
                solver.zero_grad()
                y = F.sum(w * w)
            else:
                y = F.sum(w * w)
                y.forward()
                solver.zero_grad()
            y.backward()
            solver.update()
            res["%s step %d" % (mode, step)] = nn.get_parameters()["W"].d.copy()
    nn.set_auto_forward(False)
    return res
