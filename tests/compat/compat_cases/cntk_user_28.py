"""A CNTK 2.7 user's own programs (round 28): each combines several features the way a user's
script does (a training session resumed from its checkpoint, a sequence classifier read from
a CTF file, a user function and a user learner inside a trained model, a stack of layers
under ``default_options``, gradients by hand and a frozen clone fine-tuned, an image reader
beside a CTF reader, attention pooling over a sequence, a convolutional autoencoder) and is
run unchanged on CNTK 2.7 and on ``stadyn.compat.cntk``."""

import contextlib
import io
import os
import re

import numpy as np

from compat_harness import cntk_case

_TIMING = re.compile(r"\d+\.\d+s \( *\d+\.\d+ samples/s\)")
_NUMBER = re.compile(r"-?\d+\.\d+")


def _printed(text):
    """Printed lines, timings masked, their decimals apart (compared to the harness's
    tolerance: the last printed digit may round either way)."""
    lines = [_TIMING.sub("<time>", ln) for ln in text.splitlines() if ln.strip()]
    return [[_NUMBER.sub("#", ln), [float(v) for v in _NUMBER.findall(ln)]] for ln in lines]


def _write_ctf(path, rows):
    """``rows``: one list of ``(sequence id, {stream: values})`` lines per sequence."""
    with open(path, "w") as f:
        for seq, fields in rows:
            f.write("%d %s\n" % (seq, " ".join(
                "|%s %s" % (name, " ".join("%g" % v for v in fields[name]))
                for name in sorted(fields))))


# -- 1. a training session stopped and resumed from its checkpoint ------------------------------

def _resume_model(C, r):
    x = C.input_variable(3, name="x")
    y = C.input_variable(2, name="y")
    h = C.layers.Dense(4, activation=C.relu, name="hidden")(x)
    z = C.layers.Dense(2, name="out")(h)
    r.set_params(z.parameters)
    learner = C.momentum_sgd(z.parameters, C.learning_parameter_schedule(0.1),
                             C.momentum_schedule(0.9))
    printer = C.logging.ProgressPrinter(freq=1, tag="resume")
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [learner], [printer])
    return x, y, z, trainer


def _resume_source(C, path):
    return C.io.MinibatchSource(C.io.CTFDeserializer(path, C.io.StreamDefs(
        features=C.io.StreamDef(field="x", shape=3),
        labels=C.io.StreamDef(field="y", shape=2))), randomize=False)


@cntk_case(names=["cntk.training_session", "cntk.CheckpointConfig", "cntk.io.CTFDeserializer",
                  "cntk.learners.momentum_sgd", "cntk.logging.ProgressPrinter"],
           note="a training session over a CTF file with a CheckpointConfig (every 8 samples), "
                "stopped after 12 samples and run again by a new session of a new trainer "
                "(restore=True) up to 24: the printed losses and the parameters after it are "
                "those of one unbroken run of 24")
def user28_session_resumed(C, r):
    X, Y = r.randn(24, 3), r.onehot(24, 2)
    res = {}
    with r.tempdir() as folder:
        ctf = os.path.join(folder, "train.ctf")
        _write_ctf(ctf, [(i, {"x": X[i], "y": Y[i]}) for i in range(24)])
        for label, stops in (("unbroken", [24]), ("resumed", [12, 24])):
            ck = os.path.join(folder, label + ".ckp")
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                for stop in stops:
                    x, y, z, trainer = _resume_model(C, r)
                    src = _resume_source(C, ctf)
                    C.training_session(
                        trainer=trainer, mb_source=src, mb_size=4,
                        model_inputs_to_streams={x: src.streams.features,
                                                 y: src.streams.labels},
                        max_samples=stop, progress_frequency=8,
                        checkpoint_config=C.CheckpointConfig(ck, frequency=8, restore=True)
                    ).train()
            res[label + " printed"] = _printed(out.getvalue())
            res[label] = r.param_values(z.parameters)
            res[label + " samples"] = trainer.total_number_of_samples_seen
        res["files"] = sorted(f for f in os.listdir(folder) if f.endswith("ckp"))
    return res


# -- 2. a sequence classifier read from a CTF file ----------------------------------------------

@cntk_case(names=["cntk.sequence.input_variable", "cntk.layers.Embedding",
                  "cntk.layers.Recurrence", "cntk.layers.LSTM", "cntk.sequence.last",
                  "cntk.learning_parameter_schedule_per_sample",
                  "cntk.momentum_as_time_constant_schedule", "cntk.io.MinibatchSource",
                  "cntk.ops.functions.load_model", "cntk.Function.eval"],
           note="words and labels in one CTF file (sparse word ids, a dense label per "
                "sequence), Embedding, LSTM, sequence.last; momentum SGD on a per-sample rate "
                "with a time-constant momentum; ProgressPrinter(tag, freq, log_to_file); the "
                "model saved, loaded and evaluated on sequences of 1, 4 and 2 words; the "
                "Embedding's gradient is row-sparse, its momentum decayed on the rows the "
                "words select only (Matrix.cpp:1676-1689; Stadyn since cntklearn35, whose "
                "base decayed every row and differed in 'eval' and 'loaded eval')")
def user28_sequence_classifier_ctf(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.save")
    V, K = 6, 3
    rows = []
    for s in range(10):
        n = 1 + (s * 5) % 4
        words = r.randint(0, V, (n,))
        label = s % K
        for t in range(n):
            fields = {"w": ["%d:1" % words[t]]}
            if t == 0:
                fields["c"] = [1 if k == label else 0 for k in range(K)]
            rows.append((s, fields))
    res = {}
    with r.tempdir() as folder:
        ctf = os.path.join(folder, "seq.ctf")
        with open(ctf, "w") as f:
            for s, fields in rows:
                f.write("%d |w %s%s\n" % (s, fields["w"][0], "" if "c" not in fields else
                                          " |c " + " ".join(str(v) for v in fields["c"])))
        src = C.io.MinibatchSource(C.io.CTFDeserializer(ctf, C.io.StreamDefs(
            words=C.io.StreamDef(field="w", shape=V, is_sparse=True),
            label=C.io.StreamDef(field="c", shape=K, is_sparse=False))), randomize=False)
        x = C.sequence.input_variable(V, is_sparse=True, name="words")
        y = C.input_variable(K, name="label")
        model = C.layers.Sequential([C.layers.Embedding(4, name="emb"),
                                     C.layers.Recurrence(C.layers.LSTM(5), name="lstm"),
                                     C.sequence.last, C.layers.Dense(K, name="cls")])
        z = model(x)
        res["parameters"] = r.set_params(z.parameters)
        learner = C.momentum_sgd(z.parameters, C.learning_parameter_schedule_per_sample(0.05),
                                 C.momentum_as_time_constant_schedule(20))
        log = os.path.join(folder, "log.txt")
        printer = C.logging.ProgressPrinter(tag="seq", freq=2, log_to_file=log)
        trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y),
                                C.classification_error(z, y)), [learner], [printer])
        feed = {x: src.streams.words, y: src.streams.label}
        seqs = C.Value.one_hot([[2], [0, 5, 1, 1], [3, 4]], V)
        res["eval before"] = z.eval({x: seqs})
        losses = []
        for _ in range(6):
            mb = src.next_minibatch(9, input_map=feed)
            trainer.train_minibatch(mb)
            losses.append([trainer.previous_minibatch_loss_average,
                           trainer.previous_minibatch_sample_count])
            if len(losses) == 1:
                res["eval after one step"] = z.eval({x: seqs})
        printer.epoch_summary(with_metric=True)
        res["losses"] = losses
        with open(log) as f:
            res["log"] = _printed(f.read().replace(folder, "<folder>"))
        path = os.path.join(folder, "seq.model")
        z.save(path)
        m = C.load_model(path)
        res["eval"] = z.eval({x: seqs})
        res["loaded eval"] = m.eval({m.arguments[0]: seqs})
        res["loaded"] = [[a.name, list(a.shape), a.is_sparse] for a in m.arguments]
    return res


# -- 3. a user function and a user learner inside a trained model -------------------------------

def _softsign_class(C):
    class SoftSign(C.ops.functions.UserFunction):
        def __init__(self, arg, name="SoftSign"):
            super(SoftSign, self).__init__([arg], name=name)

        def forward(self, argument, device=None, outputs_to_retain=None):
            return argument, argument / (1.0 + np.abs(argument))

        def backward(self, state, root_gradients):
            return root_gradients / (1.0 + np.abs(state)) ** 2

        def infer_outputs(self):
            a = self.inputs[0]
            return [C.output_variable(a.shape, a.dtype, a.dynamic_axes)]
    return SoftSign


def _sign_sgd_class(C):
    class SignSGD(C.learners.UserLearner):
        def __init__(self, parameters, lr):
            super(SignSGD, self).__init__(parameters, lr)
            self.step = 0.02

        def update(self, gradient_values, training_sample_count, sweep_end):
            for p, g in gradient_values.items():
                p.set_value(C.NDArrayView.from_dense(
                    (p.value - self.step * np.sign(g.asarray())).astype(np.float32)))
            return True
    return SignSGD


@cntk_case(names=["cntk.ops.functions.UserFunction", "cntk.learners.UserLearner",
                  "cntk.user_function", "cntk.Trainer.train_minibatch"],
           note="a softsign written as a UserFunction (forward and backward in NumPy) between "
                "two Dense layers, one trained by sgd and the other by a sign-SGD UserLearner "
                "whose update sets the parameters through NDArrayView.from_dense; the losses, "
                "the parameters, the user function found by name after training")
def user28_user_function_and_learner(C, r):
    r.touch("cntk.Trainer.train_minibatch")
    x = C.input_variable(3, name="x")
    y = C.input_variable(2, name="y")
    first = C.layers.Dense(4, name="first")
    last = C.layers.Dense(2, name="last")
    z = last(C.user_function(_softsign_class(C)(first(x), name="soft")))
    res = {"parameters": r.set_params(z.parameters)}
    learners = [C.sgd(first.parameters, C.learning_parameter_schedule(0.2)),
                _sign_sgd_class(C)(list(last.parameters), C.learning_parameter_schedule(1.0))]
    trainer = C.Trainer(z, (C.squared_error(z, y), C.squared_error(z, y)), learners)
    X, Y = r.randn(12, 3), r.randn(12, 2)
    losses = []
    for i in range(0, 12, 4):
        trainer.train_minibatch({x: X[i:i + 4], y: Y[i:i + 4]})
        losses.append(trainer.previous_minibatch_loss_average)
    res["losses"] = losses
    res["after"] = r.param_values(z.parameters)
    soft = z.find_by_name("soft")
    res["found"] = [soft.name, list(soft.output.shape)]
    res["eval"] = z.eval({x: X[:3]})
    return res


# -- 4. a stack of layers under default_options ------------------------------------------------

def _set_in_order(r, params):
    """Seeded values by position as well as name (two residual blocks share names and sizes):
    the listing, in the framework's order, is compared too."""
    listing = []
    for i, p in enumerate(params):
        p.value = r.param_value("%s#%d" % (p.name, i), p.shape)
        listing.append([p.name, list(p.shape)])
    return listing


@cntk_case(names=["cntk.layers.Sequential", "cntk.layers.For", "cntk.layers.Stabilizer",
                  "cntk.layers.BatchNormalization", "cntk.layers.Dropout",
                  "cntk.layers.LayerNormalization", "cntk.layers.default_options",
                  "cntk.Function.update_signature"],
           note="a residual block (Dense, LayerNormalization, a skip joined by plus) made by "
                "For under default_options(activation=relu), Stabilizer and "
                "BatchNormalization, Dropout(0.5, seed=7) before the classifier; the model "
                "typed by update_signature and trained by momentum SGD (CNTK's dropout masks "
                "on both sides, from the given seed); the parameters and constants listed, "
                "outputs before and after, the running statistics")
def user28_layer_stack(C, r):
    r.touch("cntk.Function.update_signature")

    def residual(i):
        inner = C.layers.Sequential([C.layers.Dense(5, name="d%d" % i),
                                     C.layers.LayerNormalization(name="ln%d" % i)])
        return lambda v: C.plus(v, inner(v), name="skip%d" % i)
    with C.layers.default_options(activation=C.relu, init=C.glorot_uniform(seed=3)):
        model = C.layers.Sequential([
            C.layers.Dense(5, name="proj"),
            C.layers.For(range(2), residual),
            C.layers.Stabilizer(name="stab"),
            C.layers.BatchNormalization(name="bn"),
            C.layers.Dropout(0.5, seed=7, name="drop"),
            C.layers.Dense(3, activation=None, name="cls")])
    model.update_signature(4)
    res = {"arguments": [[a.name, list(a.shape)] for a in model.arguments],
           "parameters": _set_in_order(r, model.parameters),
           "constants": sorted([c.name, list(c.shape), np.asarray(c.value).tolist()]
                               for c in model.constants),
           "outputs": [list(o.shape) for o in model.outputs]}
    x = model.arguments[0]
    X = r.randn(6, 4)
    res["before"] = model.eval({x: X})
    y = C.input_variable(3, name="y")
    Y = r.onehot(6, 3)
    trainer = C.Trainer(model, (C.cross_entropy_with_softmax(model, y),
                                C.classification_error(model, y)),
                        [C.momentum_sgd(model.parameters,
                                        C.learning_parameter_schedule_per_sample(0.05),
                                        C.momentum_schedule(0.9))])
    losses = []
    for i in range(0, 6, 3):
        trainer.train_minibatch({x: X[i:i + 3], y: Y[i:i + 3]})
        losses.append(trainer.previous_minibatch_loss_average)
    res["losses"] = losses
    res["after"] = model.eval({x: X})
    res["statistics"] = [np.asarray(c.value) for c in model.find_by_name("bn").constants]
    res["names"] = [model.find_by_name("skip1").name,
                    model.find_by_name("stab").root_function.op_name]
    return res


# -- 5. gradients by hand and a frozen clone fine-tuned -----------------------------------------

@cntk_case(names=["cntk.Function.grad", "cntk.Function.forward", "cntk.Function.backward",
                  "cntk.ops.combine", "cntk.ops.as_composite", "cntk.Function.find_by_name",
                  "cntk.Function.clone", "cntk.CloneMethod"],
           note="grad of a loss with respect to two parameters and the input; forward with "
                "keep_for_backward of two outputs, backward of both; combine of hidden and "
                "output evaluated together; the feature part cloned with CloneMethod.freeze "
                "onto a new input, a new head trained: the frozen weights stay, the head moves")
def user28_grads_and_frozen_clone(C, r):
    r.touch("cntk.Function.grad", "cntk.Function.forward", "cntk.Function.backward",
            "cntk.Function.find_by_name", "cntk.Function.clone")
    x = C.input_variable(3, needs_gradient=True, name="x")
    y = C.input_variable(2, name="y")
    h = C.layers.Dense(4, activation=C.tanh, name="feat")(x)
    z = C.layers.Dense(2, name="head")(h)
    res = {"parameters": r.set_params(z.parameters)}
    loss = C.cross_entropy_with_softmax(z, y, name="loss")
    X, Y = r.randn(3, 3), r.onehot(3, 2)
    W = z.find_by_name("feat").parameters
    grads = loss.grad({x: X, y: Y}, wrt=[W[0], W[1], x])
    res["grad"] = [grads[W[0]], grads[W[1]], grads[x]]
    both = C.combine([h, z])
    state, outs = both.forward({x: X}, both.outputs, keep_for_backward=set([both.outputs[1]]))
    res["forward"] = [outs[o] for o in both.outputs]
    back = both.backward(state, {both.outputs[1]: np.ones_like(outs[both.outputs[1]])},
                         set([x]))
    res["backward"] = back[x]
    res["composite"] = [C.as_composite(z.root_function).eval({x: X[:1]}),
                        C.as_composite(h.owner).name]
    new_x = C.input_variable(3, name="new_x")
    feat = C.combine([z.find_by_name("feat").owner]).clone(C.CloneMethod.freeze, {x: new_x})
    head = C.layers.Dense(2, name="new_head")(feat)
    res["new parameters"] = r.set_params(head.parameters)
    res["frozen"] = [len(feat.parameters), sorted(list(c.shape) for c in feat.constants)]
    trainer = C.Trainer(head, (C.cross_entropy_with_softmax(head, y),
                               C.classification_error(head, y)),
                        [C.sgd(head.parameters, C.learning_parameter_schedule(0.5))])
    for i in range(3):
        trainer.train_minibatch({new_x: X, y: Y})
    res["tuned"] = r.param_values(head.parameters)
    res["frozen after"] = sorted(np.asarray(c.value).ravel().tolist() for c in feat.constants)
    res["original feat"] = r.param_values(W)
    return res


# -- 6. an image reader beside a CTF reader feeding a conv net ----------------------------------

def _png(path, pixels):
    import struct
    import zlib
    h, w = pixels.shape[:2]
    raw = b"".join(b"\0" + pixels[y].tobytes() for y in range(h))

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data +
                struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" +
                chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


@cntk_case(names=["cntk.io.ImageDeserializer", "cntk.io.CTFDeserializer",
                  "cntk.io.transforms.crop", "cntk.io.transforms.scale",
                  "cntk.layers.Convolution2D", "cntk.layers.MaxPooling",
                  "cntk.layers.GlobalAveragePooling"],
           note="a map file of 6 tiny PNGs read with center crop and scale to 8x8, composed "
                "with a CTF file of a side feature per image; a conv net (Convolution2D with "
                "pad, MaxPooling, GlobalAveragePooling) whose output is spliced with the side "
                "feature; two sweeps of minibatches of 4 trained by sgd; the minibatches and "
                "the losses")
def user28_image_and_ctf(C, r):
    T = C.io.transforms
    res = {}
    with r.tempdir() as folder:
        lines = []
        for i in range(6):
            p = os.path.join(folder, "im%d.png" % i)
            _png(p, r.randint(0, 256, (10 + i % 2, 12, 3), dtype=np.uint8))
            lines.append("%s\t%d\n" % (p, i % 3))
        with open(os.path.join(folder, "map.txt"), "w") as f:
            f.writelines(lines)
        side = r.randn(6, 2)
        _write_ctf(os.path.join(folder, "side.ctf"), [(i, {"s": side[i]}) for i in range(6)])
        images = C.io.ImageDeserializer(os.path.join(folder, "map.txt"), C.io.StreamDefs(
            image=C.io.StreamDef(field="image", transforms=[
                T.crop(crop_type="center", side_ratio=0.8),
                T.scale(width=8, height=8, channels=3, interpolations="linear")]),
            label=C.io.StreamDef(field="label", shape=3)))
        extra = C.io.CTFDeserializer(os.path.join(folder, "side.ctf"), C.io.StreamDefs(
            side=C.io.StreamDef(field="s", shape=2)))
        src = C.io.MinibatchSource([images, extra], randomize=False, max_sweeps=2)
        x = C.input_variable((3, 8, 8), name="image")
        s = C.input_variable(2, name="side")
        y = C.input_variable(3, name="label")
        with C.layers.default_options(activation=C.relu, pad=True):
            conv = C.layers.Sequential([C.layers.Convolution2D((3, 3), 4, name="c1"),
                                        C.layers.MaxPooling((2, 2), strides=2),
                                        C.layers.GlobalAveragePooling()])
        feats = C.reshape(conv(C.element_times(x, 1.0 / 255)), (4,))
        z = C.layers.Dense(3, name="cls")(C.splice(feats, s))
        res["parameters"] = r.set_params(z.parameters)
        trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y),
                                C.classification_error(z, y)),
                            [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
        feed = {x: src.streams.image, s: src.streams.side, y: src.streams.label}
        batches = []
        while True:
            mb = src.next_minibatch(4, input_map=feed)
            if not mb:
                break
            batches.append([mb[x].num_samples, mb[s].asarray().tolist(),
                            float(mb[x].asarray().sum())])
            trainer.train_minibatch(mb)
            batches[-1].append(trainer.previous_minibatch_loss_average)
        res["batches"] = batches
        res["after"] = r.param_values(z.parameters)
    return res


# -- 7. attention pooling over a sequence -------------------------------------------------------

@cntk_case(names=["cntk.sequence.softmax", "cntk.sequence.reduce_sum",
                  "cntk.sequence.broadcast_as", "cntk.learners.adagrad",
                  "cntk.learners.fsadagrad", "cntk.layers.Fold", "cntk.layers.GRU"],
           note="a GRU run forward and a Fold(GRU) summary broadcast back over the sequence; "
                "attention weights by sequence.softmax of a Dense score, the weighted sum by "
                "sequence.reduce_sum; the two halves trained by adagrad and fsadagrad; losses "
                "and the weights of one sequence")
def user28_attention_pooling(C, r):
    x = C.sequence.input_variable(3, name="x")
    y = C.input_variable(3, name="y")
    gru = C.layers.Recurrence(C.layers.GRU(4), name="gru")
    fold = C.layers.Fold(C.layers.GRU(5), name="fold")
    states = gru(x)
    summary = fold(x)
    joined = C.splice(states, C.sequence.broadcast_as(summary, states))
    score = C.layers.Dense(1, name="score")(joined)
    weights = C.sequence.softmax(score, name="weights")
    pooled = C.sequence.reduce_sum(weights * states)
    z = C.layers.Dense(3, name="cls")(pooled)
    res = {"parameters": r.set_params(z.parameters)}
    found = [z.find_by_name("gru"), z.find_by_name("fold")]
    res["found"] = [[f.name, f.is_block, len(f.parameters), list(f.output.shape)]
                    for f in found]
    rnn = list(gru.parameters) + list(fold.parameters)
    rest = [p for p in z.parameters if p.uid not in set(q.uid for q in rnn)]
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [C.adagrad(rnn, C.learning_parameter_schedule(0.1)),
                         C.fsadagrad(rest, C.learning_parameter_schedule(0.05),
                                     C.momentum_schedule(0.8))])
    losses = []
    for step in range(4):
        n = 2 + step % 2
        seqs = [r.randn(1 + (step + k) % 3, 3) for k in range(n)]
        trainer.train_minibatch({x: seqs, y: r.onehot(n, 3)})
        losses.append(trainer.previous_minibatch_loss_average)
    res["losses"] = losses
    seqs = [r.randn(4, 3), r.randn(2, 3)]
    res["weights"] = weights.eval({x: seqs})
    res["eval"] = z.eval({x: seqs})
    return res


# -- 8. a convolutional autoencoder ------------------------------------------------------------

@cntk_case(names=["cntk.layers.ConvolutionTranspose2D", "cntk.losses.binary_cross_entropy",
                  "cntk.eval.Evaluator", "cntk.learners.adam"],
           note="an autoencoder of 1x8x8 images: Convolution2D (stride 2, pad) and "
                "ConvolutionTranspose2D back to 8x8 (output_shape), a sigmoid, "
                "binary_cross_entropy; trained by adam with a unit-gain momentum; an Evaluator "
                "with a ProgressPrinter summary; the reconstruction of two images")
def user28_conv_autoencoder(C, r):
    x = C.input_variable((1, 8, 8), name="x")
    enc = C.layers.Convolution2D((3, 3), 3, strides=2, pad=True, activation=C.relu,
                                 name="enc")(x)
    dec = C.layers.ConvolutionTranspose2D((4, 4), 1, strides=2, pad=True,
                                          output_shape=(8, 8), name="dec")(enc)
    z = C.sigmoid(dec)
    res = {"parameters": r.set_params(z.parameters),
           "shapes": [list(enc.shape), list(dec.shape)]}
    loss = C.binary_cross_entropy(z, x)
    err = C.reduce_mean(C.square(z - x), axis=C.Axis.all_static_axes())
    trainer = C.Trainer(z, (loss, err), [C.adam(z.parameters, C.learning_parameter_schedule(
        0.01), C.momentum_schedule(0.9), unit_gain=True)])
    X = r.rand(10, 1, 8, 8)
    losses = []
    for i in range(0, 10, 5):
        trainer.train_minibatch({x: X[i:i + 5]})
        losses.append([trainer.previous_minibatch_loss_average,
                       trainer.previous_minibatch_evaluation_average])
    res["losses"] = losses
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        printer = C.logging.ProgressPrinter(tag="eval")
        ev = C.eval.Evaluator(err, [printer])
        res["test"] = [ev.test_minibatch({x: X[:4]}), ev.test_minibatch({x: X[4:]})]
        ev.summarize_test_progress()
    res["printed"] = _printed(out.getvalue())
    res["reconstruction"] = z.eval({x: X[:2]})
    return res


# -- what the programs found, one case each -----------------------------------------------------

@cntk_case(names=["cntk.Function.update_signature", "cntk.layers.Sequential", "cntk.Trainer"],
           note="a Sequential given its signature by update_signature is the Function it "
                "built: ops take it as an operand (cross_entropy_with_softmax(model, y) is "
                "built, not left waiting) and a Trainer trains it (Stadyn took it for a layer "
                "not applied yet: 'Deferred has no sequence_lengths')")
def user28_typed_layer_as_operand(C, r):
    r.touch("cntk.Function.update_signature")
    model = C.layers.Sequential([C.layers.Dense(4, name="h"), C.layers.Dense(2, name="o")])
    model.update_signature(3)
    res = {"parameters": r.set_params(model.parameters)}
    y = C.input_variable(2, name="y")
    loss = C.cross_entropy_with_softmax(model, y)
    res["loss"] = [list(loss.shape), sorted(a.name for a in loss.arguments)]
    trainer = C.Trainer(model, (loss, C.classification_error(model, y)),
                        [C.sgd(model.parameters, C.learning_parameter_schedule(0.1))])
    X, Y = r.randn(4, 3), r.onehot(4, 2)
    x = model.arguments[0]
    trainer.train_minibatch({x: X, y: Y})
    res["loss value"] = trainer.previous_minibatch_loss_average
    res["after"] = r.param_values(model.parameters)
    res["model"] = [trainer.model.name, [a.name for a in trainer.model.arguments]]
    return res


@cntk_case(names=["cntk.layers.For", "cntk.Function.update_signature"],
           note="For(range(2), lambda i: lambda v: plus(v, Dense(5)(v))): steps that make "
                "their Dense as they are called; once given a signature the layer lists the "
                "parameters the built graph reads (CNTK 2.7: 4; Stadyn listed none, so sgd "
                "refused 'no parameters to learn')")
def user28_for_of_step_functions(C, r):
    r.touch("cntk.Function.update_signature")
    model = C.layers.For(range(2), lambda i: (lambda v: C.plus(v, C.layers.Dense(5)(v))))
    model.update_signature(5)
    res = {"parameters": [[p.name, list(p.shape)] for p in model.parameters]}
    for i, p in enumerate(model.parameters):
        p.value = r.param_value("%s#%d" % (p.name, i), p.shape)
    x = model.arguments[0]
    X = r.randn(2, 5)
    res["eval"] = model.eval({x: X})
    trainer = C.Trainer(model, C.squared_error(model, C.input_variable(5, name="t")),
                        [C.sgd(model.parameters, C.learning_parameter_schedule(0.1))])
    trainer.train_minibatch({x: X, trainer.loss_function.arguments[1]: X})
    res["after"] = [np.asarray(p.value) for p in model.parameters]
    return res


@cntk_case(names=["cntk.layers.LayerNormalization", "cntk.Function.constants"],
           note="LayerNormalization's 'std + epsilon' holds epsilon as an unnamed Constant of "
                "shape () that Function.constants lists (CNTK 2.7's layers.py); none without "
                "epsilon")
def user28_layer_normalization_epsilon(C, r):
    r.touch("cntk.Function.constants")
    x = C.input_variable(4, name="x")
    res = {}
    for label, eps in (("default", None), ("given", 0.01), ("none", 0.0)):
        layer = C.layers.LayerNormalization() if eps is None else \
            C.layers.LayerNormalization(epsilon=eps)
        z = layer(x)
        res[label] = [[c.name, list(c.shape), np.asarray(c.value).tolist(), str(c.dtype)]
                      for c in z.constants]
        res[label + " eval"] = z.eval({x: r.randn(2, 4)})
    return res


@cntk_case(names=["cntk.learners.UserLearner"],
           note="a UserLearner whose subclass keeps its own attribute 'step' (a step size): "
                "CNTK's C++ learner calls the Python update, never that name (Stadyn's "
                "Trainer called learner.step: 'float' object is not callable)")
def user28_user_learner_attribute_step(C, r):
    x = C.input_variable(2, name="x")
    z = C.layers.Dense(1, name="d")(x)
    res = {"parameters": r.set_params(z.parameters)}
    learner = _sign_sgd_class(C)(list(z.parameters), C.learning_parameter_schedule(1.0))
    trainer = C.Trainer(z, C.squared_error(z, C.input_variable(1, name="t")), [learner])
    X, T = r.randn(3, 2), r.randn(3, 1)
    trainer.train_minibatch({x: X, trainer.loss_function.arguments[1]: T})
    res["after"] = r.param_values(z.parameters)
    res["step"] = learner.step
    return res

