"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 with placeholders, their binding
and sequence ops (cntkfid18): a waiting Function run before its placeholders are bound."""

import numpy as np

from compat_harness import cntk_case


def _refusal(fn, *clauses):
    """What ``fn()`` raised (its built-in type) and which of ``clauses`` its message holds
    (CNTK's words; Stadyn adds the op and the user's line)."""
    try:
        got = fn()
    except Exception as e:          # (the built-in type and CNTK's words are compared)
        kind = next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")
        return {"raises": kind, "says": [c for c in clauses if c in str(e)]}
    return {"returns": np.asarray(got).tolist()}


_UNKNOWN_TYPE = "Unknown DataType."
_EXPECTS = "function expects "
_NOT_GIVEN = "have not been provided."


@cntk_case(names=["cntk.Function.eval", "cntk.Function.forward"],
           note="eval / forward of a Function over placeholders not bound yet (no dynamic "
                "axes, or no shape): CNTK 2.7 raises ValueError 'function expects 1 "
                "arguments' without data, RuntimeError 'Unknown DataType.' with data for the "
                "placeholders, ValueError '... have not been provided.' with data for an "
                "input and none for a placeholder.  Stadyn raised AttributeError (\"Deferred "
                "has no 'eval'\"); eval() of a Function over an input or a shaped placeholder "
                "computed it with zeros")
def placeholder__eval_before_binding(C, r):
    r.touch("cntk.placeholder", "cntk.input_variable", "cntk.ops.relu", "cntk.ops.plus",
            "cntk.Function.eval", "cntk.Function.forward")
    clauses = (_UNKNOWN_TYPE, _EXPECTS, _NOT_GIVEN)
    res = {}
    p = C.placeholder((3,), dynamic_axes=[], name="p")
    f = p * 2
    one = np.ones(3, np.float32)
    res["no axes, eval()"] = _refusal(lambda: f.eval(), *clauses)
    res["no axes, eval(data)"] = _refusal(lambda: f.eval({p: one}), *clauses)
    res["no axes, eval(array)"] = _refusal(lambda: f.eval(one), *clauses)
    res["no axes, forward(data)"] = _refusal(lambda: f.forward({p: one}), *clauses)
    q = C.placeholder(name="q")
    g = C.relu(q)
    res["no shape, eval()"] = _refusal(lambda: g.eval(), *clauses)
    res["no shape, eval(data)"] = _refusal(lambda: g.eval({q: np.ones((1, 3), np.float32)}),
                                           *clauses)
    a, b = C.placeholder(name="a"), C.placeholder(name="b")
    res["two, eval()"] = _refusal(lambda: (a + b).eval(), *clauses)
    res["two, one given"] = _refusal(lambda: (a + b).eval({a: np.ones((1, 3), np.float32)}),
                                     *clauses)
    x = C.input_variable(3)
    h = x + p
    res["input given"] = _refusal(lambda: h.eval({x: np.ones((1, 3), np.float32)}), *clauses)
    res["both given"] = _refusal(lambda: h.eval({x: np.ones((1, 3), np.float32), p: one}),
                                 *clauses)
    s = C.placeholder((3,), name="s")
    res["shaped, eval()"] = _refusal(lambda: (s * 2).eval(), *clauses)
    res["input, eval()"] = _refusal(lambda: (x + 1).eval(), *clauses)
    res["input, eval({})"] = _refusal(lambda: (x + 1).eval({}), *clauses)
    res["no input, eval()"] = _refusal(lambda: C.plus(C.constant(1.0), 2.0).eval(), *clauses)
    return res


@cntk_case(names=["cntk.placeholder", "cntk.FreeDimension"],
           note="a placeholder with a free axis, placeholder((FreeDimension, 3)): CNTK 2.7 takes "
                "it (shape (-3, 3), printed [* x 3], unknown dynamic axes), ops on it show "
                "-3 where the free axis goes (Plus (-3, 3), reduce_sum over axis 1 (-3, 1), "
                "times by a (3, 2) parameter (-3, 2)), and it takes the shape of what it is "
                "bound to (an input of (2, 3) or (4, 3), a sequence of (2, 3)), which evaluates.  "
                "Stadyn raised ShapeError ('dimension 1 is -3')")
def placeholder__free_dimension(C, r):
    r.touch("cntk.input_variable", "cntk.sequence.input_variable", "cntk.ops.plus",
            "cntk.ops.reduce_sum", "cntk.ops.times", "cntk.parameter", "cntk.Function.eval",
            "cntk.Function.replace_placeholders", "cntk.Variable.shape",
            "cntk.Variable.dynamic_axes", "cntk.Function.output", "cntk.Function.arguments")
    res = {}
    q = C.placeholder((C.FreeDimension, 3), name="q")
    res["placeholder"] = [repr(q), str(q), list(q.shape), [str(a) for a in q.dynamic_axes]]
    h = q + 1
    res["plus"] = [str(h), "".join(c for c in repr(h) if not c.isdigit()), list(h.output.shape),
                   [str(a) for a in h.output.dynamic_axes]]
    s = C.reduce_sum(q, axis=1)
    t = C.times(q, C.parameter((3, 2), init=1.0))
    res["reduce_sum, times"] = [str(s), list(s.shape), str(t), list(t.shape)]
    y = C.input_variable((2, 3), name="y")
    h.replace_placeholders({q: y})
    data = r.randn(1, 2, 3)
    res["replaced"] = [str(h), list(h.output.shape), [a.name for a in h.arguments]]
    res["replaced, eval"] = h.eval({y: data})
    for title, make, data in [
            ("called on (4, 3)", lambda: C.input_variable((4, 3), name="z"), r.randn(2, 4, 3)),
            ("called on a sequence", lambda: C.sequence.input_variable((2, 3), name="z"),
             [r.randn(2, 2, 3), r.randn(3, 2, 3)])]:
        p = C.placeholder((C.FreeDimension, 3), name="p")
        z = make()
        f = C.reduce_sum(p * 2, axis=1)(z)
        res[title] = [str(f), list(f.output.shape)]
        res[title + ", eval"] = f.eval({z: data})
    return res


def _leaves(vs):
    return [[v.name, list(v.shape), "constant" if v.is_constant else "parameter"
             if v.is_parameter else "placeholder" if v.is_placeholder else "input"
             if v.is_input else "output"] for v in vs]


@cntk_case(names=["cntk.layers.Fold", "cntk.layers.Recurrence"],
           note="Fold / Recurrence applied to a placeholder without a shape: CNTK 2.7 lists "
                "the graph's leaves at the call (inputs, constants, parameters): a Fold's "
                "Sequence::Slice scalars 0 and 1 first, the step's parameters and constants, "
                "the initial state's Constant, the placeholder, then the other states' "
                "scalars (return_full_state).  Stadyn listed the placeholder alone until the "
                "graph was built")
def fold__leaves_at_the_call(C, r):
    r.touch("cntk.placeholder", "cntk.sequence.input_variable", "cntk.ops.plus",
            "cntk.Function.inputs", "cntk.Function.parameters", "cntk.layers.GRU",
            "cntk.layers.LSTM", "cntk.Function.constants")
    x = C.sequence.input_variable(2, name="x")
    res = {}
    for title, make in [
            ("Fold(plus)", lambda: C.layers.Fold(C.plus)),
            ("Fold(plus), initial 2.5", lambda: C.layers.Fold(C.plus, initial_state=2.5)),
            ("Fold(plus), full state", lambda: C.layers.Fold(C.plus, return_full_state=True)),
            ("Fold(GRU)", lambda: C.layers.Fold(C.layers.GRU(3))),
            ("Fold(LSTM)", lambda: C.layers.Fold(C.layers.LSTM(2))),
            ("Fold(LSTM), full state", lambda: C.layers.Fold(C.layers.LSTM(2),
                                                             return_full_state=True)),
            ("Recurrence(plus)", lambda: C.layers.Recurrence(C.plus)),
            ("Recurrence(GRU)", lambda: C.layers.Recurrence(C.layers.GRU(3)))]:
        f = make()(C.placeholder(name="p"))
        res[title + ": inputs"] = _leaves(f.inputs)
        res[title + ": constants"] = [[list(c.shape), c.value.tolist()] for c in f.constants]
        res[title + ": parameters"] = [[p.name, list(p.shape)] for p in f.parameters]
        res[title + ": built, inputs"] = _leaves(f(x).inputs)
    return res


def _fuzzed_rankings(r, count):
    """``count`` minibatches of 2 to 6 sequences of 1 to 6 steps, each step's group id a
    non-decreasing run of small integers (so groups run within and across sequences)."""
    out = []
    for _ in range(count):
        lengths = tuple(int(k) for k in r.randint(1, 7, (int(r.randint(2, 7, ())),)))
        ids = [np.sort(r.randint(1, 4, (k,))).tolist() for k in lengths]
        out.append(("fuzzed %d, lengths %s" % (len(out) + 1, lengths), lengths, ids))
    return out


@cntk_case(names=["cntk.lambda_rank", "cntk.ndcg_at_1"],
           note="lambda_rank / ndcg_at_1 over sequences (score, gain and group on one sequence "
                "axis): CNTK 2.7 reads the minibatch's samples as its layout holds them, step "
                "by step, each step's parallel streams side by side, packing a short sequence "
                "after another in one stream where it fits within the longest one's steps "
                "(MBLayout::InitAsPackedSequences, first fit, in the minibatch's order: "
                "lengths (1, 3, 2) make two streams, (4, 1, 1) two), a stream's steps after its "
                "sequences as samples of gain, score and group 0 (so groups run across "
                "sequences, and the gaps count among the samples); the gradient reaches the "
                "sequences' steps.  Stadyn refused sequences (ShapeError 'output must be (1, "
                "1)'), then gave each sequence a stream of its own; fuzzed lengths after the "
                "fixed ones")
def lambda_rank__sequences(C, r):
    r.touch("cntk.sequence.input_variable", "cntk.Function.eval", "cntk.Function.grad")
    res = {}
    fixed = [((3, 2), [[1, 1, 2], [2, 3]]), ((3,), [[1, 1, 2]]), ((2, 2), [[1, 1], [1, 1]]),
             ((1, 3, 2), [[4], [4, 4, 5], [4, 5]]), ((4, 1, 1), [[2, 2, 2, 2], [2], [3]])]
    for title, lengths, ids in ([("lengths %s" % (k,), k, i) for k, i in fixed]
                                + _fuzzed_rankings(r, 8)):
        s = C.sequence.input_variable(1, needs_gradient=True)
        n = C.sequence.input_variable(1, sequence_axis=s.dynamic_axes[1])
        g = C.sequence.input_variable(1, sequence_axis=s.dynamic_axes[1])
        scores = [r.randn(k, 1) for k in lengths]
        gains = [np.sort(r.rand(k, 1) * 5, axis=0)[::-1].copy() for k in lengths]
        groups = [np.array(i, np.float32).reshape(-1, 1) for i in ids]
        data = {s: scores, n: gains, g: groups}
        f = C.lambda_rank(s, n, g)
        res[title + ": str"] = str(f)
        res[title + ": lambda_rank"] = f.eval(data)
        res[title + ": gradient"] = [np.asarray(a) for a in f.grad(data, wrt=[s])]
        res[title + ": ndcg_at_1"] = C.ndcg_at_1(s, n, g).eval(data)
    return res


@cntk_case(names=["cntk.placeholder"],
           note="a placeholder of a shape and no sequence axis (dynamic axes unknown, as made "
                "without any, or the batch axis alone) bound to a sequence: CNTK 2.7 builds "
                "its ops on the sequence (p * 2, reduce_sum over axis 0, times by a "
                "parameter, sequence.last: per step, the last step), whether it is replaced "
                "in place or the Function called (sequence.last of a placeholder of the batch "
                "axis alone it refuses at the call: RuntimeError '... (1 sequence axis and 1 "
                "batch axis) is not supported.').  Stadyn refused the binding (ValueError "
                "'cannot take a variable of shape (1, 1, 3)'), reduced the whole sequence "
                "where called, and refused sequence.last on the placeholder.  A layer applied "
                "to such a placeholder makes its parameters at the call (Dense(4): W (3, 4), "
                "shape (4,))")
def placeholder__shaped_bound_to_sequence(C, r):
    r.touch("cntk.sequence.input_variable", "cntk.input_variable", "cntk.ops.reduce_sum",
            "cntk.ops.times", "cntk.parameter", "cntk.sequence.last", "cntk.Function.eval",
            "cntk.Function.output", "cntk.Variable.dynamic_axes", "cntk.Variable.shape",
            "cntk.Axis.default_batch_axis", "cntk.Function.replace_placeholders",
            "cntk.layers.Dense", "cntk.layers.Sequential", "cntk.Function.parameters")
    data = [r.randn(2, 3), r.randn(3, 3)]
    batch = r.randn(2, 3)
    ops = [("times 2", lambda p: p * 2),
           ("reduce_sum axis 0", lambda p: C.reduce_sum(p, 0)),
           ("times W", lambda p: C.times(p, C.parameter((3, 2), init=0.5))),
           ("sequence.last", lambda p: C.sequence.last(p))]
    res = {}
    for axes_title, axes in [("no axes given", None),
                             ("batch axis", lambda: [C.Axis.default_batch_axis()])]:
        for title, op in ops:
            key = axes_title + ", " + title
            p = C.placeholder((3,), **({} if axes is None else {"dynamic_axes": axes()}))
            if axes is not None and title == "sequence.last":   # (CNTK refuses it at the call)
                res[key] = _refusal(lambda: op(p), "(1 sequence axis and 1 batch axis)")
                continue
            f = op(p)
            res[key + ": before"] = [list(f.output.shape),
                                     [str(a) for a in f.output.dynamic_axes]]
            x = C.sequence.input_variable(3)
            g = f.replace_placeholders({p: x})
            res[key + ": replaced"] = [list(g.output.shape),
                                       [str(a) for a in g.output.dynamic_axes]]
            res[key + ": replaced, eval"] = g.eval({x: data})
            p = C.placeholder((3,), **({} if axes is None else {"dynamic_axes": axes()}))
            y = C.sequence.input_variable(3)
            res[key + ": called, eval"] = op(p)(y).eval({y: data})
            if title != "sequence.last":
                p = C.placeholder((3,), **({} if axes is None else {"dynamic_axes": axes()}))
                z = C.input_variable(3)
                res[key + ": on a batch, eval"] = op(p)(z).eval({z: batch})
    p = C.placeholder((3,), name="p")
    d = C.layers.Dense(4, init=0.5)(p)          # (its parameters made at the call)
    res["Dense"] = [list(d.shape), str(d), [list(w.shape) for w in d.parameters]]
    x = C.sequence.input_variable(3)
    res["Dense, eval"] = d.replace_placeholders({p: x}).eval({x: data})
    p = C.placeholder((3,), name="p")
    res["Sequential"] = list(C.layers.Sequential([C.layers.Dense(4), C.layers.Dense(2)])(
        p).shape)
    return res
