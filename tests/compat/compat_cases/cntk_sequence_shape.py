"""CNTK's shape ops and products on sequences (cases ``sequence.steps_*``): ``reshape``,
``transpose``, ``slice``, ``splice``, ``times``, ``times_transpose``, ``gather``, ``one_hot``,
... work on every step and keep both dynamic axes.  Minibatches of ragged sequences (lengths
3, 1, 5): values and the gradients of ``sum(out * w)`` w.r.t. the input (``run_sequence`` in
cntk_sequence.py), so a padded step mixed into a real one, or a result that lost the sequence
axis, shows.  (CNTK 2.7 refuses ``gather`` from a sequence: its table has no dynamic axis.)
"""

import os

import numpy as np

from compat_harness import cntk_case
from compat_cases.cntk_ops import op_case
from compat_cases.cntk_sequence import _flat, eval_and_grads, seq_case

_FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures",
                         "legacy")

_WORD_RNN = "Examples/Text/WordLMWithSampledSoftmax/word_rnn.py"


def _const(C, shape, seed):
    """A constant the same on both sides (drawn from its own seed, not the case's stream)."""
    rng = np.random.RandomState(seed)
    return C.constant(rng.randn(*shape).astype(np.float32))


# -- reshape and its forms ----------------------------------------------------------------------
seq_case("steps_reshape", lambda C, x: C.reshape(x, (3, 2)), step_shape=(2, 3),
         names=["cntk.ops.reshape"], note=_WORD_RNN + " reshapes each step's logits")
seq_case("steps_reshape__inferred", lambda C, x: C.reshape(x, (-1, 2)), step_shape=(2, 3),
         names=["cntk.ops.reshape"])
seq_case("steps_reshape__begin_end_axis", lambda C, x: C.reshape(x, (6,), begin_axis=0, end_axis=2),
         step_shape=(2, 3, 2), names=["cntk.ops.reshape"])
seq_case("steps_reshape__begin_axis", lambda C, x: C.reshape(x, (3, 1), begin_axis=1),
         step_shape=(2, 3), names=["cntk.ops.reshape"])
seq_case("steps_reshape__end_axis", lambda C, x: C.reshape(x, (1, 2), begin_axis=0, end_axis=1),
         step_shape=(2, 3), names=["cntk.ops.reshape"])
seq_case("steps_reshape__then_reduce", lambda C, x: C.sequence.reduce_sum(
    C.reshape(x, (3, 2)) * _const(C, (3, 2), 5)), step_shape=(6,),
         names=["cntk.ops.reshape", "cntk.sequence.reduce_sum", "cntk.ops.constant"],
         note="a padded step reaching the sum would change it")
seq_case("steps_expand_dims", lambda C, x: C.expand_dims(x, 0), step_shape=(2, 3),
         names=["cntk.ops.expand_dims"])
seq_case("steps_squeeze", lambda C, x: C.squeeze(x), step_shape=(2, 1, 3),
         names=["cntk.ops.squeeze"])
seq_case("steps_flatten", lambda C, x: C.flatten(x, axis=1), step_shape=(2, 3, 2),
         names=["cntk.ops.flatten"])

# -- axes moved, cut and joined -----------------------------------------------------------------
seq_case("steps_transpose", lambda C, x: C.transpose(x, (1, 0)), step_shape=(2, 3),
         names=["cntk.ops.transpose"])
seq_case("steps_swapaxes", lambda C, x: C.swapaxes(x, 0, 2), step_shape=(2, 3, 2),
         names=["cntk.ops.swapaxes"])
seq_case("steps_slice", lambda C, x: C.slice(x, 1, 1, 3), step_shape=(2, 4),
         names=["cntk.ops.slice"])
seq_case("steps_splice", lambda C, x: C.splice(x, x * 2.0, axis=0), step_shape=(2, 3),
         names=["cntk.ops.splice"])
seq_case("steps_splice__new_leading_axis",
         lambda C, x: C.splice(x, C.tanh(x), axis=C.Axis.new_leading_axis()),
         step_shape=(2, 3), names=["cntk.ops.splice", "cntk.ops.tanh"])
seq_case("steps_splice__constant", lambda C, x: C.splice(x, _const(C, (1, 3), 1), axis=0),
         step_shape=(2, 3), names=["cntk.ops.splice", "cntk.ops.constant"],
         note="the constant is repeated at every step")
seq_case("steps_depth_to_space", lambda C, x: C.depth_to_space(x, 2), step_shape=(4, 2, 3),
         names=["cntk.ops.depth_to_space"])
seq_case("steps_space_to_depth", lambda C, x: C.space_to_depth(x, 2), step_shape=(1, 4, 2),
         names=["cntk.ops.space_to_depth"])

# -- products -----------------------------------------------------------------------------------
seq_case("steps_times_transpose", lambda C, x: C.times_transpose(_const(C, (5, 3), 2), x),
         names=["cntk.ops.times_transpose", "cntk.ops.constant"], note=_WORD_RNN)
seq_case("steps_times_transpose__reshaped",
         lambda C, x: C.reshape(C.times_transpose(_const(C, (5, 3), 2), x)
                                + _const(C, (5, 1), 3), (5,)),
         names=["cntk.ops.times_transpose", "cntk.ops.reshape", "cntk.ops.constant"],
         note=_WORD_RNN + ": reshape(times_transpose(W, h) + b, (vocab,))")
seq_case("steps_times__weight_left", lambda C, x: C.times(_const(C, (5, 2), 4), x),
         step_shape=(2, 3), names=["cntk.ops.times", "cntk.ops.constant"],
         note="times(W, x) of a sequence of matrices: W times each step")
seq_case("steps_times__two_sequences",
         lambda C, x: C.times(C.reshape(x, (2, 3)), C.tanh(C.reshape(x, (3, 2)))),
         step_shape=(6,), names=["cntk.ops.times", "cntk.ops.reshape", "cntk.ops.tanh"],
         note="each step's (2, 3) matrix times the same step's (3, 2) one")


@cntk_case(names=["cntk.ops.times", "cntk.sequence.input_variable", "cntk.ops.input_variable"],
           note="a value per sequence times each of its steps (left or right): CNTK broadcasts "
                "it along the steps")
def sequence_times_a_value_per_sequence(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.forward", "cntk.Function.backward",
            "cntk.Function.output")
    res = {}
    for side in ("left", "right"):
        x = C.sequence.input_variable((2, 3) if side == "left" else (3, 4), needs_gradient=True)
        y = C.input_variable((3, 4) if side == "left" else (2, 3), needs_gradient=True)
        f = C.times(x, y) if side == "left" else C.times(y, x)
        lengths = (3, 1, 5)
        feed = {x: [r.randn(n, *x.shape) for n in lengths], y: r.randn(3, *y.shape)}
        out = {}
        grads = eval_and_grads(r, f, feed, [x, y], out)
        res.update(("%s %s" % (side, k), v) for k, v in out.items())
        res[side + " grad x"] = _flat(grads[x])
        res[side + " grad y"] = _flat(grads[y])
    return res


# -- ops over a whole step (the step flattened, the op run along it, the shape restored) --------
seq_case("steps_softmax", lambda C, x: C.softmax(x), step_shape=(2, 3),
         names=["cntk.ops.softmax"], note="softmax over all of each step's axes at once")
seq_case("steps_log_softmax", lambda C, x: C.log_softmax(x), step_shape=(2, 3),
         names=["cntk.ops.log_softmax"],
         note="CNTK 2.7's log_softmax without an axis runs along the last axis only")
op_case("log_softmax__matrix", lambda C, x: C.log_softmax(x), [(2, 3)],
        note="CNTK 2.7's log_softmax without an axis runs along the last axis (softmax "
             "without one: over the whole sample); Stadyn took the whole sample for both")


@cntk_case(names=["cntk.ops.argmax", "cntk.ops.hardmax", "cntk.sequence.input_variable"],
           note="the largest value of each step, a tensor, flattened")
def sequence_argmax_hardmax(C, r):
    x = C.sequence.input_variable((2, 3))
    r.touch("cntk.Function.eval")
    data = [r.randn(n, 2, 3) for n in (3, 1, 5)]
    return {"argmax": _flat(C.argmax(x).eval({x: data})),
            "hardmax": _flat(C.hardmax(x).eval({x: data}))}


@cntk_case(names=["cntk.losses.cross_entropy_with_softmax", "cntk.ops.reshape",
                  "cntk.sequence.input_variable"],
           note="a label sequence of vectors against a sequence of (1, n) rows: CNTK reads the "
                "target in the output's shape")
def sequence_cross_entropy_of_rows(C, r):
    x = C.sequence.input_variable(6, needs_gradient=True)
    y = C.sequence.input_variable(6)
    ce = C.cross_entropy_with_softmax(C.reshape(x, (1, 6)), y)
    r.touch("cntk.Function.eval", "cntk.Function.forward", "cntk.Function.backward",
            "cntk.Function.output")
    lengths = (3, 1, 5)
    feed = {x: [r.randn(n, 6) for n in lengths], y: [r.onehot(n, 6) for n in lengths]}
    res = {"shape": list(ce.shape)}
    grads = eval_and_grads(r, ce, feed, [x], res)
    res["grad x"] = _flat(grads[x])
    return res


@cntk_case(names=["cntk.ops.one_hot", "cntk.ops.gather", "cntk.sequence.input_variable",
                  "cntk.ops.constant"],
           note="indices on a sequence's steps: a one-hot vector and a table row per step")
def sequence_of_indices(C, r):
    ids = C.sequence.input_variable(2)
    table = C.constant(r.randn(6, 3))
    hot = C.one_hot(ids, 6)
    rows = C.gather(table, ids)
    r.touch("cntk.Function.eval")
    data = [np.array([[0, 5], [2, 2], [4, 1]], np.float32), np.array([[3, 0]], np.float32)]
    return {"hot": _flat(hot.eval({ids: data})), "rows": _flat(rows.eval({ids: data})),
            "hot shape": list(hot.shape), "rows shape": list(rows.shape)}


@cntk_case(names=["cntk.ops.reshape", "cntk.ops.times_transpose", "cntk.sequence.input_variable",
                  "cntk.ops.constant"],
           note="one graph fed minibatches of other batch sizes and padded lengths: nothing of "
                "the first minibatch's shape stays in the graph")
def sequence_reshape_across_minibatches(C, r):
    x = C.sequence.input_variable(3)
    z = C.reshape(C.times_transpose(_const(C, (4, 3), 6), x), (2, 2))
    r.touch("cntk.Function.eval")
    res = {}
    for k, lengths in enumerate([(3, 1, 5), (2, 2), (4,), (1, 6, 2, 3)]):
        out = z.eval({x: [r.randn(n, 3) for n in lengths]})
        res["out %d" % k] = _flat(out)
        res["lengths %d" % k] = [len(v) for v in out]
    return res


def _unpool(C, x):
    """Max unpooling of a sequence of images: 2x2 windows pooled and unpooled at each step."""
    pooled = C.pooling(x, C.MAX_POOLING, (2, 2), strides=(2, 2))
    return C.unpooling(pooled * 2.0, x, C.MAX_UNPOOLING, (2, 2), strides=(2, 2))


seq_case("steps_unpooling", _unpool, step_shape=(2, 4, 6),
         names=["cntk.ops.unpooling", "cntk.ops.pooling"],
         note="each step's maxima spread back over their windows, zeros elsewhere; the "
              "gradient w.r.t. x is CNTK 2.7's (through the pooling, the max pooling of the "
              "unpooling's output gradient; a known difference before cntkwrite10)")


@cntk_case(names=["cntk.ops.unpooling", "cntk.ops.pooling", "cntk.sequence.input_variable"],
           note="one unpooling graph fed minibatches of other batch sizes and padded lengths: "
                "neither is written into the graph")
def sequence_unpooling_across_minibatches(C, r):
    x = C.sequence.input_variable((1, 4, 4))
    z = _unpool(C, x)
    r.touch("cntk.Function.eval")
    res = {}
    for k, lengths in enumerate([(3, 1, 5), (2, 2), (4,), (1, 6, 2)]):
        out = z.eval({x: [r.randn(n, 1, 4, 4) for n in lengths]})
        res["out %d" % k] = _flat(out)
        res["lengths %d" % k] = [len(v) for v in out]
    return res


@cntk_case(names=["cntk.load_model", "cntk.Function.save"],
           note="a model file written by CNTK 2.7 (tests/fixtures/legacy/make_cntk_seq_reshape.py) "
                "whose outputs reshape each step of a sequence (Reshape, Flatten, ExpandDims, "
                "Squeeze, a whole-step Softmax, Splice, Dense between reshapes, broadcasting, "
                "LogSum, TransposeTimes), fed ragged minibatches of two sizes; then saved and "
                "loaded again (each framework its own file)")
def sequence_reshape_model_file(C, r):
    z = C.load_model(os.path.join(_FIXTURES, "cntk_seq_reshape.model"))
    r.touch("cntk.Function.eval", "cntk.Function.arguments", "cntk.Function.outputs",
            "cntk.Function.save")
    (x,) = z.arguments
    res = {"argument": [x.name, list(x.shape), len(x.dynamic_axes)],
           "outputs": [[o.name, list(o.shape)] for o in z.outputs]}
    feeds = [[r.randn(n, 6) for n in lengths] for lengths in [(3, 1, 5), (2, 2)]]
    with r.tempdir() as folder:
        path = os.path.join(folder, "again.model")
        z.save(path)
        again = C.load_model(path)
    for label, f in (("loaded", z), ("saved again", again)):
        for k, feed in enumerate(feeds):
            out = f.eval({f.arguments[0]: feed})
            for o in f.outputs:
                res["%s %s %d" % (label, o.name, k)] = _flat(out[o])
    return res


@cntk_case(names=["cntk.load_model", "cntk.Function.save"],
           note="a model file written by CNTK 2.7 (tests/fixtures/legacy/make_cntk_seq_reshape.py) "
                "whose convolutions and pooling run on each step of a sequence of images (an "
                "even kernel padded one more above, padded max pooling, a valid convolution, "
                "average pooling), fed ragged minibatches of two sizes; then saved and loaded "
                "again (each framework its own file)")
def sequence_conv_model_file(C, r):
    z = C.load_model(os.path.join(_FIXTURES, "cntk_seq_conv.model"))
    r.touch("cntk.Function.eval", "cntk.Function.arguments", "cntk.Function.shape",
            "cntk.Function.save")
    res = {"shape": list(z.shape)}
    feeds = [[r.randn(n, 1, 5, 5) for n in lengths] for lengths in [(3, 1, 5), (2, 2)]]
    with r.tempdir() as folder:
        path = os.path.join(folder, "again.model")
        z.save(path)
        again = C.load_model(path)
    for label, f in (("loaded", z), ("saved again", again)):
        for k, feed in enumerate(feeds):
            out = f.eval({f.arguments[0]: feed})
            res["%s %d" % (label, k)] = _flat(out)
            res["%s lengths %d" % (label, k)] = [len(v) for v in out]
    return res


@cntk_case(names=["cntk.load_model", "cntk.Trainer.train_minibatch", "cntk.ops.combine"],
           note="one output of the CNTK 2.7-written cntk_seq_reshape.model (Dense between two "
                "reshapes of each step) trained by a Trainer on ragged minibatches of two "
                "sizes: losses, sample counts and the parameters after")
def sequence_reshape_model_file_trains(C, r):
    z = C.load_model(os.path.join(_FIXTURES, "cntk_seq_reshape.model"))
    r.touch("cntk.Function.outputs", "cntk.Function.arguments", "cntk.Function.parameters",
            "cntk.Trainer.previous_minibatch_loss_average",
            "cntk.Trainer.previous_minibatch_sample_count", "cntk.Parameter.value",
            "cntk.Trainer.train_minibatch")
    m = C.combine([o for o in z.outputs if o.name == "dense"])
    x = m.arguments[0]
    labels = C.sequence.input_variable(4, name="labels")
    loss = C.squared_error(C.reshape(m, (4,)), labels)
    trainer = C.Trainer(m, (loss, None),
                        [C.sgd(m.parameters, C.learning_parameter_schedule(0.05))])
    res = {"losses": [], "counts": []}
    for step in range(4):
        lengths = [(3, 1, 5), (2, 2)][step % 2]
        trainer.train_minibatch({x: [r.randn(n, 6) for n in lengths],
                                 labels: [r.randn(n, 4) for n in lengths]})
        res["losses"].append(trainer.previous_minibatch_loss_average)
        res["counts"].append(trainer.previous_minibatch_sample_count)
    for k, p in enumerate(sorted(m.parameters, key=lambda p: p.shape)):
        res["parameter %d" % k] = p.value
    return res
