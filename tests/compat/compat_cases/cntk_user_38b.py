"""A CNTK 2.7 user's own programs (round 38, second part): CNTK_206A's GAN with two Trainers and
their printers, a ProgressPrinter driven by hand and a TrainingSummaryProgressCallback,
``universal`` learners written with ``assign``, CNTK's ``SimpleMNIST.py`` example by a
training session over a CTF file, CNTK_302's super-resolution pieces (a residual VDSR and a
sub-pixel ``depth_to_space`` upscaler), learners given a reference ``minibatch_size``, and a
bidirectional GRU tagger as CNTK's LanguageUnderstanding example writes it; each is run unchanged
on CNTK 2.7 and on ``stadyn.compat.cntk``."""

import contextlib
import io
import os
import re

import numpy as np

from compat_harness import cntk_case

_TIMING = re.compile(r"\d+\.\d+s \( *\d+\.\d+ samples/s\)")
_NUMBER = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?")


def _printed(text):
    """Printed lines, timings masked, their decimals apart (compared to the harness's
    tolerance: the last printed digit may round either way)."""
    lines = [_TIMING.sub("<time>", ln) for ln in text.splitlines() if ln.strip()]
    return [[_NUMBER.sub("#", ln), [float(v) for v in _NUMBER.findall(ln)]] for ln in lines]


# -- 8. CNTK_206A: a GAN trained by two Trainers, each with its ProgressPrinter ------------------

@cntk_case(names=["cntk.Function.clone", "cntk.logging.ProgressPrinter", "cntk.learners.adam",
                  "cntk.Trainer.summarize_training_progress", "cntk.ops.log",
                  "cntk.layers.Dense", "cntk.Trainer.previous_minibatch_loss_average"],
           rtol=1e-4, atol=1e-5,
           note="CNTK_206A's build_graph, small: a generator Dense(relu) -> Dense(tanh), a "
                "discriminator Dense(relu) -> Dense(sigmoid) over x_real / 255 - 0.5 "
                "(x_real_scaled), cloned with method='share' and substitutions="
                "{x_real_scaled.output: X_fake.output}; G_loss = 1 - log(D_fake), D_loss = "
                "-(log(D_real) + log(1 - D_fake)); two adam learners (learning_parameter_"
                "schedule(0.002), momentum_schedule(0.5)) in two Trainers, each with a "
                "ProgressPrinter(freq=2); k=2 discriminator steps per generator step, four "
                "rounds; then summarize_training_progress on both; the printed lines, the "
                "losses, the generated samples")
def user38_gan_two_trainers(C, r):
    r.touch("cntk.Function.clone", "cntk.Trainer.summarize_training_progress",
            "cntk.Trainer.previous_minibatch_loss_average")
    g_in, g_out, h = 3, 4, 5
    z = C.input_variable(g_in, name="z")
    x_real = C.input_variable(g_out, name="x_real")
    X_fake = C.layers.Sequential([C.layers.Dense(h, activation=C.relu, name="g_h"),
                                  C.layers.Dense(g_out, activation=C.tanh, name="g_o")])(z)
    x_real_scaled = x_real / 255.0 - 0.5
    D_real = C.layers.Sequential([C.layers.Dense(h + 1, activation=C.relu, name="d_h"),
                                  C.layers.Dense(1, activation=C.sigmoid, name="d_o")])(
        x_real_scaled)
    D_fake = D_real.clone(method="share",
                          substitutions={x_real_scaled.output: X_fake.output})
    res = {"parameters": r.set_params(list(X_fake.parameters) + list(D_real.parameters))}
    G_loss = 1.0 - C.log(D_fake)
    D_loss = -(C.log(D_real) + C.log(1.0 - D_fake))
    G_learner = C.adam(X_fake.parameters, lr=C.learning_parameter_schedule(0.002),
                       momentum=C.momentum_schedule(0.5))
    D_learner = C.adam(D_real.parameters, lr=C.learning_parameter_schedule(0.002),
                       momentum=C.momentum_schedule(0.5))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        pp_G = C.logging.ProgressPrinter(2, tag="G")
        pp_D = C.logging.ProgressPrinter(2, tag="D")
        G_trainer = C.Trainer(X_fake, (G_loss, None), G_learner, pp_G)
        D_trainer = C.Trainer(D_real, (D_loss, None), D_learner, pp_D)
        losses = []
        for _ in range(4):
            for _ in range(2):
                Z = r.randn(4, g_in)
                X = (r.rand(4, g_out) * 255.0).astype(np.float32)
                D_trainer.train_minibatch({x_real: X, z: Z})
            G_trainer.train_minibatch({z: r.randn(4, g_in)})
            losses.append([D_trainer.previous_minibatch_loss_average,
                           G_trainer.previous_minibatch_loss_average])
        D_trainer.summarize_training_progress()
        G_trainer.summarize_training_progress()
    res["printed"] = _printed(out.getvalue())
    res["losses"] = losses
    res["generated"] = X_fake.eval({z: r.randn(3, g_in)})
    res["D_fake arguments"] = sorted(a.name for a in D_fake.arguments)
    return res


# -- 9. a ProgressPrinter driven by hand; a TrainingSummaryProgressCallback ---------------------

@cntk_case(names=["cntk.logging.ProgressPrinter", "cntk.logging.TrainingSummaryProgressCallback",
                  "cntk.logging.ProgressPrinter.update",
                  "cntk.logging.ProgressPrinter.epoch_summary",
                  "cntk.logging.ProgressPrinter.avg_loss_since_start",
                  "cntk.logging.ProgressPrinter.avg_metric_since_start",
                  "cntk.logging.ProgressPrinter.avg_loss_since_last",
                  "cntk.logging.ProgressPrinter.avg_metric_since_last",
                  "cntk.logging.ProgressPrinter.log", "cntk.logging.ProgressPrinter.write",
                  "cntk.logging.ProgressPrinter.update_with_trainer",
                  "cntk.logging.ProgressPrinter.end_progress_print",
                  "cntk.Trainer.summarize_test_progress", "cntk.logging.log_number_of_parameters"],
           rtol=1e-4, atol=1e-5,
           note="the 2017-era tutorials' hand-driven printer: ProgressPrinter(freq=2, first=1, "
                "tag='Hand', num_epochs=2, metric_is_pct=False) fed by update(loss, size, "
                "metric) five times, its averages since start and since last, epoch_summary("
                "with_metric=True), log, write, end_progress_print; a second printer fed by "
                "update_with_trainer(trainer, with_metric=True); a Trainer with a "
                "TrainingSummaryProgressCallback(epoch_size=4, callback) and a ProgressPrinter"
                "(tag='T', test_freq=1), trained on minibatches of 3, 2, 4, 1, summarized, then "
                "tested on two minibatches and summarized; log_number_of_parameters; the "
                "printed lines and what the callback was given")
def user38_printer_by_hand_and_callback(C, r):
    r.touch("cntk.logging.ProgressPrinter.update", "cntk.logging.ProgressPrinter.epoch_summary",
            "cntk.logging.ProgressPrinter.avg_loss_since_start",
            "cntk.logging.ProgressPrinter.avg_metric_since_start",
            "cntk.logging.ProgressPrinter.avg_loss_since_last",
            "cntk.logging.ProgressPrinter.avg_metric_since_last",
            "cntk.logging.ProgressPrinter.log", "cntk.logging.ProgressPrinter.write",
            "cntk.logging.ProgressPrinter.update_with_trainer",
            "cntk.logging.ProgressPrinter.end_progress_print",
            "cntk.Trainer.summarize_test_progress")
    res = {}
    out = io.StringIO()
    calls = []
    with contextlib.redirect_stdout(out):
        pp = C.logging.ProgressPrinter(freq=2, first=1, tag="Hand", num_epochs=2,
                                       metric_is_pct=False)
        averages = []
        for loss, n, metric in [(1.5, 4, 0.5), (1.2, 2, 0.25), (0.9, 3, 0.75), (0.7, 4, 0.1),
                                (0.6, 1, 0.0)]:
            pp.update(loss, n, metric)
            averages.append([pp.avg_loss_since_start(), pp.avg_metric_since_start(),
                             pp.avg_loss_since_last(), pp.avg_metric_since_last()])
        res["averages"] = averages
        res["epoch summary"] = pp.epoch_summary(with_metric=True)
        pp.log("a line of my own")
        pp.write("key", 3.25)
        pp.end_progress_print("done")

        x = C.input_variable(3, name="x")
        y = C.input_variable(2, name="y")
        z = C.layers.Dense(2, name="out")(C.layers.Dense(4, activation=C.relu, name="h")(x))
        res["parameters"] = r.set_params(z.parameters)
        C.logging.log_number_of_parameters(z)
        cb = C.logging.TrainingSummaryProgressCallback(
            4, lambda epoch, loss, metric, samples: calls.append([epoch, loss, metric, samples]))
        pt = C.logging.ProgressPrinter(tag="T", test_freq=1)
        trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y),
                                C.classification_error(z, y)),
                            [C.sgd(z.parameters, C.learning_parameter_schedule(0.2))], [cb, pt])
        hand = C.logging.ProgressPrinter(tag="H2")
        for n in (3, 2, 4, 1):
            trainer.train_minibatch({x: r.randn(n, 3), y: r.onehot(n, 2)})
            hand.update_with_trainer(trainer, with_metric=True)
        trainer.summarize_training_progress()
        hand.epoch_summary(with_metric=True)
        res["tests"] = [trainer.test_minibatch({x: r.randn(n, 3), y: r.onehot(n, 2)})
                        for n in (3, 5)]
        trainer.summarize_test_progress()
    res["printed"] = _printed(out.getvalue())
    res["callback"] = calls
    return res


# -- 10. universal learners written with assign ---------------------------------------------------

@cntk_case(names=["cntk.learners.universal", "cntk.ops.assign", "cntk.ops.constant",
                  "cntk.ops.sqrt", "cntk.ops.combine"],
           rtol=1e-4, atol=1e-5,
           note="the universal learner's docstring example: an adagrad-like update written "
                "with assign to constants of the parameters' shapes (accumulators, "
                "assign(a, a + g * g)), and a plain sgd by assign(p, p - 0.1 * g); each "
                "trains the same small regressor on minibatches of 2, 3 and 1; the losses, the "
                "parameters, the accumulators' values after")
def user38_universal_learners(C, r):
    x = C.input_variable(3, name="x")
    y = C.input_variable(2, name="y")
    res = {}
    for kind in ("adagrad", "sgd"):
        z = C.layers.Dense(2, name="lin")(C.layers.Dense(3, activation=C.tanh, name="hid")(x))
        res["parameters"] = r.set_params(z.parameters)
        accumulators = []

        def my_adagrad(parameters, gradients):
            updates = []
            for p, g in zip(parameters, gradients):
                a = C.constant(0, shape=p.shape, dtype=p.dtype, name="accum")
                accumulators.append(a)
                accum_new = C.assign(a, a + g * g)
                updates.append(C.assign(p, p - 0.05 * g / C.sqrt(accum_new + 1e-6)))
            return C.combine(updates)

        def my_sgd(parameters, gradients):
            return C.combine([C.assign(p, p - 0.1 * g) for p, g in zip(parameters, gradients)])
        learner = C.universal(my_adagrad if kind == "adagrad" else my_sgd, z.parameters)
        trainer = C.Trainer(z, (C.squared_error(z, y), None), [learner])
        losses = []
        for n in (2, 3, 1):
            trainer.train_minibatch({x: r.randn(n, 3), y: r.randn(n, 2)})
            losses.append(trainer.previous_minibatch_loss_average)
        res[kind + " losses"] = losses
        for k, v in r.param_values(z.parameters).items():
            res[kind + " " + k] = v
        res[kind + " accumulators"] = sorted(np.asarray(a.value).ravel().tolist()
                                             for a in accumulators)
    return res


# -- 11. SimpleMNIST.py: a training session over a CTF file, adadelta, then tested --------------

@cntk_case(names=["cntk.train.training_session", "cntk.learners.adadelta", "cntk.layers.For",
                  "cntk.ops.element_times", "cntk.io.CTFDeserializer",
                  "cntk.io.MinibatchSource", "cntk.logging.ProgressPrinter",
                  "cntk.Trainer.test_minibatch"],
           rtol=1e-4, atol=1e-5,
           note="CNTK's Examples/Image/Classification/MLP/Python/SimpleMNIST.py, small: "
                "images of 12 values and 3 classes in a CTF file of 20 samples; "
                "element_times(constant(0.00390625), feature), Sequential([For(range(2), "
                "lambda i: Dense(5, activation=relu)), Dense(3)]); adadelta("
                "learning_parameter_schedule_per_sample(1)); a ProgressPrinter(tag='Training', "
                "num_epochs=3); training_session(mb_size=8, max_samples=60, "
                "progress_frequency=20) over a reader with randomize=True and "
                "INFINITELY_REPEAT; then the test reader (randomize=False, one sweep) in "
                "minibatches of 8; printed lines, test errors, parameters")
def user38_simple_mnist_session(C, r):
    r.touch("cntk.Trainer.test_minibatch")
    dim, classes = 12, 3
    res = {}
    with r.tempdir() as folder:
        path = os.path.join(folder, "Train-cntk_text.txt")
        labels = r.randint(0, classes, (20,))
        pixels = r.randint(0, 256, (20, dim))
        with open(path, "w") as f:
            for lab, px in zip(labels, pixels):
                f.write("|labels %s |features %s\n" % (
                    " ".join("1" if i == lab else "0" for i in range(classes)),
                    " ".join(str(int(v)) for v in px)))

        def create_reader(is_training):
            return C.io.MinibatchSource(C.io.CTFDeserializer(path, C.io.StreamDefs(
                features=C.io.StreamDef(field="features", shape=dim, is_sparse=False),
                labels=C.io.StreamDef(field="labels", shape=classes, is_sparse=False))),
                randomize=is_training,
                max_sweeps=C.io.INFINITELY_REPEAT if is_training else 1)
        feature = C.input_variable(dim, np.float32)
        label = C.input_variable(classes, np.float32)
        scaled_input = C.element_times(C.constant(0.00390625), feature)
        z = C.layers.Sequential([
            C.layers.For(range(2), lambda i: C.layers.Dense(5, activation=C.relu)),
            C.layers.Dense(classes)])(scaled_input)
        res["parameters"] = sorted([p.name, list(p.shape)] for p in z.parameters)
        for i, p in enumerate(sorted(z.parameters, key=lambda p: (p.name, p.shape))):
            p.value = r.param_value("p%d" % i, p.shape)
        ce = C.cross_entropy_with_softmax(z, label)
        pe = C.classification_error(z, label)
        reader_train = create_reader(True)
        input_map = {feature: reader_train.streams.features,
                     label: reader_train.streams.labels}
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            progress = [C.logging.ProgressPrinter(tag="Training", num_epochs=3)]
            trainer = C.Trainer(z, (ce, pe), C.adadelta(
                z.parameters, C.learning_parameter_schedule_per_sample(1)), progress)
            C.training_session(trainer=trainer, mb_source=reader_train, mb_size=8,
                               model_inputs_to_streams=input_map, max_samples=60,
                               progress_frequency=20).train()
        res["printed"] = _printed(out.getvalue())
        reader_test = create_reader(False)
        input_map = {feature: reader_test.streams.features,
                     label: reader_test.streams.labels}
        errors = []
        for _ in range(3):
            mb = reader_test.next_minibatch(8, input_map=input_map)
            if not mb:
                break
            errors.append(trainer.test_minibatch(mb))
        res["test errors"] = errors
        res["values"] = sorted([p.name, np.asarray(p.value).ravel().tolist()]
                               for p in z.parameters)
    return res


# -- 12. CNTK_302's pieces: a residual VDSR and a sub-pixel upscaler ------------------------------

@cntk_case(names=["cntk.layers.Convolution2D", "cntk.ops.depth_to_space",
                  "cntk.layers.BatchNormalization", "cntk.ops.plus", "cntk.losses.squared_error",
                  "cntk.ops.param_relu", "cntk.ops.reduce_mean"],
           rtol=1e-4, atol=1e-4,
           note="CNTK_302B's VDSR (three 3x3 Convolution2D with pad=True, relu between, the "
                "input added back: residual learning, the loss squared_error / pixels) and "
                "a sub-pixel upscaler (Convolution2D to 4x channels, depth_to_space(block_"
                "size=2), BatchNormalization, param_relu with a parameter of 0.25s); each "
                "trained two steps by adam on 6x6 patches; losses, outputs, parameters and "
                "the batch normalization's running statistics")
def user38_superres_pieces(C, r):
    res = {}
    x = C.input_variable((1, 6, 6), name="lowres")
    t = C.input_variable((1, 6, 6), name="target")
    with C.layers.default_options(init=C.glorot_uniform(), pad=True):
        h = C.layers.Convolution2D((3, 3), 3, activation=C.relu, name="c1")(x)
        h = C.layers.Convolution2D((3, 3), 2, activation=C.relu, name="c2")(h)
        h = C.layers.Convolution2D((3, 3), 1, activation=None, name="c3")(h)
    vdsr = C.plus(h, x)
    res["vdsr parameters"] = r.set_params(vdsr.parameters)
    loss = C.squared_error(vdsr, t) / 36.0
    tr = C.Trainer(vdsr, (loss, None), [C.adam(vdsr.parameters, C.learning_parameter_schedule(
        0.01), C.momentum_schedule(0.9))])
    X, T = r.rand(2, 1, 6, 6), r.rand(2, 1, 6, 6)
    steps = []
    for _ in range(2):
        tr.train_minibatch({x: X, t: T})
        steps.append(tr.previous_minibatch_loss_average)
    res["vdsr losses"] = steps
    res["vdsr out"] = vdsr.eval({x: X[:1]})
    res["vdsr values"] = r.param_values(vdsr.parameters)

    u = C.input_variable((2, 3, 3), name="small")
    big = C.input_variable((2, 6, 6), name="big")
    alpha = C.parameter((8, 6, 6), init=0.25, name="prelu_alpha")
    h = C.layers.Convolution2D((3, 3), 8, pad=True, name="up_conv")(u)
    h = C.depth_to_space(h, block_size=2)
    h = C.layers.BatchNormalization(map_rank=1, name="bn")(h)
    up = C.param_relu(C.slice(alpha, 0, 0, 2), h)
    res["up shape"] = list(up.shape)
    params = [p for p in up.parameters if p.name != "prelu_alpha"]
    res["up parameters"] = r.set_params(params)
    tr2 = C.Trainer(up, (C.reduce_mean(C.square(up - big)), None), [C.adam(
        up.parameters, C.learning_parameter_schedule(0.01), C.momentum_schedule(0.9))])
    U, B = r.randn(3, 2, 3, 3), r.randn(3, 2, 6, 6)
    steps = []
    for _ in range(2):
        tr2.train_minibatch({u: U, big: B})
        steps.append(tr2.previous_minibatch_loss_average)
    res["up losses"] = steps
    res["up out"] = up.eval({u: U[:1]})
    res["up values"] = r.param_values(up.parameters)
    res["bn statistics"] = sorted([c.name, np.asarray(c.value).ravel().tolist()]
                                  for c in up.constants if c.name)
    return res


# -- 13. learners given a reference minibatch_size -----------------------------------------------

@cntk_case(names=["cntk.learners.sgd", "cntk.learners.momentum_sgd", "cntk.learners.IGNORE",
                  "cntk.learners.learning_parameter_schedule"],
           rtol=1e-4, atol=1e-5,
           note="CNTK 2.2's minibatch_size argument: sgd(lr=0.1, minibatch_size=4) (the "
                "gradient summed and scaled by 4 / actual size... as CNTK computes it), sgd("
                "lr=0.1, minibatch_size=IGNORE) (the sum, no mean), momentum_sgd(lr=0.1, "
                "momentum=0.9, minibatch_size=2) and a learning_parameter_schedule(0.1, "
                "minibatch_size=3) given to sgd; minibatches of 2, 4, 1, 3; the losses, the "
                "learners' learning_rate() and the parameters after")
def user38_learners_reference_minibatch(C, r):
    r.touch("cntk.Learner.learning_rate")
    x = C.input_variable(3, name="x")
    y = C.input_variable(1, name="y")
    makers = [
        ("mb4", lambda ps: C.learners.sgd(ps, lr=0.1, minibatch_size=4)),
        ("ignore", lambda ps: C.learners.sgd(ps, lr=0.1, minibatch_size=C.learners.IGNORE)),
        ("momentum mb2", lambda ps: C.learners.momentum_sgd(ps, lr=0.1, momentum=0.9,
                                                             minibatch_size=2)),
        ("schedule mb3", lambda ps: C.learners.sgd(ps, lr=C.learning_parameter_schedule(
            0.1, minibatch_size=3))),
    ]
    batches = [(r.randn(n, 3), r.randn(n, 1)) for n in (2, 4, 1, 3)]
    res = {}
    for name, make in makers:
        z = C.layers.Dense(1, name="lin")(x)
        res["parameters"] = r.set_params(z.parameters)
        learner = make(z.parameters)
        trainer = C.Trainer(z, (C.squared_error(z, y), None), [learner])
        steps = []
        for X, Y in batches:
            trainer.train_minibatch({x: X, y: Y})
            steps.append([trainer.previous_minibatch_loss_average, learner.learning_rate()])
        res[name] = steps
        for k, v in r.param_values(z.parameters).items():
            res[name + " " + k] = v
    return res


# -- 14. a bidirectional GRU slot tagger (LanguageUnderstanding.py's BiRecurrence) ---------------

@cntk_case(names=["cntk.layers.GRU", "cntk.layers.Recurrence", "cntk.layers.Embedding",
                  "cntk.ops.splice", "cntk.layers.Sequential", "cntk.learners.adam"],
           rtol=1e-4, atol=1e-5,
           note="CNTK's Examples/LanguageUnderstanding/ATIS/Python/LanguageUnderstanding.py "
                "BiRecurrence(fwd, bwd): splice(Recurrence(fwd)(x), Recurrence(bwd, "
                "go_backwards=True)(x)), here with GRU steps of 3 and 2 over an Embedding(4), "
                "then Dense(3) per step; adam with a per-sample rate; ragged sequences of "
                "3, 1, 4 and 2 steps; the per-step outputs, two steps' losses and errors, "
                "the parameters after")
def user38_bidirectional_gru_tagger(C, r):
    V, K = 6, 3
    x = C.sequence.input_variable(V, name="words")
    y = C.sequence.input_variable(K, name="slots")

    def BiRecurrence(fwd, bwd):
        F = C.layers.Recurrence(fwd)
        G = C.layers.Recurrence(bwd, go_backwards=True)
        xx = C.placeholder()
        return C.splice(F(xx), G(xx))
    z = C.layers.Sequential([C.layers.Embedding(4, name="embed"),
                             BiRecurrence(C.layers.GRU(3), C.layers.GRU(2)),
                             C.layers.Dense(K, name="classify")])(x)
    res = {"parameters": sorted([p.name, list(p.shape)] for p in z.parameters)}
    for i, p in enumerate(sorted(z.parameters, key=lambda p: (p.name, list(p.shape)))):
        p.value = r.param_value("p%d_%s" % (i, p.name), p.shape)
    lengths = (3, 1, 4, 2)
    words = [np.eye(V, dtype=np.float32)[r.randint(0, V, (n,))] for n in lengths]
    slots = [np.eye(K, dtype=np.float32)[r.randint(0, K, (n,))] for n in lengths]
    res["outputs"] = [np.asarray(v) for v in z.eval({x: words})]
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y),
                            C.classification_error(z, y)),
                        [C.adam(z.parameters, C.learning_parameter_schedule_per_sample(0.02),
                                C.momentum_schedule_per_sample(0.9))])
    steps = []
    for _ in range(2):
        trainer.train_minibatch({x: words, y: slots})
        steps.append([trainer.previous_minibatch_loss_average,
                      trainer.previous_minibatch_evaluation_average,
                      trainer.previous_minibatch_sample_count])
    res["steps"] = steps
    res["values"] = sorted([p.name, np.asarray(p.value).ravel().tolist()]
                           for p in z.parameters)
    return res
