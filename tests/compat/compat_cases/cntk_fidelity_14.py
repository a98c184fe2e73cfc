"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (fourteenth round): reductions
with ``keepdims=False`` over dynamic axes; the random ``*_like`` ops on placeholders without
a shape; ``Value`` made of an array given positionally."""

import functools

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import outcome


_outcome = functools.partial(outcome, convert=np.asarray)


_REDUCTIONS = ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
               "reduce_log_sum_exp", "reduce_l1", "reduce_l2", "reduce_sum_square")


@cntk_case(names=["cntk.ops.reduce_sum", "cntk.ops.reduce_mean", "cntk.ops.reduce_max",
                  "cntk.ops.reduce_min", "cntk.ops.reduce_prod", "cntk.ops.reduce_log_sum_exp",
                  "cntk.ops.reduce_l1", "cntk.ops.reduce_l2", "cntk.ops.reduce_sum_square",
                  "cntk.ops.argmax", "cntk.ops.argmin"],
           note="keepdims=False: CNTK 2.7 drops static axes given by number (one or several), "
                "and raises ValueError ('Cannot query the static axis index for a non-static "
                "axis') as the function is made for the default axis (all static axes), "
                "Axis.all_static_axes(), Axis.all_axes() and the batch axis, on a placeholder "
                "without a shape too.  Stadyn returned the reduced value for those")
def reductions__keepdims_false_axes(C, r):
    r.touch("cntk.Axis.all_axes", "cntk.Axis.all_static_axes", "cntk.Axis.default_batch_axis",
            "cntk.placeholder")
    data = np.arange(6, dtype=np.float32).reshape(1, 2, 3) - 2.5
    axes = [("default", {}), ("0", {"axis": 0}), ("1", {"axis": 1}), ("(0, 1)", {"axis": (0, 1)}),
            ("Axis(1)", {"axis": C.Axis(1)}),
            ("all static", {"axis": C.Axis.all_static_axes()}),
            ("all", {"axis": C.Axis.all_axes()}),
            ("batch", {"axis": C.Axis.default_batch_axis()})]
    res = {}
    for op in _REDUCTIONS:
        fn = getattr(C, op)
        for label, kw in axes:
            x = C.input_variable((2, 3))
            res["%s %s" % (op, label)] = _outcome(
                lambda: fn(x, keepdims=False, **kw).eval({x: data}))
        res["%s placeholder" % op] = _outcome(
            lambda: fn(C.placeholder(), keepdims=False).shape)
    for op in ("argmax", "argmin"):
        for label, kw in axes[:3]:
            x = C.input_variable((2, 3))
            res["%s %s" % (op, label)] = _outcome(lambda: getattr(C, op)(x, **kw).eval({x: data}))
    return res


@cntk_case(names=["cntk.Value", "cntk.core.Value"],
           note="CNTK 2.7's Value(batch, seq_starts=None, device=None) takes the array as its "
                "first positional argument (a float64 array stays float64).  Stadyn's took "
                "(shape, dtype, batch, ...): an array given positionally was read as a shape "
                "(a ValueError from NumPy), a device as the third argument as the batch")
def value__array_positional(C, r):
    r.touch("cntk.Value.shape", "cntk.Value.dtype", "cntk.Value.asarray", "cntk.cpu",
            "cntk.Function.eval")
    import inspect
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    v = C.Value(data)
    x = C.input_variable(3)
    return {"signature": [p.name for p in inspect.signature(C.Value).parameters.values()],
            "value": np.asarray(v.asarray()), "shape": list(v.shape),
            "float64": np.dtype(C.Value(data.astype(np.float64)).dtype).name,
            "device third": list(C.Value(data, None, C.cpu()).shape),
            "shape=": _outcome(lambda: C.Value(shape=(2, 3))),
            "fed": np.asarray((x * 2).eval({x: C.Value(data)}))}


@cntk_case(names=["cntk.random.uniform_like", "cntk.random.normal_like",
                  "cntk.random.bernoulli_like", "cntk.random.gumbel_like"],
           note="a *_like op of a placeholder without a shape: CNTK 2.7 makes it (shape (-2,), "
                "output RandomDistribution<n>_Output_0) and draws once the placeholder is "
                "replaced, with the seed given as it was made.  Stadyn raised "
                "ShapelessPlaceholderError")
def random_like__shapeless_placeholder(C, r):
    r.touch("cntk.placeholder", "cntk.Function.replace_placeholders", "cntk.Function.eval")
    import re
    res = {}
    for op, kw in (("uniform_like", {"low": 2.0, "high": 3.0}),
                   ("normal_like", {"mean": 5.0, "scale": 0.0}),
                   ("bernoulli_like", {"mean": 1.0}),
                   ("gumbel_like", {"loc": 1.0, "scale": 0.0})):
        p = C.placeholder()
        f = getattr(C.random, op)(p, seed=11, **kw)
        made = [list(f.shape), re.sub(r"\d+", "#", f.output.uid)]
        x = C.input_variable(3)
        g = f.replace_placeholders({p: x})
        v = np.asarray(g.eval({x: np.zeros((2, 3), np.float32)}))
        drawn = [bool((v >= 2).all() and (v < 3).all())] if op == "uniform_like" else v.tolist()
        res[op] = made + [list(g.shape), list(v.shape), drawn,
                          int(g.root_function.attributes["rngSeed"])]
    return res


@cntk_case(names=["cntk.random.normal", "cntk.random.gumbel", "cntk.random.normal_like",
                  "cntk.random.gumbel_like"],
           note="the scale: CNTK 2.7 takes 0 (every value the mean) and refuses a negative one "
                "with RuntimeError ('standard deviation (-1) must be non-negative'), of a "
                "placeholder without a shape too.  Stadyn refused 0 with ValueError ('must be "
                "positive and finite'), a negative one with ValueError")
def random__scale_zero_and_negative(C, r):
    r.touch("cntk.Function.eval", "cntk.placeholder")
    x = C.input_variable(2)
    d = np.zeros((1, 2), np.float32)
    res = {}
    for s in (0.0, -1.0):
        res["scale %g" % s] = [
            _outcome(lambda: C.random.normal_like(x, mean=1.0, scale=s).eval({x: d})),
            _outcome(lambda: C.random.gumbel_like(x, loc=1.0, scale=s).eval({x: d})),
            _outcome(lambda: C.random.normal((2,), mean=1.0, scale=s).eval()),
            _outcome(lambda: C.random.gumbel((2,), loc=1.0, scale=s).eval())]
    res["placeholder scale -1"] = [
        _outcome(lambda: C.random.normal_like(C.placeholder(), scale=-1.0).shape),
        _outcome(lambda: C.random.gumbel_like(C.placeholder(), scale=-1.0).shape)]
    return res


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.Fold"],
           note="a user step of one state and no recurrent cell whose state differs from the "
                "input's shape (tanh(times(h, H) + times(x, W) + b), input 3, H (2, 2)): "
                "CNTK 2.7 infers the state's shape through the loop.  Stadyn gave the state "
                "the input step's shape and raised ShapeError in times")
def recurrence__user_step_state_shape_inferred(C, r):
    r.touch("cntk.parameter", "cntk.sequence.input_variable", "cntk.ops.times",
            "cntk.Function.eval")
    x = C.sequence.input_variable(3)
    W = C.parameter((3, 2), init=0.1)
    H = C.parameter((2, 2), init=0.2)
    b = C.parameter(2, init=0.05)
    data = [np.arange(9, dtype=np.float32).reshape(3, 3) / 10, np.ones((2, 3), np.float32)]

    def elman(h, u):
        return C.tanh(C.times(h, H) + C.times(u, W) + b)

    def projected(h, u):
        return C.tanh(C.times(u, W) + h)

    def same(h, u):
        return C.tanh(h * 0.5 + u)
    # 7 units: a length the shape probes of ops over inferred axes also try (7 and 11)
    W7, H7, b7 = (C.parameter((3, 7), init=0.1), C.parameter((7, 7), init=0.05),
                  C.parameter(7, init=0.05))

    def elman7(h, u):
        return C.tanh(C.times(h, H7) + C.times(u, W7) + b7)
    res = {}
    for label, step in (("elman", elman), ("projected", projected), ("input's shape", same),
                        ("elman, 7 units", elman7)):
        f = C.layers.Recurrence(step)(x)
        res[label] = [list(f.shape)] + [np.asarray(s).tolist() for s in f.eval({x: data})]
    fold = C.layers.Fold(elman)(x)
    res["fold"] = [list(fold.shape), np.asarray(fold.eval({x: data})).tolist()]
    return res
