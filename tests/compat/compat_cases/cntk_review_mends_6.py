"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 after a run it refused: a graph
built after inputs on one sequence axis were fed different numbers of sequences (a refused
``eval`` or ``train_minibatch``, or runs of other graphs) lost its sequence axis, so that its
next run gave every sequence the longest one's length."""

from compat_harness import cntk_case


def _refused(fn):
    try:
        fn()
        return "ran"
    except ValueError as e:
        return str(e).strip().splitlines()[0]


def _steps(C, np, s, t, lengths):
    """``(s + t).eval`` of a fresh graph over sequences of ``lengths`` steps."""
    seqs = [np.arange(n * 2, dtype=np.float32).reshape(n, 2) + k for k, n in enumerate(lengths)]
    out = (s + t).eval({s: seqs, t: [q * (k + 2) for k, q in enumerate(seqs)]})
    return [np.asarray(o).tolist() for o in out]


@cntk_case(names=["cntk.Function.eval"],
           note="s, t sequence inputs on one axis; (s+t).eval given 1 and 2 sequences is "
                "refused, then fresh graphs (s+t) run on sequences of 2 and 3, 3 and 1, 4 "
                "steps: CNTK 2.7 gives each sequence its own length; Stadyn's first graph "
                "after the refusal padded every sequence to the longest")
def eval__fresh_graph_after_refused_layouts_keeps_lengths(C, r, np):
    r.touch("cntk.sequence.input_variable", "cntk.Function.eval")
    f32 = np.float32
    s, t = C.sequence.input_variable(2, name="s"), C.sequence.input_variable(2, name="t")
    two = np.ones((2, 2), f32)
    res = {"refused": _refused(lambda: (s + t).eval({s: [two], t: [two, two]}))}
    for lengths in ([2, 3], [3, 1], [4]):
        res["lengths %s" % lengths] = _steps(C, np, s, t, lengths)
    return res


@cntk_case(names=["cntk.Function.eval"],
           note="s fed 1 sequence by (s*2).eval, t fed 2 by (t*2).eval, then a fresh (s+t) "
                "run on sequences of 2 and 3 steps: CNTK 2.7 gives each its own length; "
                "Stadyn padded both to 3")
def eval__fresh_graph_after_runs_of_other_sequence_counts(C, r, np):
    r.touch("cntk.Function.eval")
    f32 = np.float32
    s, t = C.sequence.input_variable(2, name="s"), C.sequence.input_variable(2, name="t")
    (s * 2).eval({s: [np.ones((2, 2), f32)]})
    (t * 2).eval({t: [np.ones((2, 2), f32)] * 2})
    return {"lengths [2, 3]": _steps(C, np, s, t, [2, 3])}


@cntk_case(names=["cntk.Trainer.train_minibatch"],
           note="a train_minibatch refused for sequences of different layouts (1 and 2), then "
                "a good one on sequences of 2 and 3 steps (the loss, sample count and the "
                "updated weights), then a fresh (s @ w + t) evaluated on them: CNTK 2.7 leaves the "
                "refused minibatch no trace; Stadyn's fresh graph padded both sequences to 3")
def trainer__good_minibatch_after_refused_layouts(C, r, np):
    r.touch("cntk.Trainer.train_minibatch", "cntk.Trainer.previous_minibatch_loss_average",
            "cntk.Trainer.previous_minibatch_sample_count")
    f32 = np.float32
    two = np.arange(4, dtype=f32).reshape(2, 2) / 10
    three = np.arange(6, dtype=f32).reshape(3, 2) / 10
    s, t = C.sequence.input_variable(2, name="s"), C.sequence.input_variable(2, name="t")
    w = C.parameter((2, 2), init=np.array([[1, 0.5], [-0.5, 1]], f32))
    z = C.times(s, w)
    loss = C.sequence.reduce_sum(C.reduce_sum(C.square(z - t)))
    tr = C.Trainer(z, (loss, loss), [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    res = {"refused": _refused(lambda: tr.train_minibatch({s: [two], t: [two, two]})),
           "weights after the refusal": np.asarray(w.value).tolist()}
    data = {s: [two, three], t: [two * 2, three * 3]}
    tr.train_minibatch(data)
    res["loss"] = float(tr.previous_minibatch_loss_average)
    res["samples"] = int(tr.previous_minibatch_sample_count)
    res["weights"] = np.asarray(w.value).tolist()
    res["fresh s @ w + t"] = [np.asarray(o).tolist() for o in (C.times(s, w) + t).eval(data)]
    return res


@cntk_case(names=["cntk.logging.graph.find_by_name", "cntk.Function.eval"],
           note="the step block of a Recurrence over GRU(3, name='cell') or RNNStep (forwards "
                "and backwards, initial_state 0.5) found by name (find_by_name, z.cell) and "
                "evaluated: CNTK 2.7's block output is the recurrence's own (its PastValue "
                "delays z); Stadyn's block read z undelayed, so its values were the step over "
                "the recurrence's output")
def recurrence__step_block_found_by_name_evaluates_to_the_recurrence(C, r, np):
    r.touch("cntk.layers.Recurrence", "cntk.layers.GRU", "cntk.layers.RNNStep",
            "cntk.Function.eval")
    data = [np.arange(6, dtype=np.float32).reshape(3, 2) / 5, np.ones((2, 2), np.float32)]
    res = {}
    for make in ("GRU", "RNNStep"):
        for back in (False, True):
            x = C.sequence.input_variable(2, name="x")
            cell = getattr(C.layers, make)(3, name="cell", init=C.glorot_uniform(seed=1))
            z = C.layers.Recurrence(cell, go_backwards=back, initial_state=0.5)(x)
            found = C.logging.find_by_name(z, "cell")
            key = "%s%s" % (make, " backwards" if back else "")
            res[key + " z"] = [np.asarray(v).round(5).tolist() for v in z.eval({x: data})]
            res[key + " found"] = [np.asarray(v).round(5).tolist() for v in
                                   C.combine([found.output]).eval({x: data})]
            res[key + " z.cell"] = [np.asarray(v).round(5).tolist() for v in
                                    C.combine([z.cell.output]).eval({x: data})]
    return res
