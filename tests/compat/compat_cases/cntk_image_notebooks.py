"""What running CNTK's image and time-series tutorial notebooks on Stadyn found (CNTK_103D,
105, 201B, 206C, 106B; see docs/cntk-notebooks.md), each compared with CNTK 2.7."""

import contextlib
import io

import numpy as np


from compat_harness import cntk_case


@cntk_case(names=["cntk.Function.eval", "cntk.cross_entropy_with_softmax",
                  "cntk.Trainer.test_minibatch"],
           note="CNTK_103D: the model evaluated on one image, then a new model and its loss "
                "built on the same inputs; Stadyn joined the image input's batch of 1 with "
                "the labels' last minibatch of 5 and refused the loss")
def model_rebuilt_after_eval(C, r):
    r.touch("cntk.Function.eval", "cntk.Trainer.test_minibatch")
    x = C.input_variable((1, 4, 4))
    y = C.input_variable(3)

    def create_model(features):
        with C.layers.default_options(activation=C.relu):
            h = C.layers.Convolution2D((3, 3), num_filters=2, pad=True)(features)
            return C.layers.Dense(3, activation=None)(h)

    def train_test(z):
        model = z(x / 255)
        loss = C.cross_entropy_with_softmax(model, y)
        trainer = C.Trainer(z, (loss, C.classification_error(model, y)),
                            [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
        trainer.train_minibatch({x: images, y: labels})
        return [trainer.previous_minibatch_loss_average,
                trainer.test_minibatch({x: images, y: labels})]

    images = r.rand(5, 1, 4, 4) * 255
    labels = r.onehot(5, 3)
    z = create_model(x)
    res = {"parameters": r.set_params(z.parameters), "first": train_test(z)}
    res["one image"] = C.softmax(z).eval(images[0])
    z = create_model(x)
    r.set_params(z.parameters)
    res["second"] = train_test(z)
    return res


@cntk_case(names=["cntk.learning_parameter_schedule", "cntk.Trainer.train_minibatch",
                  "cntk.learners.momentum_sgd", "cntk.io.MinibatchSourceFromData"],
           note="CNTK_201B: `learning_parameter_schedule([0.01]*10 + ..., epoch_size)` (its "
                "second argument is the minibatch size: a schedule per data sweep) driven by "
                "train_minibatch; Stadyn refused it (sweep size unknown), CNTK moves it on at "
                "each minibatch that ends a sweep (a reader's, or is_sweep_end=True)")
def sweep_schedule_by_train_minibatch(C, r):
    r.touch("cntk.Trainer.train_minibatch")
    x = C.input_variable(2)
    y = C.input_variable(1)
    z = C.layers.Dense(1)(x)
    res = {"parameters": r.set_params(z.parameters)}
    lr = C.learning_parameter_schedule([0.1, 0.01, 0.001], 4)
    learner = C.momentum_sgd(z.parameters, lr=lr, momentum=C.momentum_schedule(0.9, 4))
    trainer = C.Trainer(z, (C.squared_error(z, y), None), [learner])
    data, target = r.randn(6, 2), r.randn(6, 1)
    rates = []
    for i in range(2):
        rates.append(learner.learning_rate())
        trainer.train_minibatch({x: data[:3], y: target[:3]}, is_sweep_end=(i == 0))
    source = C.io.MinibatchSourceFromData(dict(x=data, y=target))
    ends = []
    for i in range(5):
        mb = source.next_minibatch(4)
        rates.append(learner.learning_rate())
        ends.append(mb[source.streams.x].end_of_sweep)
        trainer.train_minibatch({x: mb[source.streams.x], y: mb[source.streams.y]})
    res["rates"], res["sweep ends"] = rates, ends
    res["W"], res["b"] = z.W.value, z.b.value
    return res


@cntk_case(names=["cntk.logging.ProgressPrinter", "cntk.learners.momentum_sgd",
                  "cntk.learners.nesterov", "cntk.momentum_schedule",
                  "cntk.momentum_schedule_per_sample"],
           note="CNTK_201B: CNTK's momentum_sgd writes 'Momentum per minibatch: 0.9' after the "
                "learning rate, and again when the momentum changes (nesterov and adam do "
                "not); Stadyn wrote no momentum line")
def momentum_progress_lines(C, r):
    r.touch("cntk.logging.ProgressPrinter")
    x = C.input_variable(2)
    y = C.input_variable(1)
    z = C.layers.Dense(1)(x)
    data, target = r.randn(4, 2), r.randn(4, 1)
    lr = C.learning_parameter_schedule
    learners = {
        "epoch 64": lambda: C.momentum_sgd(z.parameters, lr(0.1), C.momentum_schedule(0.9, 64)),
        "per 64": lambda: C.momentum_sgd(z.parameters, lr(0.1),
                                         C.momentum_schedule(0.9, minibatch_size=64)),
        "per sample": lambda: C.momentum_sgd(z.parameters, C.learning_parameter_schedule_per_sample(
            0.1), C.momentum_schedule_per_sample(0.99)),
        "list": lambda: C.momentum_sgd(z.parameters, lr(0.1),
                                       C.momentum_schedule([0.9, 0.5], epoch_size=4)),
        "learner minibatch": lambda: C.momentum_sgd(z.parameters, 0.1, 0.9, minibatch_size=8),
        "nesterov": lambda: C.nesterov(z.parameters, lr(0.1), C.momentum_schedule(0.9))}
    res = {}
    for name in sorted(learners):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            trainer = C.Trainer(z, (C.squared_error(z, y), None), [learners[name]()],
                                [C.logging.ProgressPrinter(freq=100)])
            for _ in range(3):
                trainer.train_minibatch({x: data, y: target})
        res[name] = [ln for ln in out.getvalue().splitlines()
                     if ln.startswith(("Learning rate", "Momentum"))]
    return res


def _gan(C, r):
    """CNTK 206C's graph, small: a generator and a critic, the critic cloned with its input
    replaced by the generator's output (``clone('share', substitutions)``)."""
    z = C.input_variable(3, dynamic_axes=[C.Axis.default_batch_axis()])
    x_real = C.input_variable(4, dynamic_axes=[C.Axis.default_batch_axis()])
    x_scaled = (x_real - 127.5) / 127.5
    x_fake = C.layers.Dense(4, activation=C.tanh)(C.layers.Dense(5, activation=C.relu)(z))
    d_real = C.layers.Dense(1)(C.layers.Dense(6, activation=C.relu)(x_scaled))
    d_fake = d_real.clone(method="share", substitutions={x_scaled.output: x_fake.output})
    params = r.set_params(x_fake.parameters) + r.set_params(d_real.parameters)
    return z, x_real, x_scaled, x_fake, d_real, d_fake, params


def _adam(C, parameters, lr, momentum, **kwargs):
    return C.adam(parameters=parameters, lr=C.learning_rate_schedule(lr, C.UnitType.sample),
                  momentum=C.momentum_schedule(momentum),
                  variance_momentum=C.momentum_schedule(0.999), unit_gain=False,
                  use_mean_gradient=True, **kwargs)


@cntk_case(names=["cntk.Function.clone", "cntk.assign", "cntk.clip", "cntk.learners.adam",
                  "cntk.learning_rate_schedule"],
           note="CNTK_206C (WGAN): critic steps with clipped weights assigned back, then a "
                "generator step through the cloned critic")
def wgan_steps(C, r):
    r.touch("cntk.Function.clone")
    z, x_real, _, x_fake, d_real, d_fake, params = _gan(C, r)
    clipped = [C.clip(p, -0.3, 0.3) for p in d_real.parameters]
    g_trainer = C.Trainer(x_fake, (-d_fake, None), _adam(C, x_fake.parameters, 0.01, 0.0))
    d_trainer = C.Trainer(d_real, (-d_real + d_fake, None), _adam(C, d_real.parameters, 0.01,
                                                                  0.0))
    res = {"parameters": params, "g": [], "d": []}
    for _ in range(2):
        for _ in range(2):
            for p, c in zip(d_real.parameters, clipped):
                C.assign(p, c).eval()
            d_trainer.train_minibatch({x_real: r.rand(5, 4) * 255, z: r.rand(5, 3) * 2 - 1})
            res["d"].append(d_trainer.previous_minibatch_loss_average)
        g_trainer.train_minibatch({z: r.rand(5, 3) * 2 - 1})
        res["g"].append(g_trainer.previous_minibatch_loss_average)
    res["fake"] = x_fake.eval({z: r.rand(2, 3) * 2 - 1})
    return res


@cntk_case(names=["cntk.element_max", "cntk.learners.adam"],
           note="CNTK_206C (LS-GAN): a margin loss through element_max(..., [0.]) over both "
                "the critic and the generator, adam with L2 regularisation")
def lsgan_steps(C, r):
    r.touch("cntk.learners.adam")
    z, x_real, x_scaled, x_fake, d_real, d_fake, params = _gan(C, r)
    d_loss = C.element_max(d_real - d_fake + 0.01 * C.reduce_sum(C.abs(x_fake - x_scaled)),
                           [0.])
    g_trainer = C.Trainer(x_fake, (d_fake, None), _adam(C, x_fake.parameters, 0.01, 0.5,
                                                        l2_regularization_weight=0.001))
    d_trainer = C.Trainer(d_real, (d_loss, None), _adam(C, d_real.parameters, 0.01, 0.5,
                                                        l2_regularization_weight=0.001))
    res = {"parameters": params, "g": [], "d": []}
    for _ in range(3):
        d_trainer.train_minibatch({x_real: r.rand(5, 4) * 255, z: r.rand(5, 3) * 2 - 1})
        res["d"].append(d_trainer.previous_minibatch_loss_average)
        g_trainer.train_minibatch({z: r.rand(5, 3) * 2 - 1})
        res["g"].append(g_trainer.previous_minibatch_loss_average)
    res["fake"] = x_fake.eval({z: r.rand(2, 3) * 2 - 1})
    return res


@cntk_case(names=["cntk.learners.adam", "cntk.learners.adagrad", "cntk.learners.rmsprop",
                  "cntk.learners.fsadagrad", "cntk.learners.sgd"],
           note="CNTK_206C: use_mean_gradient=True ('compatible mode') hands the learner the "
                "minibatch's mean gradient, clipping and L2 per sample; Stadyn scaled the rate "
                "instead, which only SGD cannot tell apart (adam stepped M times too short)")
def mean_gradient_learners(C, r):
    res = {}
    options = dict(use_mean_gradient=True, l1_regularization_weight=0.01,
                   l2_regularization_weight=0.02, gradient_clipping_threshold_per_sample=0.7)
    lr_sample = C.learning_rate_schedule(0.05, C.UnitType.sample)
    makers = {
        "sgd": lambda ps: C.sgd(ps, lr_sample, **options),
        "adam": lambda ps: C.adam(ps, lr_sample, C.momentum_schedule(0.9), **options),
        "adam per 4": lambda ps: C.adam(ps, C.learning_parameter_schedule(0.05, 4),
                                        C.momentum_schedule(0.9), **options),
        "adagrad": lambda ps: C.adagrad(ps, lr_sample, **options),
        "rmsprop": lambda ps: C.rmsprop(ps, lr_sample, 0.9, 1.2, 0.7, 10.0, 0.01, **options),
        "fsadagrad": lambda ps: C.fsadagrad(ps, lr_sample, C.momentum_schedule(0.9), **options)}
    for name in sorted(makers):
        x = C.input_variable(3)
        w = C.parameter((3, 2), init=r.param_value("w", (3, 2)), name="w")
        z = C.times(x, w)
        trainer = C.Trainer(z, (C.reduce_sum(z * z), None), [makers[name]([w])])
        for n in (4, 7):
            trainer.train_minibatch({x: r.randn(n, 3)})
        res[name] = w.value
    return res


@cntk_case(names=["cntk.sequence.input_variable", "cntk.Trainer.train_minibatch",
                  "cntk.Trainer.test_minibatch", "cntk.learners.fsadagrad"],
           note="CNTK_106B: a sequence input of shape (1,) fed a list of 1-D arrays (each a "
                "day's readings, one value per step); Stadyn wanted (steps, 1) arrays")
def scalar_step_sequences(C, r):
    r.touch("cntk.Trainer.train_minibatch", "cntk.Trainer.test_minibatch")
    x = C.sequence.input_variable(1)
    with C.layers.default_options(initial_state=0.1):
        z = C.layers.Dense(1)(C.sequence.last(C.layers.Recurrence(C.layers.LSTM(3))(x)))
    res = {"parameters": r.set_params(z.parameters)}
    label = C.input_variable(1, dynamic_axes=z.dynamic_axes)
    learner = C.fsadagrad(z.parameters, lr=C.learning_parameter_schedule(0.005),
                          momentum=C.momentum_schedule(0.9, minibatch_size=6))
    trainer = C.Trainer(z, (C.squared_error(z, label), C.squared_error(z, label)), [learner])
    days = [r.rand(n).astype(np.float32) for n in (2, 3, 5, 4)]
    targets = np.array([[d.max()] for d in days], dtype=np.float32)
    losses = []
    for _ in range(3):
        trainer.train_minibatch({x: days, label: targets})
        losses.append(trainer.previous_minibatch_loss_average)
    res["losses"] = losses
    res["test"] = trainer.test_minibatch({x: days[:2], label: targets[:2]})
    res["eval"] = z.eval({x: days})
    res["python lists"] = z.eval({x: [[0.5, 0.25], [0.75]]})
    return res
