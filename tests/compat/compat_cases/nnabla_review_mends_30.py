"""NNabla 1.39 behaviours a review of the random draws of a backward from an inner Variable found
Stadyn missing.

NNabla's ``y.backward()`` after ``loss.forward()`` runs no forward: it differentiates with the
masks that forward drew, and every generator stays where that forward left it.  Stadyn runs
``y``'s forward again there, given the generators' states of the forward it repeats
(``graph/_draw_states.py``):

* a dropout with a seed of its own reading ``y`` (outside ``y``'s graph) was set back to its
  state before the forward and left there: the next ``loss.forward()`` drew its first mask
  again (NNabla: the next one);
* with the default ``seed=-1`` (one generator for all), the run again drew the forward's
  masks only where ``y``'s random ops drew first in that forward, in the same order: a dropout
  outside ``y`` that drew before ``y``'s, or two dropouts in ``y`` that the loss's forward ran
  in another order, gave a gradient through other masks than the forward's.
* ``x.name = ''`` made ``x`` a parameter of its graph for Stadyn (a leaf with a graph name):
  a graph saved with it lists it as an input, as NNabla's does.
"""

import numpy as np

from compat_harness import nnabla_case

_F = "nnabla.functions."
_NAMES = [_F + "dropout", "nnabla.Variable.backward", "nnabla.Variable.forward"]


def _ones(nn, n, need_grad=True):
    return nn.Variable.from_numpy_array(np.ones((1, n), np.float32), need_grad=need_grad)


@nnabla_case(names=_NAMES,
             note="y = dropout(x, seed=3), z = dropout(y, seed=4), loss = sum(z); "
                  "loss.forward(), y.backward(), loss.forward(): the second forward draws "
                  "both seeded ops' next masks")
def backward_from_y__seeded_op_reading_y_draws_on(nn, F, PF, r):
    r.touch(*_NAMES)
    x = _ones(nn, 16)
    y = F.dropout(x, 0.5, seed=3)
    z = F.dropout(y, 0.5, seed=4)
    loss = F.sum(z)
    loss.forward()
    res = {"y.d 1": y.d.copy(), "z.d 1": z.d.copy()}
    x.grad.zero()
    y.backward()
    res["x.g"] = x.g.copy()
    loss.forward()
    res.update({"y.d 2": y.d.copy(), "z.d 2": z.d.copy()})
    loss.forward()
    res.update({"y.d 3": y.d.copy(), "z.d 3": z.d.copy()})
    return res


def _global_draws(nn, F, build):
    nn.seed(17)
    x1, x2 = _ones(nn, 8), _ones(nn, 8)
    loss, y, shown = build(F, x1, x2)
    loss.forward()
    res = {k + " 1": v.d.copy() for k, v in shown.items()}
    x1.grad.zero()
    x2.grad.zero()
    y.backward()
    res.update({"x1.g": x1.g.copy(), "x2.g": x2.g.copy()})
    loss.forward()                  # the generator is where the first forward left it
    res.update({k + " 2": v.d.copy() for k, v in shown.items()})
    return res


def _outside_first(F, x1, x2):
    a = F.dropout(x2, 0.5)
    y = F.dropout(x1, 0.5)
    return F.sum(a) + F.sum(y * y), y, {"a": a, "y": y}


def _outside_after(F, x1, x2):
    y = F.dropout(x1, 0.5)
    a = F.dropout(x2, 0.5)
    return F.sum(y * y) + F.sum(a), y, {"a": a, "y": y}


def _other_order(F, x1, x2):
    a = F.dropout(x1, 0.5)
    b = F.dropout(x2, 0.5)
    y = a + b
    return F.sum(b * 3) + F.sum(y), y, {"a": a, "b": b}


def _other_order_deeper(F, x1, x2):
    a = F.dropout(x1, 0.5)
    c = F.dropout(x2 * 2, 0.25)
    b = F.dropout(c, 0.5)
    y = a * b
    return F.sum(F.dropout(x1, 0.5)) + F.sum(b) + F.sum(y), y, {"a": a, "b": b, "c": c}


def _mixed(F, x1, x2):
    a = F.dropout(x1, 0.5)
    s = F.dropout(x2, 0.5, seed=7)
    u = F.rand(shape=(1, 8))
    y = a * u + s
    return F.sum(F.dropout(x2, 0.5)) + F.sum(u) + F.sum(y), y, {"a": a, "s": s, "u": u}


@nnabla_case(names=_NAMES + [_F + "rand"],
             note="nn.seed(17), x1 = x2 = ones((1, 8)), dropouts with seed=-1: loss.forward(), "
                  "y.backward(), loss.forward(); a dropout outside y drawing before / after "
                  "y's, y = a + b with the loss running b first, a deeper y of three dropouts "
                  "behind one outside, y of a dropout, a seeded one and F.rand")
def backward_from_y__global_draws_in_any_order(nn, F, PF, r):
    r.touch(*_NAMES)
    r.touch(_F + "rand")
    res = {}
    for key, build in [("outside first", _outside_first), ("outside after", _outside_after),
                       ("other order", _other_order), ("other order deeper", _other_order_deeper),
                       ("mixed", _mixed)]:
        for k, v in _global_draws(nn, F, build).items():
            res[key + ": " + k] = v
    return res


def _late_need_grad(nn, F, seed):
    nn.seed(23)
    x = _ones(nn, 8, need_grad=False)
    w = _ones(nn, 8)
    y = F.dropout(x * w, 0.5, seed=seed)
    z = F.dropout(w, 0.5)
    loss = F.sum(y * y) + F.sum(z)
    loss.forward()
    res = {"y.d 1": y.d.copy(), "z.d 1": z.d.copy()}
    x.need_grad = True
    x.grad.zero()
    w.grad.zero()
    loss.backward()
    res.update({"x.g": x.g.copy(), "w.g": w.g.copy()})
    loss.forward()                  # the generators are where the first forward left them
    res.update({"y.d 2": y.d.copy(), "z.d 2": z.d.copy()})
    return res


@nnabla_case(names=_NAMES + ["nnabla.Variable.need_grad"],
             note="nn.seed(23), x = w = ones((1, 8)), y = dropout(x * w) (seed=-1, seed=5), "
                  "z = dropout(w), loss = sum(y * y) + sum(z); loss.forward(), then "
                  "x.need_grad = True, loss.backward(), loss.forward(): the gradients through "
                  "the forward's masks")
def need_grad_set_after_forward__backward_through_the_forward_draws(nn, F, PF, r):
    r.touch(*_NAMES)
    r.touch("nnabla.Variable.need_grad")
    res = {}
    for seed in (-1, 5):
        for k, v in _late_need_grad(nn, F, seed).items():
            res["seed=%d: %s" % (seed, k)] = v
    return res
