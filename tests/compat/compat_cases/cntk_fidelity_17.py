"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (seventeenth round):
``sequence.where`` and ``sequence.gather`` whose condition takes no step in a sequence."""

import numpy as np

from compat_harness import cntk_case, outcome


def _refusal(fn, *clauses):
    """What ``fn()`` raised (its built-in type) and which of ``clauses`` its message holds
    (CNTK's words; Stadyn adds the op and the user's line)."""
    try:
        got = fn()
    except Exception as e:          # (the built-in type and CNTK's words are compared)
        kind = next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")
        return {"raises": kind, "says": [c for c in clauses if c in str(e)]}
    return {"returns": outcome(lambda: np.asarray(got).tolist())}


_NO_STEP = "AddSequence: Sequences must be a least one frame long."


@cntk_case(names=["cntk.sequence.where", "cntk.sequence.gather"],
           note="where / gather whose condition takes no step in a sequence (all zeros): CNTK "
                "2.7 raises RuntimeError 'AddSequence: Sequences must be a least one frame "
                "long.', alone or beside sequences that take steps, reduced or not.  Stadyn "
                "raised a ShapeError (a ValueError) of its own words")
def sequence__where_gather_no_step(C, r):
    r.touch("cntk.sequence.input_variable", "cntk.Function.eval", "cntk.sequence.reduce_sum")
    res = {}
    for title, data in [("alone", [np.zeros((3, 1), np.float32)]),
                        ("beside another", [np.zeros((3, 1), np.float32),
                                            np.ones((2, 1), np.float32)])]:
        c = C.sequence.input_variable(1)
        res["where, " + title] = _refusal(lambda: C.sequence.where(c).eval({c: data}), _NO_STEP)
        res["where reduced, " + title] = _refusal(
            lambda: C.sequence.reduce_sum(C.sequence.where(c)).eval({c: data}), _NO_STEP)
        x = C.sequence.input_variable(2, sequence_axis=c.dynamic_axes[1])
        rows = [np.ones((len(d), 2), np.float32) for d in data]
        res["gather, " + title] = _refusal(
            lambda: C.sequence.gather(x, c).eval({x: rows, c: data}), _NO_STEP)
    return res
