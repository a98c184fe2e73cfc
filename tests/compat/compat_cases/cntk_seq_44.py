"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (cntkseq44): sequence-begin flags
through the ops that read across a sequence's steps, swept with flags [True] and [False] on a
first run and [True, False] / [False, False] after one."""

import functools

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome


_outcome = functools.partial(outcome, convert=as_returned, raised=as_raised)


def _runs(f, x, runs):
    """The outcome of each eval of ``f`` on ``(sequences, flags)`` in ``runs``, in order."""
    return [_outcome(lambda: f.eval({x: run})) for run in runs]


@cntk_case(names=["cntk.sequence.is_first", "cntk.sequence.past_value", "cntk.sequence.delay",
                  "cntk.Function.eval"],
           note="is_first, past_value (of x, exp(x), x + 1, with initial_state 7) and delay, "
                "each: a first run with flags [True, False] (CNTK 2.7 RuntimeError: no "
                "matching sequence in the saved previous MBLayout), one of sequences of 3 and "
                "1 steps with [True, True], the same with [True, False], then 2 and 2 steps "
                "with [True, False] and [False, False]: the sequence that goes on reads the "
                "previous minibatch's slot 1 at step 2, past its sequence's end, where CNTK "
                "2.7 computes the ops on the gap (x 0 there: is_first 0, exp(x) 1, x + 1 1); "
                "Stadyn raised ValueError ('where that slot's sequences had ended') and its "
                "later runs went on from another minibatch than CNTK's")
def past_value__goes_on_from_a_gap(C, r, np):
    r.touch("cntk.Function.eval")
    x = C.sequence.input_variable(2)
    data = np.arange(6, dtype=np.float32).reshape(3, 2) / 4
    runs = [([data, data[:1]], [True, False]), ([data, data[:1]], [True, True]),
            ([data, data[:1]], [True, False]), ([data[:2], data[:2]], [True, False]),
            ([data[:2], data[:2]], [False, False])]
    S = C.sequence
    made = {"is_first": S.is_first, "past_value": S.past_value,
            "past_value exp": lambda v: S.past_value(C.exp(v)),
            "past_value plus 1": lambda v: S.past_value(v + 1),
            "past_value initial 7": lambda v: S.past_value(v, initial_state=7),
            "delay": lambda v: S.delay(v, 0, 1)}
    return {key: _runs(make(x), x, runs) for key, make in sorted(made.items())}


@cntk_case(names=["cntk.sequence.gather", "cntk.sequence.where", "cntk.sequence.scatter",
                  "cntk.sequence.unpack", "cntk.sequence.softmax", "cntk.sequence.broadcast_as",
                  "cntk.Function.eval"],
           note="sequence.gather, where, scatter (of a gather), unpack, softmax and broadcast_as "
                "of a constant, each on a new Function: one sequence with flag [False] on a first "
                "run, and after a run of [True, True] one with [True, False] (3 and 1 steps) and "
                "[False, False] (3 and 3): CNTK 2.7 refuses every False flag for gather, where, "
                "scatter (GetColumnIndex, Sequences.h:524), unpack and softmax (UnpackSequence), "
                "RuntimeError, and computes broadcast_as of a constant; Stadyn computed the first "
                "five (SILENT) and refused broadcast_as (it reads the sequence's first step for "
                "its shape)")
def sequence_ops__false_flags_need_whole_sequences(C, r, np):
    r.touch("cntk.Function.eval")
    x = C.sequence.input_variable(2)
    data = np.arange(6, dtype=np.float32).reshape(3, 2) / 4
    S = C.sequence
    one = C.constant(np.ones(2, np.float32))
    made = {"gather": lambda v: S.gather(v, C.greater(C.reduce_sum(v), 0.5)),
            "where": lambda v: S.where(C.greater(C.reduce_sum(v), 0.5)),
            "scatter": lambda v: S.scatter(S.gather(v, C.greater(C.reduce_sum(v), 0.5)),
                                           C.greater(C.reduce_sum(v), 0.5)),
            "unpack": lambda v: S.unpack(v, 0, no_mask_output=True),
            "softmax": S.softmax,
            "broadcast_as constant": lambda v: S.broadcast_as(one, v) * v}
    out = {}
    for key, make in sorted(made.items()):
        first, later = make(x), make(x)
        out[key] = _runs(first, x, [([data], [False])]) + _runs(
            later, x, [([data, data[:1]], [True, True]), ([data, data[:1]], [True, False]),
                       ([data, data], [False, False])])
    return out


@cntk_case(names=["cntk.layers.Convolution", "cntk.Function.eval"],
           note="Convolution((k,), 1, sequential=True, pad=p) for k 2 and 3, p True and "
                "False: flags [True, True], [False, False], [True, True] on two sequences of 3 "
                "steps, and [False] on a first run. CNTK 2.7 (its window of future and past "
                "values): the first run RuntimeError (no matching sequence in the saved "
                "previous MBLayout); unpadded every False flag RuntimeError (GetColumnIndex); "
                "k 2 padded (future values only) computes a False flag as a True one. Stadyn "
                "computed all of them as begun sequences (SILENT); k 3 padded, where CNTK "
                "carries the past values of the previous minibatch, Stadyn refuses (known)",
           known={"3 padded": "CNTK 2.7's sequential convolution reads the previous "
                              "minibatch's steps through its past values (1.212 at step 0 "
                              "where a begun sequence gives -0.315); Stadyn's unpacks the "
                              "minibatch and refuses a sequence that goes on "
                              "(compat/cntk/_seq_conv.py)"})
def convolution_sequential__false_flags(C, r, np):
    r.touch("cntk.Function.eval")
    x = C.sequence.input_variable(2)
    data = np.arange(6, dtype=np.float32).reshape(3, 2) / 4
    out = {}
    for k in (2, 3):
        for pad in (True, False):
            def make():
                return C.layers.Convolution((k,), 1, sequential=True, pad=pad,
                                            init=C.glorot_uniform(seed=2))(x)
            key = "%d %s" % (k, "padded" if pad else "unpadded")
            out[key] = _runs(make(), x, [([data, data], [True, True]),
                                         ([data, data], [False, False]),
                                         ([data, data], [True, True])]) + \
                _runs(make(), x, [([data], [False])])
    return out


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.LSTM", "cntk.layers.GRU",
                  "cntk.Function.eval"],
           note="Recurrence(LSTM(2)) and Recurrence(GRU(2)) made after another Function on "
                "the same input ran on two sequences of 2 steps, evaluated on two of 3: CNTK "
                "2.7 computes; Stadyn raised ShapeError (add2 of (2, 3, 8) and (2, 2, 8): the "
                "step's view, built as the run's arguments were checked, paired the last "
                "run's steps with the data just fed)")
def recurrence__made_after_a_run_of_other_steps(C, r, np):
    r.touch("cntk.Function.eval")
    x = C.sequence.input_variable(2)
    data = np.arange(6, dtype=np.float32).reshape(3, 2) / 4
    C.sin(x).eval({x: [data[:2], data[:2]]})
    out = {}
    for key, step in (("gru", C.layers.GRU), ("lstm", C.layers.LSTM)):
        f = C.layers.Recurrence(step(2, init=C.glorot_uniform(seed=1)))(x)
        out[key] = _runs(f, x, [[data, data]])
    return out


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.RNNStep", "cntk.Function.eval"],
           note="Recurrence(RNNStep(2)) on sequences of 2 and 1 steps with [True, True], then "
                "2 and 2 with [False, False]: sequence 1 goes on from slot 1's step 1 of the "
                "previous minibatch, past its sequence's end, where CNTK 2.7 ran the "
                "recurrence on over the gap (0.348 where the sequence's last output is "
                "0.470); Stadyn's kernel stops at the sequence's end and refuses (ValueError, "
                "known), and a past_value of the recurrence's output as well",
           known={"rnn": "CNTK 2.7 runs a recurrence on over the gap after a sequence's end "
                         "and carries that state; Stadyn's kernels stop at each sequence's "
                         "end (compat/cntk/_sequence_begin.py _Carry.gaps_computed)",
                  "past_value of rnn": "the same, through a past_value of the recurrence's "
                                       "output (CNTK 0.5, 0.5 on the gap)"})
def recurrence__goes_on_from_a_gap(C, r, np):
    r.touch("cntk.Function.eval")
    x = C.sequence.input_variable(2)
    data = np.arange(6, dtype=np.float32).reshape(3, 2) / 4
    out = {}
    for key, wrap in (("rnn", lambda h: h), ("past_value of rnn", C.sequence.past_value)):
        f = wrap(C.layers.Recurrence(C.layers.RNNStep(2, init=C.glorot_uniform(seed=1)))(x))
        out[key] = _runs(f, x, [([data[:2], data[:1]], [True, True]),
                                ([data[:2], data[:2]], [False, False])])
    return out


@cntk_case(names=["cntk.Function.save", "cntk.Function.restore", "cntk.Function.eval"],
           note="Function.restore of a file the same Function saved, its parameters set to 9 "
                "between: plus(p, 0), plus(p, a constant vector), (p + p) * p, a Dense plus a "
                "constant, Recurrence(LSTM) then Dense, a BlockFunction over a constant and "
                "a parameter, Embedding then BatchNormalization; then plus(q, 7) restored from "
                "plus(p, 0)'s file, q * 1 too, plus(q, a constant of shape (2,)), and q + p "
                "from p + q's file (pairs by order: the values swap). CNTK "
                "2.7 pairs the constants and parameters of the two Functions' inputs in order "
                "and copies each (the constant 7 becomes 0: eval gives [1, 2]), and refuses "
                "pairs of other shapes (ValueError, not equivalent); Stadyn counted the "
                "file's constants as parameters and raised ValueError for all but (p + p) * p "
                "and the swap")
def restore__constants_and_parameters(C, r, np):
    r.touch("cntk.Function.save", "cntk.Function.restore", "cntk.Function.eval")
    init = C.glorot_uniform(seed=1)

    def plus0():
        p = C.parameter((2,), init=np.array([1., 2.], np.float32))
        return C.plus(p, 0)

    def lstm():
        x = C.sequence.input_variable(2)
        return C.layers.Sequential([C.layers.Recurrence(C.layers.LSTM(2, init=init)),
                                    C.layers.Dense(1, init=init)])(x)
    def block():
        bp = C.parameter((2,), init=0.5)

        @C.BlockFunction("Blk", "blk")
        def blk(a):
            return a * C.constant(np.array([2., 3.], np.float32)) + bp
        return blk(C.input_variable(2))

    def batch_norm():
        return C.layers.Sequential([C.layers.Embedding(3, init=init),
                                    C.layers.BatchNormalization()])(C.input_variable(4))
    made = {"plus 0": plus0, "block": block, "batch norm": batch_norm,
            "plus constant": lambda: C.plus(C.parameter((2,), init=1.5),
                                            C.constant(np.array([3., 4.], np.float32))),
            "shared": lambda: (lambda p: C.plus(p, p) * p)(C.parameter((2,), init=0.5)),
            "dense plus constant": lambda: C.layers.Dense(2, init=init)(
                C.input_variable(2)) + C.constant(1.0),
            "recurrence": lstm}
    out = {}
    for key, make in sorted(made.items()):
        f = make()
        path = key.replace(" ", "_") + ".model"
        f.save(path)
        before = [np.array(v.value) for v in f.parameters]
        for v in f.parameters:
            v.value = np.full(v.shape, 9, np.float32)
        got = _outcome(lambda: f.restore(path))
        out[key] = [got, [bool((np.array(v.value) == b).all())
                          for v, b in zip(f.parameters, before)]]
    plus0().save("plus0.model")
    q = C.parameter((2,), init=np.array([5., 6.], np.float32))
    g = C.plus(q, 7)
    out["other constant"] = [_outcome(lambda: g.restore("plus0.model")), np.array(q.value),
                             g.eval()]
    q = C.parameter((2,), init=np.array([5., 6.], np.float32))
    out["times 1"] = [_outcome(lambda: (q * 1).restore("plus0.model")), np.array(q.value)]
    q = C.parameter((2,), init=np.array([5., 6.], np.float32))
    g = C.plus(q, C.constant(np.array([7., 8.], np.float32)))
    out["vector constant"] = [_outcome(lambda: g.restore("plus0.model")), np.array(q.value)]
    p, q = C.parameter((2,), init=1.0), C.parameter((2,), init=2.0)
    (p + q).save("pq.model")
    out["swapped order"] = [_outcome(lambda: (q + p).restore("pq.model")), np.array(p.value),
                            np.array(q.value)]
    return out


@cntk_case(names=["cntk.ops.functions.Function", "cntk.splice"],
           note="how many times CNTK 2.7 runs an untyped @C.Function's body (a counter in it): "
                "a body splicing x with a constant of 2 rows, called on an input of 3 (the "
                "splice refuses: ValueError), then printed; a body reading an attribute x "
                "has not (AttributeError) and one reading a missing dict key (KeyError), as "
                "decorated. CNTK 2.7 runs each body once, as it is decorated, raising from "
                "the clone for the call and from that one run for the others; Stadyn ran the "
                "first body again for the failing call and the others again to probe their "
                "error (2 runs each)")
def function_decorator__a_failing_body_runs_once(C, r, np):
    r.touch("cntk.ops.functions.Function")
    out = {}
    runs = [0]

    @C.Function
    def spliced(x):
        runs[0] += 1
        return C.splice(x, C.constant(np.ones((2, 2), np.float32)), axis=0)
    counts = [runs[0]]
    out["splice call"] = _outcome(lambda: spliced(C.input_variable(3)))
    counts.append(runs[0])
    out["printed"] = str(spliced)
    counts.append(runs[0])
    out["splice runs"] = counts
    table = {}
    for key, read in (("attribute", lambda x: x.no_such_attribute),
                      ("dict key", lambda x: table["missing"] + x)):
        runs = [0]

        def body(x, read=read, runs=runs):
            runs[0] += 1
            return read(x)
        out[key] = [_outcome(lambda: C.Function(body)), runs[0]]
    return out


@cntk_case(names=["cntk.random_sample", "cntk.random.uniform_like", "cntk.Function.eval",
                  "cntk.Function.grad", "cntk.Function.forward", "cntk.Function.backward"],
           note="the draws of random_sample(ones(50), 1, seed=7) (its class read as a value "
                "and as the gradient of a scalar parameter) over runs eval/grad/forward+"
                "backward in the orders e g e e, g e e, e fb fb e, and of uniform_like(x, "
                "seed=3) over e g e: CNTK 2.7 builds the network again for the first training "
                "run after evaluations and gives each random node the engine of its "
                "attributes (the stream's start, CompositeFunction.cpp:1183): e g e e draws "
                "37 37 47 5, e fb fb e 37 37 47 5, uniform_like draws 1, 1, 2; Stadyn's "
                "streams went on (37 47 5 44; 1, 2, 3: SILENT)")
def random_sample__first_training_run_restarts_the_stream(C, r, np):
    r.touch("cntk.Function.eval", "cntk.Function.grad", "cntk.Function.forward",
            "cntk.Function.backward")
    X = np.zeros((1, 1), np.float32)
    classes = C.constant(np.arange(50, dtype=np.float32).reshape(50, 1))
    out = {}
    for order in ("egee", "gee", "eFFe"):
        x = C.input_variable(1)
        p = C.parameter((1,), init=1.0)
        s = C.random_sample(C.constant(np.ones(50, np.float32)), 1, True, seed=7)
        f = C.reduce_sum(C.times(s, classes)) * p + x * 0
        got = []
        for run in order:
            if run == "e":
                got.append(int(np.asarray(f.eval({x: X})).ravel()[0]))
            elif run == "g":
                got.append(int(np.asarray(f.grad({x: X}, wrt=[p])).ravel()[0]))
            else:
                state, values = f.forward({x: X}, [f.output], set([f.output]))
                grads = f.backward(state, {f.output: np.ones_like(values[f.output])}, set([p]))
                got.append([int(np.asarray(values[f.output]).ravel()[0]),
                            int(np.asarray(grads[p]).ravel()[0])])
        out[order] = got
    x = C.input_variable(3)
    p = C.parameter((3,), init=1.0)
    f = C.random.uniform_like(x, seed=3) * p + x
    X = np.ones((1, 3), np.float32)
    out["uniform_like"] = [np.asarray(f.eval({x: X})) - 1, np.asarray(f.grad({x: X}, wrt=[p])),
                           np.asarray(f.eval({x: X})) - 1]
    return out


def _set_parameters(f, np):
    """Every parameter of ``f`` set to values made of its size (the same in both frameworks,
    whatever order they list the parameters in)."""
    for p in f.parameters:
        n = int(np.prod(p.shape))
        p.value = (np.sin(np.arange(n) + n) * 0.5).reshape(p.shape).astype(np.float32)


@cntk_case(names=["cntk.ops.functions.Function", "cntk.layers.Recurrence", "cntk.layers.LSTM",
                  "cntk.layers.Delay", "cntk.Function.load", "cntk.Function.save",
                  "cntk.Function.eval"],
           note="untyped @C.Function bodies that Stadyn built only by running them a second "
                "time, which cntkseq44's one run (3b634058) surfaced as errors: a Recurrence "
                "step `a, b = cell(h, c, x).outputs; return tanh(a) * 0.5, b + h` over "
                "LSTM(2) (Stadyn's replay took outputs[0] for the LSTM's only output: "
                "RuntimeError 'more than one output'), and a body applying a model saved from "
                "an untyped @C.Function and loaded back to Delay(initial_state=0.1)(b) of its "
                "untyped b (as Sequence2Sequence.py's evaluate_metric: AttributeError); CNTK "
                "2.7 builds and evaluates both")
def function_decorator__bodies_built_from_their_one_run(C, r, np):
    r.touch("cntk.Function.load", "cntk.Function.save", "cntk.Function.eval")
    out = {}
    cell = C.layers.LSTM(2)

    @C.Function
    def step(h, c, x):
        a, b = cell(h, c, x).outputs
        return C.tanh(a) * 0.5, b + h
    x = C.sequence.input_variable(3)
    rec = C.layers.Recurrence(step)(x)
    _set_parameters(rec, np)
    X = [np.arange(12, dtype=np.float32).reshape(4, 3) / 10]
    out["lstm outputs step"] = np.asarray(rec.eval({x: X}))
    recur, dense = C.layers.Recurrence(C.layers.LSTM(2)), C.layers.Dense(2)

    @C.Function
    def model(h, i):
        return recur(h) + C.sequence.broadcast_as(C.sequence.last(dense(i)), h)
    y = C.sequence.input_variable(3, sequence_axis=C.Axis.new_unique_dynamic_axis("y"))
    _set_parameters(model(y, x), np)
    model.save("fix44_model.cmf")
    loaded = C.Function.load("fix44_model.cmf")

    @C.Function
    def applied(a, b):
        return loaded(C.layers.Delay(initial_state=0.1)(b), a)
    z = applied(x, y)
    Y = [np.arange(6, dtype=np.float32).reshape(2, 3) / 7]
    out["loaded on a delay"] = _outcome(lambda: z.eval({z.arguments[0]: X,
                                                        z.arguments[1]: Y}))
    return out
