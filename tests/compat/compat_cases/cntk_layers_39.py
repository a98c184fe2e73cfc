"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 as a layer meets its input
(cntklayer39): CNTK's ``Times`` rank rule (``PrimitiveFunction.h``'s ``TimesOpOutputShape``)
refuses a ``Dense``, an ``Embedding``, a recurrent step over an input of too low a rank --
a scalar (a ``reduce_sum``), an input no longer than its ``map_rank`` or shorter than its
``input_rank`` -- where Stadyn computed (SILENT: a ``Dense(3)`` of a scalar gave ``(1, 3)``);
a ``Convolution`` of a state too short in a step is CNTK's ValueError too."""

import functools

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome


_outcome = functools.partial(outcome, convert=as_returned, raised=as_raised)


def _shape(f):
    return list(f.shape)


@cntk_case(names=["cntk.layers.Dense", "cntk.layers.Embedding", "cntk.layers.GRU",
                  "cntk.layers.RNNStep", "cntk.layers.LSTM", "cntk.ops.reduce_sum",
                  "cntk.ops.placeholder", "cntk.ops.sequence.input_variable"],
           note="a layer over a scalar (reduce_sum of a sequence's step, shape ()): CNTK 2.7 "
                "refuses Dense (ValueError 'Times: Input map rank (0) must be < rank (0)'), "
                "an Embedding and the steps' x and h (RuntimeError 'Times: The left operand "
                "... rank (0) must be >= #axes (1) being reduced over'); Stadyn gave Dense "
                "(1, 3) and computed the others")
def times_ranks__layers_over_a_scalar(C, r, np):
    x = C.sequence.input_variable(4)
    s = C.reduce_sum(x)
    res = {"scalar": _shape(s)}
    res["Dense"] = _outcome(lambda: _shape(C.layers.Dense(3)(s)))
    res["Dense (3, 2)"] = _outcome(lambda: _shape(C.layers.Dense((3, 2))(s)))
    res["Dense map_rank 0"] = _outcome(lambda: _shape(C.layers.Dense(3, map_rank=0)(s)))
    res["Dense input_rank 1"] = _outcome(lambda: _shape(C.layers.Dense(3, input_rank=1)(s)))
    res["Embedding"] = _outcome(lambda: _shape(C.layers.Embedding(3)(s)))
    res["Embedding weights"] = _outcome(lambda: _shape(C.layers.Embedding(
        weights=np.ones((4, 3), np.float32))(s)))
    h, c = C.placeholder(3), C.placeholder(3)
    res["GRU x"] = _outcome(lambda: _shape(C.layers.GRU(3)(h, s)))
    res["RNNStep x"] = _outcome(lambda: _shape(C.layers.RNNStep(3)(h, s)))
    res["LSTM x"] = _outcome(lambda: _shape(C.layers.LSTM(3)(h, c, s)))
    res["GRU h"] = _outcome(lambda: _shape(C.layers.GRU(3)(s, x)))
    res["RNNStep h"] = _outcome(lambda: _shape(C.layers.RNNStep(3)(s, x)))
    res["LSTM h"] = _outcome(lambda: _shape(C.layers.LSTM(3)(s, c, x)))
    return res


@cntk_case(names=["cntk.layers.Dense", "cntk.layers.Embedding", "cntk.ops.input_variable",
                  "cntk.ops.placeholder"],
           note="Dense's map_rank and input_rank against the input's rank: CNTK 2.7 refuses "
                "map_rank >= the rank (Dense(3, map_rank=1) over (5,): ValueError; Stadyn gave "
                "(5, 3)) and input_rank above it (RuntimeError; Stadyn gave ()); a Dense over "
                "a non-sequence scalar input is refused too (Stadyn gave (3,))")
def times_ranks__dense_map_and_input_rank(C, r, np):
    res = {}
    for label, kw, shape in [("map_rank 1 (5,)", {"map_rank": 1}, (5,)),
                             ("map_rank 1 (5, 2)", {"map_rank": 1}, (5, 2)),
                             ("map_rank 2 (5, 2)", {"map_rank": 2}, (5, 2)),
                             ("input_rank 1 (5, 2)", {"input_rank": 1}, (5, 2)),
                             ("input_rank 2 (5, 2)", {"input_rank": 2}, (5, 2)),
                             ("input_rank 2 (5,)", {"input_rank": 2}, (5,)),
                             ("none ()", {}, ())]:
        res[label] = _outcome(lambda: _shape(C.layers.Dense(3, **kw)(C.input_variable(shape))))
    res["Embedding ()"] = _outcome(lambda: _shape(C.layers.Embedding(3)(C.input_variable(()))))
    # placeholders: a scalar one is refused, one of unknown shape waits, an inferred axis counts
    res["placeholder ()"] = _outcome(lambda: _shape(C.layers.Dense(3)(C.placeholder(()))))
    res["placeholder unknown"] = _outcome(lambda: _shape(C.layers.Dense(3)(C.placeholder())))
    res["placeholder (?,) map_rank 1"] = _outcome(lambda: _shape(C.layers.Dense(
        3, map_rank=1)(C.placeholder((C.InferredDimension,)))))
    return res


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.Fold", "cntk.layers.RNNStep",
                  "cntk.layers.GRU", "cntk.layers.Dense", "cntk.ops.reduce_sum"],
           note="a recurrence over a scalar: a step applied in a Python step to the step's "
                "reduce_sum, a GRU's Recurrence and an RNNStep's Fold over a sequence of "
                "scalars (RuntimeError), a Dense of it in the step (ValueError): CNTK 2.7 "
                "refuses each as the recurrence is made; Stadyn computed them ((3,), (1, 3))")
def times_ranks__recurrence_over_a_scalar(C, r, np):
    x = C.sequence.input_variable(4)
    step = C.layers.RNNStep(3)
    d = C.layers.Dense(3)
    return {
        "RNNStep in step": _outcome(lambda: _shape(C.layers.Recurrence(
            lambda h, v: step(h, C.reduce_sum(v)))(x))),
        "GRU Recurrence": _outcome(lambda: _shape(C.layers.Recurrence(
            C.layers.GRU(3))(C.reduce_sum(x)))),
        "RNNStep Fold": _outcome(lambda: _shape(C.layers.Fold(
            C.layers.RNNStep(3))(C.reduce_sum(x)))),
        "Dense in step": _outcome(lambda: _shape(C.layers.Recurrence(
            lambda h, v: d(C.reduce_sum(v)) + h)(x))),
    }


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.Convolution", "cntk.ops.reduce_sum"],
           note="a Convolution of kernel 3 over the state (1,) in a step, c(h) + reduce_sum(x): "
                "CNTK 2.7's ValueError ('Convolution map tensor must have rank 1 or the same "
                "as the input tensor'); Stadyn's ShapeError is a ValueError")
def times_ranks__convolution_of_a_short_state(C, r, np):
    cv = C.layers.Convolution(3, 2)
    x = C.sequence.input_variable(1)
    return {"Convolution in step": _outcome(lambda: _shape(C.layers.Recurrence(
        lambda h, v: cv(h) + C.reduce_sum(v))(x)))}


@cntk_case(names=["cntk.ops.parameter", "cntk.initializer.glorot_uniform",
                  "cntk.initializer.uniform"],
           note="C.parameter((C.InferredDimension, 3)) and its kin, inferred by times, plus "
                "and *: CNTK 2.7 shows (-1, 3), refuses .value before the op (ValueError), "
                "infers (4, 3) from times with a (4,) input and initializes it then, as a "
                "(4, 3) parameter of the same seed")
def inferred_parameter__axes_inferred_by_the_op(C, r, np):
    inferred = C.InferredDimension

    def same(p, shape, init):
        return bool(np.array_equal(p.value, C.parameter(shape, init=init).value))

    def times():
        p = C.parameter((inferred, 3), init=C.glorot_uniform(seed=1))
        x = C.input_variable(4)
        z = C.times(x, p)
        data = np.linspace(-1, 1, 4).astype(np.float32)[None]
        return {"shape": _shape(z), "parameter": _shape(p),
                "as seeded (4, 3)": same(p, (4, 3), C.glorot_uniform(seed=1)),
                "eval is x . p": bool(np.allclose(z.eval({x: data}), np.dot(data, p.value)))}

    def plus():
        q = C.parameter((3, inferred), init=C.glorot_uniform(seed=2))
        y = C.plus(C.input_variable((3, 5)), q)
        return {"shape": _shape(y), "parameter": _shape(q),
                "as seeded (3, 5)": same(q, (3, 5), C.glorot_uniform(seed=2))}

    def times_elementwise():
        u = C.parameter((inferred,), init=C.uniform(1, seed=3))
        y = u * C.input_variable(6)
        return {"shape": _shape(y), "parameter": _shape(u),
                "as seeded (6,)": same(u, (6,), C.uniform(1, seed=3))}

    def constant_init():
        k = C.parameter((inferred,), init=0.5)
        before = _shape(k)
        y = k * C.input_variable(2)
        return {"before": before, "shape": _shape(y), "value": k.value}

    return {
        "(?, 3) shape": _outcome(lambda: _shape(C.parameter((inferred, 3)))),
        "(?, 3) value before": _outcome(lambda: C.parameter((inferred, 3)).value),
        "(?, 3) times (4,)": _outcome(times),
        "(3, ?) plus (3, 5)": _outcome(plus),
        "(?,) * (6,)": _outcome(times_elementwise),
        "(?,) init 0.5 * (2,)": _outcome(constant_init),
    }


@cntk_case(names=["cntk.ops.times", "cntk.ops.reduce_sum", "cntk.ops.parameter",
                  "cntk.ops.input_variable", "cntk.ops.sequence.input_variable"],
           note="the times op against CNTK 2.7's Times rank rule (TimesOpOutputShape), the one "
                "the layers follow: a rank-0 left operand against a weight with input axes "
                "(RuntimeError '... rank (0) must be >= #axes (1) being reduced over'), "
                "infer_input_rank_to_map >= the left operand's rank and output_rank 0 "
                "(ValueError) are refused as the op is made, where Stadyn computed them; a "
                "rank-0 left operand against a weight of output axes only is built, of the "
                "weight's shape ((3,), where Stadyn gave a sequence's (1, 3)), and refused as "
                "it runs ('Times operation changed during final validation'; Stadyn ran it)")
def times_ranks__times_op(C, r, np):
    x, xs = C.input_variable(4), C.sequence.input_variable(4)
    s, ss = C.reduce_sum(x), C.reduce_sum(xs)
    batch, seq = np.ones((1, 4), np.float32), np.ones((1, 2, 4), np.float32)

    def built(f):
        return _outcome(lambda: _shape(f()))

    def run(f, arg, data):
        return _outcome(lambda: np.asarray(f().eval({arg: data})).shape[-1])

    res = {}
    for label, left, arg, data in [("()", s, x, batch), ("seq ()", ss, xs, seq)]:
        for w, kw in [((1, 3), {}), ((3,), {}), ((3, 2), {}), ((3, 2), {"output_rank": 2}),
                      ((3,), {"output_rank": 0}), ((1, 3), {"infer_input_rank_to_map": 0}),
                      ((3,), {"infer_input_rank_to_map": 0})]:
            key = f"{label} x {w} {kw}"

            def made(left=left, w=w, kw=kw):
                return C.times(left, C.parameter(w, init=1.0), **kw)
            res[key] = built(made)
            if key.endswith("{}") or "output_rank" in key:
                res[key + " run"] = run(made, arg, data)
    for w, kw in [((4, 3), {"infer_input_rank_to_map": 0}),
                  ((4, 3), {"infer_input_rank_to_map": 1}),
                  ((4, 3), {"infer_input_rank_to_map": 2}), ((4, 3), {"output_rank": 2}),
                  ((4, 3), {"output_rank": 0}), ((4,), {"output_rank": 0}), ((4,), {})]:
        res[f"(4,) x {w} {kw}"] = built(lambda w=w, kw=kw: C.times(x, C.parameter(w), **kw))
    res["(3,) x ()"] = built(lambda: C.times(C.parameter((3,)), s))
    res["(3, 4) x (4,) output_rank 0"] = built(
        lambda: C.times(C.parameter((3, 4)), x, output_rank=0))
    res["const () x (1, 3)"] = built(lambda: C.times(C.constant(2.0), C.parameter((1, 3))))
    res["2.0 x (1, 3)"] = built(lambda: C.times(2.0, C.parameter((1, 3))))
    res["2.0 x (3,)"] = built(lambda: C.times(2.0, C.parameter((3,))))
    return res


@cntk_case(names=["cntk.layers.RecurrenceFrom", "cntk.layers.GRU", "cntk.layers.RNNStep",
                  "cntk.layers.LSTM", "cntk.ops.reduce_sum", "cntk.ops.constant"],
           note="RecurrenceFrom's initial states of rank 0: one scalar per sample (reduce_sum "
                "of an input) is built, of the state's shape (3,), and refused as it runs "
                "(RuntimeError 'VerifySize: expected matrix size 1 x 1, but it is 3 x 1'), "
                "where Stadyn ran it; a scalar Constant is broadcast (the same values)")
def times_ranks__recurrence_from_scalar_states(C, r, np):
    xs, x = C.sequence.input_variable(4), C.input_variable(4)
    data = {xs: np.linspace(-1, 1, 12).astype(np.float32).reshape(1, 3, 4),
            x: np.linspace(-0.5, 0.3, 4).astype(np.float32).reshape(1, 4)}
    res = {}
    for label, make in [("GRU", lambda s: C.layers.RecurrenceFrom(C.layers.GRU(3, init=0.1))(
                             s, xs)),
                        ("RNNStep", lambda s: C.layers.RecurrenceFrom(
                            C.layers.RNNStep(3, init=0.1))(s, xs)),
                        ("LSTM", lambda s: C.layers.RecurrenceFrom(
                            C.layers.LSTM(3, init=0.1))(s, s, xs))]:
        for state, s in [("per sample", lambda: C.reduce_sum(x)),
                         ("constant", lambda: C.constant(0.5))]:
            res[f"{label} {state}"] = _outcome(lambda make=make, s=s: _shape(make(s())))

            def run(make=make, s=s):
                f = make(s())
                return np.asarray(f.eval({a: data[a] for a in f.arguments}))[0, -1]
            res[f"{label} {state} run"] = _outcome(run)
    return res
