"""Whole CNTK 2.x user programs as their authors write them: the layers API under
``default_options``, a Trainer with learners on schedules, ``find_by_name``, ``clone`` with
substitutions, ``save``/``load_model``, ``eval`` of dicts, plain data and sequences, a
checkpoint restored, a placeholder replaced."""

import os

import numpy as np

from compat_harness import cntk_case

_PROGRAM_NAMES = ["cntk.Function.find_by_name", "cntk.Function.clone", "cntk.Function.save",
                  "cntk.Function.eval", "cntk.Trainer.train_minibatch",
                  "cntk.Trainer.test_minibatch"]


@cntk_case(names=_PROGRAM_NAMES + ["cntk.layers.Embedding", "cntk.learners.momentum_sgd",
                                   "cntk.ops.functions.load_model"],
           note="a sequence classifier: Embedding, an LSTM recurrence (initial state from "
                "default_options), sequence.last, Dense; momentum SGD on a per-minibatch "
                "schedule by epochs of 4 samples, minibatches of changing size; the "
                "recurrence found by name, the model cloned onto another input, saved and "
                "loaded, and combined with its softmax")
def sequence_classifier_program(C, r):
    r.touch(*_PROGRAM_NAMES)
    V, E, H, K = 7, 4, 5, 3
    x = C.sequence.input_variable(V, name="words")
    y = C.input_variable(K, name="label")
    with C.layers.default_options(initial_state=0.1):
        model = C.layers.Sequential([C.layers.Embedding(E, name="embed"),
                                     C.layers.Recurrence(C.layers.LSTM(H), name="rnn"),
                                     C.sequence.last,
                                     C.layers.Dense(K, name="out")])
    z = model(x)
    res = {"parameters": r.set_params(z.parameters)}
    learner = C.momentum_sgd(z.parameters,
                             C.learning_parameter_schedule([0.5, 0.2, 0.1], epoch_size=4),
                             C.momentum_schedule(0.9), l2_regularization_weight=0.001)
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [learner])

    def batch(n):
        lengths = [1 + (3 * k + n) % 4 for k in range(n)]
        return ([r.onehot(m, V) for m in lengths], r.onehot(n, K))
    losses = []
    for k in range(5):
        seqs, labels = batch(2 + k % 2)
        trainer.train_minibatch({x: seqs, y: labels})
        losses.append([trainer.previous_minibatch_loss_average,
                       trainer.previous_minibatch_sample_count, learner.learning_rate()])
    res["losses"] = losses
    seqs, labels = batch(3)
    res["test"] = trainer.test_minibatch({x: seqs, y: labels})
    out = z.eval({x: seqs})
    res["eval"] = out
    res["eval of plain data"] = z.eval(seqs)
    rnn = z.find_by_name("rnn")
    res["found"] = [rnn.name, list(rnn.output.shape), z.find_by_name("out").root_function.op_name]
    frozen = C.combine([rnn]).clone(C.CloneMethod.freeze)
    res["frozen"] = [len(frozen.parameters), len(frozen.constants)]
    x2 = C.sequence.input_variable(V, name="w2")
    moved = z.clone(C.CloneMethod.share, {x: x2})
    res["moved"] = [[a.name for a in moved.arguments], moved.eval({x2: seqs})]
    with r.tempdir() as folder:
        path = os.path.join(folder, "m.model")
        z.save(path)
        m = C.load_model(path)
        res["loaded"] = [[a.name for a in m.arguments], [p.name for p in m.parameters],
                         m.find_by_name("out").name]
        res["loaded eval"] = m.eval({m.arguments[0]: seqs})
    both = C.combine([z, C.softmax(z)])
    values = both.eval({x: seqs})
    res["combined"] = [values[o] for o in both.outputs]
    return res


@cntk_case(names=_PROGRAM_NAMES[:5] + ["cntk.layers.For", "cntk.layers.BatchNormalization",
                                       "cntk.Function.with_signature", "cntk.learners.adam",
                                       "cntk.Trainer.save_checkpoint",
                                       "cntk.Trainer.restore_from_checkpoint",
                                       "cntk.Function.replace_placeholders",
                                       "cntk.Function.grad", "cntk.Function.find_all_with_name"],
           note="a feed-forward classifier typed by @Function.with_signature: Dense layers made "
                "by For under default_options(activation=tanh), batch normalisation; Adam on a "
                "per-sample schedule with L1; a checkpoint saved and restored; a new head "
                "applied to a placeholder (a Dense over a placeholder without a shape) and "
                "joined to an inner layer by replace_placeholders, whose result Stadyn left "
                "unbuilt (no output, no arguments)")
def feed_forward_program(C, r):
    r.touch(*(_PROGRAM_NAMES[:5] + ["cntk.Trainer.save_checkpoint",
                                    "cntk.Trainer.restore_from_checkpoint",
                                    "cntk.Function.replace_placeholders", "cntk.Function.grad",
                                    "cntk.Function.find_all_with_name",
                                    "cntk.Function.with_signature"]))
    D, K = 4, 3
    with C.layers.default_options(activation=C.tanh, init=C.glorot_uniform(seed=1)):
        body = C.layers.Sequential([
            C.layers.For(range(2), lambda i: C.layers.Dense(6 - i, name="h%d" % i)),
            C.layers.BatchNormalization(map_rank=1, name="bn"),
            C.layers.Dense(K, activation=None, name="out")])

    @C.Function.with_signature(C.layers.typing.Tensor[D])
    def model(x):
        return body(x)
    res = {"arguments": [[a.name, list(a.shape)] for a in model.arguments],
           "parameters": r.set_params(model.parameters),
           "constants": [[c.name, list(c.shape)] for c in model.constants]}
    x = model.arguments[0]
    y = C.input_variable(K)
    learner = C.adam(model.parameters,
                     C.learning_rate_schedule([0.01] * 2 + [0.005], C.UnitType.sample,
                                              epoch_size=6),
                     C.momentum_as_time_constant_schedule(100),
                     variance_momentum=C.momentum_as_time_constant_schedule(1000),
                     l1_regularization_weight=0.0001)
    trainer = C.Trainer(model, (C.cross_entropy_with_softmax(model, y),
                                C.classification_error(model, y)), learner)
    X = r.randn(18, D)
    Y = r.onehot(18, K)
    losses = []
    for i in range(0, 18, 3):
        trainer.train_minibatch({x: X[i:i + 3], y: Y[i:i + 3]})
        losses.append([trainer.previous_minibatch_loss_average, learner.learning_rate()])
    res["losses"] = losses
    res["eval"] = model.eval({x: X[:2]})
    res["statistics"] = [c.value for c in model.find_by_name("bn").constants]
    res["found"] = [sorted(f.name for f in model.find_all_with_name("h0")),
                    model.find_by_name("h1").root_function.op_name]
    with r.tempdir() as folder:
        path = os.path.join(folder, "ck")
        trainer.save_checkpoint(path)
        before = model.eval({x: X[:2]})
        trainer.train_minibatch({x: X[:3], y: Y[:3]})
        trainer.restore_from_checkpoint(path)
        res["restored"] = [model.eval({x: X[:2]}) - before, trainer.total_number_of_samples_seen]
    ph = C.placeholder(name="ph")
    head = C.layers.Dense(2, name="head")(ph)
    joined = head.replace_placeholders({ph: model.find_by_name("h1").output})
    res["joined"] = [[a.name for a in head.arguments], [a.name for a in joined.arguments],
                     list(joined.output.shape), len(joined.parameters)]
    res["joined parameters"] = r.set_params(joined.parameters[:2])   # the head's
    res["joined eval"] = joined.eval({joined.arguments[0]: X[:2]})
    res["grad"] = model.grad({x: X[:2]}, wrt=[model.parameters[0]])
    return res


@cntk_case(names=["cntk.Function.find_by_name", "cntk.Function.clone", "cntk.Function.eval",
                  "cntk.Trainer.train_minibatch", "cntk.ops.as_composite",
                  "cntk.io.MinibatchSource.next_minibatch", "cntk.layers.Convolution2D",
                  "cntk.layers.MaxPooling"],
           note="an image classifier trained from a CTF file (Convolution2D, MaxPooling, "
                "Dense under default_options(pad=True)); its convolution cloned onto a "
                "placeholder and applied to a new input; as_composite of a root function is "
                "a composite named as as_composite was told ('' by default), its root keeping "
                "its name (Stadyn's took the root's name, and refused name=)")
def image_classifier_program(C, r):
    r.touch("cntk.Function.find_by_name", "cntk.Function.clone", "cntk.Function.eval",
            "cntk.Trainer.train_minibatch", "cntk.io.MinibatchSource.next_minibatch")
    res = {}
    with r.tempdir() as folder:
        path = os.path.join(folder, "data.ctf")
        rows = r.randn(20, 18)
        with open(path, "w") as f:
            for i in range(20):
                f.write("|features %s |labels %s\n" % (
                    " ".join("%.3f" % v for v in rows[i]),
                    " ".join("1" if k == i % 2 else "0" for k in range(2))))
        source = C.io.MinibatchSource(C.io.CTFDeserializer(path, C.io.StreamDefs(
            features=C.io.StreamDef(field="features", shape=18),
            labels=C.io.StreamDef(field="labels", shape=2))), randomize=False, max_sweeps=2)
        x = C.input_variable((2, 3, 3), name="img")
        y = C.input_variable(2, name="lab")
        with C.layers.default_options(activation=C.relu, pad=True):
            z = C.layers.Sequential([C.layers.Convolution2D((2, 2), 3, name="conv"),
                                     C.layers.MaxPooling((2, 2), strides=1),
                                     C.layers.Dense(2, activation=None, name="fc")])(x)
        res["parameters"] = r.set_params(z.parameters)
        learner = C.sgd(z.parameters, C.learning_parameter_schedule([0.1, 0.05], epoch_size=10))
        trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y),
                                C.classification_error(z, y)), [learner])
        input_map = {x: source.streams.features, y: source.streams.labels}
        losses = []
        for _ in range(6):
            trainer.train_minibatch(source.next_minibatch(4, input_map=input_map))
            losses.append([trainer.previous_minibatch_loss_average, learner.learning_rate(),
                           trainer.total_number_of_samples_seen])
        res["losses"] = losses
    conv = z.find_by_name("conv")
    ph = C.placeholder()
    x2 = C.input_variable((2, 3, 3), name="x2")
    applied = C.combine([conv]).clone(C.CloneMethod.clone, {x: ph})(x2)
    X = r.randn(2, 2, 3, 3)
    res["applied"] = [[a.name for a in applied.arguments], list(applied.output.shape),
                      len(applied.parameters)]
    res["applied eval"] = applied.eval({x2: X}) - C.as_composite(conv).eval({x: X})
    composite = C.as_composite(z.root_function)
    res["as_composite"] = [composite.name, composite.root_function.name,
                           C.as_composite(z.root_function, name="m").name,
                           C.as_composite(z, name="m").name,
                           [a.name for a in composite.arguments]]
    res["eval"] = composite.eval({x: X})
    res["eval of a list"] = z.eval({x: [X[0], X[1]]})
    return res


def _own(f):
    return [[p.name for p in f.parameters], [c.name for c in f.constants], len(f.inputs),
            f.is_composite]


@cntk_case(names=["cntk.Function.load", "cntk.Function.find_by_name", "cntk.Function.clone",
                  "cntk.Function.parameters", "cntk.Function.constants",
                  "cntk.Function.root_function", "cntk.learners.Learner.reset_learning_rate",
                  "cntk.Trainer.parameter_learners", "cntk.learners.Learner.parameters"],
           note="transfer learning: a saved model loaded with Function.load, its feature layer "
                "frozen by clone onto a placeholder, a new head trained; then one learner per "
                "layer, each given find_by_name(layer).parameters. A root function (a block, "
                "a primitive op) lists the parameters and constants among its own inputs only "
                "(CNTK 2.7: the Dense block d2 has W and b); Stadyn listed every parameter of "
                "the graph below it, so the second learner also updated d1's; a learner's "
                "parameters are CNTK Parameters (named W, not Stadyn's dense/W)")
def transfer_learning_program(C, r):
    r.touch("cntk.Function.find_by_name", "cntk.Function.clone", "cntk.Function.parameters",
            "cntk.Function.constants", "cntk.Function.root_function",
            "cntk.Trainer.parameter_learners", "cntk.Function.load",
            "cntk.learners.Learner.reset_learning_rate", "cntk.learners.Learner.parameters")
    x = C.input_variable(4, name="x")
    y = C.input_variable(2, name="y")
    base = C.layers.Sequential([C.layers.Dense(5, activation=C.sigmoid, name="feat"),
                                C.layers.Dense(2, name="cls")])(x)
    res = {"base": r.set_params(base.parameters)}
    X = r.randn(8, 4)
    Y = r.onehot(8, 2)
    with r.tempdir() as folder:
        path = os.path.join(folder, "base.model")
        base.save(path)
        loaded = C.Function.load(path)
    feat = loaded.find_by_name("feat")
    frozen = C.combine([feat.output]).clone(C.CloneMethod.freeze,
                                            {loaded.arguments[0]: C.placeholder(name="ph")})
    res["frozen"] = [len(frozen.parameters), len(frozen.constants),
                     [p.name for p in frozen.placeholders]]
    x2 = C.input_variable(4, name="x2")
    head = C.layers.Dense(2, name="head")
    z = head(frozen(x2))
    res["head"] = r.set_params(head.parameters)
    learner = C.sgd(head.parameters, C.learning_parameter_schedule(0.3))
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [learner])
    losses = []
    for i in range(0, 8, 2):
        trainer.train_minibatch({x2: X[i:i + 2], y: Y[i:i + 2]})
        losses.append(trainer.previous_minibatch_loss_average)
    learner.reset_learning_rate(C.learning_parameter_schedule(0.1))
    trainer.train_minibatch({x2: X[:2], y: Y[:2]})
    losses.append([learner.learning_rate(), trainer.previous_minibatch_loss_average])
    res["losses"] = losses
    res["learners"] = [[p.name for p in l.parameters] for l in trainer.parameter_learners]
    res["feature layer kept"] = C.as_composite(feat).eval({loaded.arguments[0]: X[:2]})

    z2 = C.layers.Dense(2, name="d2")(C.layers.Dense(3, name="d1")(x))
    res["two layers"] = r.set_params(z2.parameters)
    p = C.parameter((2,), init=0.5, name="p")
    k = C.constant(np.full(2, 2.0, np.float32), name="k")
    w = (z2 + p) * k
    res["root functions"] = {"d2": _own(z2.find_by_name("d2")), "d1": _own(z2.find_by_name("d1")),
                             "root": _own(z2.root_function), "composite": _own(z2),
                             "times": _own(w.root_function), "plus": _own(
                                 w.root_function.inputs[0].owner), "w": _own(w)}
    first = C.sgd(z2.find_by_name("d1").parameters, C.learning_parameter_schedule(0.2))
    second = C.momentum_sgd(z2.find_by_name("d2").parameters,
                            C.learning_parameter_schedule(0.1), C.momentum_schedule(0.5))
    trainer2 = C.Trainer(z2, (C.squared_error(z2, y), None), [first, second])
    for i in range(3):
        trainer2.train_minibatch({x: X[i:i + 3], y: Y[i:i + 3]})
    res["two learners"] = [trainer2.previous_minibatch_loss_average, z2.eval({x: X[:2]})]
    res["their parameters"] = [[list(p.shape) for p in l.parameters] for l in (first, second)]
    return res
