"""A CNTK 2.7 user's own programs (round 39), in the style of CNTK's tutorials: CNTK_103B's
logistic regression with a ProgressPrinter logging to a file, CNTK_103C's multi-layer
perceptron under ``default_options``, CNTK_105's deep autoencoder with its encoder taken out by
name, a multi-task model trained on a sum of two losses over ``combine``, CNTK_303's DSSM with
``cosine_distance_with_negative_samples``, and CNTK_301's Fast R-CNN head over ``roipooling``;
each is run unchanged on CNTK 2.7 and on ``stadyn.compat.cntk``."""

import contextlib
import io
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


def _blobs(r, n, dim, classes):
    """CNTK_103A's generate_random_data_sample, small: class ``k``'s points around ``k + 1``."""
    labels = r.randint(0, classes, (n,))
    X = (r.randn(n, dim) + 3.0) * (labels[:, None] + 1).astype(np.float32)
    return X.astype(np.float32), np.eye(classes, dtype=np.float32)[labels]


# -- 1. CNTK_103B: logistic regression, a ProgressPrinter to stdout and to a log file -----------

@cntk_case(names=["cntk.logging.ProgressPrinter", "cntk.logging.log_number_of_parameters",
                  "cntk.Trainer.test_minibatch", "cntk.Trainer.summarize_training_progress",
                  "cntk.Trainer.summarize_test_progress", "cntk.ops.softmax",
                  "cntk.learners.sgd", "cntk.layers.Dense"],
           rtol=1e-4, atol=1e-5,
           note="CNTK_103B's logistic regression on CNTK_103A's blobs (2 features, 3 classes): "
                "Dense(3) without activation, cross_entropy_with_softmax and "
                "classification_error, sgd(learning_rate_schedule(0.5, UnitType.minibatch)); "
                "a ProgressPrinter(freq=2, first=1, tag='Training', num_epochs=2, "
                "log_to_file=path) and a second printer to stdout, log_number_of_parameters, "
                "two epochs of three minibatches each closed by summarize_training_progress, "
                "then test_minibatch over two minibatches and summarize_test_progress; the "
                "printed lines, the log file's lines, the losses and parameters after, the "
                "softmax predictions")
def user39_logreg_progress_printer(C, r):
    r.touch("cntk.Trainer.test_minibatch", "cntk.Trainer.summarize_training_progress",
            "cntk.Trainer.summarize_test_progress")
    x = C.input_variable(2, name="features")
    y = C.input_variable(3, name="label")
    z = C.layers.Dense(3, name="logreg")(x)
    res = {"parameters": r.set_params(z.parameters)}
    loss = C.cross_entropy_with_softmax(z, y)
    err = C.classification_error(z, y)
    learner = C.sgd(z.parameters, C.learning_rate_schedule(0.5, C.UnitType.minibatch))
    log = "train.log"
    out = io.StringIO()
    steps = []
    with contextlib.redirect_stdout(out):
        to_file = C.logging.ProgressPrinter(freq=2, first=1, tag="Training", num_epochs=2,
                                            log_to_file=log)
        shown = C.logging.ProgressPrinter(freq=2, tag="Training")
        trainer = C.Trainer(z, (loss, err), [learner], [to_file, shown])
        C.logging.log_number_of_parameters(z)
        for _ in range(2):
            for n in (5, 4, 6):
                X, Y = _blobs(r, n, 2, 3)
                trainer.train_minibatch({x: X, y: Y})
                steps.append([trainer.previous_minibatch_loss_average,
                              trainer.previous_minibatch_evaluation_average])
            trainer.summarize_training_progress()
        tests = []
        for n in (4, 3):
            X, Y = _blobs(r, n, 2, 3)
            tests.append(trainer.test_minibatch({x: X, y: Y}))
        trainer.summarize_test_progress()
    res["printed"] = _printed(out.getvalue())
    with open(log) as f:
        res["log file"] = _printed(f.read())
    res["steps"] = steps
    res["tests"] = tests
    res["values"] = r.param_values(z.parameters)
    X, _ = _blobs(r, 4, 2, 3)
    res["predicted"] = C.softmax(z).eval({x: X})
    return res


# -- 2. CNTK_103C: an MLP under default_options, inputs scaled by element_times ----------------

@cntk_case(names=["cntk.layers.default_options", "cntk.layers.Dense", "cntk.ops.element_times",
                  "cntk.learners.learning_rate_schedule", "cntk.learners.UnitType",
                  "cntk.Trainer.test_minibatch", "cntk.ops.argmax"],
           rtol=1e-4, atol=1e-5,
           note="CNTK_103C's create_model: `with default_options(init=glorot_uniform(), "
                "activation=relu)`: two Dense hidden layers in a Python loop and a last "
                "Dense(activation=None), over element_times(1/255, input); sgd with "
                "learning_rate_schedule(0.2, UnitType.minibatch); the tutorial's "
                "print_training_progress by hand (every 2nd minibatch: loss and error); "
                "test_minibatch's average over the test minibatches; argmax of the "
                "predictions; the parameters after")
def user39_mlp_default_options(C, r):
    r.touch("cntk.Trainer.test_minibatch")
    x = C.input_variable(6, name="pixels")
    y = C.input_variable(4, name="digit")
    with C.layers.default_options(init=C.layers.glorot_uniform(), activation=C.relu):
        h = C.element_times(1.0 / 255.0, x)
        for i, d in enumerate((5, 7)):
            h = C.layers.Dense(d, name="hidden%d" % i)(h)
        z = C.layers.Dense(4, activation=None, name="out")(h)
    res = {"parameters": r.set_params(z.parameters)}
    loss = C.cross_entropy_with_softmax(z, y)
    err = C.classification_error(z, y)
    trainer = C.Trainer(z, (loss, err),
                        [C.sgd(z.parameters, C.learning_rate_schedule(0.2,
                                                                      C.UnitType.minibatch))])
    shown = []
    for i in range(6):
        X = (r.rand(5, 6) * 255.0).astype(np.float32)
        trainer.train_minibatch({x: X, y: r.onehot(5, 4)})
        if i % 2 == 0:
            shown.append("Minibatch: %d, Loss: %.4f, Error: %.2f%%" % (
                i, trainer.previous_minibatch_loss_average,
                trainer.previous_minibatch_evaluation_average * 100))
    res["shown"] = _printed("\n".join(shown))
    total = 0.0
    for _ in range(3):
        X = (r.rand(4, 6) * 255.0).astype(np.float32)
        total += trainer.test_minibatch({x: X, y: r.onehot(4, 4)})
    res["average test error"] = total / 3
    X = (r.rand(5, 6) * 255.0).astype(np.float32)
    res["argmax"] = C.argmax(C.softmax(z), axis=0).eval({x: X})
    res["values"] = r.param_values(z.parameters)
    return res


# -- 3. CNTK_105: a deep autoencoder; the encoder taken out by name --------------------------

@cntk_case(names=["cntk.losses.binary_cross_entropy", "cntk.Function.find_by_name",
                  "cntk.ops.combine", "cntk.learners.adam", "cntk.ops.abs",
                  "cntk.ops.reduce_mean"],
           rtol=1e-4, atol=1e-5,
           note="CNTK_105's deep autoencoder, small: input / 255 through Dense(6, relu) -> "
                "Dense(3, relu, name='encoded') -> Dense(6, relu) -> Dense(8, sigmoid), "
                "binary_cross_entropy against input / 255, reduce_mean(abs(...)) as the "
                "metric, adam(learning_parameter_schedule_per_sample(0.01), "
                "momentum_schedule(0.9)); four minibatches; the encoder found by "
                "find_by_name('encoded') and evaluated through combine, its output's shape "
                "and value, the reconstruction error on new data, the parameters after")
def user39_deep_autoencoder(C, r):
    r.touch("cntk.Function.find_by_name")
    x = C.input_variable(8, name="pixels")
    scaled = x / 255.0
    h = C.layers.Dense(6, activation=C.relu, name="enc1")(scaled)
    h = C.layers.Dense(3, activation=C.relu, name="encoded")(h)
    h = C.layers.Dense(5, activation=C.relu, name="dec1")(h)
    z = C.layers.Dense(8, activation=C.sigmoid, name="decoded")(h)
    res = {"parameters": r.set_params(z.parameters)}
    loss = C.binary_cross_entropy(z, scaled)
    metric = C.reduce_mean(C.abs(z - scaled), axis=0)
    trainer = C.Trainer(z, (loss, metric), [C.adam(
        z.parameters, C.learning_parameter_schedule_per_sample(0.01),
        C.momentum_schedule(0.9))])
    steps = []
    for n in (3, 5, 2, 4):
        X = (r.rand(n, 8) * 255.0).astype(np.float32)
        trainer.train_minibatch({x: X})
        steps.append([trainer.previous_minibatch_loss_average,
                      trainer.previous_minibatch_evaluation_average])
    res["steps"] = steps
    encoded = z.find_by_name("encoded")
    encoder = C.combine([encoded])
    X = (r.rand(3, 8) * 255.0).astype(np.float32)
    res["encoded type"] = type(encoded).__name__
    res["encoder shape"] = [list(o.shape) for o in encoder.outputs]
    res["encoded"] = encoder.eval({encoder.arguments[0]: X})
    res["reconstruction error"] = metric.eval({x: X})
    res["values"] = r.param_values(z.parameters)
    return res


# -- 4. two heads over one trunk, one Trainer on the sum of their losses over combine ---------

@cntk_case(names=["cntk.ops.combine", "cntk.Trainer.model", "cntk.Function.outputs",
                  "cntk.losses.squared_error", "cntk.losses.cross_entropy_with_softmax",
                  "cntk.learners.momentum_sgd", "cntk.Function.eval"],
           rtol=1e-4, atol=1e-5,
           note="a multi-task model: a shared Dense(5, tanh) trunk, a classifier head Dense(3) "
                "and a regression head Dense(2); loss = cross_entropy_with_softmax + 0.5 * "
                "squared_error, the classifier's error as the metric; the Trainer's model is "
                "combine([cls, reg]); momentum_sgd(learning_parameter_schedule(0.1), "
                "momentum_schedule(0.8)); the losses, the model's outputs' shapes, both "
                "heads evaluated at once into a dict, both losses at once through combine, "
                "the parameters after")
def user39_multitask_combined_losses(C, r):
    r.touch("cntk.Trainer.model", "cntk.Function.outputs", "cntk.Function.eval")
    x = C.input_variable(4, name="x")
    yc = C.input_variable(3, name="yc")
    yr = C.input_variable(2, name="yr")
    trunk = C.layers.Dense(5, activation=C.tanh, name="trunk")(x)
    cls = C.layers.Dense(3, name="cls")(trunk)
    reg = C.layers.Dense(2, name="reg")(trunk)
    model = C.combine([cls, reg])
    res = {"parameters": r.set_params(model.parameters)}
    ce = C.cross_entropy_with_softmax(cls, yc)
    se = C.squared_error(reg, yr)
    loss = ce + 0.5 * se
    err = C.classification_error(cls, yc)
    trainer = C.Trainer(model, (loss, err), [C.momentum_sgd(
        model.parameters, C.learning_parameter_schedule(0.1), C.momentum_schedule(0.8))])
    steps = []
    for n in (4, 2, 5):
        trainer.train_minibatch({x: r.randn(n, 4), yc: r.onehot(n, 3), yr: r.randn(n, 2)})
        steps.append([trainer.previous_minibatch_loss_average,
                      trainer.previous_minibatch_evaluation_average])
    res["steps"] = steps
    res["model outputs"] = [list(o.shape) for o in trainer.model.outputs]
    X = r.randn(3, 4)
    both = model.eval({x: X})
    res["heads"] = [both[cls.output], both[reg.output]]
    losses = C.combine([ce, se]).eval({x: X, yc: r.onehot(3, 3), yr: r.randn(3, 2)})
    res["losses"] = [losses[ce.output], losses[se.output]]
    res["values"] = r.param_values(model.parameters)
    return res


# -- 5. CNTK_303: DSSM twin towers with cosine_distance_with_negative_samples --------------------

@cntk_case(names=["cntk.losses.cosine_distance_with_negative_samples", "cntk.ops.softmax",
                  "cntk.ops.log", "cntk.layers.Sequential", "cntk.learners.adam"],
           rtol=1e-4, atol=1e-5,
           note="CNTK_303's DSSM, dense instead of its letter-trigram sequences: a query "
                "tower and an answer tower (Dense(5, tanh) -> Dense(3, tanh)), "
                "cosine_distance_with_negative_samples(q, a, shift=1, num_negative_samples=2) "
                "(the true pair first, then answers of other samples of the minibatch), the "
                "loss -log(softmax(10 * sim, axis=0))[0] (the true pair's share); adam "
                "(learning_parameter_schedule(0.02), momentum_schedule(0.9)); the "
                "similarities, the losses, the parameters after")
def user39_dssm_negative_samples(C, r):
    q = C.input_variable(6, name="query")
    a = C.input_variable(6, name="answer")
    qt = C.layers.Sequential([C.layers.Dense(5, activation=C.tanh, name="q1"),
                              C.layers.Dense(3, activation=C.tanh, name="q2")])(q)
    at = C.layers.Sequential([C.layers.Dense(4, activation=C.tanh, name="a1"),
                              C.layers.Dense(3, activation=C.tanh, name="a2")])(a)
    sim = C.cosine_distance_with_negative_samples(qt, at, shift=1, num_negative_samples=2)
    probs = C.softmax(10.0 * sim, axis=0)
    loss = -C.log(probs[0])
    res = {"parameters": [r.set_params(qt.parameters), r.set_params(at.parameters)],
           "sim shape": list(sim.shape), "loss shape": list(loss.shape)}
    Q, A = r.randn(4, 6), r.randn(4, 6)
    res["similarities"] = sim.eval({q: Q, a: A})
    trainer = C.Trainer(sim, (loss, None), [C.adam(
        loss.parameters, C.learning_parameter_schedule(0.02), C.momentum_schedule(0.9))])
    steps = []
    for n in (4, 5, 3):
        trainer.train_minibatch({q: r.randn(n, 6), a: r.randn(n, 6)})
        steps.append(trainer.previous_minibatch_loss_average)
    res["steps"] = steps
    res["values"] = [r.param_values(qt.parameters), r.param_values(at.parameters)]
    return res


# -- 6. CNTK_301: a Fast R-CNN head over roipooling, trained ---------------------------------

@cntk_case(names=["cntk.ops.roipooling", "cntk.MAX_POOLING", "cntk.layers.Convolution2D",
                  "cntk.layers.Dense", "cntk.losses.cross_entropy_with_softmax",
                  "cntk.metrics.classification_error", "cntk.learners.momentum_sgd"],
           rtol=1e-4, atol=1e-5,
           note="CNTK_301 / FastRCNN's create_fast_rcnn_predictor, small: Convolution2D((3, 3), "
                "4, relu, pad=True) over a (1, 8, 8) image, roipooling(conv, rois, "
                "MAX_POOLING, (2, 2), spatial_scale=0.5) over 3 rois per image given as "
                "(x1, y1, x2, y2) in image pixels, Dense(3) with map_rank=1 over the rois' "
                "pooled maps (one class score row per roi), cross_entropy_with_softmax(..., "
                "axis=1) and classification_error(..., axis=1) against one-hot rows; "
                "momentum_sgd three steps; the pooled maps, the scores, losses, parameters")
def user39_fast_rcnn_roipooling(C, r):
    img = C.input_variable((1, 8, 8), name="image")
    rois = C.input_variable((3, 4), name="rois")
    lab = C.input_variable((3, 3), name="roi_labels")
    conv = C.layers.Convolution2D((3, 3), 4, activation=C.relu, pad=True, name="conv")(img)
    pooled = C.roipooling(conv, rois, C.MAX_POOLING, (2, 2), spatial_scale=0.5)
    z = C.layers.Dense(3, map_rank=1, name="cls")(pooled)
    res = {"parameters": r.set_params(z.parameters),
           "shapes": [list(pooled.shape), list(z.shape)]}
    boxes = np.array([[[0, 0, 7, 7], [2, 2, 5, 6], [4, 0, 7, 3]],
                      [[1, 1, 4, 4], [0, 3, 6, 7], [3, 3, 7, 7]]], np.float32)
    I = r.randn(2, 1, 8, 8)
    res["pooled"] = pooled.eval({img: I, rois: boxes})
    res["scores"] = z.eval({img: I, rois: boxes})
    loss = C.cross_entropy_with_softmax(z, lab, axis=1)
    err = C.classification_error(z, lab, axis=1)
    trainer = C.Trainer(z, (loss, err), [C.momentum_sgd(
        z.parameters, C.learning_parameter_schedule(0.05), C.momentum_schedule(0.9))])
    L = np.stack([np.eye(3, dtype=np.float32)[[0, 2, 1]],
                  np.eye(3, dtype=np.float32)[[1, 1, 0]]])
    steps = []
    for _ in range(3):
        trainer.train_minibatch({img: I, rois: boxes, lab: L})
        steps.append([trainer.previous_minibatch_loss_average,
                      trainer.previous_minibatch_evaluation_average])
    res["steps"] = steps
    res["values"] = r.param_values(z.parameters)
    return res
