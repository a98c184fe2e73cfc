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
