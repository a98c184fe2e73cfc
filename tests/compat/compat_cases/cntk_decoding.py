"""Greedy decoding: a loop whose body holds recurrences, each stepped along with the loop.

CNTK 599A's decoder is ``model.clone(share, {hook: hardmax(model)})`` (the decoder reads its
own previous output through ``past_value``), 204's and CNTK's ``Sequence2Sequence.py``'s is
``UnfoldFrom(lambda history: s2smodel(history, input) >> hardmax)``; the decoder's own
recurrences (``Recurrence(LSTM)``, ``GRU``, a Python step, 599A's ``LSTM_layer`` loops) sit
inside that loop.  Parameters from ``r.set_params`` (scale 1.5, so the decoded symbols vary);
the decoded sequences and the values before the hardmax are compared.
"""

import numpy as np

from compat_harness import cntk_case
from compat_cases.cntk_seq_notebooks import _lstm_layer

_V = 4
# the next symbol, mostly: keeps the decoded symbols changing (the recurrences shift them)
_NEXT = np.roll(np.eye(_V, dtype=np.float32), 1, axis=1) * 1.5


def _onehots(r, lengths):
    return [np.eye(_V, dtype=np.float32)[r.randint(0, _V, (n,))] for n in lengths]


def _clone_decoder(C, r, decoder):
    """The model ``decoder(element_select(is_first(x), x, past_value(hook)))`` with ``hook``
    an alias of ``x``, and its greedy clone ``{hook: hardmax(model)}``: the teacher-forced and
    the decoded outputs."""
    x = C.sequence.input_variable(_V, name="x")
    hook = C.alias(x, name="hook")
    history = C.element_select(C.sequence.is_first(x), x, C.sequence.past_value(hook))
    model = decoder(history) * 0.5 + C.times(history, C.constant(_NEXT))
    res = {"params": r.set_params(model.parameters, scale=1.5)}
    greedy = model.clone(C.CloneMethod.share, {hook.output: C.hardmax(model).output})
    seqs = _onehots(r, (3, 1, 5))
    res["teacher forced"] = np.concatenate(model.eval({model.arguments[0]: seqs}))
    decoded = greedy.eval({greedy.arguments[0]: seqs})
    res["decoded"] = [np.argmax(s, -1).tolist() for s in decoded]
    res["decoded values"] = np.concatenate(decoded)
    return res


@cntk_case(names=["cntk.Function.clone", "cntk.ops.hardmax", "cntk.layers.Recurrence",
                  "cntk.layers.LSTM", "cntk.layers.Dense", "cntk.ops.element_select",
                  "cntk.sequence.is_first", "cntk.sequence.past_value", "cntk.ops.alias",
                  "cntk.ops.times", "cntk.ops.constant"],
           note="a Recurrence(LSTM) inside the loop closed by the clone", rtol=1e-4, atol=1e-5)
def clone_greedy_decoder__Recurrence_LSTM(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.parameters", "cntk.Function.arguments",
            "cntk.Function.clone")
    rec, out = C.layers.Recurrence(C.layers.LSTM(3)), C.layers.Dense(_V)
    return _clone_decoder(C, r, lambda h: out(rec(h)))


@cntk_case(names=["cntk.Function.clone", "cntk.ops.hardmax", "cntk.layers.Recurrence",
                  "cntk.layers.GRU", "cntk.layers.RNNStep", "cntk.layers.Dense"],
           note="two stacked recurrences (GRU, then RNNStep) inside the loop", rtol=1e-4,
           atol=1e-5)
def clone_greedy_decoder__Recurrence_GRU_RNNStep(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.parameters", "cntk.Function.arguments",
            "cntk.Function.clone")
    gru = C.layers.Recurrence(C.layers.GRU(3))
    rnn = C.layers.Recurrence(C.layers.RNNStep(5))
    out = C.layers.Dense(_V)
    return _clone_decoder(C, r, lambda h: out(rnn(gru(h))))


@cntk_case(names=["cntk.Function.clone", "cntk.ops.hardmax", "cntk.layers.LSTM",
                  "cntk.ops.placeholder", "cntk.Function.replace_placeholders",
                  "cntk.ops.combine", "cntk.ops.times", "cntk.ops.parameter"],
           note="CNTK 599A's decoder: an LSTM_layer (a loop closed by replace_placeholders) "
                "inside the clone's loop", rtol=1e-4, atol=1e-5)
def clone_greedy_decoder__LSTM_layer_599A(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.parameters", "cntk.Function.arguments",
            "cntk.Function.output", "cntk.Function.clone",
            "cntk.Function.replace_placeholders")

    def decoder(history):
        h, _ = _lstm_layer(C, history, 3, C.sequence.past_value, C.sequence.past_value)
        W = C.parameter(shape=(3, _V), init=C.glorot_uniform(), name="Wout")
        return C.times(h, W)
    return _clone_decoder(C, r, decoder)


def _unfold(C, r, step_layer, output_and_state=True):
    """``UnfoldFrom`` of a generator ``Dense(Recurrence(step)(history))`` (giving the values
    and their hardmax, or the hardmax only), stopped once the last symbol's value is above 0.5,
    at most twice as long as ``like``."""
    like = C.sequence.input_variable(_V, name="like")
    start = C.input_variable(_V, name="start")
    rec, out = C.layers.Recurrence(step_layer), C.layers.Dense(_V)

    def generator(history):
        z = out(rec(history)) * 0.5 + C.times(history, C.constant(_NEXT))
        return (z, C.hardmax(z)) if output_and_state else C.hardmax(z)
    unfold = C.layers.UnfoldFrom(generator, until_predicate=lambda w: C.greater(w[..., _V - 1],
                                                                                 0.5),
                                 length_increase=2)
    y = unfold(start, like)
    res = {"params": r.set_params(y.parameters, scale=1.5)}
    lengths = (3, 1, 2)
    fed = {like: [np.zeros((n, _V), np.float32) for n in lengths],
           start: np.eye(_V, dtype=np.float32)[[0, 1, 2]]}
    decoded = y.eval(fed)
    res["decoded"] = [np.argmax(s, -1).tolist() for s in decoded]
    res["values"] = np.concatenate(decoded)
    return res


_UNFOLD = ["cntk.layers.UnfoldFrom", "cntk.layers.Recurrence", "cntk.layers.Dense",
           "cntk.ops.hardmax", "cntk.ops.greater", "cntk.ops.times", "cntk.ops.constant"]


@cntk_case(names=_UNFOLD + ["cntk.layers.LSTM"], rtol=1e-4, atol=1e-5,
           note="the generator gives (values, hardmax); a Recurrence(LSTM) on the history")
def UnfoldFrom__Recurrence_LSTM(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.parameters")
    return _unfold(C, r, C.layers.LSTM(3))


@cntk_case(names=_UNFOLD + ["cntk.layers.GRU"], rtol=1e-4, atol=1e-5,
           note="the generator gives its hardmax only (output = state); a Recurrence(GRU)")
def UnfoldFrom__Recurrence_GRU(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.parameters")
    return _unfold(C, r, C.layers.GRU(3), output_and_state=False)


@cntk_case(names=_UNFOLD + ["cntk.layers.LSTM"], rtol=1e-4, atol=1e-5,
           note="a Python step function over an LSTM (the recurrence op with a step graph)")
def UnfoldFrom__Recurrence_of_a_function(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.parameters")
    lstm = C.layers.LSTM(3)
    return _unfold(C, r, lambda dh, dc, u: lstm(dh, dc, u * 2.0))


@cntk_case(names=["cntk.ops.hardmax"], note="each step of each sequence on its own (a decoder "
                                             "feeds it back); Stadyn merged the steps into the "
                                             "batch, padding included")
def hardmax__sequences(C, r):
    r.touch("cntk.Function.eval")
    x = C.sequence.input_variable(_V, name="x")
    y = C.hardmax(x * 1.0)
    out = y.eval({x: [r.randn(n, _V) for n in (3, 1, 2)]})
    return {"per sequence": [np.asarray(s).tolist() for s in out]}


@cntk_case(names=[n for n in _UNFOLD if n != "cntk.layers.Recurrence"] +
           ["cntk.layers.LSTM", "cntk.layers.RecurrenceFrom", "cntk.layers.Fold",
            "cntk.layers.Signature", "cntk.layers.SequenceOver", "cntk.layers.Tensor",
            "cntk.Axis", "cntk.Constant"],
           rtol=1e-4, atol=1e-5,
           note="CNTK's Sequence2Sequence.py without attention: the decoder's RecurrenceFrom "
                "starts from the encoder's Fold (through a Dense), the output axis is the "
                "input's twice over")
def UnfoldFrom__RecurrenceFrom_encoder(C, r):
    r.touch("cntk.Function.parameters", "cntk.Function.outputs", "cntk.Function.__call__")
    start = C.Constant(np.eye(_V, dtype=np.float32)[0])
    fold = C.layers.Fold(C.layers.LSTM(5), return_full_state=True)
    bridge = C.layers.Dense(6)
    rec, out = C.layers.RecurrenceFrom(C.layers.LSTM(6)), C.layers.Dense(_V)

    @C.Function
    @C.layers.Signature(C.layers.SequenceOver[C.Axis("inAxis")][C.layers.Tensor[3]])
    def greedy(letters):
        s = bridge(fold(letters).outputs[0])

        def generator(history):
            z = out(rec(s, s * 0.5, history)) * 0.5 + C.times(history, C.constant(_NEXT))
            return z, C.hardmax(z)
        return C.layers.UnfoldFrom(generator, length_increase=2,
                                   until_predicate=lambda w: C.greater(w[..., _V - 1], 0.5))(
            start, letters)
    res = {"params": r.set_params(greedy.parameters, scale=1.5)}
    decoded = greedy([r.randn(n, 3) for n in (2, 4, 1)])
    res["decoded"] = [np.argmax(s, -1).tolist() for s in decoded]
    res["values"] = np.concatenate(decoded)
    return res


# -- CNTK's Sequence2Sequence.py (CMUDict, with attention) --
@cntk_case(names=["cntk.ops.splice", "cntk.ops.input_variable", "cntk.sequence.input_variable",
                  "cntk.layers.Recurrence", "cntk.layers.LSTM", "cntk.ops.reshape"],
           note="Sequence2Sequence.py splices a step's (16,) input with the attention's "
                "(1, 1, 24): the lower rank gets leading axes of 1, an axis of 1 is broadcast",
           rtol=1e-5, atol=1e-6)
def splice__ranks_broadcast(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.shape")
    res = {}
    for k, (a_shape, b_shape, axis) in enumerate((((3,), (2, 1, 4), -1), ((2, 3), (1, 1, 4), -1),
                                                  ((1,), (2, 5), -1), ((2, 5), (1,), 0),
                                                  ((2, 1), (2, 3), -2))):
        a, b = C.input_variable(a_shape), C.input_variable(b_shape)
        y = C.splice(a, b, axis=axis)
        res["shape %d" % k] = list(y.shape)
        res["value %d" % k] = y.eval({a: r.randn(2, *a_shape), b: r.randn(2, *b_shape)})
    # in a recurrence's step: the step's input spliced with a (1, 1, 3) value of the state
    x = C.sequence.input_variable(2, name="x")
    lstm = C.layers.LSTM(4)
    proj = C.layers.Dense(3)

    @C.Function
    def step(dh, dc, u):
        spliced = C.splice(u, C.reshape(proj(dh), (1, 1, 3)))       # (1, 1, 5)
        return lstm(dh, dc, C.reshape(spliced, (5,)))
    y = C.layers.Recurrence(step)(x)
    res["params"] = r.set_params(y.parameters)
    res["recurrence"] = np.concatenate(y.eval({x: [r.randn(n, 2) for n in (3, 1)]}))
    return res


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.GRU", "cntk.layers.Dense",
                  "cntk.sequence.last", "cntk.sequence.broadcast_as", "cntk.Axis"],
           note="Sequence2Sequence.py saves its @Function with untyped arguments (history, "
                "input) and applies the loaded model to other sequences (one on another "
                "named axis); the loaded arguments are placeholders (-2,), as CNTK's "
                "(their names compared)", rtol=1e-5, atol=1e-6)
def Function_save__untyped_arguments(C, r):
    import os
    import tempfile
    r.touch("cntk.Function.eval", "cntk.Function.parameters", "cntk.Function.arguments",
            "cntk.Function.save", "cntk.Function.load", "cntk.Function.__call__")
    proj = C.layers.Dense(2)
    dense = C.layers.Dense(3)
    rec = C.layers.Recurrence(C.layers.GRU(2))

    @C.Function
    def model(history, inp):
        return rec(dense(history)) + C.sequence.broadcast_as(proj(C.sequence.last(inp)),
                                                             history)
    x = C.sequence.input_variable(4, sequence_axis=C.Axis("inAxis"), name="x")
    y = C.sequence.input_variable(5, name="y")
    z = model(y, x)
    res = {"params": r.set_params(z.parameters)}
    path = os.path.join(tempfile.mkdtemp(), "model.cmf")
    model.save(path)
    loaded = C.Function.load(path)
    res["loaded arguments"] = [a.name for a in loaded.arguments]
    xs, ys = [r.randn(n, 4) for n in (3, 2)], [r.randn(n, 5) for n in (2, 4)]
    res["model"] = np.concatenate(z.eval({x: xs, y: ys}))
    x2 = C.sequence.input_variable(4, sequence_axis=C.Axis("other"), name="x2")
    y2 = C.sequence.input_variable(5, name="y2")
    z2 = loaded(y2, x2)
    res["loaded, applied"] = np.concatenate(z2.eval({x2: xs, y2: ys}))
    return res
# -- end of CNTK's Sequence2Sequence.py --


def _attention_decoder(C, r, attention, run_first=False):
    """CNTK's ``Sequence2Sequence.py`` at a tiny size: an embedded encoder ``Recurrence``, a
    decoder whose ``Recurrence`` step attends over the encoder (``attention``), ``UnfoldFrom``
    over it; the decoded values and ``model.attention_model.attention_weights`` beside them
    (``C.combine``), one value per decoded step (204's and the program's ``debug_attention``),
    with ``run_first`` after the decoder has run on a word of another length (as in their
    training loops)."""
    in_axis = C.Axis("inAxis")
    embed = C.layers.Embedding(4, name="embed")
    encode = C.layers.Recurrence(C.layers.LSTM(3), return_full_state=True)
    lstm = C.layers.LSTM(5)
    out = C.layers.Dense(_V, name="out")

    @C.Function
    def decode(history, inp):
        encoded = encode(embed(inp))

        @C.Function
        def lstm_with_attention(dh, dc, x):
            return lstm(dh, dc, C.splice(x, attention(encoded.outputs[0], dh)))
        return out(C.layers.Recurrence(lstm_with_attention)(embed(history)))
    start = C.Constant(np.eye(_V, dtype=np.float32)[0])

    @C.Function
    @C.layers.Signature(C.layers.SequenceOver[in_axis][C.layers.Tensor[_V]])
    def greedy(inp):
        unfold = C.layers.UnfoldFrom(lambda history: decode(history, inp) >> C.hardmax,
                                     until_predicate=lambda w: w[..., _V - 1],
                                     length_increase=1.5)
        return unfold(initial_state=start, dynamic_axes_like=inp)
    res = {"params": r.set_params(greedy.parameters, scale=1.5)}
    if run_first:
        res["first"] = np.concatenate(greedy([np.eye(_V, dtype=np.float32)[[0, 1, 2, 3, 1]]]))
    weights = greedy.attention_model.attention_weights
    res["weights shape"] = list(weights.shape)
    words, p = C.combine([greedy, weights])([np.eye(_V, dtype=np.float32)[s]
                                              for s in ([0, 2, 3], [0, 3])])
    res["decoded"] = [np.argmax(w.reshape(len(w), -1), -1).tolist() for w in words]
    res["attention weights"] = np.concatenate(p)
    return res


_ATTENTION = ["cntk.layers.AttentionModel", "cntk.layers.UnfoldFrom", "cntk.layers.Recurrence",
              "cntk.layers.LSTM", "cntk.layers.Embedding", "cntk.layers.Dense",
              "cntk.ops.combine", "cntk.ops.hardmax", "cntk.ops.splice", "cntk.Constant"]


@cntk_case(names=_ATTENTION, rtol=1e-4, atol=1e-5,
           note="204's attention (over every encoder step): the weights of each decoded step "
                "are read from inside the decoder's Recurrence step, inside the UnfoldFrom loop, "
                "after a first decoding of a longer word",
           known={"weights shape": "CNTK shows the encoder's axis as a free dimension (-3); "
                                   "Stadyn shapes keep no free dimensions (1, its size when "
                                   "the graph was built)"})
def attention_weights_inside_the_decoder__204(C, r):
    r.touch("cntk.Function.parameters", "cntk.Function.__call__", "cntk.Function.shape")
    return _attention_decoder(C, r, C.layers.AttentionModel(2, enable_self_stabilization=False,
                                                            name="attention_model"),
                              run_first=True)


@cntk_case(names=_ATTENTION, rtol=1e-4, atol=1e-5,
           note="Sequence2Sequence.py's deprecated attention (attention_span=3, "
                "attention_axis=-3): a window of the encoder's last steps, weights (3, 1, 1)")
def attention_weights_inside_the_decoder__span(C, r):
    r.touch("cntk.Function.parameters", "cntk.Function.__call__", "cntk.Function.shape")
    return _attention_decoder(C, r, C.layers.AttentionModel(2, 3, -3,
                                                            enable_self_stabilization=False,
                                                            name="attention_model"))


@cntk_case(names=["cntk.layers.UnfoldFrom", "cntk.layers.Recurrence", "cntk.layers.GRU",
                  "cntk.layers.Dense", "cntk.ops.hardmax", "cntk.sequence.last",
                  "cntk.ops.splice", "cntk.sequence.broadcast_as", "cntk.Constant", "cntk.Axis",
                  "cntk.ops.times", "cntk.ops.constant",
                  "cntk.layers.Signature", "cntk.layers.SequenceOver", "cntk.layers.Tensor"],
           rtol=1e-4, atol=1e-5,
           note="Sequence2Sequence.py decodes the model it saved and loaded: UnfoldFrom of "
                "lambda history: loaded(history, input) >> hardmax, whose history argument is a "
                "sequence input of the loaded graph")
def UnfoldFrom__loaded_model(C, r):
    import os
    import tempfile
    r.touch("cntk.Function.eval", "cntk.Function.parameters", "cntk.Function.save",
            "cntk.Function.load", "cntk.Function.__call__")
    gru, out, proj = C.layers.GRU(3), C.layers.Dense(_V), C.layers.Dense(2)

    @C.Function
    def model(history, inp):
        summary = proj(C.sequence.last(inp))

        @C.Function
        def step(h, u):
            return gru(h, C.splice(u, C.sequence.broadcast_as(summary, u)))
        return out(C.layers.Recurrence(step)(history)) * 0.5 + C.times(history, C.constant(_NEXT))
    in_axis = C.Axis("inAxis")
    x = C.sequence.input_variable(2, sequence_axis=in_axis, name="x")
    y = C.sequence.input_variable(_V, name="y")
    res = {"params": r.set_params(model(y, x).parameters, scale=2.0)}
    path = os.path.join(tempfile.mkdtemp(), "model.cmf")
    model.save(path)
    loaded = C.Function.load(path)
    start = C.Constant(np.eye(_V, dtype=np.float32)[0])

    @C.Function
    @C.layers.Signature(C.layers.SequenceOver[in_axis][C.layers.Tensor[2]])
    def greedy(letters):
        unfold = C.layers.UnfoldFrom(lambda history: loaded(history, letters) >> C.hardmax,
                                     length_increase=2)
        return unfold(initial_state=start, dynamic_axes_like=letters)
    decoded = greedy([r.randn(n, 2) for n in (2, 3, 1)])
    res["decoded"] = [np.argmax(s, -1).tolist() for s in decoded]
    return res


@cntk_case(names=["cntk.Trainer", "cntk.learners.momentum_sgd",
                  "cntk.learners.learning_parameter_schedule",
                  "cntk.learners.momentum_schedule_per_sample", "cntk.layers.Dense",
                  "cntk.losses.cross_entropy_with_softmax", "cntk.metrics.classification_error"],
           note="Sequence2Sequence.py's Evaluator: Trainer._get_loss_metric (CNTK's private "
                "helper) splits the criterion, a Trainer with a dummy learner tests it")
def Trainer_get_loss_metric__evaluator(C, r):
    r.touch("cntk.Trainer.test_minibatch", "cntk.Function.parameters")
    x, y = C.input_variable(3), C.input_variable(_V)
    z = C.layers.Dense(_V)(x)
    criterion = C.combine([C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)])
    loss, metric = C.Trainer._get_loss_metric(criterion)
    only = C.Trainer._get_loss_metric((loss,))
    res = {"params": r.set_params(z.parameters),
           "kinds": [type(loss).__name__, type(metric).__name__, repr(only[1])],
           "shapes": [list(loss.shape), list(metric.shape)]}
    parameters = set(loss.parameters) | set(metric.parameters)
    learner = C.learners.momentum_sgd(tuple(parameters),
                                      lr=C.learners.learning_parameter_schedule(1),
                                      momentum=C.learners.momentum_schedule_per_sample(0))
    evaluator = C.Trainer(None, (loss, metric), learner)
    labels = np.eye(_V, dtype=np.float32)[[0, 1, 2, 3, 1, 0]]
    res["error"] = evaluator.test_minibatch({loss.arguments[0]: r.randn(6, 3),
                                             loss.arguments[1]: labels})
    return res


@cntk_case(names=["cntk.Function.clone", "cntk.ops.hardmax", "cntk.layers.LSTM",
                  "cntk.ops.placeholder", "cntk.sequence.last", "cntk.sequence.broadcast_as",
                  "cntk.ops.splice",
                  "cntk.ops.element_select", "cntk.sequence.is_first", "cntk.ops.alias"],
           rtol=1e-4, atol=1e-5,
           note="CNTK 599A's greedy clone of a model that has already run (its values hold the "
                "last minibatch's batch and length): an encoder LSTM_layer's last step spliced "
                "into the decoder's input")
def clone_greedy_decoder__after_a_run(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.parameters", "cntk.Function.arguments",
            "cntk.Function.output", "cntk.Function.clone", "cntk.Function.replace_placeholders")
    x = C.sequence.input_variable(_V, name="x")
    hook = C.alias(x, name="hook")
    history = C.element_select(C.sequence.is_first(x), x, C.sequence.past_value(hook))
    e, _ = _lstm_layer(C, x, 5, C.sequence.past_value, C.sequence.past_value)
    thought = C.sequence.broadcast_as(C.sequence.last(e), x)
    h, _ = _lstm_layer(C, C.splice(history, thought), 3, C.sequence.past_value,
                       C.sequence.past_value)
    W = C.parameter(shape=(3, _V), init=C.glorot_uniform(), name="Wout")
    model = C.times(h, W) * 0.5 + C.times(history, C.constant(_NEXT))
    res = {"params": r.set_params(model.parameters, scale=1.5)}
    res["trained on"] = np.concatenate(model.eval({model.arguments[0]: _onehots(r, (7, 3, 5))}))
    greedy = model.clone(C.CloneMethod.share, {hook.output: C.hardmax(model).output})
    decoded = greedy.eval({greedy.arguments[0]: _onehots(r, (3, 1, 5))})
    res["decoded"] = [np.argmax(s, -1).tolist() for s in decoded]
    res["decoded values"] = np.concatenate(decoded)
    return res


# -- a recurrence's state takes the shape its step gives it --
def _state_rank(C, r, layer):
    """``layer`` over two sequences of 3 numbers: the output's shape and values."""
    x = C.sequence.input_variable(3, name="x")
    y = layer(x)
    r.touch("cntk.Function.eval", "cntk.Function.shape")
    out = y.eval({x: [np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5,
                      np.arange(3, dtype=np.float32).reshape(1, 3)]})
    return {"shape": list(y.shape), "values": np.concatenate([np.ravel(o) for o in out])}


_RANK = ["cntk.ops.reshape", "cntk.sequence.input_variable"]


@cntk_case(names=_RANK + ["cntk.layers.Recurrence"],
           note="the step adds leading axes: the state is (1, 1, 3) from its first step (CNTK "
                "infers the loop's shapes to a fixed point)")
def Recurrence__state_takes_the_steps_rank(C, r):
    return _state_rank(C, r, C.layers.Recurrence(lambda h, x: h + C.reshape(x, (1, 1, 3))))


@cntk_case(names=["cntk.layers.Recurrence", "cntk.sequence.input_variable", "cntk.ops.reduce_sum"],
           note="the step reduces its state: a scalar state, the input's steps summed into it")
def Recurrence__state_reduced_by_the_step(C, r):
    return _state_rank(C, r, C.layers.Recurrence(lambda h, x: C.reduce_sum(h + x)))


@cntk_case(names=_RANK + ["cntk.layers.Fold"],
           note="Fold, going backwards, of a step that adds leading axes")
def Fold__state_takes_the_steps_rank(C, r):
    return _state_rank(C, r, C.layers.Fold(lambda h, x: h * 0.5 + C.reshape(x, (1, 1, 3)),
                                           go_backwards=True))
# -- end of a recurrence's state shape --


# -- the rank a decoder's output takes from its loop (Sequence2Sequence.py's (1, 1, 69)) --
_K = np.arange(5, dtype=np.float32).reshape(1, 1, 5) * 0.1


def _loop_then_dense(C, r, extra, typed_first=False):
    """``Dense(3)`` after ``Recurrence(lambda dh, dc, s: lstm(dh, dc, splice(s, extra(dh,
    s))))`` (both inside one ``@Function``, or with ``typed_first`` the Dense applied to the
    loop's typed output): the Dense's ``W``, the output's shape and values."""
    x = C.sequence.input_variable(4, name="x")
    lstm, out = C.layers.LSTM(5), C.layers.Dense(3)
    k = C.constant(_K)

    @C.Function
    def loop(X):
        @C.Function
        def step(dh, dc, s):
            return lstm(dh, dc, C.splice(s, extra(dh, s, k)))
        return C.layers.Recurrence(step)(X)

    y = out(loop(x)) if typed_first else C.Function(lambda X: out(loop(X)))(x)
    r.touch("cntk.Function.eval", "cntk.Function.shape", "cntk.Function.parameters",
            "cntk.Function.__call__")
    res = {"params": r.set_params(y.parameters, scale=1.0), "shape": list(y.shape)}
    seqs = [r.randn(3, 4), r.randn(1, 4)]
    res["values"] = np.concatenate([np.ravel(o) for o in y.eval({y.arguments[0]: seqs})])
    return res


_DENSE_AFTER = ["cntk.sequence.input_variable", "cntk.layers.Recurrence", "cntk.layers.LSTM",
                "cntk.layers.Dense", "cntk.ops.splice", "cntk.ops.constant", "cntk.Function"]


@cntk_case(names=_DENSE_AFTER, rtol=1e-4, atol=1e-5,
           note="the (1, 1) comes through the state (dh + a (1, 1, 5) constant): the LSTM's "
                "state becomes (1, 1, 5), the Dense after it, inferred on CNTK's first "
                "pass (the state unknown), has W (5, 3) and maps the (1, 1): output (1, 1, 3)")
def Dense_after_a_loop__axes_through_the_state(C, r):
    return _loop_then_dense(C, r, lambda dh, s, k: dh + k)


@cntk_case(names=_DENSE_AFTER, rtol=1e-4, atol=1e-5,
           note="the (1, 1) comes from the step's input: on CNTK's first pass already, so the "
                "Dense has W (1, 1, 5, 3) and output (3,)")
def Dense_after_a_loop__axes_through_the_input(C, r):
    return _loop_then_dense(C, r, lambda dh, s, k: C.slice(s, 0, 0, 1) * 0.0 + k)


@cntk_case(names=_DENSE_AFTER, rtol=1e-4, atol=1e-5,
           note="the Dense applied to the loop's output after the loop was typed (its shape "
                "settled at (1, 1, 5)): W (1, 1, 5, 3), output (3,)")
def Dense_after_a_loop__applied_to_its_typed_output(C, r):
    return _loop_then_dense(C, r, lambda dh, s, k: dh + k, typed_first=True)


@cntk_case(names=["cntk.sequence.input_variable", "cntk.layers.Recurrence", "cntk.layers.LSTM"],
           rtol=1e-4, atol=1e-5,
           note="CNTK's LSTM reads the input's last axis (W (4, 20)) and maps the others: "
                "steps of (3, 4) give a state of (3, 5)")
def LSTM__maps_the_inputs_leading_axes(C, r):
    x = C.sequence.input_variable((3, 4), name="x")
    lstm = C.layers.LSTM(5)
    y = C.layers.Recurrence(lstm)(x)
    r.touch("cntk.Function.eval", "cntk.Function.shape", "cntk.Function.parameters")
    res = {"params": r.set_params(y.parameters, scale=1.0), "shape": list(y.shape)}
    out = y.eval({x: [r.randn(2, 3, 4), r.randn(1, 3, 4)]})
    res["values"] = np.concatenate([np.ravel(o) for o in out])
    return res


@cntk_case(names=[n for n in _ATTENTION if n != "cntk.ops.combine"] +
           ["cntk.layers.Signature", "cntk.layers.SequenceOver", "cntk.layers.Tensor", "cntk.Axis"],
           rtol=1e-4, atol=1e-5,
           note="Sequence2Sequence.py's decoder: two LSTM layers, the first over splice(x, "
                "attention(encoder, dh)) (attention_span=3, axis=-3), Dense after: its output "
                "is (1, 1, V) per step (W (5, V)), in training and in the greedy UnfoldFrom")
def attention_decoder__output_rank(C, r):
    r.touch("cntk.Function.parameters", "cntk.Function.__call__", "cntk.Function.shape",
            "cntk.Function.eval", "cntk.Function.arguments")
    in_axis = C.Axis("inAxis")
    embed = C.layers.Embedding(4, name="embed")
    encode = C.layers.Recurrence(C.layers.LSTM(3), return_full_state=True)
    attention = C.layers.AttentionModel(2, 3, -3, enable_self_stabilization=False,
                                        name="attention_model")
    lstms = [C.layers.LSTM(5), C.layers.LSTM(6)]
    out = C.layers.Dense(_V, name="out")

    @C.Function
    def decode(history, inp):
        encoded = encode(embed(inp))
        r = embed(history)
        for i in range(2):
            rec_block = lstms[i]
            if i == 0:
                @C.Function
                def lstm_with_attention(dh, dc, x):
                    return rec_block(dh, dc, C.splice(x, attention(encoded.outputs[0], dh)))
                r = C.layers.Recurrence(lstm_with_attention)(r)
            else:
                r = C.layers.Recurrence(rec_block)(r)
        return out(r)
    start = C.Constant(np.eye(_V, dtype=np.float32)[0])

    @C.Function
    @C.layers.Signature(C.layers.SequenceOver[in_axis][C.layers.Tensor[_V]])
    def greedy(inp):
        unfold = C.layers.UnfoldFrom(lambda history: decode(history, inp) >> C.hardmax,
                                     until_predicate=lambda w: w[..., _V - 1],
                                     length_increase=1.5)
        return unfold(initial_state=start, dynamic_axes_like=inp)
    x = C.sequence.input_variable(_V, sequence_axis=in_axis, name="x")
    y = C.sequence.input_variable(_V, name="y")
    trained = decode(y, x)
    res = {"params": r.set_params(trained.parameters, scale=1.5),
           "decoder shape": list(trained.shape), "greedy shape": list(greedy.shape)}
    words = [np.eye(_V, dtype=np.float32)[s] for s in ([0, 2, 3], [0, 3])]
    res["teacher forced"] = np.concatenate([np.ravel(o) for o in trained.eval(
        {trained.arguments[0]: words, trained.arguments[1]: words})])
    decoded = greedy(words)
    res["decoded shapes"] = [list(w.shape) for w in decoded]
    res["decoded"] = np.concatenate([np.ravel(w) for w in decoded])
    return res


@cntk_case(names=["cntk.layers.AttentionModel", "cntk.layers.UnfoldFrom", "cntk.layers.Recurrence",
                  "cntk.layers.LSTM", "cntk.layers.Embedding", "cntk.layers.Dense",
                  "cntk.ops.hardmax", "cntk.ops.splice", "cntk.Constant", "cntk.Axis",
                  "cntk.layers.Signature", "cntk.layers.SequenceOver", "cntk.layers.Tensor",
                  "cntk.layers.Delay"],
           rtol=1e-4, atol=1e-5,
           note="Sequence2Sequence.py's decoder saved after a greedy decoding (its history then "
                "(1, 1, V) per step), loaded, and applied to labels of (V,) (its "
                "evaluate_metric) and in UnfoldFrom (its evaluate_decoding)")
def attention_decoder__saved_after_decoding(C, r):
    import os
    import tempfile
    r.touch("cntk.Function.parameters", "cntk.Function.__call__", "cntk.Function.shape",
            "cntk.Function.eval", "cntk.Function.arguments", "cntk.Function.save",
            "cntk.Function.load")
    in_axis = C.Axis("inAxis")
    embed = C.layers.Embedding(4, name="embed")
    encode = C.layers.Recurrence(C.layers.LSTM(3), return_full_state=True)
    attention = C.layers.AttentionModel(2, 3, -3, enable_self_stabilization=False,
                                        name="attention_model")
    lstm = C.layers.LSTM(5)
    out = C.layers.Dense(_V, name="out")

    @C.Function
    def decode(history, inp):
        encoded = encode(embed(inp))

        @C.Function
        def lstm_with_attention(dh, dc, x):
            return lstm(dh, dc, C.splice(x, attention(encoded.outputs[0], dh)))
        return out(C.layers.Recurrence(lstm_with_attention)(embed(history)))
    start = C.Constant(np.eye(_V, dtype=np.float32)[0])

    def greedy_of(model):
        @C.Function
        @C.layers.Signature(C.layers.SequenceOver[in_axis][C.layers.Tensor[_V]])
        def greedy(inp):
            unfold = C.layers.UnfoldFrom(lambda history: model(history, inp) >> C.hardmax,
                                         until_predicate=lambda w: w[..., _V - 1],
                                         length_increase=1.5)
            return unfold(initial_state=start, dynamic_axes_like=inp)
        return greedy

    def teacher_forced(model):
        @C.Function
        @C.layers.Signature(inp=C.layers.SequenceOver[in_axis][C.layers.Tensor[_V]],
                            labels=C.layers.SequenceOver[C.Axis("labelAxis")][
                                C.layers.Tensor[_V]])
        def forced(inp, labels):
            return model(C.layers.Delay(initial_state=start)(labels), inp)
        return forced
    greedy = greedy_of(decode)
    res = {"params": r.set_params(greedy.parameters, scale=1.5)}
    words = [np.eye(_V, dtype=np.float32)[s] for s in ([0, 2, 3], [0, 3])]
    res["decoded"] = np.concatenate([np.ravel(w) for w in greedy(words)])
    path = os.path.join(tempfile.mkdtemp(), "decoder.cmf")
    decode.save(path)
    loaded = C.Function.load(path)
    forced = teacher_forced(loaded)
    res["forced shape"] = list(forced.shape)
    res["teacher forced"] = np.concatenate([np.ravel(o) for o in forced(words, words)])
    decoded = greedy_of(loaded)(words)
    res["loaded decoded shapes"] = [list(w.shape) for w in decoded]
    res["loaded decoded"] = np.concatenate([np.ravel(w) for w in decoded])
    return res
