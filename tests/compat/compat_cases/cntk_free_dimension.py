"""An input with a free dimension (``input_variable((C.FreeDimension, 3))``): each minibatch gives
that axis' length (tests/fixtures/cntk_free_dimension/probe.py compares the two frameworks
program by program).  Stadyn refused the shape (a negative dimension)."""

import re

import numpy as np

from compat_harness import cntk_case


def _refusal(call):
    """What ``call()`` raised, as ``[type, first line]`` (uid numbers masked), or ``"ok"``."""
    try:
        call()
    except Exception as e:      # (the built-in type and the words are compared)
        kind = next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")
        return [kind, re.sub(r"Placeholder\d+", "Placeholder#", str(e).strip().split("\n")[0])]
    return "ok"


def _rows(*shape):
    return (np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) % 7) / 7 - 0.4


@cntk_case(names=["cntk.input_variable", "cntk.FreeDimension", "cntk.ops.reduce_sum",
                  "cntk.ops.times"],
           note="an input of shape (FreeDimension, 3): shown [* x 3], shape (-3, 3) through "
                "element-wise ops and times, (1, 3) summed over it, (2, 3) sliced [0, 2) (a "
                "slice from 1 to the end keeps -3); evaluated at lengths 4, 2 and 5 in a "
                "row.  Stadyn refused the shape")
def free_dimension__shapes_and_values_at_three_lengths(C, r):
    r.touch("cntk.input_variable", "cntk.FreeDimension", "cntk.ops.reduce_sum",
            "cntk.ops.times", "cntk.ops.parameter", "cntk.Function.eval", "cntk.Function.shape",
            "cntk.ops.slice")
    x = C.input_variable((C.FreeDimension, 3), name="x")
    w = C.parameter((3, 2), init=np.arange(6, dtype=np.float32).reshape(3, 2) / 5)
    f, s = C.times(x * 2, w), C.reduce_sum(x, axis=0)
    res = {"repr": repr(x), "shapes": [list(x.shape), list(f.shape), list(s.shape),
                                       list(C.reduce_sum(x, axis=1).shape)]}
    for n in (4, 2, 5):
        a = _rows(2, n, 3)
        res["times %d" % n], res["sum %d" % n] = f.eval({x: a}), s.eval({x: a})
    sliced = C.slice(x, 0, 0, 2)        # (a range counted from the start: static, 2)
    res["slice"] = [list(sliced.shape), list(C.slice(x, 0, 1, 0).shape)]
    res["slice value"] = sliced.eval({x: _rows(2, 3, 3)})
    res["one sample"] = (x * 1).eval({x: _rows(3, 3)})
    res["a list"] = (x * 1).eval({x: [_rows(2, 3), _rows(2, 3) + 1]})
    return res


@cntk_case(names=["cntk.input_variable", "cntk.FreeDimension", "cntk.layers.Dense"],
           note="samples of different lengths in one minibatch (eval, Value.create, a "
                "Trainer): CNTK 2.7's 'Value::Create: The shape ... of sequence #1 is not "
                "compatible with the sample shape '[* x 3]''; a Dense over (FreeDimension, "
                "3): Times' 'dimension cannot be inferred from a left operand ... free "
                "dimension', with map_rank=1 a weight 3 x 4.  "
                "Stadyn refused the shape")
def free_dimension__refusals_and_dense(C, r):
    r.touch("cntk.input_variable", "cntk.FreeDimension", "cntk.layers.Dense",
            "cntk.Function.eval", "cntk.Value.create", "cntk.Trainer.train_minibatch")
    x = C.input_variable((C.FreeDimension, 3), name="x")
    res = {"mixed": _refusal(lambda: (x * 1).eval({x: [_rows(4, 3), _rows(2, 3)]})),
           "dense": _refusal(lambda: C.layers.Dense(4)(x)),
           "dense rank 2": _refusal(lambda: C.layers.Dense(2, input_rank=2)(x))}
    res["Value.create"] = _refusal(lambda: C.Value.create(x, [_rows(2, 3), _rows(3, 3)]))
    res["Value.create shape"] = list(C.Value.create(x, [_rows(2, 3), _rows(2, 3)]).shape)
    t = C.input_variable(1, name="t")
    m = C.reshape(C.reduce_mean(C.times(x, C.parameter((3, 1), init=0.5)), axis=0), (1,))
    trainer = C.Trainer(m, (C.squared_error(m, t), None),
                        [C.sgd(m.parameters, C.learning_parameter_schedule(0.1))])
    res["Trainer"] = _refusal(lambda: trainer.train_minibatch(
        {x: [_rows(3, 3), _rows(2, 3)], t: np.ones((2, 1), np.float32)}))
    d = C.layers.Dense(4, map_rank=1, init=C.glorot_uniform(seed=1))
    y = d(x)
    res["map_rank 1"] = [list(y.shape), list(d.W.shape)]
    res["map_rank 1 value"] = y.eval({x: _rows(2, 5, 3)})
    return res


@cntk_case(names=["cntk.input_variable", "cntk.FreeDimension", "cntk.layers.Convolution",
                  "cntk.layers.MaxPooling"],
           rtol=1e-4, atol=1e-5,
           note="a convolution and a pooling over (1, FreeDimension, FreeDimension) images "
                "of two sizes (a fully convolutional network): shape (2, -3, -3), the weight "
                "(2, 1, 3, 3).  Stadyn refused the shape")
def free_dimension__convolution_over_two_image_sizes(C, r):
    r.touch("cntk.input_variable", "cntk.FreeDimension", "cntk.layers.Convolution",
            "cntk.layers.MaxPooling", "cntk.Function.eval")
    x = C.input_variable((1, C.FreeDimension, C.FreeDimension), name="x")
    conv = C.layers.Convolution((3, 3), 2, pad=False, init=C.glorot_uniform(seed=1))
    y = C.layers.MaxPooling((2, 2), strides=2)(conv(x))
    res = {"shapes": [list(conv(x).shape), list(y.shape), list(conv.W.shape)]}
    for h, w in ((6, 8), (10, 6)):
        res["%dx%d" % (h, w)] = y.eval({x: _rows(1, 1, h, w)})
    return res


@cntk_case(names=["cntk.input_variable", "cntk.FreeDimension", "cntk.Function.grad",
                  "cntk.Trainer.train_minibatch"],
           note="gradients at two lengths, and a Trainer's sgd steps on minibatches of "
                "lengths 3 then 5.  Stadyn refused the shape")
def free_dimension__gradients_and_training(C, r):
    r.touch("cntk.input_variable", "cntk.FreeDimension", "cntk.Function.grad",
            "cntk.Trainer.train_minibatch", "cntk.ops.reduce_mean", "cntk.ops.squared_error",
            "cntk.learners.sgd", "cntk.Trainer.previous_minibatch_loss_average")
    x = C.input_variable((C.FreeDimension, 3), needs_gradient=True, name="x")
    f = C.reduce_sum(x * x * x)
    res = {"grad %d" % n: f.grad({x: _rows(2, n, 3)}) for n in (4, 2)}
    t = C.input_variable(1, name="t")
    w = C.parameter((3, 1), init=0.5)
    m = C.reshape(C.reduce_mean(C.times(x, w), axis=0), (1,))
    loss = C.squared_error(m, t)
    trainer = C.Trainer(m, (loss, None), [C.sgd(m.parameters,
                                                 C.learning_parameter_schedule(0.1))])
    for n in (3, 5):
        trainer.train_minibatch({x: _rows(2, n, 3), t: np.ones((2, 1), np.float32)})
        res["loss %d" % n] = float(trainer.previous_minibatch_loss_average)
        res["w %d" % n] = np.asarray(w.value)
    return res


@cntk_case(names=["cntk.input_variable", "cntk.FreeDimension", "cntk.ops.reshape"],
           note="reshape targets with a FreeDimension: from (FreeDimension, 3) to (-3, 3) and "
                "(-3, 1, 3) (the free axis goes there), -1 joining it ((-3,), (3, -3)); from "
                "a fixed (6,) CNTK 2.7's RuntimeError 'NDShape::TotalSize: TotalSize cannot "
                "be determined ...'.  Stadyn refused the input's shape, and the target in "
                "words of its own")
def free_dimension__reshape_targets(C, r):
    r.touch("cntk.input_variable", "cntk.FreeDimension", "cntk.ops.reshape",
            "cntk.Function.eval", "cntk.Function.shape")
    x = C.input_variable((C.FreeDimension, 3), name="x")
    a = _rows(1, 4, 3)
    res = {}
    for label, target in [("free 3", (C.FreeDimension, 3)), ("free 1 3", (C.FreeDimension, 1, 3)),
                          ("-1", (-1,)), ("3 -1", (3, -1))]:
        f = C.reshape(x, target)
        res[label] = [list(f.shape), list(f.eval({x: a}).shape)]
    res["free 1 3 value"] = C.reshape(x, (C.FreeDimension, 1, 3)).eval({x: a})
    y = C.input_variable(6, name="y")
    res["fixed"] = _refusal(lambda: C.reshape(y, (C.FreeDimension, 3)))
    res["fixed 2"] = _refusal(lambda: C.reshape(y, (2, C.FreeDimension)))
    return res


@cntk_case(names=["cntk.input_variable", "cntk.FreeDimension", "cntk.layers.Convolution",
                  "cntk.parameter", "cntk.layers.LayerNormalization", "cntk.layers.Embedding"],
           note="what needs a free dimension's size: a convolution over a free channel axis "
                "(CNTK 2.7: 'Convolution kernel or stride/padding attribute shape has an "
                "illegal FreeDimension after shape inference.'), a parameter of a free shape "
                "('it is illegal for a Parameter/Constant to have a FreeDimension'); and what "
                "does not: LayerNormalization, Embedding over the last axis, times with the "
                "free axis on the right (2, -3).  Stadyn refused the input's shape")
def free_dimension__what_needs_its_size(C, r):
    r.touch("cntk.input_variable", "cntk.FreeDimension", "cntk.layers.Convolution",
            "cntk.parameter", "cntk.layers.LayerNormalization", "cntk.layers.Embedding",
            "cntk.ops.times", "cntk.Function.eval")
    F = C.FreeDimension
    x = C.input_variable((F, 3), name="x")
    img = C.input_variable((F, 5, 5), name="img")
    res = {"conv": _refusal(lambda: C.layers.Convolution((3, 3), 2)(img)),
           "param": _refusal(lambda: C.parameter((F, 3), name="p"))}
    a = _rows(2, 4, 3)
    ln = C.layers.LayerNormalization()(x)
    res["ln"] = [list(ln.shape), ln.eval({x: a})]
    e = C.layers.Embedding(4, init=C.glorot_uniform(seed=3))(x)
    res["embedding"] = [list(e.shape), e.eval({x: a})]
    col = C.input_variable((4, F), name="col")
    t = C.times(C.parameter((2, 4), init=0.25), col)
    res["times right"] = [list(t.shape), t.eval({col: _rows(1, 4, 5)})]
    return res


@cntk_case(names=["cntk.input_variable", "cntk.FreeDimension", "cntk.ops.flatten",
                  "cntk.ops.pad", "cntk.ops.dropout", "cntk.ops.softmax", "cntk.ops.transpose",
                  "cntk.ops.splice", "cntk.ops.times_transpose"],
           note="more ops over (FreeDimension, 3) and (3, FreeDimension), their shapes and "
                "values at lengths 4 and 2: flatten (1, -3) (Stadyn wrote the length it was "
                "built with into the reshape: a (2, 4, 3) minibatch came out (4, 1, 6)), pad "
                "and dropout keep -3 (Stadyn showed the last length), plus a (4, 3) constant "
                "is (4, 3); Stadyn refused the input's shape before")
def free_dimension__more_ops(C, r):
    r.touch("cntk.input_variable", "cntk.FreeDimension", "cntk.ops.flatten", "cntk.ops.pad",
            "cntk.ops.dropout", "cntk.ops.softmax", "cntk.ops.transpose", "cntk.ops.splice",
            "cntk.ops.times_transpose", "cntk.ops.reduce_max", "cntk.ops.slice",
            "cntk.ops.reduce_sum", "cntk.Function.eval", "cntk.Function.shape")
    F = C.FreeDimension
    x = C.input_variable((F, 3), name="x")
    y = C.input_variable((3, F), name="y")
    made = {"flatten": C.flatten(x), "pad": C.pad(x, pattern=[(1, 2), (0, 0)]),
            "dropout": C.dropout(x, 0.0), "softmax": C.softmax(x, axis=0),
            "reduce_max": C.reduce_max(x, axis=0), "transpose": C.transpose(x, (1, 0)),
            "splice": C.splice(x, x * 2, axis=1), "slice from the end": C.slice(x, 0, -2, 0),
            "times_transpose": C.times_transpose(x, C.constant(
                np.arange(6, dtype=np.float32).reshape(2, 3) / 6)),
            "y reduce_sum": C.reduce_sum(y, axis=1),
            "plus a fixed (4, 3)": x + C.constant(np.arange(12, dtype=np.float32).reshape(4, 3))}
    res = {}
    for label, f in sorted(made.items()):
        res[label + " shape"] = list(f.shape)
        for n in ((4,) if "fixed" in label else (4, 2)):
            arg = f.arguments[0]
            shape = [d if d != -3 else n for d in arg.shape]
            res["%s %d" % (label, n)] = f.eval({arg: _rows(*([2] + shape))})
    return res


@cntk_case(names=["cntk.input_variable", "cntk.Function.eval", "cntk.Trainer.train_minibatch"],
           note="minibatches that do not fit an input (trailing dimensions, a rank too low, a "
                "middle axis not 1, too many axes, a sequence's steps of another shape), by "
                "eval and by a Trainer: CNTK 2.7 names the input as it shows it "
                "('Input('x', [#], [* x 3])').  Stadyn named it 'input'")
def free_dimension__misfit_feeds_name_the_input(C, r):
    r.touch("cntk.input_variable", "cntk.sequence.input_variable", "cntk.Function.eval",
            "cntk.Trainer.train_minibatch", "cntk.layers.Dense", "cntk.learners.sgd")
    x = C.input_variable((C.FreeDimension, 3), name="x")
    y = C.input_variable(3, name="y")
    s = C.sequence.input_variable(3, name="s")
    res = {"free trailing": _refusal(lambda: (x * 1).eval({x: _rows(2, 4, 2)})),
           "free rank": _refusal(lambda: (x * 1).eval({x: _rows(3)})),
           "free middle": _refusal(lambda: (x * 1).eval({x: _rows(2, 2, 4, 3)})),
           "trailing": _refusal(lambda: (y * 1).eval({y: _rows(2, 4)})),
           "middle": _refusal(lambda: (y * 1).eval({y: _rows(2, 2, 3)})),
           "too many axes": _refusal(lambda: (y * 1).eval({y: _rows(2, 1, 1, 3)})),
           "steps": _refusal(lambda: (s * 1).eval({s: [_rows(2, 4)]}))}
    t = C.input_variable(1, name="t")
    loss = C.reduce_sum(C.layers.Dense(1, map_rank=1)(x)) + C.reduce_sum(y) - t
    trainer = C.Trainer(loss, (loss, None), [C.sgd(loss.parameters,
                                                   C.learning_parameter_schedule(0.1))])
    res["Trainer trailing"] = _refusal(lambda: trainer.train_minibatch(
        {x: _rows(2, 4, 3), y: _rows(2, 4), t: _rows(2, 1)}))
    res["Trainer free trailing"] = _refusal(lambda: trainer.train_minibatch(
        {x: _rows(2, 4, 2), y: _rows(2, 3), t: _rows(2, 1)}))
    return res


@cntk_case(names=["cntk.input_variable", "cntk.FreeDimension", "cntk.ops.gather",
                  "cntk.ops.splice", "cntk.ops.times"],
           note="ops over a free dimension at lengths 4 and 2 that wrote the length they were "
                "built with into a reshape: gather by indices of shape (FreeDimension,) (a "
                "(2, 4) minibatch came out (8, 1, 2)), splice along Axis.new_leading_axis() "
                "(shown (2, 2, 3), a (2, 4, 3) minibatch came out (4, 2, 2, 3)), times by a "
                "vector (an outer product: (4, 2, 3, 3))")
def free_dimension__gather_splice_outer_times(C, r):
    r.touch("cntk.input_variable", "cntk.FreeDimension", "cntk.ops.gather", "cntk.ops.splice",
            "cntk.ops.times", "cntk.ops.constant", "cntk.Axis.new_leading_axis",
            "cntk.Function.eval", "cntk.Function.shape")
    F = C.FreeDimension
    x = C.input_variable((F, 3), name="x")
    i = C.input_variable((F,), name="i")
    table = C.constant((np.arange(10, dtype=np.float32).reshape(5, 2) % 7) / 7 - 0.4)
    made = {"gather": C.gather(table, i),
            "splice new axis": C.splice(x, x * 2, axis=C.Axis.new_leading_axis()),
            "times a vector": C.times(x, C.constant(np.array([1, 2, 3], np.float32)))}
    res = {}
    for label, f in sorted(made.items()):
        res[label + " shape"] = list(f.shape)
        for n in (4, 2):
            arg = f.arguments[0]
            a = (np.arange(2 * n, dtype=np.float32).reshape(2, n) % 5) if arg.name == "i" \
                else _rows(2, n, 3)
            res["%s %d" % (label, n)] = f.eval({arg: a})
    return res


@cntk_case(names=["cntk.sequence.input_variable", "cntk.FreeDimension"],
           note="a sequence input whose steps have a free dimension ((FreeDimension, 2)): "
                "shown [* x 2]; each minibatch gives it one length (sequences of 2 and 4 steps "
                "of length 3, then one of length 5), sequences of two lengths in one "
                "minibatch are CNTK 2.7's 'Value::Create: ... of sequence #1 is not compatible "
                "with the sample shape '[* x 2]''; -3 kept through sequence ops (reduce_sum, "
                "last, past_value, unpack: (-3, -3, 2)).  Stadyn refused the input")
def free_dimension__in_a_sequence_inputs_steps(C, r):
    r.touch("cntk.sequence.input_variable", "cntk.FreeDimension", "cntk.sequence.reduce_sum",
            "cntk.ops.reduce_sum", "cntk.Function.eval", "cntk.sequence.last",
            "cntk.sequence.reduce_max", "cntk.sequence.past_value", "cntk.sequence.slice",
            "cntk.sequence.unpack", "cntk.sequence.broadcast_as", "cntk.Function.shape",
            "cntk.Trainer.train_minibatch", "cntk.learners.sgd", "cntk.ops.times")
    x = C.sequence.input_variable((C.FreeDimension, 2), name="x")
    f = C.sequence.reduce_sum(C.reduce_sum(x * 2, axis=0))
    res = {"repr": repr(x), "shape": list(x.shape)}
    made = [C.sequence.reduce_sum(x), C.sequence.last(x), C.sequence.reduce_max(x),
            C.sequence.past_value(x), C.sequence.slice(x, 0, 1),
            C.sequence.unpack(x, 0, no_mask_output=True), C.reduce_sum(x, axis=0),
            C.sequence.broadcast_as(C.sequence.last(x), x)]
    res["shapes"] = [list(g.shape) for g in made]
    res["length 3"] = [np.asarray(v) for v in f.eval({x: [_rows(2, 3, 2), _rows(4, 3, 2)]})]
    res["length 5"] = [np.asarray(v) for v in f.eval({x: [_rows(2, 5, 2)]})]
    res["mixed"] = _refusal(lambda: f.eval({x: [_rows(2, 3, 2), _rows(2, 4, 2)]}))
    t, w = C.input_variable(1, name="t"), C.parameter((2, 1), init=0.5)
    m = C.sequence.reduce_sum(C.reduce_mean(C.times(x, w), axis=0))
    trainer = C.Trainer(m, (C.squared_error(m, t), None),
                        [C.sgd(m.parameters, C.learning_parameter_schedule(0.1))])
    for n in (3, 5):        # a Trainer's steps at two lengths
        trainer.train_minibatch({x: [_rows(2, n, 2), _rows(3, n, 2) + 1],
                                 t: np.ones((2, 1), np.float32)})
        res["Trainer %d" % n] = [float(trainer.previous_minibatch_loss_average),
                                 np.asarray(w.value)]
    return res
