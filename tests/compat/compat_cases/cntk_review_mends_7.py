"""Review B of the session's compat.cntk merges, mended: a ``backward`` whose ``forward``
state a later run replaced, ``reconcile_dynamic_axes`` of a sequence on another sequence
axis, Functions of two outputs given to one-operand ops, and model files whose ops Stadyn
wrote or read wrongly."""

from compat_harness import cntk_case, outcome


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
