"""NNabla 1.39's last digits mended in nnhalf39: the Adam family's float32 arithmetic; and
what ``F.einsum`` and ``save_states`` refuse."""

import functools
import os

import numpy as np

from compat_harness import nnabla_case
from compat_outcomes import as_raised, as_returned, outcome

_outcome = functools.partial(outcome, raised=as_raised)

_ADAMS = ("Adam", "AdamW", "AMSGRAD")
_KEYS = ["%s %s step %d" % (n, c, t) for n in _ADAMS for c in ("default", "beta1=0.95")
         for t in range(1, 6)]


def _five_updates(nn, solver, r, shape):
    """The parameter after each of five updates with seeded gradients."""
    p = nn.Variable.from_numpy_array(r.randn(*shape), need_grad=True)
    solver.set_parameters({"p": p})
    out = []
    for _ in range(5):
        p.g = r.randn(*shape)
        solver.update()
        out.append(p.d.copy())
    return out


@nnabla_case(names=["nnabla.solvers." + n for n in _ADAMS],
             tols=dict((k, (0, 0)) for k in _KEYS))
def fidelity39__adam_family_float32_steps(nn, F, PF, S, r):
    """Adam, AdamW and AMSGRAD over a (40, 50) parameter, five updates, bit for bit: NNabla
    keeps ``beta1``, ``beta2``, ``eps`` as C++ floats, so ``1 - beta1`` is float32's
    (0.050000012 for 0.95, where Stadyn took 0.05 and torch's fused kernel's ``lerp``), its
    ``alpha_t`` is the double bias correction rounded to float times float alpha
    (``adam.cpp:63-66``), each product rounded before its sum, and ``std::sqrt(float)`` is
    correctly rounded (torch's CPU float32 ``sqrt`` is not).  Stadyn differed in up to 1881 of
    the 2000 values by up to 4 units in the last place after five steps."""
    r.touch(*["nnabla.solvers." + n for n in _ADAMS])
    res = {}
    for name in _ADAMS:
        for conf, kwargs in (("default", {}), ("beta1=0.95", {"beta1": 0.95})):
            if name == "AdamW":
                kwargs = dict(kwargs, wd=1e-3)
            solver = getattr(S, name)(alpha=1e-2, **kwargs)
            for t, value in enumerate(_five_updates(nn, solver, r, (40, 50)), 1):
                res["%s %s step %d" % (name, conf, t)] = value
    return res


@nnabla_case(names=["nnabla.functions.einsum"])
def fidelity39__einsum_equation_not_a_string(nn, F, r):
    """``F.einsum(x, x, equation=None)`` is NNabla 1.39's TypeError (its binding converts the
    equation to a C++ string: "expected bytes, NoneType found"); Stadyn raised a ShapeError (a
    ValueError) at the forward.  So is an int; bytes are an equation there."""
    r.touch("nnabla.functions.einsum")
    x = nn.Variable.from_numpy_array(np.arange(4, dtype=np.float32).reshape(2, 2))
    res = {}
    for key, eq in (("None", None), ("int", 3), ("bytes", b"ij,jk->ik")):
        def product(eq=eq):
            y = F.einsum(x, x, equation=eq)
            y.forward()
            return y.d.copy()
        res[key] = _outcome(product, as_returned)
    return res


@nnabla_case(names=["nnabla.solvers.Adam", "nnabla.solvers.Adam.save_states"])
def fidelity39__save_states_text_names_refused(nn, F, PF, S, r):
    """``save_states("x.nntxt")`` (and ``.prototxt``) is NNabla 1.39's AssertionError ('Only
    supported hdf5 or protobuf.', solver.pyx:233) and writes nothing; Stadyn wrote its
    safetensors container under that name (a binary file NNabla's ``load_states`` cannot read
    as the text form the name promises)."""
    r.touch("nnabla.solvers.Adam", "nnabla.solvers.Adam.save_states")
    solver = S.Adam()
    solver.set_parameters({"w": nn.Variable.from_numpy_array(np.ones(2, np.float32),
                                                             need_grad=True)})
    res = {}
    for name in ("states.nntxt", "states.prototxt"):
        res[name] = _outcome(lambda: solver.save_states(name), lambda _: "saved")
        res[name + " written"] = os.path.exists(name)
    return res


@nnabla_case(names=["nnabla.functions.arange"],
             tols={"(0.5, 0.4, -1e-07) last": (0, 0), "(0, 1, 3e-07) last": (0, 0)})
def fidelity39__arange_longer_than_its_exact_count(nn, F, r):
    """``F.arange(0.5, 0.4, -1e-7)``: the float32 running sum of the rounded step falls short,
    so NNabla 1.39 gives 1118481 values (ending 0.40000009536743164), not the exact count's
    1000000; ``(0, 1, 3e-7)`` 3353495.  Stadyn summed only the exact count (+2) and refused
    both as sums that stick (a ValueError)."""
    r.touch("nnabla.functions.arange")
    res = {}
    nn.set_auto_forward(True)
    try:
        for args in ((0.5, 0.4, -1e-7), (0, 1, 3e-7)):
            y = F.arange(*args)
            res["%r shape" % (args,)] = list(y.shape)
            res["%r last" % (args,)] = y.d[-3:].copy()
    finally:
        nn.set_auto_forward(False)
    return res


@nnabla_case(names=["nnabla.solvers.Momentum"],
             tols=dict(("%s step %d" % (c, t), (0, 0)) for c in ("default", "momentum=0.95")
                       for t in range(1, 6)))
def fidelity39__momentum_float32_steps(nn, F, PF, S, r):
    """Momentum over a (40, 50) parameter, five updates, bit for bit: NNabla 1.39 rounds
    ``momentum*v`` and ``lr*g`` before their sum (momentum.cpp); Stadyn's ``add_(alpha=lr)``
    rounded the multiply-add once (115 of 2000 values one unit in the last place off after five
    steps with lr=0.01, momentum=0.95)."""
    r.touch("nnabla.solvers.Momentum")
    res = {}
    for conf, kwargs in (("default", {}), ("momentum=0.95", {"momentum": 0.95})):
        solver = S.Momentum(lr=1e-2, **kwargs)
        for t, value in enumerate(_five_updates(nn, solver, r, (40, 50)), 1):
            res["%s step %d" % (conf, t)] = value
    return res


@nnabla_case(names=["nnabla.solvers.Sgd.clip_grad_by_norm"])
def fidelity39__clip_grad_by_norm_of_a_negative_norm(nn, F, PF, S, r):
    """``solver.clip_grad_by_norm(c)`` rescales a gradient only where its sum of squares
    exceeds ``c * c`` (``clip_grad.hpp:34``), to ``c * g / norm``: a negative ``c`` leaves a
    gradient whose norm is below ``|c|`` as it is, and turns a longer one around.  Stadyn took
    ``min(c / norm, 1)``: ``[0.3, 0.4]`` under ``c = -1`` became ``[-0.6, -0.8]``."""
    r.touch("nnabla.solvers.Sgd.clip_grad_by_norm")
    res = {}
    for c in (-1.0, 1.0, 0.5, -0.5):
        for g in ([0.3, 0.4], [3.0, 4.0], [0.0, 0.0]):
            p = nn.Variable.from_numpy_array(np.zeros(2, np.float32), need_grad=True)
            solver = S.Sgd(1.0)
            solver.set_parameters({"p": p})
            p.g = np.array(g, np.float32)
            solver.clip_grad_by_norm(c)
            res["c=%g g=%s" % (c, g)] = p.g.copy()
    return res
