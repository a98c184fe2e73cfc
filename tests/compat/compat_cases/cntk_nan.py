"""NaN, infinities, ties and -0.0 through CNTK 2.7's ops: what it skips, what it passes on,
and where the gradient goes.

CNTK 2.7 picks with comparisons, not arithmetic: ``element_max(a, b)`` is ``a > b ? a : b``
(a NaN in ``a`` gives ``b``, one in ``b`` gives NaN; ties give ``b``, which gets the
gradient), ``element_select`` takes one branch (a NaN or inf in the other reaches neither the
value nor the gradient), ``argmax``/``hardmax``/``classification_error`` keep the first value
that no later one exceeds (a NaN first wins; elsewhere it is passed by), ``reduce_max`` and max
pooling pass NaN by (all-NaN: NaN), ``reduce_max``'s gradient goes to every tie.  The harness
compares NaN positions (NaN == NaN) and infinities exactly (``np.isclose``); ``-0.0`` is
compared through ``np.signbit`` keys where the sign is the point.
"""

import numpy as np

from compat_harness import cntk_case

NAN, INF = np.nan, np.inf
# pairs: NaN either side, infinities, a tie, signed zeros
A = np.array([[NAN, INF, -INF, 1, -0.0, 0, 2, NAN, 3, -INF, INF, 5]], np.float32)
B = np.array([[1, 1, 1, 1, 0.0, -0.0, 2, NAN, NAN, INF, -INF, NAN]], np.float32)
# element_select's flag: NaN and inf are true, -0.0 false
FLAG = np.array([[1, 0, NAN, INF, -0.0, 0, -1, 1, 0, 1, 0, 0.5]], np.float32)
# rows: NaN first / inside / all, ties, infinities, signed zeros
ROWS = np.array([[NAN, 1, 2, 2], [1, NAN, 3, 0], [2, 2, 1, 0], [-INF, -INF, -INF, -INF],
                 [INF, 1, INF, 0], [NAN, NAN, NAN, NAN], [-INF, 0, 1, -INF], [3, 3, NAN, 3],
                 [-0.0, 0.0, -1, -1]], np.float32)
TARGET = np.eye(4, dtype=np.float32)[[0, 1, 2, 3, 0, 1, 2, 3, 0]]
# an image: windows holding NaN first, ties, -inf, inf and all NaN / all -inf
IMAGE = np.array([[[[NAN, 1, 2, 3, NAN, NAN],
                    [0, 0, 5, 5, NAN, NAN],
                    [-INF, -INF, INF, 1, 1, NAN],
                    [1, 1, NAN, NAN, NAN, 4],
                    [-INF, -INF, 0, -0.0, 7, 7],
                    [-INF, -INF, -0.0, 0, 7, 7]]]], np.float32)

_RUN = ["cntk.Function.eval", "cntk.Function.grad"]


def _grads(f, feed, wrt):
    g = f.grad(feed, wrt=wrt)
    return [g[v] for v in wrt] if isinstance(g, dict) else [g]


@cntk_case(names=["cntk.ops.element_max", "cntk.ops.element_min"] + _RUN, rtol=0, atol=0,
           note="a > b ? a : b (and a < b for min): NaN in the first operand gives the second, "
                "in the second NaN; a tie gives the second, which takes the gradient")
def nan__element_max_min(C, r):
    r.touch(*_RUN)
    a = C.input_variable(12, needs_gradient=True)
    b = C.input_variable(12, needs_gradient=True)
    res = {}
    for label, op in (("max", C.element_max), ("min", C.element_min)):
        f = op(a, b)
        out = f.eval({a: A, b: B})
        res[label] = out
        res[label + " signbit"] = np.signbit(out)
        res[label + " grad a"], res[label + " grad b"] = _grads(f, {a: A, b: B}, [a, b])
    return res


@cntk_case(names=["cntk.ops.element_select"] + _RUN, rtol=0, atol=0,
           note="one branch taken (NaN and inf flags are true, -0.0 false): a NaN or inf in "
                "the branch not taken reaches neither the value nor the gradients (Stadyn's "
                "f + c * (t - f) gave NaN there); no gradient to the flag")
def nan__element_select(C, r):
    r.touch(*_RUN)
    c = C.input_variable(12, needs_gradient=True)
    a = C.input_variable(12, needs_gradient=True)
    b = C.input_variable(12, needs_gradient=True)
    f = C.element_select(c, a, b)
    feed = {c: FLAG, a: A, b: B}
    out = f.eval(feed)
    res = {"select": out, "select signbit": np.signbit(out)}
    res["grad flag"], res["grad true"], res["grad false"] = _grads(f, feed, [c, a, b])
    # the usual guard: log where positive, else 0 -- no NaN in the value or the gradient
    x = C.input_variable(4, needs_gradient=True)
    guarded = C.element_select(C.greater(x, 0), C.log(x), C.constant(0.0) * x)
    data = np.array([[-1, 0, 2, NAN]], np.float32)
    res["guarded log"] = guarded.eval({x: data})
    res["guarded log grad"] = _grads(guarded, {x: data}, [x])[0]
    return res


@cntk_case(names=["cntk.ops.relu", "cntk.ops.abs", "cntk.ops.clip", "cntk.ops.sqrt",
                  "cntk.ops.reciprocal", "cntk.ops.exp"] + _RUN,
           rtol=1e-6, atol=0,
           note="relu is x * (x > 0): NaN and -inf give NaN, no gradient there (nanfid2: "
                "Stadyn's was torch.relu's, 0 for -inf and the gradient 1 at NaN); abs's "
                "gradient is Sgn(x), NaN at NaN (nanfid2: was 0); sqrt of NaN and of negative "
                "numbers is 0 (its gradient inf); reciprocal of 0 is 0 (CNTK's safe division); "
                "clip passes NaN, no gradient there")
def nan__unary(C, r):
    r.touch(*_RUN)
    x = C.input_variable(12, needs_gradient=True)
    res = {}
    for label, f in (("relu", C.relu(x)), ("abs", C.abs(x)), ("clip", C.clip(x, -1, 2)),
                     ("sqrt", C.sqrt(x)), ("reciprocal", C.reciprocal(x)), ("exp", C.exp(x))):
        res[label] = f.eval({x: A})
        res[label + " grad"] = _grads(f, {x: A}, [x])[0]
    return res


@cntk_case(names=["cntk.ops.argmax", "cntk.ops.argmin", "cntk.ops.hardmax"] + _RUN,
           rtol=0, atol=0,
           note="the first value no later one exceeds: a NaN in the first place wins, a later "
                "one is passed by; ties take the first")
def nan__argmax_hardmax(C, r):
    r.touch(*_RUN)
    x = C.input_variable(4)
    return {"argmax": C.argmax(x, axis=0).eval({x: ROWS}),
            "argmin": C.argmin(x, axis=0).eval({x: ROWS}),
            "hardmax": C.hardmax(x).eval({x: ROWS})}


@cntk_case(names=["cntk.ops.reduce_max", "cntk.ops.reduce_min", "cntk.ops.reduce_log_sum_exp"]
           + _RUN, rtol=1e-6, atol=1e-7,
           note="reduce_max/min pass NaN by (all NaN: NaN) and give the gradient to every "
                "value equal to the result; log-sum-exp: NaN with any NaN or inf, and for "
                "all -inf")
def nan__reduce(C, r):
    r.touch(*_RUN)
    x = C.input_variable(4, needs_gradient=True)
    res = {}
    for label, f in (("reduce_max", C.reduce_max(x, axis=0)),
                     ("reduce_min", C.reduce_min(x, axis=0)),
                     ("reduce_log_sum_exp", C.reduce_log_sum_exp(x, axis=0))):
        res[label] = f.eval({x: ROWS})
        res[label + " grad"] = _grads(f, {x: ROWS}, [x])[0]
    return res


@cntk_case(names=["cntk.ops.softmax", "cntk.ops.log_softmax"] + _RUN, rtol=1e-6, atol=1e-7,
           note="a row with NaN or +inf, or all -inf, is NaN; a -inf among finite values "
                "gives 0 (log: -inf)")
def nan__softmax(C, r):
    r.touch(*_RUN)
    x = C.input_variable(4, needs_gradient=True)
    res = {}
    for label, f in (("softmax", C.softmax(x)), ("log_softmax", C.log_softmax(x))):
        res[label] = f.eval({x: ROWS})
        res[label + " grad"] = _grads(f, {x: ROWS}, [x])[0]
    return res


@cntk_case(names=["cntk.losses.cross_entropy_with_softmax",
                  "cntk.metrics.classification_error"] + _RUN, rtol=1e-6, atol=1e-7,
           note="cross entropy: log_sum_exp(z) - sum(t * z), so a -inf logit makes it NaN "
                "(0 * -inf) while its gradient softmax(z) - t stays finite; "
                "classification_error takes argmax's first-wins rule (a NaN first is the "
                "prediction); a row holding +inf has a NaN z gradient (nanfid2: was 0 beside "
                "the inf); topN > 1 takes std::partial_sort's heap by a > b, which passes a "
                "NaN by (nanfid2: a NaN counted as higher than any number)")
def nan__losses(C, r):
    r.touch(*_RUN)
    z = C.input_variable(4, needs_gradient=True)
    t = C.input_variable(4, needs_gradient=True)
    feed = {z: ROWS, t: TARGET}
    ce = C.cross_entropy_with_softmax(z, t)
    res = {"cross_entropy": ce.eval(feed)}
    res["cross_entropy grad z"], res["cross_entropy grad t"] = _grads(ce, feed, [z, t])
    res["classification_error"] = C.classification_error(z, t).eval(feed)
    res["classification_error top 2"] = C.classification_error(z, t, topN=2).eval(feed)
    return res


@cntk_case(names=["cntk.layers.MaxPooling", "cntk.layers.GlobalMaxPooling"] + _RUN,
           rtol=0, atol=0,
           note="max pooling passes NaN by (a window of NaN only: -inf, no gradient), the "
                "first of tied values takes the gradient; GlobalMaxPooling too (nanfid2: "
                "Stadyn's was F.max's torch rule, NaN propagated)")
def nan__pooling(C, r):
    r.touch(*_RUN)
    x = C.input_variable((1, 6, 6), needs_gradient=True)
    res = {}
    for label, f in (("max pooling", C.layers.MaxPooling((2, 2), strides=(2, 2))(x)),
                     ("max pooling 3x3 stride 1", C.layers.MaxPooling((3, 3))(x)),
                     ("global max pooling", C.layers.GlobalMaxPooling()(x))):
        out = f.eval({x: IMAGE})
        res[label] = out
        res[label + " signbit"] = np.signbit(out)
        res[label + " grad"] = _grads(f, {x: IMAGE}, [x])[0]
    return res


@cntk_case(names=["cntk.clip"],
           note="tensor, parameter and NumPy-scalar bounds: CNTK 2.7's x < min ? min : (x > max "
                "? max : x) (NaN stays NaN, min wins where the bounds cross), the gradient to x "
                "where it was kept, bounds included, none to the bounds (review19: Stadyn gave "
                "the lower bound for NaN and no gradient at a bound)")
def nan__clip_tensor_bounds(C, r):
    nan, inf = np.nan, np.inf
    v = np.array([nan, 0, 1, 0.5, -1, 2, inf, -inf], np.float32)
    p = C.parameter(v.shape, init=v)
    lo = C.parameter((8,), init=np.zeros(8, np.float32))
    z = C.clip(p, lo, 1.0)
    g = C.reduce_sum(z).grad({}, wrt=[p, lo])
    x = C.input_variable(4, needs_gradient=True)
    xv = np.array([[nan, 0.0, 1.0, 0.5]], np.float32)
    z2 = C.clip(x, np.float32(0.0), np.float32(1.0))
    z3 = C.clip(x, C.constant(0.8), C.constant(0.2))
    return {"tensor bound": np.asarray(z.eval()), "grad x": np.asarray(g[p]),
            "grad bound": np.asarray(g[lo]), "numpy bounds": np.asarray(z2.eval({x: xv})),
            "numpy bounds grad": np.asarray(z2.grad({x: xv}, wrt=[x])),
            "crossed": np.asarray(z3.eval({x: xv}))}


@cntk_case(names=["cntk.reduce_max", "cntk.reduce_min"],
           note="CNTK 2.7 folds the reduced values in memory order with acc > v ? acc : v: a "
                "NaN restarts the fold (the extreme of the values after the last NaN; NaN where "
                "the last value is NaN); review19: Stadyn skipped every NaN")
def nan__reduce_fold_after_last_nan(C, r):
    nan = np.nan
    t = np.array([[[1, 3, 3], [nan, 2, 3]], [[nan, nan, nan], [0, -1, -1]]], np.float32)
    rows = np.array([[1, nan, 0], [5, nan, 3], [5, 3, nan], [nan, 5, 3], [2, nan, nan],
                     [-1, nan, -5]], np.float32)
    res = {}
    for label, data, axes in [("rows", rows, [1]), ("t", t, [(0, 1), 2, (0, 2), None, -1])]:
        for axis in axes:
            p = C.parameter(data.shape, init=data)
            for name, fn in [("max", C.reduce_max), ("min", C.reduce_min)]:
                y = fn(p, axis=axis) if axis is not None else fn(p)
                key = "%s %s axis %s" % (label, name, axis)
                res[key] = np.asarray(y.eval())
                res[key + " grad"] = np.asarray(C.reduce_sum(y * 1.0).grad({}, wrt=[p]))
    return res
