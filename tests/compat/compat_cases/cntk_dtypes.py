"""CNTK 2.7's double precision: parameters, constants and inputs made float64 (``dtype=``, a
float64 NumPy value, ``default_options(dtype=np.float64)``) compute in float64 end to end --
values, gradients, ``.dtype``, ``.value`` and the learners' updates -- and what CNTK does where
float32 and float64 meet (constants and numbers take the op's type; inputs, parameters and
outputs of both types in one op are refused)."""

import numpy as np

from compat_harness import cntk_case


def _names(*objects):
    return [np.dtype(o.dtype).name for o in objects]


def _attempt(call):
    """The call's result, or the kind of error."""
    try:
        return call()
    except ValueError:
        return "ValueError"


def _double(C, r, name, shape):
    return C.parameter(shape, init=r.param_value(name, shape).astype(np.float64),
                       dtype=np.float64, name=name)


@cntk_case(names=["cntk.parameter", "cntk.constant", "cntk.input_variable", "cntk.times",
                  "cntk.Function.eval", "cntk.Function.grad", "cntk.Trainer",
                  "cntk.learners.sgd", "cntk.learners.momentum_sgd", "cntk.learners.adam"],
           rtol=1e-12, atol=1e-13,
           note="a float64 model: parameters given dtype=np.float64 or a float64 array, a "
                "float64 constant, a number and a float32 constant (cast, as CNTK clones "
                "it); eval, gradients and three learners' updates, all in float64 (compared "
                "at rtol 1e-12: float32 would differ at 1e-7). Stadyn made them float32")
def float64_end_to_end(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.grad", "cntk.Function.value")
    x = C.input_variable(3, dtype=np.float64)
    y = C.input_variable(2, dtype=np.float64)
    w = _double(C, r, "w", (3, 2))
    b = C.parameter((2,), init=0.1, dtype=np.float64, name="b")
    v = C.parameter(init=r.param_value("v", (2,)).astype(np.float64), name="v")
    scale = C.constant(r.randn(2).astype(np.float64))
    shift = C.constant(r.randn(2).astype(np.float32))
    z = C.tanh(C.times(x, w) + b) * scale + shift * v + 0.25
    loss = C.cross_entropy_with_softmax(z, y)
    res = {"types": _names(x, w, b, v, scale, shift, z, loss),
           "values": [str(p.value.dtype) for p in (w, b, v)]}
    data = r.randn(4, 3).astype(np.float64) / 3.0
    labels = np.eye(2)[[0, 1, 1, 0]]
    res["eval"] = z.eval({x: data})
    grads = loss.grad({x: data, y: labels}, wrt=[w, v])
    res["grad w"], res["grad v"] = grads[w], grads[v]
    start = [w.value, b.value, v.value]
    makers = {"sgd": lambda: C.learners.sgd([w, b, v], C.learning_parameter_schedule(0.5)),
              "momentum_sgd": lambda: C.learners.momentum_sgd(
                  [w, b, v], C.learning_parameter_schedule_per_sample(0.1),
                  C.momentum_schedule(0.9)),
              "adam": lambda: C.learners.adam([w, b, v], C.learning_parameter_schedule(0.1),
                                              C.momentum_schedule(0.9))}
    for key in sorted(makers):
        for p, value in zip((w, b, v), start):
            p.value = value
        trainer = C.Trainer(z, (loss, C.classification_error(z, y)), [makers[key]()])
        losses = []
        for n in (4, 2, 3):
            trainer.train_minibatch({x: r.randn(n, 3).astype(np.float64),
                                     y: np.eye(2)[r.randint(0, 2, n)]})
            losses.append(trainer.previous_minibatch_loss_average)
        res[key] = [w.value, b.value, v.value]
        res[key + " losses"] = np.array(losses)
    return res


@cntk_case(names=["cntk.layers.default_options", "cntk.layers.Dense",
                  "cntk.layers.Recurrence", "cntk.layers.LSTM", "cntk.layers.Embedding",
                  "cntk.sequence.input_variable", "cntk.input_variable"],
           rtol=1e-12, atol=1e-13,
           note="layers made under default_options(dtype=np.float64) have float64 parameters "
                "(whatever the options where they are applied), inputs made there are "
                "float64; outputs and gradients are float64. Stadyn made them float32")
def float64_layers_default_options(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.grad", "cntk.Function.parameters")
    with C.layers.default_options(dtype=np.float64):
        x = C.sequence.input_variable(3)
        q = C.input_variable(4)
        model = C.layers.Sequential([C.layers.Embedding(5), C.layers.Recurrence(
            C.layers.LSTM(2)), C.layers.Dense(3)])
        head = C.layers.Dense(2)
    z = model(x)
    h = head(q)
    res = {"types": _names(x, q, z, h) + [np.dtype(p.dtype).name for p in z.parameters],
           "parameters": r.set_params(z.parameters + h.parameters)}
    seqs = [r.randn(4, 3).astype(np.float64), r.randn(2, 3).astype(np.float64)]
    out = z.eval({x: seqs})
    res["eval"] = np.concatenate(out)
    res["eval types"] = [str(o.dtype) for o in out]
    res["head"] = h.eval({q: r.randn(2, 4).astype(np.float64)})
    grads = C.reduce_sum(C.sequence.reduce_sum(z)).grad({x: seqs}, wrt=z.parameters)
    res["grads"] = dict(("%s|%d" % (p.name, p.shape[-1]), grads[p])
                        for p in z.parameters)
    return res


@cntk_case(names=["cntk.plus", "cntk.times", "cntk.element_times", "cntk.constant",
                  "cntk.layers.Dense"],
           note="float32 and float64 in one op: an input or parameter of each type is CNTK's "
                "ValueError, and so is a Dense layer (float32 parameters) applied to a float64 "
                "input; a float32 constant or array in a float64 op is taken as float64 "
                "and a float64 array in a float32 op as float32; a float64 constant in a "
                "float32 op CNTK refuses (when it runs, as Stadyn now does). Stadyn "
                "promoted silently (or failed inside torch)")
def float64_meets_float32(C, r):
    r.touch("cntk.Function.eval")
    x32 = C.input_variable(3)
    x64 = C.input_variable(3, dtype=np.float64)
    p32 = C.parameter((3,), init=0.5)
    p64 = C.parameter((3,), init=0.5, dtype=np.float64)
    d32 = r.randn(2, 3)
    d64 = d32.astype(np.float64)

    def run(make, x, data):
        def go():
            out = make().eval({x: data})
            return [str(out.dtype), out.astype(np.float64).tolist()]
        return _attempt(go)
    dense = C.layers.Dense(2, init=0.5)
    c32 = C.constant(np.ones((3, 2), np.float32))
    c64 = C.constant(np.ones(3))
    return {
        "x32 + p64": run(lambda: x32 + p64, x32, d32),
        "x64 * p32": run(lambda: C.element_times(x64, p32), x64, d64),
        "x64 + p64": run(lambda: x64 + p64, x64, d64),
        "times(x64, c32)": run(lambda: C.times(x64, c32), x64, d64),
        "times(x64, array32)": run(lambda: C.times(x64, np.ones((3, 2), np.float32)),
                                   x64, d64),
        "times(x32, array64)": run(lambda: C.times(x32, np.ones((3, 2)) / 3.0), x32, d32),
        "x64 + 1.5": run(lambda: x64 + 1.5, x64, d64),
        "x32 + c64": run(lambda: x32 + c64, x32, d32),
        "x64 + c64": run(lambda: C.plus(x64, c64), x64, d64),
        "dense(x64)": run(lambda: dense(x64), x64, d64),
        "x32 fed float64": run(lambda: x32 * 2.0, x32, d64),
        "x64 fed float32": run(lambda: x64 * 2.0, x64, d32),
    }


def _when_refused(build, run):
    """Where a graph of a constant of another type fails: ``'built'`` (ValueError when the op
    is made), ``'run ValueError'`` (when it runs), or its result's type when it runs."""
    try:
        f = build()
    except ValueError:
        return "built"
    try:
        return str(run(f).dtype)
    except ValueError:
        return "run ValueError"


@cntk_case(names=["cntk.plus", "cntk.minus", "cntk.times", "cntk.element_times", "cntk.splice",
                  "cntk.constant", "cntk.Function.eval", "cntk.Function.forward",
                  "cntk.Function.grad", "cntk.Trainer.train_minibatch",
                  "cntk.Trainer.test_minibatch"],
           note="a float64 constant in a float32 op (plus, minus, times either way round, "
                "element_times, splice): CNTK 2.7 builds the op and refuses it when it runs "
                "(ValueError: Cannot clone Constant with DataType 'Double' to DataType "
                "'Float'), in eval, forward, grad, train_minibatch and test_minibatch alike; "
                "in an op of constants only, the first operand's type is the op's (Times: the "
                "right one) and another type is refused when it runs too, a float32 constant "
                "in a float64 op included; an op of two outputs of different types is refused "
                "when it is made. Stadyn refused the op when it was made (and splice not at "
                "all)")
def constant_of_another_type_refused_when_run(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.forward", "cntk.Function.grad",
            "cntk.Trainer.train_minibatch", "cntk.Trainer.test_minibatch")
    x = C.input_variable(2, needs_gradient=True)
    data = r.randn(3, 2)

    def c64(*shape):
        return C.constant(np.full(shape, 2.0))

    def c32(*shape):
        return C.constant(np.full(shape, 2.0, np.float32))

    def ev(f):
        return f.eval({x: data})
    res = {}
    for key, build in (("plus", lambda: C.plus(x, c64(2))), ("plus left", lambda: c64(2) + x),
                       ("minus", lambda: C.minus(x, c64(2))),
                       ("times", lambda: C.times(x, c64(2, 3))),
                       ("times left", lambda: C.times(c64(3, 2), x)),
                       ("element_times", lambda: C.element_times(x, c64(2))),
                       ("splice", lambda: C.splice(x, c64(2))),
                       ("splice left", lambda: C.splice(c64(2), x)),
                       ("sigmoid(c64) + x", lambda: C.sigmoid(c64(2)) + x),
                       ("(c64 + c64) + x", lambda: (c64(2) + c64(2)) + x)):
        res[key] = _when_refused(build, ev)
    res["forward"] = _when_refused(lambda: x + c64(2),
                                   lambda f: f.forward({x: data})[1][f.output])
    res["grad"] = _when_refused(lambda: x + c64(2), lambda f: f.grad({x: data}))
    for key, (a, b) in (("c32 + c64", (c32, c64)), ("c64 + c32", (c64, c32)),
                        ("c64 + c64", (c64, c64))):
        res[key] = _when_refused(lambda: C.plus(a(2), b(2)), lambda f: f.eval())
        res[key + " type"] = str(C.plus(a(2), b(2)).dtype)
    res["times(c32, c64) type"] = str(C.times(c32(2), c64(2, 3)).dtype)
    res["splice(c32, c64)"] = _when_refused(lambda: C.splice(c32(2), c64(2)),
                                            lambda f: f.eval())
    y = C.input_variable(2)
    z = x + c64(2)
    loss = C.squared_error(C.layers.Dense(2, init=0.5)(x), y)
    trainer = C.Trainer(z, (loss, C.squared_error(z, y)),
                        [C.sgd(loss.parameters, C.learning_parameter_schedule(0.1))])
    res["train_minibatch"] = _when_refused(
        lambda: trainer, lambda t: np.float32(t.train_minibatch({x: data, y: data})))
    res["test_minibatch"] = _when_refused(
        lambda: trainer, lambda t: np.float32(t.test_minibatch({x: data, y: data})))
    return res


@cntk_case(names=["cntk.Trainer.train_minibatch", "cntk.layers.default_options"],
           rtol=1e-12, atol=1e-13,
           note="truncated back-propagation through time (sequence-begin flags) in a float64 "
                "model: the states carried from one minibatch to the next keep float64. "
                "Stadyn kept them as float32")
def float64_sequence_begin_flags(C, r):
    r.touch("cntk.Trainer.train_minibatch")
    with C.layers.default_options(dtype=np.float64):
        x = C.sequence.input_variable(3)
        y = C.sequence.input_variable(2)
        z = C.layers.Sequential([C.layers.Recurrence(C.layers.LSTM(4)),
                                 C.layers.Recurrence(C.layers.GRU(3)), C.layers.Dense(2)])(x)
    res = {"parameters": r.set_params(z.parameters)}
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.squared_error(z, y)),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.5))])
    losses = []
    for k in range(3):
        xs = [r.randn(3, 3).astype(np.float64) for _ in range(2)]
        ys = [np.eye(2)[r.randint(0, 2, 3)] for _ in range(2)]
        trainer.train_minibatch(({x: xs, y: ys}, [k == 0, k == 0]))
        losses.append(trainer.previous_minibatch_loss_average)
    res["losses"] = np.array(losses)
    res["after"] = r.param_values(z.parameters)
    return res


@cntk_case(names=["cntk.NDArrayView.from_dense", "cntk.Value", "cntk.Value.dtype",
                  "cntk.Function.forward", "cntk.Parameter.set_value"],
           note="an NDArrayView or Value of a float64 array keeps float64, a float64 "
                "Function's forward(as_numpy=False) gives float64 Values, and set_value of an "
                "NDArrayView of the other type is CNTK's RuntimeError. Stadyn made them "
                "float32 and converted")
def float64_values(C, r):
    r.touch("cntk.NDArrayView.from_dense", "cntk.Value.dtype", "cntk.Function.forward",
            "cntk.Parameter.set_value")
    x = C.input_variable(2, dtype=np.float64)
    data = r.randn(1, 2).astype(np.float64) / 3.0
    _, out = (x * 2.0).forward({x: data}, as_numpy=False)
    value = list(out.values())[0]
    p = C.parameter((2,), init=0.5, dtype=np.float64)
    res = {"types": [np.dtype(C.NDArrayView.from_dense(data).dtype).name,
                     np.dtype(C.Value(batch=data).dtype).name, np.dtype(value.dtype).name],
           "forward": value.asarray()}
    try:
        p.set_value(C.NDArrayView.from_dense(np.ones(2, np.float32)))
        res["refused"] = "accepted"
    except RuntimeError:
        res["refused"] = "RuntimeError"
    p.set_value(C.NDArrayView.from_dense(data[0]))
    res["set"] = p.value
    return res


@cntk_case(names=["cntk.Constant", "cntk.Parameter", "cntk.constant", "cntk.parameter",
                  "cntk.layers.default_options"],
           note="the classes Constant and Parameter take default_options' type (float32 by "
                "default) whatever the value's type, the functions constant and parameter "
                "the value's (a float64 array's float64) whatever the options: CNTK 2.7's "
                "tutorial 204 multiplies a float32 sequence by Constant(np.eye(n)), which "
                "Stadyn made float64 and refused")
def float64_classes_and_functions(C, r):
    made = {"constant(list)": lambda: C.constant([1.0, 2.0]),
            "constant(2.0)": lambda: C.constant(2.0),
            "constant(f32)": lambda: C.constant(np.ones(2, np.float32)),
            "constant(f64)": lambda: C.constant(np.ones(2)),
            "parameter(f32)": lambda: C.parameter(init=np.ones(2, np.float32)),
            "parameter(f64)": lambda: C.parameter(init=np.ones(2)),
            "parameter(1.0)": lambda: C.parameter((2,), init=1.0),
            "Constant(f64)": lambda: C.Constant(np.ones(2)),
            "Constant(list)": lambda: C.Constant([1.0]),
            "Constant(f64, dtype)": lambda: C.Constant(np.ones(2), dtype=np.float64),
            "Parameter((2,))": lambda: C.Parameter((2,)),
            "Parameter(f64)": lambda: C.Parameter(init=np.ones(2)),
            "Parameter(f32)": lambda: C.Parameter(init=np.ones(2, np.float32))}
    res = {key: _names(make())[0] for key, make in made.items()}
    with C.layers.default_options(dtype=np.float64):
        res.update({"under float64: " + key: _names(make())[0] for key, make in made.items()})
    x = C.sequence.input_variable(3)
    eye = C.Constant(np.eye(3))
    res["times by Constant(np.eye)"] = C.times(x, eye).eval({x: [r.randn(2, 3).astype(
        np.float32)]})[0]
    return res


@cntk_case(names=["cntk.parameter", "cntk.constant", "cntk.Parameter", "cntk.Constant",
                  "cntk.input_variable", "cntk.layers.default_options", "cntk.layers.Dense",
                  "cntk.Function.eval", "cntk.Function.grad", "cntk.Trainer.train_minibatch",
                  "cntk.times"],
           rtol=2e-3, atol=2e-3,
           note="float16 on a CPU: CNTK 2.7 makes parameters, constants, inputs and layers "
                "(default_options(dtype=np.float16)) float16 and computes eval and grad in "
                "float16; the functions parameter and constant take a float16 array's type "
                "(the classes default_options'); a float16 and a float32 operand in one op "
                "are its ValueError when the op is made, a float32 constant in a float16 op "
                "when it runs; train_minibatch of float16 parameters is its RuntimeError "
                "(Unsupported data format). Stadyn took float16 as float32 and trained it. "
                "(Tolerance: float16's rounding.)")
def float16_on_a_cpu(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.grad", "cntk.Trainer.train_minibatch")
    res = {}
    res["types"] = _names(C.parameter((2, 3), dtype=np.float16),
                          C.parameter(init=np.ones(2, np.float16)),
                          C.constant(np.ones(2, np.float16)),
                          C.constant([1.0, 2.0], dtype=np.float16),
                          C.input_variable(2, dtype=np.float16))
    with C.layers.default_options(dtype=np.float16):
        res["default types"] = _names(C.Parameter((2,)), C.Constant(1.0, (2,)),
                                      C.parameter((2,)), C.constant(1.0, (2,)),
                                      C.input_variable(2))
        x = C.input_variable(3)
        z = C.layers.Dense(4, activation=C.sigmoid)(C.layers.Dense(5)(x))
    res["parameters"] = r.set_params(z.parameters)
    res["parameter types"] = _names(*z.parameters)
    data = r.randn(2, 3).astype(np.float16)
    res["eval"] = z.eval({x: data})
    grads = C.reduce_sum(z).grad({x: data}, wrt=z.parameters)
    res["grads"] = dict(("%s|%d" % (p.name, p.shape[-1]), grads[p]) for p in z.parameters)
    w = C.parameter((3, 2), init=r.randn(3, 2).astype(np.float16))
    res["times"] = C.times(x, w).eval({x: data})
    res["plus 1.5"] = (x + 1.5).eval({x: data})
    res["f16 + p32"] = _when_refused(lambda: x + C.parameter((3,), init=1.0),
                                     lambda f: f.eval({x: data}))
    res["f16 + c32"] = _when_refused(lambda: x + C.constant(np.ones(3, np.float32)),
                                     lambda f: f.eval({x: data}))
    x32 = C.input_variable(3)
    res["f32 + c16"] = _when_refused(lambda: x32 + C.constant(np.ones(3, np.float16)),
                                     lambda f: f.eval({x32: data.astype(np.float32)}))
    y = C.input_variable(4, dtype=np.float16)
    loss = C.squared_error(z, y)
    trainer = C.Trainer(z, (loss,), [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    try:
        trainer.train_minibatch({x: data, y: r.rand(2, 4).astype(np.float16)})
        res["train"] = "trained"
    except RuntimeError:
        res["train"] = "RuntimeError"
    res["after"] = r.param_values(z.parameters)
    return res


def _refusal(call):
    """What the call gave: the result's data type, or the kind of error and whether its text
    says CNTK 2.7's words for an unsupported NumPy type."""
    try:
        return np.dtype(call().dtype).name
    except (ValueError, TypeError) as error:
        said = "NumPy type" in str(error) and "is not supported" in str(error)
        return "%s%s" % (type(error).__name__, " (NumPy type)" if said else "")


@cntk_case(names=["cntk.minus", "cntk.plus", "cntk.element_times", "cntk.times", "cntk.less",
                  "cntk.pow", "cntk.floor", "cntk.clip", "cntk.squared_error",
                  "cntk.cross_entropy_with_softmax", "cntk.sequence.broadcast_as",
                  "cntk.relu", "cntk.reduce_sum", "cntk.element_and", "cntk.element_select"],
           note="integer and bool NumPy arrays as operands: CNTK 2.7's binary ops, losses, "
                "metrics and sequence ops refuse them (ValueError 'NumPy type \"int64\" is not "
                "supported', before any other check), its activations and reductions cast them "
                "to float32; numbers, lists and integer NumPy scalars are taken everywhere. "
                "Stadyn computed them all in float32")
def integer_numpy_operands(C, r):
    a = np.array([1, 2, 3], np.int64)
    x = C.input_variable(3)
    s = C.sequence.input_variable(3)
    calls = {
        "minus": lambda: C.minus(a, a), "plus x": lambda: C.plus(x, a),
        "x - a": lambda: x - a, "x * a": lambda: x * a,
        "element_times": lambda: C.element_times(x, a),
        "minus int32": lambda: C.minus(x, a.astype(np.int32)),
        "minus bool": lambda: C.minus(x, a > 1),
        "times": lambda: C.times(a, np.ones((3, 2), np.int32)),
        "less": lambda: C.less(x, a), "pow": lambda: C.pow(a, 2),
        "floor": lambda: C.floor(a), "clip bounds": lambda: C.clip(x, a, 5),
        "clip": lambda: C.clip(a, 0, 5), "squared_error": lambda: C.squared_error(x, a),
        "cross_entropy": lambda: C.cross_entropy_with_softmax(x, a),
        "broadcast_as": lambda: C.sequence.broadcast_as(a, s),
        "relu": lambda: C.relu(a), "reduce_sum": lambda: C.reduce_sum(a),
        "element_and": lambda: C.element_and(a, a),
        "element_select": lambda: C.element_select(a, x, x),
        "int scalar": lambda: C.minus(x, np.int64(2)), "list": lambda: C.minus(x, [1, 2, 3]),
        "float16 - float64": lambda: C.minus(np.ones(3, np.float16), np.ones(3, np.float64)),
    }
    res = dict((key, _refusal(call)) for key, call in calls.items())
    res["relu value"] = C.relu(a).eval()
    return res
