"""Review B of the session's compat.cntk merges, mended: a ``backward`` whose ``forward``
state a later run replaced, ``reconcile_dynamic_axes`` of a sequence on another sequence
axis, Functions of two outputs given to one-operand ops, and model files whose ops Stadyn
wrote or read wrongly."""

import os

from compat_harness import cntk_case
from compat_outcomes import outcome


@cntk_case(names=["cntk.Function.backward", "cntk.Function.forward", "cntk.Function.eval"],
           note="forward(keep_for_backward), then a run that succeeds (eval, or another "
                "forward), then backward with the first state: CNTK 2.7's RuntimeError "
                "(the state 'was modified by subsequent Forward calls'); Stadyn gave all-zero "
                "gradients.  backward with the latest state still computes")
def backward_after_a_later_run_is_refused(C, r, np):
    r.touch("cntk.Function.backward", "cntk.Function.forward", "cntk.Function.eval")
    x = C.input_variable(3, name="x", needs_gradient=True)
    y = C.input_variable(3, name="y")
    w = C.parameter(3, init=2.0, name="w")
    f = C.reduce_sum(x * x * w + y)
    f32 = np.float32
    data = {x: np.array([[1, 2, 3], [4, 5, 6]], f32), y: np.ones((2, 3), f32)}
    seed = {f.output: np.ones((2, 1), f32)}
    res = {}

    def grads(state):
        g = f.backward(state, seed, set([x, w]))
        return [np.asarray(g[x]).tolist(), np.asarray(g[w]).tolist()]

    def message(fn):
        try:
            fn()
            return "ran"
        except RuntimeError as e:
            return "modified by subsequent Forward calls" in str(e)

    st, _ = f.forward(data, [f.output], set([f.output]))
    res["eval"] = np.asarray(f.eval({x: np.full((2, 3), 7, f32), y: data[y]})).tolist()
    res["after eval"] = outcome(lambda: grads(st))
    res["after eval words"] = message(lambda: grads(st))
    st1, _ = f.forward(data, [f.output], set([f.output]))
    st2, _ = f.forward({x: data[x] * 2, y: data[y]}, [f.output], set([f.output]))
    res["after forward"] = outcome(lambda: grads(st1))
    res["latest"] = outcome(lambda: grads(st2))
    st3, _ = f.forward(data, [f.output], set([f.output]))
    res["undisturbed"] = outcome(lambda: grads(st3))
    return res


@cntk_case(names=["cntk.Function.backward", "cntk.Function.forward", "cntk.Function.eval"],
           note="g.forward(keep_for_backward), then another Function over g's nodes runs "
                "(h.eval, or the shared z.eval) with other data, then g.backward: CNTK 2.7 "
                "computes with g's own forward's values.  Stadyn read the later run's input "
                "(dW of the other data); the later run's values are there again after")
def backward_after_another_functions_run_uses_its_own_forward(C, r, np):
    r.touch("cntk.Function.backward", "cntk.Function.forward", "cntk.Function.eval")
    f32 = np.float32
    x = C.input_variable(2, name="x", needs_gradient=True)
    w = C.parameter((2, 2), init=np.array([[1, 2], [3, 4]], f32), name="w")
    z = C.times(x, w)
    g = C.reduce_sum(C.square(z))
    h = C.reduce_sum(C.relu(z))
    a, b = np.array([[1, 1]], f32), np.array([[5, -7]], f32)
    seed = {g.output: np.ones((1,), f32)}
    res = {}
    for name, later in (("h", h), ("z", z)):
        st, _ = g.forward({x: a}, [g.output], set([g.output]))
        res[name + " eval"] = np.asarray(later.eval({x: b})).tolist()
        gr = outcome(lambda: g.backward(st, seed, set([x, w])))
        res[name + " grads"] = gr if isinstance(gr, str) else [
            np.asarray(gr[x]).tolist(), np.asarray(gr[w]).tolist()]
        res[name + " z after"] = np.asarray(z.eval({x: b})).tolist()
    st, _ = g.forward({x: a}, [g.output], set([g.output]))
    h.eval({x: np.array([[2, 3], [4, 5]], f32)})       # another batch size
    res["other size"] = np.asarray(g.backward(st, seed, set([w]))[w]).tolist()
    return res


def _reconcile_data(np, t_lengths, s_lengths):
    f32 = np.float32
    t = [np.arange(n * 2, dtype=f32).reshape(n, 2) + k for k, n in enumerate(t_lengths)]
    s = [np.full((n, 2), k + 1, f32) for k, n in enumerate(s_lengths)]
    return t, s


@cntk_case(names=["cntk.reconcile_dynamic_axes"],
           note="t on Axis('other'), s on the default sequence axis: reconcile_dynamic_axes"
                "(t, s) is on s's axis (its dynamic axes; + s computes, + t is refused at "
                "build); sequences of other lengths are refused at run (CNTK 2.7's "
                "ValueError); the gradient reaches t.  Stadyn refused + s and took + t")
def reconcile_dynamic_axes__sequence_on_another_axis(C, r, np):
    s = C.sequence.input_variable(2, name="s")
    t = C.sequence.input_variable(2, name="t", sequence_axis=C.Axis("other"),
                                  needs_gradient=True)
    rec = C.reconcile_dynamic_axes(t, s)
    res = {"axes": [a.name for a in rec.dynamic_axes],
           "plus t": outcome(lambda: (rec + t) and "built")}
    q = outcome(lambda: rec + s)
    res["plus s built"] = not isinstance(q, str)
    if isinstance(q, str):
        return res
    tv, sv = _reconcile_data(np, [3, 1], [3, 1])
    res["plus s"] = [np.asarray(o).tolist() for o in q.eval({s: sv, t: tv})]
    res["reduced"] = np.asarray(C.sequence.reduce_sum(rec).eval({s: sv, t: tv})).tolist()
    g = (rec * s).grad({s: sv, t: tv}, wrt=[t])
    res["grad t"] = [np.asarray(o).tolist() for o in g]
    for label, lengths in (("steps", ([2], [3])), ("sequences", ([3, 3], [3])),
                           ("lengths", ([1, 3], [3, 1]))):
        tv, sv = _reconcile_data(np, *lengths)
        res["other " + label] = outcome(lambda: q.eval({s: sv, t: tv}))
    return res


@cntk_case(names=["cntk.mean", "cntk.sequence.softmax", "cntk.Function.save",
                  "cntk.load_model"],
           note="mean of two and of three operands and sequence.softmax saved (Function.save) "
                "and loaded again: the loaded model's outputs (Stadyn's file of mean divided "
                "by 1/n, [0.4, 3, 2.8] for [0.1, 0.75, 0.7]; sequence.softmax's save failed "
                "with a bare IndexError); mean's save warns of nothing (963552ed: Stadyn's own "
                "file, a guarded division CNTK cannot read)")
def mean_and_sequence_softmax_saved_and_loaded(C, r, np):
    r.touch("cntk.Function.save")
    import warnings
    f32 = np.float32
    x, y = C.input_variable(3, name="x"), C.input_variable(3, name="y")
    s = C.sequence.input_variable(2, name="s")
    data = {"x": np.array([[0.2, 0.5, 0.9]], f32), "y": np.array([[0.0, 1.0, 0.5]], f32),
            "s": [np.array([[1, 2], [3, 1], [0, 0]], f32), np.array([[2, -1]], f32)]}
    res = {}
    for label, z in (("mean2", C.mean([x, y])), ("mean3", C.mean([x, y, x * 2.0])),
                     ("seq_softmax", C.sequence.softmax(s))):
        with r.tempdir() as folder:
            path = os.path.join(folder, label + ".model")
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                z.save(path)
            if label.startswith("mean"):
                res[label + " save warnings"] = [str(w.message)[:100] for w in caught]
            loaded = C.load_model(path)
            out = loaded.eval({a: data[a.name] for a in loaded.arguments})
        res[label] = [np.asarray(o).tolist() for o in out] if isinstance(out, list) else \
            np.asarray(out).tolist()
    return res


def _refusal(fn):
    """The built-in type of what ``fn()`` raised and its message's first line, or ``"ran"``."""
    try:
        fn()
        return "ran"
    except Exception as e:  # noqa: BLE001 - the type and words are what is compared
        kind = next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")
        return [kind, str(e).strip().splitlines()[0]]


@cntk_case(names=["cntk.clip", "cntk.slice", "cntk.pad", "cntk.one_hot", "cntk.param_relu",
                  "cntk.sequence.broadcast_as", "cntk.as_block"],
           note="a Function of two outputs given to clip, slice, pad, one_hot, param_relu and "
                "sequence.broadcast_as, and as_block of a composite over an input: CNTK 2.7's "
                "refusals (Stadyn used the first output, and made the block)")
def one_operand_ops_refuse_two_outputs(C, r, np):
    x = C.input_variable(2, name="x")
    two = C.combine([x * 1, x * 2])
    s = C.sequence.input_variable(2, name="s")
    ops = {"clip": lambda: C.clip(two, 0, 1), "slice": lambda: C.slice(two, 0, 0, 1),
           "pad": lambda: C.pad(two, [(1, 1)]), "one_hot": lambda: C.one_hot(two, 3),
           "param_relu": lambda: C.param_relu(C.parameter(2, init=0.1), two),
           "broadcast_as": lambda: C.sequence.broadcast_as(two, s),
           "as_block two": lambda: C.as_block(two, [], "B"),
           "as_block one": lambda: C.as_block(x * 1, [], "B")}
    return {k: _refusal(fn) for k, fn in ops.items()}


@cntk_case(names=["cntk.Function"],
           note="copy.copy of a Function: CNTK 2.7 gives a second handle on it (another "
                "object; the same uid, parameters and values); deepcopy is refused as pickle "
                "is.  Stadyn's copy.copy raised pickle's TypeError")
def function_copied_with_copy_copy(C, r, np):
    import copy
    r.touch("cntk.Function")
    x = C.input_variable(3, name="x")
    f = C.layers.Dense(2, init=C.glorot_uniform(seed=1), name="d")(x)
    data = {x: np.array([[1, 2, 3]], np.float32)}
    g = outcome(lambda: copy.copy(f))
    if isinstance(g, str):
        return {"copy": g}
    return {"copy": type(g).__name__, "same object": g is f, "same uid": g.uid == f.uid,
            "same parameters": [p.uid for p in g.parameters] == [p.uid for p in f.parameters],
            "eval": np.asarray(g.eval(data)).tolist() == np.asarray(f.eval(data)).tolist(),
            "deepcopy": outcome(lambda: copy.deepcopy(f))}
