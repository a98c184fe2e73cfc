"""A CNTK 2.7 user's own programs (round 37), in the style of CNTK's tutorials and examples: a
sequence-to-sequence model with ``AttentionModel`` trained a few steps and decoded greedily by
``UnfoldFrom`` (CNTK_204), CNTK_202's slot tagger over sparse CTF streams read with
``INFINITELY_REPEAT`` across sweeps, a self-stabilized LSTM with dropout, two learners for two
parameter groups under the old ``learning_rate_schedule`` units, feature extraction by
``find_all_with_name`` + ``combine`` + ``clone(share)``, a ``UserFunction`` trained and cloned, an
``Evaluator`` over a held-out CTF with the printer logging to a file, typed ``@Function``s with
``For`` and lambdas in ``Sequential``, and ``sequence.where``/``gather``/``scatter``; each is run
unchanged on CNTK 2.7 and on ``stadyn.compat.cntk``."""

import contextlib
import io
import os
import re

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import outcome

_TIMING = re.compile(r"\d+\.\d+s \( *\d+\.\d+ samples/s\)")
_NUMBER = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?")


def _printed(text):
    """Printed lines, timings masked, their decimals apart (compared to the harness's
    tolerance: the last printed digit may round either way)."""
    lines = [_TIMING.sub("<time>", ln) for ln in text.splitlines() if ln.strip()]
    return [[_NUMBER.sub("#", ln), [float(v) for v in _NUMBER.findall(ln)]] for ln in lines]


def _ctf_sequences(path, sequences):
    """``sequences``: lists of rows ``{field: [(index, value), ...] or [dense values]}``."""
    with open(path, "w") as f:
        for seq, rows in enumerate(sequences):
            for row in rows:
                parts = []
                for name in sorted(row):
                    vals = row[name]
                    if vals and isinstance(vals[0], tuple):
                        parts.append("|%s %s" % (name, " ".join("%d:%g" % iv for iv in vals)))
                    else:
                        parts.append("|%s %s" % (name, " ".join("%g" % v for v in vals)))
                f.write("%d %s\n" % (seq, " ".join(parts)))


def _set_unique(r, params):
    """Seeded values for the parameters whose name and size are unique; those that share both
    (a Stabilizer's scalar ``alpha``s) keep their initial value, which is a constant.  Returns
    the sorted ``[name, shape]`` listing."""
    counts = {}
    for p in params:
        key = (p.name, int(np.prod(p.shape)))
        counts[key] = counts.get(key, 0) + 1
    shared = [k for k, n in counts.items() if n > 1 and k[1] != 1]
    if shared:
        raise ValueError("parameters sharing a name and size: %r" % shared)
    r.set_params([p for p in params if counts[(p.name, int(np.prod(p.shape)))] == 1])
    return sorted([p.name, list(p.shape)] for p in params)


def _values(params):
    """``{"name|size": values}``; parameters sharing a name and size give their values sorted,
    so the order the framework lists them in does not count."""
    out = {}
    for p in params:
        value = np.array(p.value, dtype=np.float64).ravel()
        out.setdefault("%s|%d" % (p.name, value.size), []).append(value)
    return {k: (v[0] if len(v) == 1 else np.sort(np.concatenate(v))) for k, v in out.items()}


def _onehots(V, indices):
    return np.eye(V, dtype=np.float32)[np.asarray(indices)]


# -- 1. sequence to sequence with attention, trained then decoded greedily (CNTK_204) -----------

@cntk_case(names=["cntk.layers.AttentionModel", "cntk.layers.UnfoldFrom", "cntk.layers.Delay",
                  "cntk.layers.Stabilizer", "cntk.layers.Label", "cntk.layers.SequenceOver",
                  "cntk.Function.with_signature", "cntk.sequence.slice", "cntk.ops.hardmax",
                  "cntk.Trainer.train_minibatch", "cntk.Function.argument_map"],
           rtol=1e-4, atol=1e-5,
           note="CNTK_204's model, small: an encoder Embedding -> Stabilizer -> "
                "Recurrence(LSTM, return_full_state) -> (Label, Label) over the input axis; a "
                "decoder whose Recurrence step is a @Function splicing the AttentionModel's "
                "value over the encoder into the LSTM's input, under default_options("
                "enable_self_stabilization=True); the criterion typed with "
                "Function.with_signature over two named axes, labels sliced past <s> and "
                "delayed by Delay(initial_state=<s>); three adam steps, then the greedy decoder "
                "UnfoldFrom(... >> hardmax, until_predicate on </s>, length_increase=1.5)")
def user37_attention_seq2seq_greedy(C, r):
    r.touch("cntk.Function.with_signature", "cntk.Trainer.train_minibatch",
            "cntk.Function.argument_map")
    V_in, V_out, H = 5, 4, 3
    input_axis, label_axis = C.Axis("inputAxis"), C.Axis("labelAxis")
    InputSequence = C.layers.SequenceOver[input_axis]
    LabelSequence = C.layers.SequenceOver[label_axis]
    sentence_start = C.constant(np.eye(V_out, dtype=np.float32)[0], name="s_start")
    sentence_end_index = V_out - 1
    with C.layers.default_options(enable_self_stabilization=True):
        encode = C.layers.Sequential([
            C.layers.Embedding(H, name="in_embed"), C.layers.Stabilizer(),
            C.layers.Recurrence(C.layers.LSTM(H - 1), return_full_state=True),
            (C.layers.Label("encoded_h"), C.layers.Label("encoded_c"))])
        label_embed = C.layers.Embedding(H, name="label_embed")
        stab_in, stab_out = C.layers.Stabilizer(), C.layers.Stabilizer()
        rec_block = C.layers.LSTM(H)
        proj = C.layers.Dense(V_out, name="out_proj")
        attention_model = C.layers.AttentionModel(H, name="attention_model")

    @C.Function
    def decode(history, input):
        encoded_input = encode(input)
        r_ = stab_in(label_embed(history))

        @C.Function
        def lstm_with_attention(dh, dc, x):
            h_att = attention_model(encoded_input.outputs[0], dh)
            return rec_block(dh, dc, C.splice(x, h_att))
        r_ = C.layers.Recurrence(lstm_with_attention)(r_)
        return C.layers.Label("out_proj_out")(proj(stab_out(r_)))

    @C.Function.with_signature(InputSequence[C.layers.Tensor[V_in]],
                               LabelSequence[C.layers.Tensor[V_out]])
    def criterion(input, labels):
        postprocessed = C.sequence.slice(labels, 1, 0)
        z = decode(C.layers.Delay(initial_state=sentence_start)(postprocessed), input)
        return (C.cross_entropy_with_softmax(z, postprocessed),
                C.classification_error(z, postprocessed))

    res = {"parameters": _set_unique(r, criterion.parameters),
           "arguments": [[a.name, list(a.shape)] for a in criterion.arguments]}
    trainer = C.Trainer(None, criterion, [C.adam(
        criterion.parameters, C.learning_parameter_schedule_per_sample(0.05),
        C.momentum_schedule_per_sample(0.9))])
    inputs = [_onehots(V_in, [1, 2, 3]), _onehots(V_in, [4, 1])]
    labels = [_onehots(V_out, [0, 1, 2, 3]), _onehots(V_out, [0, 2, 3])]
    steps = []
    for _ in range(3):
        trainer.train_minibatch(criterion.argument_map(inputs, labels))
        steps.append([trainer.previous_minibatch_loss_average,
                      trainer.previous_minibatch_evaluation_average,
                      trainer.previous_minibatch_sample_count])
    res["steps"] = steps

    @C.Function.with_signature(InputSequence[C.layers.Tensor[V_in]])
    def model_greedy(input):
        unfold = C.layers.UnfoldFrom(lambda history: decode(history, input) >> C.hardmax,
                                     until_predicate=lambda w: w[..., sentence_end_index],
                                     length_increase=1.5)
        return unfold(initial_state=sentence_start, dynamic_axes_like=input)
    res["greedy"] = [np.argmax(s, axis=-1).tolist() for s in model_greedy(inputs)]
    res["values"] = _values(criterion.parameters)
    return res


# -- 2. CNTK_202's slot tagger over sparse CTF, INFINITELY_REPEAT across sweeps, by epochs ------

def _slot_data(r, count, V, K):
    seqs = []
    for _ in range(count):
        n = int(r.randint(2, 5, (1,))[0])
        words = r.randint(0, V, (n,))
        seqs.append([dict([("S0", [(int(w), 1.0)])] + ([("S1", [(int(words[0]) % 2, 1.0)])]
                                                       if i == 0 else [])
                          + [("S2", [(int(w) % K, 1.0)])]) for i, w in enumerate(words)])
    return seqs


@cntk_case(names=["cntk.io.INFINITELY_REPEAT", "cntk.io.CTFDeserializer", "cntk.io.StreamDefs",
                  "cntk.logging.ProgressPrinter", "cntk.learners.momentum_sgd",
                  "cntk.learning_parameter_schedule_per_sample",
                  "cntk.Trainer.summarize_training_progress", "cntk.layers.Sequential"],
           rtol=1e-4, atol=1e-5,
           note="CNTK_202's train loop: a reader of a three-stream sparse CTF (an intent "
                "stream only on a sequence's first line, unused) with max_sweeps="
                "INFINITELY_REPEAT, not randomized; Sequential([Embedding, Recurrence(LSTM), "
                "Dense]); momentum_sgd (the tutorial's adam is not implemented for the sparse "
                "embedding on CNTK 2.7's CPU: Matrix.cpp:1859) with a per-sample rate list of "
                "epoch_size, per-sample momentum, "
                "gradient clipping per sample with truncation; two epochs of 20 samples read "
                "in minibatches of 7 (crossing the 25-sample sweep), ProgressPrinter(tag="
                "'Training', freq=2) summarized per epoch; the printed lines, the sample counts, "
                "the sweep ends and the learning rate seen after each epoch")
def user37_slot_tagger_infinite_epochs(C, r):
    r.touch("cntk.Trainer.summarize_training_progress", "cntk.io.MinibatchSource.next_minibatch")
    V, K, epoch_size = 6, 3, 20
    res = {}
    with r.tempdir() as folder:
        path = os.path.join(folder, "atis.ctf")
        data = _slot_data(r, 9, V, K)
        _ctf_sequences(path, data)
        res["samples in the file"] = sum(len(s) for s in data)
        reader = C.io.MinibatchSource(C.io.CTFDeserializer(path, C.io.StreamDefs(
            query=C.io.StreamDef(field="S0", shape=V, is_sparse=True),
            intent_unused=C.io.StreamDef(field="S1", shape=2, is_sparse=True),
            slot_labels=C.io.StreamDef(field="S2", shape=K, is_sparse=True))),
            randomize=False, max_sweeps=C.io.INFINITELY_REPEAT)
        x = C.sequence.input_variable(V, is_sparse=True, name="query")
        y = C.sequence.input_variable(K, is_sparse=True, name="slots")
        model = C.layers.Sequential([C.layers.Embedding(4, name="embed"),
                                     C.layers.Recurrence(C.layers.LSTM(2), name="rec"),
                                     C.layers.Dense(K, name="classify")])
        z = model(x)
        res["parameters"] = r.set_params(z.parameters)
        lr = C.learning_parameter_schedule_per_sample([0.01] * 1 + [0.005], epoch_size=epoch_size)
        learner = C.momentum_sgd(z.parameters, lr=lr,
                                 momentum=C.momentum_schedule_per_sample(0.99),
                                 gradient_clipping_threshold_per_sample=15,
                                 gradient_clipping_with_truncation=True)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            printer = C.logging.ProgressPrinter(tag="Training", freq=2)
            trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y),
                                    C.classification_error(z, y)), [learner], [printer])
            t, steps = 0, []
            for epoch in range(2):
                epoch_end = (epoch + 1) * epoch_size
                while t < epoch_end:
                    mb = reader.next_minibatch(7, input_map={x: reader.streams.query,
                                                             y: reader.streams.slot_labels})
                    trainer.train_minibatch(mb)
                    t += mb[y].num_samples
                    steps.append([t, mb[y].num_sequences, bool(mb[y].end_of_sweep),
                                  trainer.previous_minibatch_loss_average])
                trainer.summarize_training_progress()
                steps.append(["lr", learner.learning_rate()])
        res["steps"] = steps
        res["printed"] = _printed(out.getvalue())
        res["values"] = r.param_values(z.parameters)
    return res


# -- 3. a self-stabilized LSTM classifier with dropout ------------------------------------------

@cntk_case(names=["cntk.layers.default_options", "cntk.layers.Stabilizer",
                  "cntk.layers.Dropout", "cntk.layers.LSTM", "cntk.sequence.last",
                  "cntk.Trainer.test_minibatch", "cntk.learners.momentum_sgd"],
           rtol=1e-4, atol=1e-5,
           note="a sequence classifier Embedding -> Stabilizer -> Recurrence(LSTM) -> "
                "sequence.last -> Dropout(0.5) -> Dense under default_options("
                "enable_self_stabilization=True); the parameter listing (the Stabilizers' "
                "scalars and their initial values); inference (dropout the identity) twice "
                "the same and equal to the Trainer's test_minibatch error; one momentum_sgd "
                "step with dropout on: what is certain (the parameters all moved, the loss "
                "positive and finite)")
def user37_stabilized_lstm_dropout(C, r):
    r.touch("cntk.Trainer.test_minibatch", "cntk.Trainer.train_minibatch")
    V, K = 5, 3
    x = C.sequence.input_variable(V, name="words")
    y = C.input_variable(K, name="label")
    with C.layers.default_options(enable_self_stabilization=True):
        z = C.layers.Sequential([C.layers.Embedding(4, name="emb"), C.layers.Stabilizer(),
                                 C.layers.Recurrence(C.layers.LSTM(2), name="lstm"),
                                 C.sequence.last, C.layers.Dropout(0.5, name="drop"),
                                 C.layers.Dense(K, name="out")])(x)
    res = {"parameters": _set_unique(r, z.parameters),
           "alphas": sorted(float(p.value) for p in z.parameters if p.name == "alpha")}
    seqs = [_onehots(V, r.randint(0, V, (n,))) for n in (3, 1, 4, 2)]
    labels = r.onehot(4, K)
    first, second = z.eval({x: seqs}), z.eval({x: seqs})
    res["inference"] = first
    res["inference repeated"] = bool(np.array_equal(first, second))
    err = C.classification_error(z, y)
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), err), [C.momentum_sgd(
        z.parameters, C.learning_parameter_schedule(0.1), C.momentum_schedule(0.9))])
    res["test error"] = trainer.test_minibatch({x: seqs, y: labels})
    res["eval error"] = float(np.mean(err.eval({x: seqs, y: labels})))
    before = [np.array(p.value) for p in z.parameters]
    trainer.train_minibatch({x: seqs, y: labels})
    loss = trainer.previous_minibatch_loss_average
    res["loss positive and finite"] = bool(np.isfinite(loss) and loss > 0)
    res["moved"] = sorted([p.name, bool(not np.array_equal(b, p.value))]
                          for p, b in zip(z.parameters, before))
    return res


# -- 4. two learners, two parameter groups, the old learning_rate_schedule units ----------------

@cntk_case(names=["cntk.learners.learning_rate_schedule", "cntk.learners.UnitType",
                  "cntk.learners.momentum_as_time_constant_schedule", "cntk.learners.sgd",
                  "cntk.learners.momentum_sgd", "cntk.Learner.learning_rate",
                  "cntk.Trainer.parameter_learners"],
           rtol=1e-4, atol=1e-5,
           note="a feature body trained by sgd(learning_rate_schedule([0.2, 0.1], "
                "UnitType.sample, epoch_size=5)) and a head by momentum_sgd("
                "learning_rate_schedule(0.5, UnitType.minibatch), "
                "momentum_as_time_constant_schedule(4)), one Trainer with both learners; "
                "minibatches of 2, 3, 4 and 1 samples; the losses, each learner's rate after "
                "each step, the parameters after; a third learner over a parameter the others "
                "hold too refused (ValueError)")
def user37_two_learners_two_groups(C, r):
    r.touch("cntk.Trainer.parameter_learners", "cntk.Learner.learning_rate")
    x = C.input_variable(3, name="x")
    y = C.input_variable(2, name="y")
    body = C.layers.Dense(4, activation=C.tanh, name="body")
    head = C.layers.Dense(2, name="head")
    z = head(body(x))
    res = {"parameters": r.set_params(z.parameters)}
    UT = C.learners.UnitType
    body_learner = C.learners.sgd(body.parameters, lr=C.learners.learning_rate_schedule(
        [0.2, 0.1], UT.sample, epoch_size=5))
    head_learner = C.learners.momentum_sgd(
        head.parameters, lr=C.learners.learning_rate_schedule(0.5, UT.minibatch),
        momentum=C.learners.momentum_as_time_constant_schedule(4))
    loss = C.cross_entropy_with_softmax(z, y)
    trainer = C.Trainer(z, (loss, C.classification_error(z, y)), [body_learner, head_learner])
    res["learners"] = len(trainer.parameter_learners)
    steps = []
    for n in (2, 3, 4, 1):
        trainer.train_minibatch({x: r.randn(n, 3), y: r.onehot(n, 2)})
        steps.append([trainer.previous_minibatch_loss_average, body_learner.learning_rate(),
                      head_learner.learning_rate()])
    res["steps"] = steps
    res["values"] = r.param_values(z.parameters)
    res["overlapping learners"] = outcome(lambda: C.Trainer(z, (loss, None), [
        body_learner, head_learner,
        C.learners.sgd([body.W], lr=C.learning_parameter_schedule(0.1))]))
    return res


# -- 5. feature extraction: find_all_with_name, combine, clone(share) onto a new input ----------

@cntk_case(names=["cntk.Function.find_all_with_name", "cntk.Function.find_by_name",
                  "cntk.ops.combine", "cntk.ops.functions.CloneMethod", "cntk.Function.clone",
                  "cntk.ops.placeholder", "cntk.layers.MaxPooling",
                  "cntk.layers.Convolution2D"],
           rtol=1e-4, atol=1e-5,
           note="a conv net with two Dense layers both named 'hidden' and a pooling named "
                "'pool': find_all_with_name('hidden') (two), find_by_name of a duplicated "
                "name (CNTK 2.7 raises ValueError), combine of the pool and the first hidden "
                "layer cloned with CloneMethod.share onto a placeholder and applied to a new "
                "input scaled by a constant; the features, then one sgd step of the original "
                "model and the shared clone's features again (moved with it), a freeze clone "
                "made before the step (unchanged)")
def user37_feature_extraction_shared_clone(C, r):
    r.touch("cntk.Function.find_all_with_name", "cntk.Function.find_by_name",
            "cntk.Function.clone")
    image = C.input_variable((1, 4, 4), name="image")
    label = C.input_variable(3, name="label")
    z = C.layers.Sequential([
        C.layers.Convolution2D((3, 3), 2, pad=True, activation=C.relu, name="conv"),
        C.layers.MaxPooling((2, 2), strides=(2, 2), name="pool"),
        C.layers.Dense(5, activation=C.relu, name="hidden"),
        C.layers.Dense(4, activation=C.relu, name="hidden"),
        C.layers.Dense(3, name="out")])(image)
    res = {"parameters": r.set_params(z.parameters)}
    hidden = z.find_all_with_name("hidden")
    res["found"] = sorted(list(h.output.shape) for h in hidden)
    res["by a duplicated name"] = outcome(lambda: z.find_by_name("hidden"))
    pool = z.find_by_name("pool")
    first = [h for h in hidden if h.output.shape == (5,)][0]
    features = C.combine([pool.output, first.output])
    res["feature arguments"] = [a.name for a in features.arguments]
    new_in = C.input_variable((1, 4, 4), name="new_image")
    shared = features.clone(C.CloneMethod.share, {features.arguments[0]: C.placeholder()})
    extract = shared(new_in * 0.5)
    frozen = features.clone(C.CloneMethod.freeze, {features.arguments[0]: C.placeholder()})(
        new_in * 0.5)
    X = r.rand(3, 1, 4, 4)
    before = extract.eval({new_in: X})
    res["outputs"] = sorted(list(o.shape) for o in extract.outputs)
    res["features before"] = [before[o] for o in sorted(before, key=lambda o: len(o.shape))]
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, label), None),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.5))])
    trainer.train_minibatch({image: r.rand(4, 1, 4, 4), label: r.onehot(4, 3)})
    after = extract.eval({new_in: X})
    res["features after"] = [after[o] for o in sorted(after, key=lambda o: len(o.shape))]
    kept = frozen.eval({new_in: X})
    res["frozen after"] = [kept[o] for o in sorted(kept, key=lambda o: len(o.shape))]
    return res


# -- 6. a UserFunction with backward, trained, tested and cloned -------------------------------

def _scaled_tanh_class(C):
    class ScaledTanh(C.ops.functions.UserFunction):
        """1.7159 tanh(2x/3) (LeCun's), forward and backward in NumPy."""

        def __init__(self, arg, name="ScaledTanh"):
            super(ScaledTanh, self).__init__([arg], name=name)

        def forward(self, argument, device=None, outputs_to_retain=None):
            t = np.tanh(argument * 2.0 / 3.0)
            return t, 1.7159 * t

        def backward(self, state, root_gradients):
            return root_gradients * 1.7159 * (2.0 / 3.0) * (1.0 - state * state)

        def infer_outputs(self):
            return [C.output_variable(self.inputs[0].shape, self.inputs[0].dtype,
                                      self.inputs[0].dynamic_axes)]

        def clone(self, cloned_inputs):
            return ScaledTanh(cloned_inputs[0], name=self.name)
    return ScaledTanh


@cntk_case(names=["cntk.ops.functions.UserFunction", "cntk.user_function",
                  "cntk.learners.adagrad", "cntk.Trainer.test_minibatch",
                  "cntk.ops.functions.CloneMethod", "cntk.ops.output_variable"],
           rtol=1e-4, atol=1e-5,
           note="LeCun's scaled tanh as a UserFunction (NumPy forward keeping tanh as state, "
                "backward from it, clone) between two Dense layers; adagrad over four "
                "minibatches, test_minibatch on held-out data before and after; the user "
                "function found by name; a clone(CloneMethod.clone) of the trained model "
                "trained on apart from the original (the original unchanged)")
def user37_user_function_trained_and_cloned(C, r):
    r.touch("cntk.Trainer.test_minibatch", "cntk.Function.clone")
    ScaledTanh = _scaled_tanh_class(C)
    x = C.input_variable(4, name="x")
    y = C.input_variable(3, name="y")
    h = C.layers.Dense(5, name="h")(x)
    act = C.user_function(ScaledTanh(h, name="lecun"))
    z = C.layers.Dense(3, name="o")(act)
    res = {"parameters": r.set_params(z.parameters)}
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [C.adagrad(z.parameters, C.learning_parameter_schedule(0.3))])
    Xt, Yt = r.randn(6, 4), r.onehot(6, 3)
    res["test before"] = trainer.test_minibatch({x: Xt, y: Yt})
    losses = []
    for n in (3, 4, 2, 5):
        trainer.train_minibatch({x: r.randn(n, 4), y: r.onehot(n, 3)})
        losses.append(trainer.previous_minibatch_loss_average)
    res["losses"] = losses
    res["test after"] = trainer.test_minibatch({x: Xt, y: Yt})
    found = z.find_by_name("lecun")
    res["found"] = [found.name, list(found.output.shape)]
    copy = z.clone(C.CloneMethod.clone)
    before = z.eval({x: Xt[:2]})
    y2 = C.input_variable(3, name="y2")
    t2 = C.Trainer(copy, (C.squared_error(copy, y2), None),
                   [C.sgd(copy.parameters, C.learning_parameter_schedule(0.2))])
    t2.train_minibatch({copy.arguments[0]: Xt, y2: Yt})
    res["copy loss"] = t2.previous_minibatch_loss_average
    res["original unchanged"] = bool(np.allclose(before, z.eval({x: Xt[:2]})))
    res["copy"] = copy.eval({copy.arguments[0]: Xt[:2]})
    res["values"] = r.param_values(z.parameters)
    return res


# -- 7. an Evaluator over a held-out CTF, the printer logging to a file -------------------------

@cntk_case(names=["cntk.eval.Evaluator", "cntk.Evaluator.test_minibatch",
                  "cntk.Evaluator.summarize_test_progress", "cntk.logging.ProgressPrinter",
                  "cntk.io.MinibatchSource", "cntk.io.StreamDef"],
           rtol=1e-4, atol=1e-5,
           note="a logistic regression trained from a dense CTF (max_samples=12, minibatches "
                "of 5) with a ProgressPrinter(freq=1, first=1, tag='Train', log_to_file); an "
                "Evaluator over a held-out CTF read once (max_sweeps=1) in minibatches of "
                "4 with a second printer to another file, summarized; the errors, the sample "
                "counts, the two log files")
def user37_evaluator_heldout_ctf_logs(C, r):
    r.touch("cntk.Evaluator.test_minibatch", "cntk.Evaluator.summarize_test_progress",
            "cntk.io.MinibatchSource.next_minibatch", "cntk.Trainer.summarize_training_progress")
    res = {}
    with r.tempdir() as folder:
        def write(path, n):
            feats, labs = r.randn(n, 2), r.onehot(n, 2)
            _ctf_sequences(path, [[{"features": list(f), "labels": list(l)}]
                                  for f, l in zip(feats, labs)])
        train, test = os.path.join(folder, "train.ctf"), os.path.join(folder, "test.ctf")
        write(train, 10)
        write(test, 7)

        def source(path, **kw):
            return C.io.MinibatchSource(C.io.CTFDeserializer(path, C.io.StreamDefs(
                features=C.io.StreamDef(field="features", shape=2),
                labels=C.io.StreamDef(field="labels", shape=2))), randomize=False, **kw)
        x = C.input_variable(2, name="features")
        y = C.input_variable(2, name="labels")
        z = C.layers.Dense(2, name="logreg")(x)
        res["parameters"] = r.set_params(z.parameters)
        train_log, test_log = os.path.join(folder, "train.log"), os.path.join(folder, "test.log")
        trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                            [C.sgd(z.parameters, C.learning_parameter_schedule(0.5))],
                            [C.logging.ProgressPrinter(freq=1, first=1, tag="Train",
                                                       log_to_file=train_log)])
        src = source(train, max_samples=12)
        counts = []
        while True:
            mb = src.next_minibatch(5, input_map={x: src.streams.features,
                                                  y: src.streams.labels})
            if not mb:
                break
            trainer.train_minibatch(mb)
            counts.append(trainer.previous_minibatch_sample_count)
        trainer.summarize_training_progress()
        res["train counts"] = counts
        ev = C.eval.Evaluator(C.classification_error(z, y), [C.logging.ProgressPrinter(
            tag="Test", log_to_file=test_log)])
        tsrc = source(test, max_sweeps=1)
        tests = []
        while True:
            mb = tsrc.next_minibatch(4, input_map={x: tsrc.streams.features,
                                                   y: tsrc.streams.labels})
            if not mb:
                break
            tests.append([ev.test_minibatch(mb), mb[y].num_samples])
        ev.summarize_test_progress()
        res["tests"] = tests
        for key, path in (("train log", train_log), ("test log", test_log)):
            with open(path) as f:
                res[key] = _printed(f.read().replace(folder, "<folder>"))
    return res


# -- 8. typed @Function blocks, For and lambdas in Sequential -----------------------------------

@cntk_case(names=["cntk.layers.Signature", "cntk.layers.Tensor", "cntk.layers.For",
                  "cntk.layers.Sequential", "cntk.ops.functions.Function",
                  "cntk.Function.update_signature", "cntk.layers.ResNetBlock",
                  "cntk.ops.element_times"],
           rtol=1e-4, atol=1e-5,
           note="a residual MLP: a @Function with @Signature(Tensor[4]) gating its input, "
                "For(range(2), lambda i: Dense(5 + i ...)) inside a Sequential with lambdas "
                "and a ResNetBlock (the gate applied before it: in a Sequential after "
                "Dense, whose output shape is not known yet, CNTK 2.7 refuses it with "
                "TypeError, and so it does after 'layer >>', in For, and applied to an op "
                "over a placeholder); an untyped @Function given its type later by "
                "update_signature; a typed function fed a wrong shape (CNTK 2.7 raises "
                "ValueError); the outputs before and after one sgd step, the signatures")
def user37_typed_functions_for_sequential(C, r):
    r.touch("cntk.Function.update_signature", "cntk.layers.Signature")

    @C.Function
    @C.layers.Signature(C.layers.Tensor[4])
    def gate(v):
        return C.element_times(v, C.sigmoid(v))

    @C.Function
    def square_plus(a, b):
        return a * a + b

    x = C.input_variable(2, name="x")
    y = C.input_variable(2, name="y")
    # (a typed Function after a layer of unknown output shape in a Sequential: refused)
    typed_after = outcome(lambda: C.layers.Sequential([C.layers.Dense(4, name="in"), gate]))
    body = C.layers.Sequential([
        C.layers.For(range(2), lambda i: C.layers.Dense(5 + i, activation=C.relu,
                                                        name="hid%d" % i)),
        C.layers.ResNetBlock(C.layers.Dense(6, bias=False, name="res")),
        lambda t: t * 0.5,
        C.layers.Dense(2, name="out")])
    z = body(gate(C.layers.Dense(4, name="in")(x)))
    params = z.parameters
    res = {"gate signature": [[a.name, list(a.shape)] for a in gate.arguments],
           "typed after an unknown shape": typed_after,
           "layer >> typed": outcome(lambda: C.layers.Dense(4, name="in") >> gate),
           "typed of an op over a placeholder": outcome(lambda: gate(C.relu(C.placeholder()))),
           "typed in For": outcome(lambda: C.layers.For(range(2), lambda: gate)),
           "parameters": r.set_params(params)}
    res["wrong shape"] = outcome(lambda: gate.eval({gate.arguments[0]: r.randn(2, 3)}))
    square_plus.update_signature(C.layers.Tensor[2], C.layers.Tensor[2])
    res["updated signature"] = [list(a.shape) for a in square_plus.arguments]
    res["square_plus"] = square_plus.eval({square_plus.arguments[0]: r.randn(2, 2),
                                           square_plus.arguments[1]: r.randn(2, 2)})
    X, Y = r.randn(5, 2), r.onehot(5, 2)
    res["z"] = z.eval({x: X})
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), None),
                        [C.sgd(params, C.learning_parameter_schedule(0.5))])
    trainer.train_minibatch({x: X, y: Y})
    res["loss"] = trainer.previous_minibatch_loss_average
    res["z after"] = z.eval({x: X})
    return res


# -- 9. positions found by sequence.where, gathered, processed and scattered back (CNTK_204) ----

@cntk_case(names=["cntk.sequence.where", "cntk.sequence.gather", "cntk.sequence.scatter",
                  "cntk.sequence.reduce_sum", "cntk.sequence.broadcast_as",
                  "cntk.layers.Recurrence", "cntk.layers.GRU", "cntk.learners.adadelta"],
           rtol=1e-4, atol=1e-5,
           note="the marked words of each sequence (feature 0 above 0) found by "
                "sequence.where (its positions: 'scattered by the where', whose sequence "
                "axis is not the words' one: RuntimeError), gathered into a shorter sequence "
                "by the mask, run through a GRU Recurrence, scattered back by the mask to "
                "the marked positions (zeros elsewhere), added to a Dense of every word "
                "and pooled by sequence.reduce_sum, a sentence vector broadcast back by "
                "broadcast_as; trained three adadelta steps on sequences of several "
                "lengths; a sequence with no marked word gathers an empty sequence, which "
                "CNTK 2.7 refuses (RuntimeError 'AddSequence: Sequences must be a least one "
                "frame long'); the gathered lengths, the scattered values, the losses, the "
                "parameters after")
def user37_where_gather_scatter_classifier(C, r):
    x = C.sequence.input_variable(4, name="words")
    y = C.input_variable(3, name="label")
    mask = C.greater(x[0], 0)
    marked = C.sequence.where(mask)
    picked = C.sequence.gather(x, mask)
    rec = C.layers.Recurrence(C.layers.GRU(2), name="gru")(picked)
    back = C.sequence.scatter(rec, mask)
    res = {"scattered by the where": outcome(lambda: C.sequence.scatter(rec, marked) + x[:2])}
    every = C.layers.Dense(2, name="word")(x)
    pooled = C.sequence.reduce_sum(every + back)
    sentence = C.sequence.broadcast_as(pooled, x)
    z = C.layers.Dense(3, name="cls")(pooled)
    res["parameters"] = r.set_params(z.parameters)

    def seqs(lengths):
        out = [r.randn(n, 4) for n in lengths]
        for s in out:
            s[0, 0] = abs(s[0, 0]) + 0.1      # (a marked word in each)
        return out
    S = seqs([4, 2, 5, 3])
    unmarked = [np.array(s) for s in S]
    unmarked[-1][:, 0] = -np.abs(unmarked[-1][:, 0]) - 0.1
    res["a sequence with no marked word"] = outcome(lambda: picked.eval({x: unmarked}))
    res["gathered lengths"] = [len(s) for s in picked.eval({x: S})]
    res["scattered"] = [np.asarray(s) for s in back.eval({x: S})]
    res["broadcast"] = [np.asarray(s) for s in sentence.eval({x: S[:2]})]
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [C.adadelta(z.parameters, C.learning_parameter_schedule(1.0),
                                    rho=0.9, epsilon=1e-4)])
    steps = []
    for lengths in ([3, 2], [1, 4, 2], [5, 2]):
        trainer.train_minibatch({x: seqs(lengths), y: r.onehot(len(lengths), 3)})
        steps.append([trainer.previous_minibatch_loss_average,
                      trainer.previous_minibatch_sample_count])
    res["steps"] = steps
    res["values"] = r.param_values(z.parameters)
    return res


# -- 10. CTC over frames read from a CTF file (CNTK_208) -----------------------------------------

@cntk_case(names=["cntk.ops.forward_backward", "cntk.ops.labels_to_graph",
                  "cntk.metrics.edit_distance_error", "cntk.layers.Recurrence",
                  "cntk.layers.GRU", "cntk.eval.Evaluator",
                  "cntk.learning_parameter_schedule_per_sample", "cntk.io.CTFDeserializer"],
           rtol=1e-4, atol=1e-5,
           note="CNTK_208's CTC criterion, small: frames and their per-frame labels (a token "
                "repeated over a few frames, the blank the last class) read from a CTF file, "
                "Sequential([Recurrence(GRU), Dense]); forward_backward(labels_to_graph("
                "labels), z, blankTokenId, delayConstraint=-1) as the loss, "
                "edit_distance_error(squashInputs=True, tokensToIgnore=[blank]) as the metric; "
                "momentum_sgd with a per-sample rate over two sweeps in minibatches of 12 "
                "frames, then an Evaluator over the file; the losses, counts, errors and the "
                "parameters after")
def user37_ctc_frames_from_ctf(C, r):
    r.touch("cntk.Evaluator.test_minibatch", "cntk.io.MinibatchSource.next_minibatch")
    F, V = 3, 4
    blank = V - 1
    res = {}
    with r.tempdir() as folder:
        path = os.path.join(folder, "frames.ctf")
        seqs = []
        for tokens in ([0, 1], [2, 0, 1], [1], [2, 2]):
            rows = []
            for t in tokens:
                for _ in range(2):
                    rows.append({"features": list(r.randn(F)), "labels": [(t, 1.0)]})
                rows.append({"features": list(r.randn(F)), "labels": [(blank, 1.0)]})
            seqs.append(rows)
        _ctf_sequences(path, seqs)

        def reader(sweeps):
            return C.io.MinibatchSource(C.io.CTFDeserializer(path, C.io.StreamDefs(
                features=C.io.StreamDef(field="features", shape=F),
                labels=C.io.StreamDef(field="labels", shape=V, is_sparse=True))),
                randomize=False, max_sweeps=sweeps)
        x = C.sequence.input_variable(F, name="features")
        y = C.sequence.input_variable(V, name="labels")
        z = C.layers.Sequential([C.layers.Recurrence(C.layers.GRU(2), name="gru"),
                                 C.layers.Dense(V, name="out")])(x)
        res["parameters"] = r.set_params(z.parameters)
        loss = C.forward_backward(C.labels_to_graph(y), z, blankTokenId=blank,
                                  delayConstraint=-1)
        err = C.edit_distance_error(y, z, squashInputs=True, tokensToIgnore=[blank])
        trainer = C.Trainer(z, (loss, err), [C.momentum_sgd(
            z.parameters, C.learning_parameter_schedule_per_sample(0.02),
            C.momentum_schedule(0.9))])
        src = reader(2)
        steps = []
        while True:
            mb = src.next_minibatch(12, input_map={x: src.streams.features,
                                                   y: src.streams.labels})
            if not mb:
                break
            trainer.train_minibatch(mb)
            steps.append([trainer.previous_minibatch_loss_average,
                          trainer.previous_minibatch_evaluation_average,
                          trainer.previous_minibatch_sample_count])
        res["steps"] = steps
        ev = C.eval.Evaluator(err)
        tsrc = reader(1)
        tests = []
        while True:
            mb = tsrc.next_minibatch(8, input_map={x: tsrc.streams.features,
                                                   y: tsrc.streams.labels})
            if not mb:
                break
            tests.append([ev.test_minibatch(mb), mb[y].num_sequences])
        res["tests"] = tests
        res["values"] = r.param_values(z.parameters)
    return res


# -- 11. what the seq2seq decoder met with stabilization off, and an untyped @Function of a layer

@cntk_case(names=["cntk.layers.Stabilizer", "cntk.layers.identity", "cntk.layers.Recurrence",
                  "cntk.layers.LSTM", "cntk.ops.functions.Function"],
           note="CNTK_204's decoder written with enable_self_stabilization=False: the "
                "Stabilizer after the attention Recurrence is identity, which on CNTK 2.7 "
                "gives both of the LSTM's states where the Recurrence has no name; the output "
                "shapes of identity, "
                "Stabilizer(enable_self_stabilization=False) of the Recurrence and a Dense "
                "after it; an untyped @Function applied to Dense(4) not applied yet (a "
                "Function of unknown shape over the layer's placeholder x, holding its "
                "parameters), then applied to an input and evaluated, evaluated on data "
                "itself, applied to an LSTM (several outputs: RuntimeError) and given a "
                "layer and an input; and composed with Dense(4) by >> (all fine on CNTK 2.7 "
                "but the data and the LSTM)")
def user37_identity_after_recurrence(C, r):
    x = C.sequence.input_variable(2, name="x")

    def shapes(f):
        return [list(o.shape) for o in f.outputs]
    rec = C.layers.Recurrence(C.layers.LSTM(3))     # (unnamed: a named one is one output)
    res = {"recurrence": shapes(rec(x)),
           "identity after a named Recurrence": shapes(C.layers.identity(
               C.layers.Recurrence(C.layers.LSTM(3), name="rec")(x))),
           "identity after a Recurrence of an LSTM": outcome(lambda: shapes(
               C.layers.Stabilizer(enable_self_stabilization=False)(rec(x)))),
           "Dense after that identity": outcome(lambda: shapes(C.layers.Dense(2)(
               C.layers.identity(rec(x)))))}

    @C.Function
    def doubled(v):
        return v * 2
    res["untyped Function of a layer"] = outcome(lambda: list(
        doubled(C.layers.Dense(4)).output.shape))
    g = doubled(C.layers.Dense(4, init=C.glorot_uniform(seed=3), name="fc"))
    res["its arguments and parameters"] = [[a.name, list(a.shape), a.is_placeholder]
                                           for a in g.arguments] + [
        sorted(list(p.shape) for p in g.parameters)]
    v = C.input_variable(3)
    data = np.array([[1, -2, 3], [0.5, 0.1, -1]], np.float32)
    res["applied to an input"] = outcome(lambda: g(v).eval({v: data}))
    res["applied to an input: arguments"] = [list(a.shape) for a in g(v).arguments]
    res["evaluated on data"] = outcome(lambda: g.eval(data))
    res["applied to an input of another size"] = outcome(lambda: g(C.input_variable(5)).shape)
    res["of an LSTM"] = outcome(lambda: doubled(C.layers.LSTM(3)).shape)

    @C.Function
    def summed(a, b):
        return a + b
    res["of a layer and an input"] = outcome(lambda: [
        [list(a.shape) for a in summed(C.layers.Dense(4), C.input_variable(4)).arguments],
        list(summed(C.layers.Dense(4), C.input_variable(4)).shape)])
    res["layer >> untyped Function"] = outcome(lambda: list(
        (C.layers.Dense(4) >> doubled)(x).output.shape))
    return res
