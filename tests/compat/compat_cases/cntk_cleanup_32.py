"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (cleanup32): its initializers of a
scale that is not positive (a truncated normal's draws looped for ever) and a truncated
normal of a NaN scale."""

from compat_harness import cntk_case

_INITS = ["glorot_uniform", "glorot_normal", "xavier", "he_uniform", "he_normal", "uniform",
          "normal", "truncated_normal"]


def _refusal(fn):
    """The built-in type of what ``fn()`` raised and its message's first line, or None."""
    try:
        fn()
    except Exception as e:      # (the built-in type and CNTK's words are what is compared)
        kind = next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")
        return [kind, str(e).strip().splitlines()[0]]
    return None


@cntk_case(names=["cntk.initializer." + k for k in _INITS] + ["cntk.ops.parameter"],
           note="an initializer of a scale that is not positive is refused when made, in CNTK "
                "2.7's words (CreateInitializer, Variable.cpp: 'cannot be 0' for -1 too; "
                "Stadyn made it, and a truncated normal one then drew for ever); a float32 "
                "standard deviation that rounds to 0 is refused when drawn "
                "(SetGaussianRandomValue / SetTruncatedNormalRandomValue: CNTK 2.7 raises "
                "when the value is read, Stadyn when the parameter is made; Stadyn drew "
                "zeros)")
def initializer__scale_not_positive(C, r, np):
    res = {}
    for kind in _INITS:
        for scale in (-1, 0):
            res["%s %s" % (kind, scale)] = _refusal(
                lambda: getattr(C.initializer, kind)(scale, seed=1))
    for kind in ("normal", "truncated_normal", "glorot_normal"):
        for dt in (np.float32, np.float64):
            res["%s 1e-50 %s" % (kind, dt.__name__)] = _refusal(
                lambda: C.parameter((3, 2), init=getattr(C.initializer, kind)(1e-50, seed=2),
                                    dtype=dt).value)
    return res


@cntk_case(names=["cntk.initializer.truncated_normal", "cntk.ops.parameter"],
           note="a truncated normal of a NaN scale gives NaNs: CNTK's rejection test "
                "(SetTruncatedNormalRandomValue, CPUMatrixImpl.h: 'v < low || v > high') keeps "
                "them, where Stadyn's kept only values within the bounds and drew for ever "
                "(tests/layers/test_cntk_initial_values.py runs it under a time limit)")
def initializer__truncated_normal_nan_scale(C, r, np):
    res = {}
    for dt in (np.float32, np.float64):
        p = C.parameter((3, 2), init=C.initializer.truncated_normal(float("nan"), seed=3),
                        dtype=dt)
        res["truncated_normal nan " + dt.__name__] = [bool(np.isnan(p.value).all()),
                                                      list(p.value.shape)]
    return res


@cntk_case(names=["cntk.losses.cosine_distance_with_negative_samples"],
           note="a NaN or an infinity in one sample makes NaN of the cosines it enters and no "
                "others, of samples and of sequences (ragged too), as CNTK 2.7's: Stadyn "
                "counted its columns with ones made as 0 * sum + 1, NaN there, so that the "
                "shifted index was NaN and the op raised (an index out of bounds), and it read "
                "a sequence's steps back through a one-hot product, 0 * NaN spreading a NaN "
                "column to every step")
def cosine_distance_with_negative_samples__nan_stays(C, r, np):
    res = {}
    x, y = C.input_variable(3), C.input_variable(3)
    c = C.cosine_distance_with_negative_samples(x, y, 1, 2)
    a = r.rand(4, 3)
    b = a.copy()
    b[1, 0] = np.nan
    res["nan in y"] = c.eval({x: a, y: b})
    a2 = a.copy()
    a2[2, 1] = np.inf
    res["inf in x"] = c.eval({x: a2, y: a})
    xs, ys = C.sequence.input_variable(3), C.sequence.input_variable(3)
    cs = C.cosine_distance_with_negative_samples(xs, ys, 1, 1)
    s = [r.rand(2, 3), r.rand(2, 3)]
    t = [v.copy() for v in s]
    t[0][1, 2] = np.nan
    for i, v in enumerate(cs.eval({xs: s, ys: t})):
        res["sequences nan %d" % i] = v
    ragged = [r.rand(3, 3), r.rand(1, 3), r.rand(2, 3)]
    other = [v.copy() for v in ragged]
    other[2][0, 0] = np.nan
    for i, v in enumerate(cs.eval({xs: ragged, ys: other})):
        res["ragged nan %d" % i] = v
    return res
