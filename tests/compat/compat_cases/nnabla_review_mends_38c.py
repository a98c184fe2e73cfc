"""Review of nnuser38 (rmC38): what NNabla 1.39 does with a negative learning rate for every
solver (gradient ascent, taken by the constructor and by ``set_learning_rate``; Stadyn refused
it), and a ``.protobuf`` state file whose byte 8 is ``{`` (NNabla's ``Optimizer`` message
when its first parameter's entry is 15744 to 15871 bytes long), saved and loaded back.
"""

import functools

import numpy as np

from compat_harness import nnabla_case
from compat_outcomes import nnabla_refusal, outcome

_error = functools.partial(outcome, convert=lambda _: "computes", raised=nnabla_refusal)

SV = "nnabla.solvers."

_NEGATIVE = {
    "Sgd": lambda S: S.Sgd(-0.1), "Momentum": lambda S: S.Momentum(-0.1, 0.9),
    "Lars": lambda S: S.Lars(-0.1), "Nesterov": lambda S: S.Nesterov(-0.1),
    "Adadelta": lambda S: S.Adadelta(-1.0), "Adagrad": lambda S: S.Adagrad(-0.1),
    "AdaBelief": lambda S: S.AdaBelief(-0.01), "RMSprop": lambda S: S.RMSprop(-0.01),
    "RMSpropGraves": lambda S: S.RMSpropGraves(-0.01), "Adam": lambda S: S.Adam(-0.01),
    "AdamW": lambda S: S.AdamW(-0.01, wd=0.1), "AdaBound": lambda S: S.AdaBound(-0.01),
    "Adamax": lambda S: S.Adamax(-0.01), "AMSGRAD": lambda S: S.AMSGRAD(-0.01),
    "AMSBound": lambda S: S.AMSBound(-0.01), "SgdW": lambda S: S.SgdW(-0.1, wd=0.1),
    "Lamb": lambda S: S.Lamb(-0.01), "Lion": lambda S: S.Lion(-0.01),
}


@nnabla_case(names=[SV + k for k in _NEGATIVE] + ["nnabla.solver.Solver.set_learning_rate",
                                                  "nnabla.solver.Solver.learning_rate",
                                                  "nnabla.solver.Solver.weight_decay"],
             rtol=1e-5, atol=1e-6,
             note="AMSBound's weights grow to about 28 here: float rounding of the two "
                  "differs by a few units in the last place (4e-6), within rtol")
def rm38c_negative_learning_rates(nn, F, PF, S, r):
    """Each solver made with a negative learning rate takes three steps of fixed gradients
    (with and without ``weight_decay(0.05)`` before each), its rate negated and halved by
    ``set_learning_rate`` after the second: the weights and rates NNabla gives (it moves
    ``w`` up its gradient; Stadyn raised "invalid learning rate")."""
    r.touch("nnabla.solver.Solver.set_learning_rate", "nnabla.solver.Solver.learning_rate",
            "nnabla.solver.Solver.weight_decay")
    res = {}
    for kind, make in _NEGATIVE.items():
        for wd in (0, 1):
            w = nn.Variable.from_numpy_array(
                np.linspace(-1, 1, 6).reshape(3, 2).astype(np.float32), need_grad=True)
            solver = make(S)
            solver.set_parameters({"w": w})
            rates = [solver.learning_rate()]
            for k in range(3):
                w.g = np.cos(np.arange(6) + k).reshape(3, 2).astype(np.float32)
                if wd:
                    solver.weight_decay(0.05)
                solver.update()
                if k == 1:
                    solver.set_learning_rate(-0.5 * solver.learning_rate())
                    rates.append(solver.learning_rate())
            res["%s wd%d" % (kind, wd)] = w.d.copy()
            res["%s wd%d rates" % (kind, wd)] = rates
    return res


@nnabla_case(names=[SV + "Momentum", "nnabla.solver.Solver.save_states",
                    "nnabla.solver.Solver.load_states", "nnabla.solver.Solver.get_states"],
             known={"m dtype after load": (
                 "NNabla 1.39 reads a .protobuf state as float64 (set_states_from_protobuf: "
                 "np.reshape of the repeated float field, python/src/nnabla/solver.pyx), "
                 "so a state's .d is float64 until the next update casts it to float32; "
                 "Stadyn keeps float32 (the values are equal)")})
def rm38c_protobuf_states_brace_at_byte_8(nn, F, PF, S, r):
    """Momentum over ``W`` (3929,) and ``b`` (300,) after two steps, saved as
    ``states.protobuf`` and loaded into a new Momentum: the step counts and states it gives
    back.  With ``W``'s entry first the file's byte 8 is ``{`` (its entry is 15,7xx bytes
    long), which Stadyn took for its own safetensors container and refused ("header too
    large"); NNabla's map order may put either entry first, and reads both."""
    w = nn.Variable.from_numpy_array(np.linspace(-1, 1, 3929).astype(np.float32),
                                     need_grad=True)
    b = nn.Variable.from_numpy_array(np.ones(300, np.float32), need_grad=True)
    solver = S.Momentum(0.1, 0.9)
    solver.set_parameters({"W": w, "b": b})
    for k in range(2):
        w.g = np.cos(np.arange(3929) * 0.01 + k).astype(np.float32)
        b.g = np.full(300, 0.5 + k, np.float32)
        solver.update()
    r.touch("nnabla.solver.Solver.save_states", "nnabla.solver.Solver.load_states",
            "nnabla.solver.Solver.get_states")
    solver.save_states("states.protobuf")
    fresh = S.Momentum(0.1, 0.9)
    fresh.set_parameters({"W": w, "b": b})
    fresh.load_states("states.protobuf")
    res = {"t": sorted([k, s.t] for k, s in fresh.get_states().items())}
    for k, s in fresh.get_states().items():
        res["m " + k] = s.pstate["m"].d.astype(np.float32)
    res["m dtype after load"] = sorted({str(s.pstate["m"].d.dtype)
                                        for s in fresh.get_states().values()})
    return res


@nnabla_case(names=["nnabla.functions.clip_grad_by_value", "nnabla.functions.einsum"])
def rm38c_clip_grad_and_einsum_arguments(nn, F, PF, S, r):
    """What NNabla 1.39 raises for ``F.clip_grad_by_value`` with a number or a NumPy array as
    ``min``/``max`` (``AssertionError``: its inputs must be Variables) and for ``F.einsum``
    without ``equation=`` by keyword (``KeyError``) or with an empty one (``RuntimeError``),
    in both modes; Stadyn raised a ShapeError (a ``ValueError``: "'float' object has no
    attribute 'to'", "give equation=") or, for an array, a ``TypeError``."""
    x = nn.Variable.from_numpy_array(np.arange(6, dtype=np.float32).reshape(2, 3))
    x.need_grad = True
    lo = nn.Variable.from_numpy_array(np.full((2, 3), -2, np.float32))
    hi = nn.Variable.from_numpy_array(np.full((2, 3), 5, np.float32))
    calls = {
        "clip floats": lambda: F.clip_grad_by_value(x, -2.0, 5.0),
        "clip ints": lambda: F.clip_grad_by_value(x, -2, 5),
        "clip numpy scalars": lambda: F.clip_grad_by_value(x, np.float32(-2), np.float32(5)),
        "clip numpy arrays": lambda: F.clip_grad_by_value(x, lo.d.copy(), hi.d.copy()),
        "clip max a number": lambda: F.clip_grad_by_value(x, lo, 5.0),
        "clip Variables": lambda: F.clip_grad_by_value(x, lo, hi),
        "einsum without equation": lambda: F.einsum(x, x),
        "einsum a list without equation": lambda: F.einsum([x, x]),
        "einsum equation by position": lambda: F.einsum(x, x, "ij,ij->i"),
        "einsum empty equation": lambda: F.einsum(x, x, equation=""),
        "einsum": lambda: F.einsum(x, x, equation="ij,ij->i"),
    }
    res = {}
    for mode in (False, True):
        for key, call in calls.items():
            with nn.auto_forward(mode):
                res["%s %s" % ("dynamic" if mode else "static", key)] = _error(call)
    return res
