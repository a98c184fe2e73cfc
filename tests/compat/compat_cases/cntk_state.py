"""Updates users write themselves: ``assign`` (CNTK's deferred write of a Parameter or
Constant), ``universal`` (a learner whose update is a graph of ``assign`` ops) and
``UserLearner`` (a learner whose ``update`` is Python) -- values, the order of the writes,
gradients, and the parameters after every step of a small training run with minibatches of
changing size."""

import numpy as np

from compat_harness import cntk_case


@cntk_case(names=["cntk.ops.assign", "cntk.ops.combine", "cntk.Function.eval"])
def assign(C, r):
    """CNTK's documented example: uses of ``dest`` in the same evaluation see its old value,
    ``dest`` holds the new one afterwards; the assign node's value is the new value."""
    r.touch("cntk.Function.eval")
    dest = C.parameter(shape=(3, 4), init=0)
    data = C.parameter(shape=(3, 4), init=r.randn(3, 4))
    a = C.assign(dest, data)
    y = dest + data
    first = C.combine([y, a]).eval()
    after_first = dest.asarray().copy()
    second = C.combine([y, a]).eval()
    const = C.constant(shape=(2,))
    alone = C.assign(const, C.parameter((2,), init=2.5)).eval()
    return {"y1": first[y.output], "a1": first[a.output], "dest1": after_first,
            "y2": second[y.output], "dest2": dest.asarray(), "alone": alone,
            "const": const.asarray(), "shape": list(a.shape)}


@cntk_case(names=["cntk.ops.assign", "cntk.Function.grad"])
def assign__training(C, r):
    """In training (``grad``) the write happens after the backward pass; the gradient flows
    through the assign node to its input."""
    p = C.parameter((3,), init=r.randn(3))
    q = C.parameter((3,), init=0.0)
    f = C.assign(q, p * 3.0) * C.constant(r.randn(3))
    r.touch("cntk.Function.grad")
    g = f.grad({}, wrt=[p])
    return {"grad": g, "q": q.asarray()}


@cntk_case(names=["cntk.ops.assign"])
def assign__errors(C, r):
    """Neither operand may have the batch axis (CNTK raises ValueError)."""
    x = C.input_variable(2)
    c = C.constant(np.zeros((2,), np.float32))
    try:
        C.assign(c, x).eval({x: r.randn(1, 2)})
        batched = "no error"
    except ValueError:
        batched = "ValueError"
    return {"batched": batched}


def _model(C, r):
    x = C.input_variable(3)
    t = C.input_variable(2)
    z = C.layers.Dense(2, activation=C.tanh)(x)
    listing = r.set_params(z.parameters)
    loss = C.squared_error(z, t)
    return x, t, z, loss, listing


def _train(C, r, x, t, z, trainer):
    res = {}
    for step, n in enumerate((4, 2, 3)):
        trainer.train_minibatch({x: r.randn(n, 3), t: r.randn(n, 2)})
        res["loss%d" % step] = np.float32(trainer.previous_minibatch_loss_average)
        for key, value in r.param_values(z.parameters).items():
            res["step%d|%s" % (step, key)] = value
    return res


@cntk_case(names=["cntk.learners.universal", "cntk.ops.assign", "cntk.Trainer"])
def universal__sgd(C, r):
    """An SGD step written with ``assign`` (the gradient is the minibatch's sum)."""
    x, t, z, loss, listing = _model(C, r)

    def sgd(parameters, gradients):
        return C.combine([C.assign(p, p - 0.05 * g) for p, g in zip(parameters, gradients)])
    trainer = C.Trainer(z, loss, [C.universal(sgd, z.parameters)])
    res = _train(C, r, x, t, z, trainer)
    res["params"] = listing
    return res


@cntk_case(names=["cntk.learners.universal", "cntk.ops.assign", "cntk.ops.constant",
                  "cntk.ops.sqrt"])
def universal__adagrad(C, r):
    """CNTK's documented example: an AdaGrad-like update keeping its state in Constants."""
    x, t, z, loss, listing = _model(C, r)

    def my_adagrad(parameters, gradients):
        accumulators = [C.constant(0, shape=p.shape, dtype=p.dtype, name='accum')
                        for p in parameters]
        update_funcs = []
        for p, g, a in zip(parameters, gradients, accumulators):
            accum_new = C.assign(a, g * g)
            update_funcs.append(C.assign(p, p - 0.01 * g / C.sqrt(accum_new + 1e-6)))
        return C.combine(update_funcs)
    trainer = C.Trainer(z, loss, [C.universal(my_adagrad, z.parameters)])
    return _train(C, r, x, t, z, trainer)


@cntk_case(names=["cntk.learners.UserLearner", "cntk.learners.UserLearner.update",
                  "cntk.learners.UserLearner.learning_rate", "cntk.UserLearner.step",
                  "cntk.Parameter.set_value",
                  "cntk.Function.eval", "cntk.learning_parameter_schedule"])
def user_learner(C, r):
    """CNTK's own test learner: SGD in Python on NDArrayView gradients, writing the
    parameters with ``set_value`` of an ``eval(as_numpy=False)`` result."""
    x, t, z, loss, listing = _model(C, r)
    r.touch("cntk.learners.UserLearner.update", "cntk.learners.UserLearner.learning_rate",
            "cntk.UserLearner.step",                  # the Trainer calls it
            "cntk.Parameter.set_value", "cntk.Function.eval")
    seen = []

    class MySgd(C.learners.UserLearner):
        def update(self, gradient_values, training_sample_count, sweep_end):
            eta = self.learning_rate() / training_sample_count
            seen.append([int(training_sample_count), bool(sweep_end),
                         sorted(list(g.shape) for g in gradient_values.values())])
            for p, g in gradient_values.items():
                new_p = p - eta * C.constant(g)
                p.set_value(new_p.eval(as_numpy=False).data)
            return True
    learner = MySgd(z.parameters, C.learning_parameter_schedule(0.2))
    trainer = C.Trainer(z, loss, [learner])
    res = _train(C, r, x, t, z, trainer)
    res["seen"] = seen
    res["learning_rate"] = learner.learning_rate()
    return res
