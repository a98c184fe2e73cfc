"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 with a recurrence's step (cntkrec39):
a layer applied in a Python step whose weight CNTK 2.7's loop validation fixes in one pass and
refuses in a later one, as the state's shape settles; and (known rows) a slice along the free
axis ``sequence.unpack`` / ``unpack_batch`` make."""

import functools
import re

from compat_harness import cntk_case
from compat_outcomes import as_returned, builtin_type, outcome


def _refusal(exc):
    """What CNTK 2.7 raised: its built-in type, and for a Times refusal its first sentence (the
    two shapes that do not match)."""
    out = {"raises": builtin_type(exc)}
    found = re.match(r"Times: .*?shape '\[[^']*\]'.*?shape '\[[^']*\]'", str(exc))
    if found:
        out["message"] = found.group(0)
    return out


_outcome = functools.partial(outcome, convert=as_returned, raised=_refusal)


def _applied(C, s):
    """A step applying ``s`` (made outside it) to the state spliced with the input."""
    return lambda h, x: s(C.splice(h, x))


def _steps(C, np):
    """``{name: (make(d), dense's bias, initial state, input width)}``: Python steps applying
    a Dense ``d`` of 3 to the state, to the state spliced with the input or added to it, or a
    Sequential of two Dense layers."""
    zeros = lambda n: C.constant(np.zeros(n, np.float32))     # noqa: E731
    L = C.layers
    return {
        "splice(d(h), x)": (lambda d: lambda h, x: C.splice(d(h), x), True, 0, 4),
        "splice(d(h), x) initial (7,)": (lambda d: lambda h, x: C.splice(d(h), x), True,
                                         zeros(7), 4),
        "d(h) + reduce_sum(x)": (lambda d: lambda h, x: d(h) + C.reduce_sum(x), True, 0, 4),
        "d(h) + reduce_sum(x) initial (3,)": (lambda d: lambda h, x: d(h) + C.reduce_sum(x),
                                              True, zeros(3), 4),
        "tanh(d(h)) + reduce_sum(x)": (lambda d: lambda h, x: C.tanh(d(h)) + C.reduce_sum(x),
                                       True, 0, 4),
        "d(h) * reduce_mean(x)": (lambda d: lambda h, x: d(h) * C.reduce_mean(x), True, 0, 4),
        "d(h) + x": (lambda d: lambda h, x: d(h) + x, True, 0, 3),
        "reduce_sum(d(h)) + x": (lambda d: lambda h, x: C.reduce_sum(d(h)) + x, True, 0, 4),
        "d(h + reduce_sum(x))": (lambda d: lambda h, x: d(h + C.reduce_sum(x)), True, 0, 4),
        "d(h + reduce_sum(x)) no bias": (lambda d: lambda h, x: d(h + C.reduce_sum(x)), False,
                                         0, 4),
        "d(splice(h, x))": (lambda d: lambda h, x: d(C.splice(h, x)), True, 0, 4),
        "d(splice(h, x)) no bias": (lambda d: lambda h, x: d(C.splice(h, x)), False, 0, 4),
        "d(splice(h, reduce_sum(x)))": (lambda d: lambda h, x: d(C.splice(h, C.reduce_sum(x))),
                                        True, 0, 4),
        "Sequential(d, Dense(3))(splice(h, x))": (
            lambda d: _applied(C, L.Sequential([d, L.Dense(3, init=C.glorot_uniform(seed=2))])),
            True, 0, 4),
        "Sequential(d no bias, Dense(3))(splice(h, x))": (
            lambda d: _applied(C, L.Sequential([d, L.Dense(3, init=C.glorot_uniform(seed=2))])),
            False, 0, 4),
        "Sequential(d no bias, tanh)(splice(h, x))": (
            lambda d: lambda h, x: L.Sequential([d, C.tanh])(C.splice(h, x)), False, 0, 4),
    }


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.Dense", "cntk.layers.Sequential",
                  "cntk.splice", "cntk.reduce_sum"],
           note="a Python step applying a Dense (made outside it, not applied yet) to its state "
                "or to a value of it: CNTK 2.7's loop validation fixes the Dense's weight in the "
                "first pass that gives the layer a known input, and its Times refuses the "
                "state's later shape (ValueError as the recurrence is made); a Dense with a "
                "bias has its output shape in the first pass (the bias's) before its input is "
                "known, one without none; the shape, the parameters and the values of those "
                "that make")
def recurrence__dense_weight_fixed_in_a_pass(C, r, np):
    res = {}
    for name, (make, bias, init, width) in _steps(C, np).items():
        x = C.sequence.input_variable(width)
        d = C.layers.Dense(3, init=C.glorot_uniform(seed=1), bias=bias)

        def made():
            z = C.layers.Recurrence(make(d), initial_state=init)(x)
            data = [np.linspace(-1, 1, 3 * width, dtype=np.float32).reshape(3, width)]
            return [list(z.shape), [list(p.shape) for p in z.parameters],
                    np.asarray(z.eval({x: data})[0]).round(5).tolist()]
        res[name] = _outcome(made)
    return res


_RANGES = [(0, 2, 1), (1, 3, 1), (0, 3, 2), (0, 5, 1), (0, 1, 1), (2, 3, 1), (0, 2, 2),
           (0, 0, 1), (-2, 0, 1), (-1, 0, 1), (-2, -1, 1), (1, 0, 1), (0, -1, 1), (0, 0, 2)]
def _slice_rows(C, np, ranges):
    """``{key: outcome}``: the shape and a run of ``slice`` over the unpacked steps (and the
    unpacked batch) of a sequence of three steps of ``(3, 2)``, for each ``(begin, end,
    stride)`` of ``ranges``."""
    res = {}
    data = np.arange(18, dtype=np.float32).reshape(3, 3, 2)
    for where in ("unpack", "unpack_batch"):
        for b, e, s in ranges:
            if where == "unpack":
                x = C.sequence.input_variable((3, 2))
                u = C.sequence.unpack(x, 0, no_mask_output=True)
                fed = [data]
            else:
                x = C.input_variable((3, 2))
                u = C.unpack_batch(x)
                fed = data
            key = "%s [%d, %d) stride %d" % (where, b, e, s)
            f = C.slice(u, 0, b, e, s)
            res[key + " shape"] = list(f.shape)
            res[key + " run"] = _outcome(lambda: list(np.asarray(f.eval({x: fed})).shape),
                                         raised=builtin_type)
    return res


# before cntkrec39 every range of more than one step counted from the start at both ends
# differed (Stadyn showed the stand-in's length, (0, 2): (1, 3, 2), and ran it); before rmE39
# [2, 3) showed 0 steps, and [1, 0), [0, -1), [0, 0) every 2 ran (CNTK: NarrowTo)


@cntk_case(names=["cntk.slice", "cntk.sequence.unpack", "cntk.unpack_batch"],
           note="slice along a free axis (the steps sequence.unpack makes, the batch "
                "unpack_batch makes) for ranges counted from the start or the end: its "
                ".shape and whether a run computes it (the shape of the result) or refuses it")
def slice__along_unpacked_steps(C, r, np):
    return _slice_rows(C, np, _RANGES)


def _layer_steps(C):
    """``{name: make()}``: Python steps applying a layer made outside them, beyond a plain
    Dense (rmE39): a Dense of ``input_rank``/``map_rank``, an Embedding, a Stabilizer, a GRU
    and an RNNStep applied to the state spliced with the input."""
    L = C.layers
    g = C.glorot_uniform

    def splice_in(layer):
        return lambda h, x: layer(C.splice(h, x))

    def spliced_out(layer):
        return lambda h, x: C.splice(layer(h), x)
    return {
        "Dense input_rank=1 (splice(h, x))": lambda: splice_in(L.Dense(3, input_rank=1,
                                                                       init=g(seed=1))),
        "Dense input_rank=1 no bias (splice(h, x))": lambda: splice_in(
            L.Dense(3, input_rank=1, bias=False, init=g(seed=1))),
        "Dense input_rank=1: splice(d(h), x)": lambda: spliced_out(
            L.Dense(3, input_rank=1, init=g(seed=1))),
        "Dense map_rank=0 (splice(h, x))": lambda: splice_in(L.Dense(3, map_rank=0,
                                                                     init=g(seed=1))),
        "Dense map_rank=0: splice(d(h), x)": lambda: spliced_out(
            L.Dense(3, map_rank=0, init=g(seed=1))),
        "Dense tanh (splice(h, x))": lambda: splice_in(L.Dense(3, activation=C.tanh,
                                                               init=g(seed=1))),
        "Embedding (splice(h, x))": lambda: splice_in(L.Embedding(3, init=g(seed=1))),
        "Embedding: e(h) + reduce_sum(x)": lambda: (
            lambda e: lambda h, x: e(h) + C.reduce_sum(x))(L.Embedding(3, init=g(seed=1))),
        "Dense of Stabilizer (splice(h, x))": lambda: (
            lambda s, d: lambda h, x: d(s(C.splice(h, x))))(L.Stabilizer(),
                                                             L.Dense(3, init=g(seed=1))),
        "Stabilizer of Dense: s(d(h)) + reduce_sum(x)": lambda: (
            lambda s, d: lambda h, x: s(d(h)) + C.reduce_sum(x))(L.Stabilizer(),
                                                                  L.Dense(3, init=g(seed=1))),
        "GRU (h, splice(h, x))": lambda: (
            lambda c: lambda h, x: c(h, C.splice(h, x)))(L.GRU(3, init=g(seed=1))),
        "RNNStep (h, splice(h, x))": lambda: (
            lambda c: lambda h, x: c(h, C.splice(h, x)))(L.RNNStep(3, init=g(seed=1))),
    }


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.Dense", "cntk.layers.Embedding",
                  "cntk.layers.Stabilizer", "cntk.layers.GRU", "cntk.layers.RNNStep"],
           note="a Python step applying a layer made outside it: a Dense of input_rank or "
                "map_rank (with a bias it has its output shape in CNTK 2.7's first pass over "
                "the loop whatever its ranks: its Plus takes b's shape), an Embedding (a "
                "Times without a bias: fixed in the pass that knows its input, refused with "
                "Times' words after), a Stabilizer, a GRU and an RNNStep over the state "
                "spliced with the input; the shape, the parameters and the values, or the "
                "refusal")
def recurrence__layer_kinds_fixed_in_a_pass(C, r, np):
    res = {}
    for name, make in _layer_steps(C).items():
        x = C.sequence.input_variable(4)

        def made():
            z = C.layers.Recurrence(make())(x)
            data = [np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)]
            return [list(z.shape), sorted(list(p.shape) for p in z.parameters),
                    np.asarray(z.eval({x: data})[0]).round(5).tolist()]
        res[name] = _outcome(made)
    return res


@cntk_case(names=["cntk.layers.Dense"],
           note="a Dense of map_rank (0, 1) or input_rank 1 applied to a sequence of (2, 5): "
                "map_rank counts the sample's axes after the sequence axis (before rmE39 "
                "Stadyn counted the sequence axis among them: map_rank=1 gave (3,) and a W "
                "of (2, 5, 3), map_rank=0 an error); the shape, W's shape and the values")
def dense__map_rank_over_a_sequence(C, r, np):
    res = {}
    for key, kw in (("map_rank=0", {"map_rank": 0}), ("map_rank=1", {"map_rank": 1}),
                    ("input_rank=1", {"input_rank": 1})):
        x = C.sequence.input_variable((2, 5))
        d = C.layers.Dense(3, init=C.glorot_uniform(seed=1), **kw)
        y = d(x)
        data = [np.linspace(-1, 1, 30, dtype=np.float32).reshape(3, 2, 5)]
        res[key] = [list(y.shape), list(d.W.shape),
                    np.asarray(y.eval({x: data})[0]).round(5).tolist()]
    return res


def _built_and_run(C, np, make, fed):
    """``[shape, run]`` of the slice ``make()`` gives (``{"raises": type}`` for either where
    it raises), run on ``fed`` (a function of the input variable)."""
    try:
        f, x = make()
    except Exception as exc:        # (refused as it is made)
        return {"raises": builtin_type(exc)}
    run = _outcome(lambda: np.asarray(f.eval(fed(x))).round(5).tolist(), raised=builtin_type)
    return [list(f.shape), run]


_MORE_RANGES = [(0, 0, 3), (-1, 0, 2), (0, 1, 2), (-1, 1, 1), (-1, 1, 2), (-1, -1, 1),
                (1, 0, -1), (0, 0, -1), (-3, 0, 2), (2, 0, 1), (1, 1, 1), (0, 2, 1)]


@cntk_case(names=["cntk.slice", "cntk.sequence.unpack", "cntk.unpack_batch",
                  "cntk.input_variable"],
           note="slice along unpacked steps (sequence.unpack's, unpack_batch's batch) of "
                "sequences of 3 and 1 steps, and along an input's own FreeDimension axis "
                "before and after unpack_batch: CNTK 2.7's node reads unpacked steps as one "
                "step when the graph is compiled (NarrowTo refuses [0, 0) every 3, [-1, 0) "
                "every 2, [-1, -1)), a range from the start that NarrowTo refuses is "
                "refused as the slice is made, an input's own free axis is sliced at each "
                "run's length (before rmE39 Stadyn ran the first, built the second and "
                "refused the third's [0, 2), [1, 0))")
def slice__narrowed_along_free_axes(C, r, np):
    res = {}
    for steps in (3, 1):
        data = np.arange(6 * steps, dtype=np.float32).reshape(steps, 3, 2)
        for b, e, s in _MORE_RANGES:
            def unpacked(b=b, e=e, s=s):
                x = C.sequence.input_variable((3, 2))
                return C.slice(C.sequence.unpack(x, 0, no_mask_output=True), 0, b, e, s), x

            def batch(b=b, e=e, s=s):
                x = C.input_variable((3, 2))
                return C.slice(C.unpack_batch(x), 0, b, e, s), x
            key = "[%d, %d) stride %d, %d steps" % (b, e, s, steps)
            res["unpack " + key] = _built_and_run(C, np, unpacked, lambda x: {x: [data]})
            res["unpack_batch " + key] = _built_and_run(C, np, batch, lambda x: {x: data})
    data = np.arange(24, dtype=np.float32).reshape(2, 4, 3)
    for b, e, s in _MORE_RANGES + [(1, 0, 1), (0, -1, 1), (0, 0, 2)]:
        for where, axis in (("input", 0), ("unpack_batch, its axis 1", 1)):
            def free(b=b, e=e, s=s, where=where, axis=axis):
                x = C.input_variable((C.FreeDimension, 3))
                u = x if where == "input" else C.unpack_batch(x)
                return C.slice(u, axis, b, e, s), x
            key = "FreeDimension of %s [%d, %d) stride %d" % (where, b, e, s)
            res[key] = _built_and_run(C, np, free, lambda x: {x: data})
    return res
