"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (twenty-ninth round): Trainers over
inputs without dynamic axes, over a model that is a Combine of an input, and over a loss with
nothing to count samples on; ``@C.Function`` of no arguments."""

from compat_harness import cntk_case
from compat_cases.cntk_fidelity_23 import _masked, _said


@cntk_case(names=["cntk.train.trainer.Trainer", "cntk.Trainer.train_minibatch",
                  "cntk.Trainer.previous_minibatch_sample_count",
                  "cntk.Trainer.previous_minibatch_loss_average",
                  "cntk.Trainer.previous_minibatch_evaluation_average",
                  "cntk.ops.input_variable"],
           note="a Trainer over an input without dynamic axes (input_variable(3, "
                "dynamic_axes=[]), a weight the loss multiplies by) next to batched inputs: "
                "CNTK 2.7 trains it, feeding the unbatched input's one value ((3,) or (1, 3)) "
                "to every sample and counting the batched inputs' samples (2).  Stadyn refused "
                "it: DataError 'different sample counts [2, 3]'")
def trainer__input_without_dynamic_axes_beside_batched(C, r, np):
    r.touch("cntk.Trainer.train_minibatch", "cntk.Trainer.previous_minibatch_sample_count",
            "cntk.Trainer.previous_minibatch_loss_average",
            "cntk.Trainer.previous_minibatch_evaluation_average", "cntk.ops.input_variable")
    x = C.input_variable(3, name="x")
    w = C.input_variable(3, dynamic_axes=[], name="w")
    y = C.input_variable(1, name="y")
    z = C.layers.Dense(1, init=0.5)(x)
    weighted = C.reduce_sum(C.squared_error(z, y) * C.reduce_sum(w))
    added = C.squared_error(z, y) + C.reduce_sum(w)
    res = {"axes": [[a.name for a in weighted.dynamic_axes],
                    [a.name for a in added.dynamic_axes]]}
    data = {x: np.ones((2, 3), np.float32), y: np.ones((2, 1), np.float32)}
    for label, loss, metric in (("weighted", weighted, None), ("added", added, added)):
        for p in z.parameters:
            p.value = np.full(p.shape, 0.5, np.float32) if p.name == "W" else \
                np.zeros(p.shape, np.float32)
        trainer = C.Trainer(z, (loss, metric), C.sgd(z.parameters, 0.1))
        for k, weight in enumerate((np.array([1, 2, 3], np.float32),
                                    np.ones((1, 3), np.float32))):
            fed = dict(data)
            fed[w] = weight
            done = trainer.train_minibatch(fed)
            res["%s %d" % (label, k)] = [
                done, trainer.previous_minibatch_sample_count,
                trainer.previous_minibatch_loss_average,
                trainer.previous_minibatch_evaluation_average if metric is not None else None,
                z.W.value, z.b.value]
    return res


@cntk_case(names=["cntk.ops.combine", "cntk.train.trainer.Trainer", "cntk.Trainer.model",
                  "cntk.Trainer.train_minibatch"],
           note="a Trainer whose model is C.combine([x]) of an input x (the loss computed from "
                "x and a parameter): CNTK 2.7 makes and trains it, trainer.model the Combine "
                "Function.  Stadyn raised AttributeError '_run_state' as it was made (its "
                "model read back as the input Variable)")
def trainer__model_a_combine_of_an_input(C, r, np):
    r.touch("cntk.Trainer.model", "cntk.Trainer.train_minibatch")
    x = C.input_variable(3, name="x")
    t = C.input_variable(3, name="t")
    p = C.parameter((3,), init=1.0, name="p")
    m = C.combine([x])
    trainer = C.Trainer(m, (C.squared_error(x * p, t), None), C.sgd([p], 0.1))
    model = trainer.model
    res = {"model": [repr(model), type(model).__name__, list(model.shape),
                     [a.name for a in model.arguments]]}
    done = trainer.train_minibatch({x: np.ones((2, 3), np.float32),
                                    t: np.zeros((2, 3), np.float32)})
    res["trained"] = [done, p.value, trainer.previous_minibatch_sample_count,
                      trainer.previous_minibatch_loss_average]
    res["model eval"] = model.eval({x: np.array([[1.0, 2.0, 3.0]], np.float32)})
    return res


@cntk_case(names=["cntk.train.trainer.Trainer", "cntk.Trainer.train_minibatch"],
           note="a Trainer whose loss has no dynamic axis and is computed from no Variable "
                "with one (inputs without dynamic axes, parameters): CNTK 2.7 refuses it as "
                "it is made, ValueError 'Trainer: Failed to find a variable underlying the "
                "graph rooted at specified loss function '<its root function>', from which "
                "the training sample count can be determined.' (a batched model or metric "
                "beside it does not help); a loss reduced over all axes of a batched input is "
                "made and counts that input's samples.  Stadyn made each")
def trainer__loss_without_samples_refused(C, r, np):
    r.touch("cntk.Trainer.train_minibatch")
    x = C.input_variable(3, name="x")
    a = C.input_variable(3, dynamic_axes=[], name="a")
    p = C.parameter((3,), init=1.0, name="p")
    batched = C.reduce_sum(x * p)
    made = {"reduce_sum(a*p)": lambda l: C.Trainer(l, (l, None), C.sgd([p], 0.1)),
            "metric batched": lambda l: C.Trainer(batched, (l, batched), C.sgd([p], 0.1)),
            "model batched": lambda l: C.Trainer(batched, (l, None), C.sgd([p], 0.1))}
    res = {}
    for label, make in made.items():
        loss = C.reduce_sum(a * p)
        res[label] = _said(lambda: make(loss))
    for label, loss in (("parameters only", C.reduce_sum(p * p)),
                        ("reduce_mean(square(a - p))", C.reduce_mean(C.square(a - p))),
                        ("plus", C.plus(a, p, name="pl"))):
        res[label] = _said(lambda: C.Trainer(loss, (loss, None), C.sgd([p], 0.1)))
    whole = C.reduce_sum(x * p, axis=C.Axis.all_axes())
    trainer = C.Trainer(whole, (whole, None), C.sgd([p], 0.1))
    res["all axes"] = [trainer.train_minibatch({x: np.ones((2, 3), np.float32)}),
                       trainer.previous_minibatch_sample_count,
                       trainer.previous_minibatch_loss_average, p.value]
    return res


@cntk_case(names=["cntk.ops.functions.Function", "cntk.layers.Sequential"],
           note="@C.Function of a Python function of no arguments returning a Constant (or "
                "of one returning its argument): CNTK 2.7 makes a Combine Function of it "
                "('Composite(Combine):  -> Constant(...)', no arguments, evaluating to the "
                "Constant; called with nothing, that value), and refuses it as a Sequential's "
                "step or applied to an input (TypeError 'CNTK Function expected 0 arguments, "
                "got 1').  Stadyn gave the Constant itself (and a Function returning its "
                "argument gave the placeholder)")
def function__of_no_arguments(C, r, np):
    @C.Function
    def k():
        return C.constant(np.full(2, 3.0, np.float32))

    @C.Function
    def same(a):
        return a

    x = C.input_variable(2, name="x")
    res = {"k": [isinstance(k, C.Function), _masked(repr(k)), list(k.arguments), list(k.shape),
                 k.root_function.op_name, k.is_composite, k.eval(), k(),
                 _masked(repr(k.outputs))],
           "same": [isinstance(same, C.Function), _masked(repr(same)),
                    [a.name for a in same.arguments]],
           "same(x)": same(x).eval({x: np.array([[1.0, 2.0]], np.float32)}),
           "plus(k, x)": list(C.plus(k, x).shape)}
    L = C.layers
    made = {"k(x)": lambda: k(x), "Sequential([k])": lambda: L.Sequential([k]),
            "Sequential([relu, k])": lambda: L.Sequential([C.relu, k])}
    for label, make in made.items():
        res[label] = _said(make)
    return res


@cntk_case(names=["cntk.layers.Dense", "cntk.layers.Sequential", "cntk.layers.Embedding",
                  "cntk.layers.Convolution", "cntk.Function.parameters",
                  "cntk.Function.replace_placeholders"],
           note="a layer applied to an element-wise op of a placeholder and an input "
                "(Dense(2)(plus(placeholder(), x)), x of (3,)): CNTK 2.7 infers the op's "
                "shape (x's) and applies the layer at the call: its output (2,) over the batch "
                "axis, its parameters made ((3, 2), (2,): the layer's own too), a "
                "Convolution over rank 1 refused at once ('Convolution map tensor must have "
                "rank 1 ...'); over a placeholder alone it waits ((-2,), W (-1, 2)).  Stadyn "
                "kept each waiting ((-2,), unknown axes, W (-1, 2))")
def layers__applied_to_an_elementwise_op_of_a_placeholder(C, r, np):
    r.touch("cntk.layers.Sequential", "cntk.layers.Embedding", "cntk.layers.Convolution",
            "cntk.Function.parameters", "cntk.Function.replace_placeholders")
    L = C.layers
    x = C.input_variable(3, name="x")
    d = L.Dense(2, init=1.0)
    res = {"before": [list(p.shape) for p in d.parameters]}
    f = d(C.plus(C.placeholder(), x))
    res["Dense"] = [list(f.shape), [a.name for a in f.dynamic_axes],
                    [list(p.shape) for p in f.parameters], [list(p.shape) for p in d.parameters],
                    list(f.W.shape)]
    g = L.Dense(2)(C.placeholder())
    res["over a placeholder"] = [list(g.shape), [list(p.shape) for p in g.parameters]]
    h = L.Sequential([L.Dense(4), L.Dense(2)])(C.plus(C.placeholder(), x))
    res["Sequential"] = [list(h.shape), [list(p.shape) for p in h.parameters]]
    e = L.Embedding(4)(C.plus(C.placeholder(), x))
    res["Embedding"] = [list(e.shape), [list(p.shape) for p in e.parameters]]
    res["Convolution"] = _said(lambda: L.Convolution((2,), 2)(C.plus(C.placeholder(), x)))
    y = C.input_variable(3, name="y")
    bound = f.replace_placeholders({f.placeholders[0]: y})
    res["bound"] = [list(bound.shape), bound.eval({x: np.ones((1, 3), np.float32),
                                                   y: np.array([[1.0, 2.0, 3.0]], np.float32)})]
    return res


@cntk_case(names=["cntk.losses.weighted_binary_cross_entropy", "cntk.Function.eval"],
           note="weighted_binary_cross_entropy built with weights CNTK 2.7 cannot run: made "
                "(shape (), no dynamic axes) and refused when run, in the order CNTK finds "
                "them: weights of another size per sample than the output (RuntimeError 'The "
                "Matrix dimensions of the second argument weights the Logistic# Logistic "
                "operation do not match.'), a weight without the batch axis -- a constant, a "
                "number, an input with dynamic_axes=[] -- (RuntimeError \"Node 'Constant#' "
                "(LearnableParameter operation): ColumnRangeWithMBLayoutFor: ...\"), an output "
                "of (3,) (ValueError 'The input matrix dimensions do not match.').  Stadyn "
                "gave messages of its own (a (3,) output with (1,) weights, a constant of (3,) "
                "for a (3,) output), and a number as the weight failed as it was made")
def losses__weighted_binary_cross_entropy_weights_refused(C, r, np):
    r.touch("cntk.Function.eval")

    def const(shape):
        return C.constant(np.full(shape, 2.0, np.float32)), {}

    def batched(shape):
        w = C.input_variable(shape, name="w")
        return w, {w: np.full((2,) + shape, 2.0, np.float32)}

    def unbatched(shape):
        w = C.input_variable(shape, dynamic_axes=[], name="w")
        return w, {w: np.full(shape, 2.0, np.float32)}

    made = {"(3,) constant (3,)": ((3,), lambda: const((3,))),
            "(3,) input (3,)": ((3,), lambda: batched((3,))),
            "(1,) constant (1,)": ((1,), lambda: const((1,))),
            "(1,) input (1,)": ((1,), lambda: batched((1,))),
            "(1,) input without axes (1,)": ((1,), lambda: unbatched((1,))),
            "(3,) constant (1,)": ((3,), lambda: const((1,))),
            "(3,) input (1,)": ((3,), lambda: batched((1,))),
            "(1,) number": ((1,), lambda: (2.0, {}))}
    res = {}
    for label, (shape, weight) in made.items():
        o = C.input_variable(shape, name="o")
        t = C.input_variable(shape, name="t")
        w, fed = weight()
        f = C.weighted_binary_cross_entropy(o, t, w)
        data = {o: np.full((2,) + shape, 0.25, np.float32), t: np.ones((2,) + shape, np.float32)}
        data.update(fed)
        said = _said(lambda: f.eval(data))
        res[label] = [list(f.shape), len(f.dynamic_axes), said]
        if said == ["returns"]:
            res[label + " value"] = f.eval(data)
    return res
