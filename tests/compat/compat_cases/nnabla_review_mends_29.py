"""NNabla 1.39 behaviours a review of this session found Stadyn missing:

* a backward from an intermediate ``y`` reads the value ``y`` holds, with what the user wrote
  there (``y.d = v``), also when a loss over ``y`` was differentiated before: NNabla's
  backward runs no forward.  Stadyn built ``y``'s plan forward-only then (its leaves held a
  gradient: an evaluation graph's sign, ``graph/_deferred_backward.py``) and, on the
  backward, ran that forward again, which wrote over the written ``y``; a backward from a
  Variable that was not the root of its last forward did the same.  The ops read their output
  in their backward (``relu``, ``leaky_relu``, ``swish``, ``exp``, ``tanh``, ``mul_n``; a
  convolution's ``relu``), static and dynamic.  The ordinary training loop (the loss's
  backward after a written ``y``) is guarded beside them.
* in dynamic mode, ``s.forward()`` of a loss over ``y`` and then ``y.backward(g)`` gives the
  gradient through ``y``'s ops, from ``y``'s value or from what the user wrote into ``y.d``.
  Stadyn's ``s.forward()`` ran the graph through a plan, whose value of ``y`` carried no
  autograd history while ``y``'s op still counted as run dynamically; the backward took that
  for ops none of which needed a gradient and left ``x.g`` at 0.
"""

import numpy as np

from compat_harness import nnabla_case

_F = "nnabla.functions."

# name -> (the functions it touches, how y is made from c: x times the flow's factor, or a
# convolution of that)
_OPS = {
    "relu": (["relu"], lambda F, c: F.relu(c)),
    "swish": (["swish"], lambda F, c: F.swish(c)),
    "leaky_relu": (["leaky_relu"], lambda F, c: F.leaky_relu(c, 0.1)),
    "exp": (["exp"], lambda F, c: F.exp(c)),
    "tanh": (["tanh"], lambda F, c: F.tanh(c)),
    "mul_n": (["mul_n"], lambda F, c: F.mul_n(c, c, c)),
    "conv relu": (["relu", "convolution"], lambda F, c: F.relu(c)),
}

# flow -> (dynamic, what runs before y.d is written, what runs after)
# flow -> (dynamic, what runs before y.d is written, what runs after, x's factor).  Each flow
# scales x by a factor of its own: a graph of a structure differentiated before has its plan
# built with its backward at once (from the plan kept for that structure: Stadyn's
# graph/_plan_reuse.py), which would hide the flows after the first.
_FLOWS = {
    "loss backward, y forward, y backward": (False, "s.fb y.f", "y.b", 1.5),
    "dynamic: loss backward, y forward, y backward": (True, "s.fb y.f", "y.b", 1.25),
    "loss forward, y backward": (False, "s.f", "y.b", 0.75),
    "training loop: loss backward, loss forward, loss backward":
        (False, "s.fb s.f", "s.b", 1.0),
}


def _run(nn, F, PF, r, key, make, dynamic, before, after, factor):
    nn.clear_parameters()
    nn.set_auto_forward(dynamic)
    try:
        x = nn.Variable.from_numpy_array(
            ((np.arange(64, dtype=np.float32) * 7) % 17 / 8 - 1).reshape(2, 2, 4, 4),
            need_grad=True)
        c = x * factor
        if key == "conv relu":
            c = PF.convolution(c, 3, (3, 3), pad=(1, 1), name="c")
            for name, p in sorted(nn.get_parameters(grad_only=False).items()):
                p.d = r.param_value(name, p.shape)
        y = make(F, c)
        s = F.sum(y * y)
        for step in before.split():
            if step == "s.fb":
                s.forward()
                s.backward()
            else:
                (s if step == "s.f" else y).forward()
        y.d = np.abs(y.d) + 1.0
        for p in nn.get_parameters().values():
            p.grad.zero()
        x.grad.zero()
        if after == "y.b":
            y.backward(np.ones(y.shape, np.float32))
        else:
            s.backward()
        out = {"x.g": x.g.copy(), "y.d": y.d.copy()}
        for name, p in sorted(nn.get_parameters().items()):
            out[name + " g"] = p.g.copy()
        return out
    finally:
        nn.set_auto_forward(False)


@nnabla_case(names=sorted({_F + n for fs, _ in _OPS.values() for n in fs}
                          | {"nnabla.Variable.d", "nnabla.Variable.backward",
                             "nnabla.parametric_functions.convolution"}),
             note="x = ((arange(64) * 7) % 17 / 8 - 1) in (2, 2, 4, 4), c = x * a factor "
                  "per flow (or a 3x3 convolution of that), y = op(c), s = sum(y * y); "
                  "s.forward/backward, y.forward, y.d = |y.d| + 1, y.backward(ones) (static and "
                  "dynamic; or after s.forward only; or the loss's backward): the gradients "
                  "read y.d")
def backward_from_intermediate__reads_written_output(nn, F, PF, r):
    res = {}
    for key, (funcs, make) in _OPS.items():
        r.touch(*[_F + n for n in funcs])
        for flow, args in _FLOWS.items():
            for k, v in _run(nn, F, PF, r, key, make, *args).items():
                res["%s: %s %s" % (flow, key, k)] = v
    r.touch("nnabla.Variable.d", "nnabla.Variable.backward",
            "nnabla.parametric_functions.convolution")
    return res


def _dynamic_loss_forward(nn, F, make, write):
    nn.set_auto_forward(True)
    try:
        x = nn.Variable.from_numpy_array(
            ((np.arange(12, dtype=np.float32) * 5) % 7 / 4 - 0.75).reshape(3, 4),
            need_grad=True)
        y = make(F, x * 1.5)
        s = F.sum(y * y)
        s.forward()
        x.grad.zero()
        if write:
            y.d = np.abs(y.d) + 0.5
        y.backward(np.ones(y.shape, np.float32))
        return {"x.g": x.g.copy(), "y.d": y.d.copy(), "s.d": s.d.copy()}
    finally:
        nn.set_auto_forward(False)


@nnabla_case(names=[_F + "tanh", _F + "exp", _F + "relu", "nnabla.Variable.backward",
                    "nnabla.Variable.forward"],
             note="auto_forward(True): x = ((arange(12) * 5) % 7 / 4 - 0.75) in (3, 4), "
                  "y = op(x * 1.5), s = sum(y * y); s.forward(), x.grad.zero(), (y.d = "
                  "|y.d| + 0.5 or not), y.backward(ones): x.g is the op's gradient")
def dynamic_loss_forward__then_intermediate_backward(nn, F, PF, r):
    res = {}
    for key in ("tanh", "exp", "relu"):
        r.touch(_F + key)
        for write in (False, True):
            out = _dynamic_loss_forward(nn, F, lambda F, c, k=key: getattr(F, k)(c), write)
            for k, v in out.items():
                res["%s%s %s" % (key, ", y.d written" if write else "", k)] = v
    r.touch("nnabla.Variable.backward", "nnabla.Variable.forward")
    return res
