"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (seventh round): the Trainer's
learners as a tuple and its metric average without a metric; ``Value.device``; ``gather``'s
attributes; sparse inputs (dense data fed to them, the ops CNTK does not run on them); a
``UserLearner``'s ``parameters()``; the outputs of ops on placeholders without a shape."""

import functools

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import outcome


def _dense(got):
    """A SciPy matrix (CNTK's sparse output) as a dense array; a list of arrays as one list."""
    if isinstance(got, list):
        return [np.asarray(g.todense() if hasattr(g, "todense") else g).tolist() for g in got]
    return np.asarray(got.todense()) if hasattr(got, "todense") else got


# ``fn()``'s value (dense), or the built-in type of what it raised
_outcome = functools.partial(outcome, convert=_dense)


@cntk_case(names=["cntk.Trainer.parameter_learners",
                  "cntk.Trainer.previous_minibatch_evaluation_average"],
           note="CNTK 2.7's parameter_learners is a tuple (Stadyn's a list); its "
                "previous_minibatch_evaluation_average of a Trainer without a metric raises "
                "ValueError (Stadyn gave None)")
def trainer__learners_and_metric_average(C, r):
    r.touch("cntk.Trainer.train_minibatch", "cntk.Trainer.previous_minibatch_loss_average",
            "cntk.Trainer.parameter_learners", "cntk.Trainer.previous_minibatch_evaluation_average")
    x, y = C.input_variable(3), C.input_variable(2)
    z = C.layers.Dense(2)(x)
    params = r.set_params(z.parameters)
    feed = {x: r.randn(4, 3).astype(np.float32), y: r.onehot(4, 2)}
    res = {"params": params}
    for label, criterion in [("without a metric", C.squared_error(z, y)),
                             ("with a metric", (C.squared_error(z, y),
                                                C.classification_error(z, y)))]:
        trainer = C.Trainer(z, criterion,
                            [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
        res[label + ": learners"] = [type(trainer.parameter_learners).__name__,
                                     len(trainer.parameter_learners)]
        trainer.train_minibatch(feed)
        res[label + ": loss"] = trainer.previous_minibatch_loss_average
        res[label + ": metric"] = _outcome(
            lambda: trainer.previous_minibatch_evaluation_average)
    try:
        C.Trainer(z, C.squared_error(z, y), [C.sgd(z.parameters, 0.1)]
                  ).previous_minibatch_evaluation_average
        res["message"] = ""
    except ValueError as e:
        res["message"] = str(e).splitlines()[0]
    return res


@cntk_case(names=["cntk.Value.device"],
           note="CNTK 2.7's Value has the device it is on (a DeviceDescriptor, printed CPU); "
                "Stadyn's had no device")
def value__device(C, r):
    r.touch("cntk.Value.device")
    v = C.Value(batch=r.randn(2, 3).astype(np.float32))
    d = v.device
    one = C.Value.one_hot([[1], [2]], 3)
    return {"device": str(d), "type": [d.type(), d.id()], "is cpu": d == C.cpu(),
            "one_hot": str(one.device)}


# (table shape, axis): none, an int, negative, an Axis, the first
_GATHER_AXES = [((4, 3), None), ((4, 3), 0), ((4, 3), 1), ((2, 4, 3), 2), ((2, 4, 3), -3),
                ((2, 4, 3), -1), ((2, 4, 3), "A1"), ((5,), "A0")]


@cntk_case(names=["cntk.ops.gather", "cntk.Function.attributes"],
           note="CNTK 2.7's gather shows the axis it was given as its C++ counts it "
                "(('ordered', 'static', -axis - 1)) in its attributes, none without one "
                "(Stadyn showed its own reshape's attributes, or none)")
def gather__attributes(C, r):
    r.touch("cntk.Function.root_function", "cntk.Function.op_name", "cntk.Function.attributes")
    res = {}
    for shape, axis in _GATHER_AXES:
        given = C.Axis(int(axis[1])) if isinstance(axis, str) else axis
        g = C.gather(C.constant(np.zeros(shape, np.float32)), C.input_variable(2), axis=given)
        rf = g.root_function
        attributes = rf.attributes
        res["%s %s" % (shape, axis)] = [rf.op_name, sorted(
            [k, list(v) if isinstance(v, tuple) else v] for k, v in attributes.items())]
    return res


@cntk_case(names=["cntk.ops.input_variable", "cntk.Function.eval", "cntk.Function.forward",
                  "cntk.Trainer.train_minibatch", "cntk.Value.one_hot"],
           note="CNTK 2.7 refuses dense data (a NumPy array, a list of them, a dense Value) fed "
                "to a sparse input (ValueError: Dense input data supplied for sparse input "
                "Variable); Stadyn took it as the dense rows")
def sparse_inputs__dense_data_refused(C, r):
    import scipy.sparse as sp
    r.touch("cntk.Function.eval", "cntk.Function.forward", "cntk.Trainer.train_minibatch",
            "cntk.Value.one_hot", "cntk.Value.create", "cntk.Function.output")
    s = C.input_variable(5, is_sparse=True, name="s")
    seq = C.sequence.input_variable(5, is_sparse=True, name="seq")
    w = C.constant(r.randn(5, 2).astype(np.float32))
    f = C.times(s, w)
    rows = np.eye(5, dtype=np.float32)[[1, 3]]
    res = {}
    feeds = [("array", lambda: rows), ("float64 array", lambda: rows.astype(np.float64)),
             ("list of arrays", lambda: [rows[:1], rows[1:]]),
             ("dense Value", lambda: C.Value(batch=rows)),
             ("Value.create of arrays", lambda: C.Value.create(s, [rows[:1], rows[1:]])),
             ("csr", lambda: sp.csr_matrix(rows)),
             ("one_hot", lambda: C.Value.one_hot([[1], [3]], 5))]
    for label, data in feeds:
        res["eval: " + label] = _outcome(lambda: f.eval({s: data()}))
    res["forward: array"] = _outcome(lambda: f.forward({s: rows}, [f.output])[1][f.output])
    res["sequence: list of arrays"] = _outcome(
        lambda: C.sequence.last(seq).eval({seq: [rows]}))
    res["sequence: one_hot"] = _outcome(
        lambda: C.sequence.last(seq).eval({seq: C.Value.one_hot([[1, 3], [2]], 5)}))
    y = C.input_variable(2)
    z = C.layers.Dense(2)(s)
    params = r.set_params(z.parameters)
    trainer = C.Trainer(z, C.squared_error(z, y),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    targets = r.randn(2, 2).astype(np.float32)
    res["params"] = params
    res["train: array"] = _outcome(lambda: trainer.train_minibatch({s: rows, y: targets}))
    res["train: one_hot"] = _outcome(
        lambda: trainer.train_minibatch({s: C.Value.one_hot([[1], [3]], 5), y: targets}))
    res["W after"] = np.array(z.parameters[0].value)
    try:
        f.eval({s: rows})
        res["message"] = ""
    except ValueError as e:
        res["message"] = str(e).split("'")[0]
    return res


def _ops_on_sparse(C, s, dense, seq):
    """(label, Function) of ops on the sparse input ``s`` (``seq``: a sparse sequence input;
    ``dense``: a dense input of the same shape)."""
    k = C.constant(np.full(5, 0.5, np.float32))
    m = C.constant(np.ones((5, 2), np.float32))
    return [
        ("relu", C.relu(s)), ("sigmoid", C.sigmoid(s)), ("tanh", C.tanh(s)), ("exp", C.exp(s)),
        ("log", C.log(s)), ("abs", C.abs(s)), ("negate", C.negate(s)), ("sqrt", C.sqrt(s)),
        ("square", C.square(s)), ("floor", C.floor(s)), ("round", C.round(s)),
        ("sin", C.sin(s)), ("reciprocal", C.reciprocal(s)), ("softplus", C.softplus(s)),
        ("elu", C.elu(s)), ("leaky_relu", C.leaky_relu(s)), ("clip", C.clip(s, 0, 1)),
        ("plus", C.plus(s, k)), ("plus, sparse second", C.plus(k, s)), ("s + 1", s + 1),
        ("1 - s", 1 - s), ("-s", -s), ("s * 2", s * 2), ("minus", C.minus(s, k)),
        ("element_times", C.element_times(s, k)), ("element_divide", C.element_divide(s, k)),
        ("element_max", C.element_max(s, k)), ("greater", C.greater(s, k)),
        ("equal", C.equal(s, k)), ("pow", C.pow(s, k)),
        ("softmax", C.softmax(s)), ("log_softmax", C.log_softmax(s)),
        ("hardmax", C.hardmax(s)), ("argmax", C.argmax(s)), ("reduce_sum", C.reduce_sum(s)),
        ("reduce_mean", C.reduce_mean(s)), ("reduce_max", C.reduce_max(s)),
        ("reduce_log_sum_exp", C.reduce_log_sum_exp(s)), ("top_k", C.top_k(s, 2)),
        ("reshape", C.reshape(s, (5, 1))), ("slice", C.slice(s, 0, 0, 2)), ("s[0:2]", s[0:2]),
        ("splice", C.splice(s, dense)), ("transpose", C.transpose(s, (0,))),
        ("pad", C.pad(s, [(1, 1)])), ("one_hot", C.one_hot(s, 3)),
        ("squared_error", C.squared_error(dense, s)),
        ("binary_cross_entropy", C.binary_cross_entropy(C.sigmoid(dense), s)),
        ("cosine_distance", C.cosine_distance(dense, s)),
        ("cross_entropy_with_softmax of sparse scores", C.cross_entropy_with_softmax(s, dense)),
        ("mean_variance_normalization", C.mean_variance_normalization(s)),
        ("sequence.past_value", C.sequence.past_value(seq)),
        ("sequence.future_value", C.sequence.future_value(seq)),
        ("sequence.delay", C.sequence.delay(seq)),
        ("sequence.reduce_sum", C.sequence.reduce_sum(seq)),
        ("sigmoid of alias", C.sigmoid(C.alias(s))),
        # what CNTK 2.7 takes
        ("times", C.times(s, m)),
        ("times_transpose", C.times_transpose(C.transpose(m, (1, 0)), s)),
        ("s @ m", s @ m), ("alias", C.alias(s)), ("stop_gradient", C.stop_gradient(s)),
        ("relu of stop_gradient", C.relu(C.stop_gradient(s))),
        ("relu of times", C.relu(C.times(s, C.constant(np.eye(5, dtype=np.float32))))),
        ("cross_entropy_with_softmax of sparse labels", C.cross_entropy_with_softmax(dense, s)),
        ("classification_error of sparse labels", C.classification_error(dense, s)),
        ("Dense", C.layers.Dense(2, init=1.0)(s)),
        ("Embedding", C.layers.Embedding(2, init=1.0)(s)),
        ("sequence.first", C.sequence.first(seq)),
        ("sequence.last", C.sequence.last(seq)), ("sequence.is_first", C.sequence.is_first(seq)),
        ("sequence.times", C.times(seq, m)),
    ]


@cntk_case(names=["cntk.ops.relu", "cntk.ops.plus", "cntk.ops.reduce_sum", "cntk.ops.reshape",
                  "cntk.ops.splice", "cntk.ops.softmax", "cntk.ops.one_hot",
                  "cntk.ops.sequence.past_value", "cntk.ops.times", "cntk.losses.squared_error",
                  "cntk.losses.cross_entropy_with_softmax"],
           note="CNTK 2.7 builds tensor operations on a sparse input but refuses them when they "
                "run (RuntimeError: 'TensorOp: Tensor operations are currently not supported "
                "for sparse matrices', or 'Feature Not Implemented'); products with it, alias, "
                "stop_gradient, a loss's sparse labels and the sequence ops that pick steps "
                "run.  Stadyn computed them all on the data it holds dense")
def sparse_inputs__tensor_ops_refused_when_run(C, r):
    r.touch("cntk.Function.eval")
    s = C.input_variable(5, is_sparse=True, name="s")
    seq = C.sequence.input_variable(5, is_sparse=True, name="seq")
    dense = C.input_variable(5, name="dense")
    data = {s: C.Value.one_hot([[1], [3]], 5), seq: C.Value.one_hot([[1, 2, 4], [3, 0]], 5),
            dense: r.randn(2, 5).astype(np.float32)}
    res = {}
    for label, f in _ops_on_sparse(C, s, dense, seq):
        feed = dict((a, data[a]) for a in [s, seq, dense] if any(
            b.uid == a.uid for b in f.arguments))
        got = _outcome(lambda: f.eval(feed))
        res[label] = got if isinstance(got, (str, list)) else np.asarray(got).tolist()
    return res


@cntk_case(names=["cntk.learners.UserLearner.parameters", "cntk.learners.UserLearner.update"],
           note="a UserLearner's parameters is a method in CNTK 2.7 (its SWIG class's): "
                "Manual_How_to_use_learners calls learner.parameters() and updates them by "
                "hand (Stadyn's was a list: TypeError 'list' object is not callable)")
def user_learner__parameters_method(C, r):
    r.touch("cntk.learners.UserLearner.parameters", "cntk.learners.UserLearner.update")
    class HalfStep(C.learners.UserLearner):
        def update(self, gradient_values, training_sample_count, sweep_end):
            for p, g in gradient_values.items():
                p.value = p.value - 0.5 * np.asarray(g) / float(training_sample_count)
            return True

    z = C.layers.Dense(2)(C.input_variable(3))
    params = r.set_params(z.parameters)
    learner = HalfStep(z.parameters, C.learning_parameter_schedule(1))
    listed = learner.parameters()
    for p in listed:
        p.__class__ = C.Parameter
    steps = {p: np.ones(p.shape, np.float32) for p in listed}
    for _ in range(3):
        learner.update(steps, np.float32(4), sweep_end=False)
    return {"params": params, "listed": [[p.name, list(p.shape)] for p in listed],
            "values": [np.array(p.value) for p in listed]}


@cntk_case(names=["cntk.Function.output", "cntk.Function.outputs", "cntk.layers.Dense",
                  "cntk.layers.LayerNormalization", "cntk.ops.placeholder"],
           note="an op on a placeholder without a shape, and a layer not applied yet, have an "
                "output of unknown shape (-2,) and unknown dynamic axes in CNTK 2.7, which ops "
                "take (Stadyn raised AttributeError); a layer applied to a layer not applied "
                "yet is their composition (Stadyn: TypeError); a Python function >> a layer is "
                "CNTK's TypeError (Stadyn made a Sequential)")
def outputs__of_ops_on_shapeless_placeholders(C, r):
    r.touch("cntk.Function.output", "cntk.Function.outputs", "cntk.Function.arguments",
            "cntk.Function.eval", "cntk.Function.shape", "cntk.Function.parameters")

    def described(out):
        return [list(out.shape), [a.name for a in out.dynamic_axes], str(out.dtype),
                out.is_output, out.is_placeholder, out.name]

    res = {}
    f = C.relu(C.placeholder())
    res["relu: output"] = described(f.output)
    res["relu: outputs"] = [described(o) for o in f.outputs]
    res["plus of a number: output"] = described(C.plus(C.placeholder(), 1).output)
    res["sigmoid of relu: output"] = described(C.sigmoid(f).output)
    d = C.layers.Dense(2)
    res["Dense not applied: output"] = described(d.output)
    res["Dense not applied: outputs"] = len(d.outputs)
    x = C.input_variable(3, name="x")
    data = r.randn(2, 3).astype(np.float32)
    # an op given such an output waits for the placeholder as for the Function
    g = C.plus(f.output, 1)
    res["plus of the output: shape, arguments"] = [list(g.shape), len(g.arguments)]
    res["plus of the output: applied"] = g(x).eval({x: data})
    # a layer applied to a layer: their composition
    composed = C.layers.Dense(1)(C.layers.LayerNormalization())
    res["Dense(LayerNormalization()): shape, arguments, output"] = [
        list(composed.shape), len(composed.arguments), list(composed.output.shape)]
    applied = composed(x)
    res["params"] = r.set_params(applied.parameters)
    res["Dense(LayerNormalization()): applied"] = applied.eval({x: data})
    res["relu >> Dense"] = _outcome(lambda: C.relu >> C.layers.Dense(2))
    return res


@cntk_case(names=["cntk.learners.Learner.restore_from_checkpoint",
                  "cntk.learners.Learner.create_checkpoint"],
           note="CNTK 2.7's restore_from_checkpoint takes the Dictionary create_checkpoint gave "
                "only: a plain dict (its copy too) is a TypeError, None a ValueError (Stadyn "
                "took a plain dict, and refused {} with a RuntimeError)")
def learner_checkpoint__plain_dict_refused(C, r):
    r.touch("cntk.learners.Learner.restore_from_checkpoint",
            "cntk.learners.Learner.create_checkpoint", "cntk.learners.Learner.update")
    w = C.parameter((2,), init=0.0)
    a = C.sgd([w], C.learning_parameter_schedule(0.5))
    a.update({w: np.ones(2, np.float32)}, 3)
    saved = a.create_checkpoint()
    res = {}
    for label, given in [("its Dictionary", lambda: saved), ("a dict of it", lambda: dict(saved)),
                         ("an empty dict", lambda: {}), ("None", lambda: None)]:
        b = C.sgd([w], C.learning_parameter_schedule(0.5))
        res[label] = _outcome(lambda: b.restore_from_checkpoint(given()))
        res[label + ": samples seen"] = int(b.total_number_of_samples_seen())
    return res
