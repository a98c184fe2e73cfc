"""Where ``stadyn.compat.nnabla``'s solver methods took their own hooks otherwise than NNabla
1.39 (learn43): a hook that raises, or is no callable without arguments (``5``, ``"x"``, a
lambda of one argument), stopped the method before its work with the hook's error; NNabla's
C++ callback leaves the error set and goes on, so the method does all its work (the weights
move) and then raises ``SystemError``.  ``update(None, None, None)`` was taken (NNabla: a
TypeError, at most 2 positional arguments)."""

import functools

import numpy as np

from compat_harness import nnabla_case
from compat_outcomes import as_raised, as_returned, outcome

_outcome = functools.partial(outcome, convert=as_returned, raised=as_raised)


@nnabla_case(names=["nnabla.solvers.Sgd", "nnabla.solver.Solver.update",
                    "nnabla.solver.Solver.weight_decay", "nnabla.solver.Solver.clip_grad_by_norm",
                    "nnabla.solver.Solver.scale_grad", "nnabla.solver.Solver.check_inf_grad",
                    "nnabla.solver.Solver.check_nan_grad", "nnabla.solver.Solver.set_parameters"],
             note="Sgd(0.1) over w (2,) and u (3,) of ones, gradients [1, 2] and [3, 4, 5]: each "
                  "method given a bad hook (5, 'x', a lambda of one argument, one dividing by "
                  "zero) by keyword or position; the error's built-in type, and the weights "
                  "and gradients after it; update with three positional arguments; "
                  "weight_decay(0) with a bad hook (no hook called)")
def solver__method_hooks_that_fail(nn, S, r):
    r.touch(*["nnabla.solver.Solver." + m for m in (
        "update", "weight_decay", "clip_grad_by_norm", "scale_grad", "check_inf_grad",
        "check_nan_grad", "set_parameters")])
    def one_over_zero():
        return 1 / 0

    def run(call):
        nn.clear_parameters()
        w = nn.Variable.from_numpy_array(np.ones(2, np.float32), need_grad=True)
        u = nn.Variable.from_numpy_array(np.ones(3, np.float32), need_grad=True)
        w.g = np.array([1, 2], np.float32)
        u.g = np.array([3, 4, 5], np.float32)
        solver = S.Sgd(0.1)
        solver.set_parameters({"w": w, "u": u})
        got = _outcome(lambda: call(solver))
        return [got, w.d.tolist(), w.g.tolist(), u.d.tolist(), u.g.tolist()]

    bad = {"5": 5, "'x'": "x", "one argument": lambda a: None, "1/0": one_over_zero}
    out = {}
    for key, hook in sorted(bad.items()):
        out["update pre " + key] = run(lambda s: s.update(update_pre_hook=hook))
        out["update post " + key] = run(lambda s: s.update(update_post_hook=hook))
    out["update positional 5"] = run(lambda s: s.update(5))
    out["update three positional"] = run(lambda s: s.update(None, None, None))
    out["weight_decay pre 5"] = run(lambda s: s.weight_decay(0.5, pre_hook=5))
    out["weight_decay 0 pre 5"] = run(lambda s: s.weight_decay(0.0, pre_hook=5))
    out["clip pre 5"] = run(lambda s: s.clip_grad_by_norm(1.0, pre_hook=5))
    out["scale post 5"] = run(lambda s: s.scale_grad(2.0, post_hook=5))
    out["check_inf pre 5"] = run(lambda s: s.check_inf_grad(pre_hook=5))
    out["check_nan post 1/0"] = run(lambda s: s.check_nan_grad(post_hook=one_over_zero))
    return out
