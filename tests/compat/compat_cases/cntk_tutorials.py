"""What running CNTK's own tutorial notebooks on Stadyn found (CNTK_200 "Guided Tour"):
``Function.arguments`` in CNTK's order (depth first from the outputs, a layer's operands
before the label of ``loss(model(x), label)``), ``Function.train``/``Function.test`` on a
tuple of arrays, and SciPy ``csr_matrix`` labels fed to ``train_minibatch`` and to
``Function.train``."""

import numpy as np
import scipy.sparse

from compat_harness import cntk_case


def _names(function):
    return [a.name for a in function.arguments]


def _csr(onehot):
    rows, cols = np.nonzero(onehot)
    return scipy.sparse.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)),
                                   shape=onehot.shape)


@cntk_case(names=["cntk.Function", "cntk.Function.arguments", "cntk.combine",
                  "cntk.Function.with_signature"],
           note="CNTK_200: `criterion(x, y)` fed by `criterion.arguments[0]`, `[1]`; Stadyn "
                "gave the label first")
def function_argument_order(C, r):
    r.touch("cntk.Function.arguments", "cntk.Function.with_signature")
    res = {}
    x = C.input_variable(2, name="x")
    y = C.input_variable(2, is_sparse=True, name="y")
    model = C.layers.Dense(2)

    @C.Function
    def criterion(data, label_one_hot):
        z = model(data)
        return (C.cross_entropy_with_softmax(z, label_one_hot),
                C.classification_error(z, label_one_hot))

    res["untyped"] = _names(criterion)
    res["applied"] = _names(criterion(x, y))
    images = C.input_variable((1, 6, 6), name="images")
    labels = C.input_variable(3, name="labels")
    with C.layers.default_options(activation=C.relu):
        h = C.layers.Convolution2D((3, 3), num_filters=2)(images)
        out = C.layers.Dense(3, activation=None)(C.layers.MaxPooling((2, 2))(h))
    res["combined"] = _names(C.combine([C.cross_entropy_with_softmax(out, labels),
                                        C.classification_error(out, labels)]))
    res["plain"] = _names(C.squared_error(C.layers.Dense(1)(C.input_variable(2, name="a")),
                                          C.input_variable(1, name="b")))

    @C.Function.with_signature(C.layers.Tensor[2], C.layers.Tensor[2])
    def backwards(first, second):
        return C.reduce_sum(second * 2.0) + C.reduce_sum(model(first))

    p, q = C.input_variable(2, name="p"), C.input_variable(2, name="q")
    res["typed"] = _names(backwards)
    res["typed applied"] = _names(backwards(p, q))
    res["typed swapped"] = _names(backwards(q, p))
    return res


@cntk_case(names=["cntk.Function.train", "cntk.Function.test", "cntk.Trainer.train_minibatch",
                  "cntk.learners.sgd"],
           note="CNTK_200: `criterion.train((X, Y), parameter_learners=[...])` with Y a "
                "csr_matrix; Function.train was missing, a csr_matrix fed as its non-zeros")
def function_train_on_arrays(C, r):
    r.touch("cntk.Function.train", "cntk.Function.test", "cntk.Trainer.train_minibatch")
    x = C.input_variable(2, name="x")
    y = C.input_variable(2, is_sparse=True, name="y")
    model = C.layers.Dense(2, activation=None)

    @C.Function
    def criterion_factory(data, label_one_hot):
        z = model(data)
        return (C.cross_entropy_with_softmax(z, label_one_hot),
                C.classification_error(z, label_one_hot))

    criterion = criterion_factory(x, y)
    r.set_params(model.parameters)
    labels = r.onehot(96, 2)
    data = (r.randn(96, 2) + 3.0) * (labels[:, 1:] + 1.0)
    test_labels = r.onehot(40, 2)
    test_data = (r.randn(40, 2) + 3.0) * (test_labels[:, 1:] + 1.0)
    learner = C.sgd(model.parameters, C.learning_parameter_schedule(0.05))
    progress = criterion.train((data, _csr(labels)), minibatch_size=16, max_epochs=2,
                               epoch_size=48, parameter_learners=[learner])
    res = {"epoch losses": [s.loss for s in progress.epoch_summaries],
           "epoch metrics": [s.metric for s in progress.epoch_summaries],
           "epoch samples": [s.samples for s in progress.epoch_summaries],
           "W after train": model.W.value, "b after train": model.b.value}
    summary = criterion.test((test_data, _csr(test_labels)), minibatch_size=16)
    res["test"] = [summary.metric, summary.samples]
    # minibatch by minibatch, labels as csr slices, fed by argument position
    trainer = C.Trainer(None, criterion, [C.sgd(model.parameters,
                                                C.learning_parameter_schedule(0.05))])
    losses = []
    for i in range(0, 96, 32):
        trainer.train_minibatch({criterion.arguments[0]: data[i:i + 32],
                                 criterion.arguments[1]: _csr(labels)[i:i + 32]})
        losses.append(trainer.previous_minibatch_loss_average)
    res["minibatch losses"] = losses
    res["W after minibatches"] = model.W.value
    return res


def _dssm(C, qry, ans):
    """CNTK 303's two towers, their sizes distinct so that the harness can tell their
    parameters apart (its dropout left out: the two frameworks' masks differ)."""
    def tower(name, emb, hidden, proj, bias):
        return C.layers.Sequential([
            C.layers.Embedding(emb, name="embed"),
            C.layers.Recurrence(C.layers.LSTM(hidden)),
            C.sequence.last,
            C.layers.Dense(proj, activation=C.relu, name=name + "_proj"),
            C.layers.Dense(3, activation=C.tanh, bias=bias, name=name + "_enc")])
    with C.layers.default_options(initial_state=0.1):
        return tower("q", 4, 5, 6, True)(qry), tower("a", 3, 4, 7, False)(ans)


def _one_hot_sequences(r, count, dim):
    return [np.eye(dim, dtype=np.float32)[r.rng.randint(0, dim, r.rng.randint(2, 6))]
            for _ in range(count)]


@cntk_case(names=["cntk.Trainer.train_minibatch", "cntk.cosine_distance_with_negative_samples",
                  "cntk.reconcile_dynamic_axes", "cntk.Axis.new_unique_dynamic_axis",
                  "cntk.eval.Evaluator", "cntk.learners.momentum_sgd"],
           note="CNTK_303 (DSSM): a query and an answer on their own sequence axes, the loss on "
                "neither; Stadyn refused their different step counts, and had no cntk.eval")
def dssm_steps(C, r):
    r.touch("cntk.Trainer.train_minibatch", "cntk.eval.Evaluator",
            "cntk.Axis.new_unique_dynamic_axis")
    qry = C.sequence.input_variable(7, sequence_axis=C.Axis.new_unique_dynamic_axis("q"))
    ans = C.sequence.input_variable(6, sequence_axis=C.Axis.new_unique_dynamic_axis("a"))
    q_vec, a_vec = _dssm(C, qry, ans)
    model = C.combine(q_vec, a_vec)
    res = {"parameters": r.set_params(model.parameters)}
    loss = 1 - C.cosine_distance_with_negative_samples(
        C.reconcile_dynamic_axes(q_vec, a_vec), a_vec, shift=1, num_negative_samples=2)
    learner = C.learners.momentum_sgd(model.parameters, C.learning_parameter_schedule(0.05),
                                      C.momentum_schedule(0.9))
    trainer = C.Trainer(model, (loss, None), learner)
    losses, counts = [], []
    for n in (4, 3, 4):
        trainer.train_minibatch({qry: _one_hot_sequences(r, n, 7),
                                 ans: _one_hot_sequences(r, n, 6)})
        losses.append(trainer.previous_minibatch_loss_average)
        counts.append(trainer.previous_minibatch_sample_count)
    res["losses"], res["sample counts"] = losses, counts
    evaluator = C.eval.Evaluator(loss)
    res["evaluated"] = evaluator.test_minibatch({qry: _one_hot_sequences(r, 3, 7),
                                                 ans: _one_hot_sequences(r, 3, 6)})
    res["query vector"] = q_vec.eval({qry: _one_hot_sequences(r, 2, 7)})
    return res


@cntk_case(names=["cntk.Value.one_hot", "cntk.Value.as_sequences",
                  "cntk.Trainer.train_minibatch"],
           note="CNTK_207: `C.Value.one_hot(indices.reshape(N, 1), classes)` (N sequences of "
                "one step) feeds a plain input; Stadyn fed its (N, 1, classes) array as is, "
                "and refused sequences of different lengths")
def value_one_hot_feeds(C, r):
    r.touch("cntk.Value.one_hot", "cntk.Value.as_sequences", "cntk.Trainer.train_minibatch")
    labels = C.input_variable(6, is_sparse=True)
    w = C.parameter((6, 2), init=r.param_value("w", (6, 2)), name="w")
    z = C.times(labels, w)
    loss = C.reduce_sum(z * z)
    trainer = C.Trainer(z, (loss, None), C.sgd([w], C.learning_parameter_schedule(0.1)))
    ids = r.rng.randint(0, 6, 5).reshape(5, 1)
    trainer.train_minibatch({labels: C.Value.one_hot(ids, 6)})
    res = {"loss": trainer.previous_minibatch_loss_average,
           "samples": trainer.previous_minibatch_sample_count, "w": w.value}
    words = C.sequence.input_variable(6)
    total = C.sequence.reduce_sum(C.times(words, w))
    ragged = C.Value.one_hot([[1, 2, 5], [0], [3, 3]], 6)
    res["sequences"] = total.eval({words: ragged})
    for i, seq in enumerate(ragged.as_sequences(words)):
        res["as_sequences %d" % i] = np.asarray(seq.todense() if hasattr(seq, "todense")
                                                else seq)
    return res
