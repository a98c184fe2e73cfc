"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (thirteenth round): the Trainer's
note on parameters no learner covers; the layers' positional parameters; the reductions'
output uids; ``classification_error`` with ``topN`` over sequences of unequal lengths."""

import inspect
import io
import os
import re
import sys
import tempfile

import numpy as np

from compat_harness import cntk_case


def _stderr_of(fn):
    """What ``fn()`` writes to file descriptor 2 (CNTK writes its notes there from C++; the
    Python writes go through ``sys.stderr``), the lines that are not the device line."""
    sys.stderr.flush()
    saved, python = os.dup(2), sys.stderr
    sys.stderr = io.StringIO()      # (under pytest, sys.stderr is not descriptor 2)
    with tempfile.TemporaryFile() as f:
        os.dup2(f.fileno(), 2)
        try:
            fn()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            written, sys.stderr = sys.stderr.getvalue(), python
        f.seek(0)
        text = f.read().decode("utf-8", "replace") + written
    return [line for line in text.splitlines() if line and "default device" not in line]


@cntk_case(names=["cntk.Trainer"],
           note="a Trainer whose learners leave parameters of the model, loss or metric out: "
                "CNTK 2.7's ctor writes '[Note:] Trainer ctor: <n> of the model parameters "
                "are not covered by any of the specified Learners; these parameters will not "
                "be learned' to stderr (once, as it is made; nothing where all are covered).  "
                "Stadyn wrote nothing")
def trainer__parameters_no_learner_covers(C, r):
    r.touch("cntk.learners.sgd", "cntk.parameter", "cntk.losses.squared_error")
    x, y = C.input_variable(2), C.input_variable(2)
    W = C.parameter((2, 2), init=1.0)
    b = C.parameter(2, init=0.0)
    c = C.parameter(2, init=0.0)
    z = C.times(x, W) + b
    loss, metric = C.squared_error(z, y), C.squared_error(z + c, y)
    res = {}
    for label, learners in (
            ("W of W, b", lambda: [C.sgd([W], 0.1)]),
            ("W, b of W, b, c", lambda: [C.sgd([W, b], 0.1)]),
            ("two learners, c left", lambda: [C.sgd([W], 0.1), C.sgd([b], 0.1)]),
            ("all", lambda: [C.sgd([W, b, c], 0.1)])):
        crit = (loss, None) if label == "W of W, b" else (loss, metric)
        res[label] = _stderr_of(lambda: C.Trainer(z, crit, learners()))
    return res


# every layer factory of cntk.layers, and the ops it offers again
_LAYER_NAMES = ["Activation", "AveragePooling", "BatchNormalization", "Convolution",
                "Convolution1D", "Convolution2D", "Convolution3D", "ConvolutionTranspose",
                "ConvolutionTranspose1D", "ConvolutionTranspose2D", "ConvolutionTranspose3D",
                "Dense", "Dropout", "Embedding", "GRU", "GlobalAveragePooling",
                "GlobalMaxPooling", "LSTM", "Label", "LayerNormalization", "MaxPooling",
                "MaxUnpooling", "RNNStep", "Stabilizer", "Recurrence", "RecurrenceFrom",
                "Fold", "UnfoldFrom", "Delay", "PastValueWindow", "Sequential", "For",
                "SequentialClique", "ResNetBlock", "AttentionModel", "default_options",
                "batch_normalization", "convolution", "convolution_transpose", "pooling",
                "unpooling", "dropout", "identity"]


@cntk_case(names=["cntk.layers.ConvolutionTranspose", "cntk.layers.Convolution2D",
                  "cntk.layers.LSTM", "cntk.ops.convolution", "cntk.ops.pooling"],
           note="the positional parameters (inspect.signature) of the layer factories and the "
                "ops cntk.layers offers: CNTK 2.7's ConvolutionTranspose has sharing after "
                "strides and reduction_rank after output_shape; Convolution1D/2D/3D and "
                "ConvolutionTranspose1D/2D/3D take all of theirs positionally; the ops' "
                "first operand is 'operand'.  Stadyn's factories showed (*args, **kwargs), "
                "passed positional arguments in the native layers' order (a "
                "ConvolutionTranspose's reduction_rank landed in dilation; a Convolution2D's "
                "activation was a TypeError) and named the ops' operand 'operand_'")
def layers__positional_parameters(C, r):
    r.touch("cntk.layers.Dense", "cntk.layers.Convolution", "cntk.layers.MaxPooling")
    res = {}
    for n in _LAYER_NAMES:
        sig = inspect.signature(getattr(C.layers, n))
        res[n] = [p.name for p in sig.parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return res


@cntk_case(names=["cntk.layers.ConvolutionTranspose", "cntk.layers.Convolution2D",
                  "cntk.layers.ConvolutionTranspose2D", "cntk.ops.convolution"],
           note="positional arguments after output_shape: CNTK 2.7's ConvolutionTranspose "
                "takes (..., output_shape, reduction_rank, dilation); Convolution2D takes "
                "activation and on positionally.  Stadyn put the 11th argument in dilation "
                "and refused a 3rd argument to Convolution2D")
def layers__positional_arguments(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.shape")
    x = C.input_variable((1, 4, 4))
    data = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4) / 16
    res = {}
    # filter, filters, activation, init, pad, strides, sharing, bias, init_bias,
    # output_shape, reduction_rank, dilation
    t = C.layers.ConvolutionTranspose((2, 2), 2, C.relu, 0.5, False, 1, True, True, 0.25,
                                      None, 1, 1)(x)
    res["transpose"] = np.asarray(t.eval({x: data}))
    c2 = C.layers.Convolution2D((2, 2), 3, C.relu, 0.5, True, 2, False)(x)
    res["conv2d"] = np.asarray(c2.eval({x: data}))
    t2 = C.layers.ConvolutionTranspose2D((3, 3), 1, None, 0.5, False, 1, True, 0.1)(x)
    res["transpose2d"] = np.asarray(t2.eval({x: data}))
    w = C.constant(np.ones((1, 1, 2, 2), np.float32))
    res["convolution operand="] = np.asarray(
        C.convolution(w, operand=x, auto_padding=[False]).eval({x: data}))
    res["pooling operand="] = np.asarray(
        C.pooling(operand=x, pooling_type=C.MAX_POOLING, pooling_window_shape=(2, 2),
                  strides=(2, 2)).eval({x: data}))
    return res


@cntk_case(names=["cntk.ops.reduce_sum", "cntk.ops.reduce_mean", "cntk.ops.reduce_max",
                  "cntk.ops.reduce_min", "cntk.ops.reduce_prod", "cntk.ops.reduce_log_sum_exp",
                  "cntk.ops.reduce_l2", "cntk.ops.argmax"],
           note="the output uid of a reduction: CNTK 2.7 makes a block of each "
                "(ReduceFunctionAsBlock), so its output is Block<n>_Output_0, of a placeholder "
                "without a shape too (argmax is a primitive ReduceElements).  Stadyn's was "
                "ReduceElements<n>_Output_0 (ReduceL2<n> for reduce_l2)")
def reductions__output_uid(C, r):
    r.touch("cntk.placeholder", "cntk.Axis.all_axes")

    def prefix(f):
        return re.sub(r"\d+", "#", f.output.uid)
    res = {}
    for op in ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
               "reduce_log_sum_exp", "reduce_l2", "argmax"):
        fn = getattr(C, op)
        x = C.input_variable(3)
        res[op] = [prefix(fn(x)), prefix(fn(x, axis=0))]
        if op != "argmax":
            res[op] += [prefix(fn(C.placeholder())), prefix(fn(C.placeholder(), axis=0)),
                        prefix(fn(x, axis=C.Axis.all_axes()))]
    return res


@cntk_case(names=["cntk.metrics.classification_error"],
           note="topN > 1 over sequences of unequal lengths: each step of each sequence a "
                "sample, the padding of the shorter ones not counted; the sum of the errors "
                "(a Trainer: their mean over the steps).  Stadyn did the same: this pins it")
def classification_error__top_n_unequal_sequences(C, r):
    r.touch("cntk.Trainer", "cntk.sequence.input_variable")
    s, t = C.sequence.input_variable(4), C.sequence.input_variable(4)
    o = [np.array([[0.1, 0.9, 0.3, 0.2]], np.float32),
         np.array([[0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1], [0.2, 0.1, 0.4, 0.3]],
                  np.float32),
         np.array([[0.5, 0.5, 0.5, 0.5], [0, 0, 0, 0]], np.float32)]
    eye = np.eye(4, dtype=np.float32)
    lab = [eye[[0]], eye[[3, 3, 0]], eye[[1, 2]]]
    res = {}
    for k in (2, 3, 4):
        res["topN %d" % k] = np.asarray(C.classification_error(s, t, topN=k).eval(
            {s: o, t: lab}), dtype=np.float32)
    z = C.times(s, C.parameter((4, 4), init=np.eye(4, dtype=np.float32)))
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, t),
                            C.classification_error(z, t, topN=2)), [C.sgd(z.parameters, 0.0)])
    res["test_minibatch"] = trainer.test_minibatch({s: o, t: lab})
    trainer.train_minibatch({s: o, t: lab})
    res["train average, count"] = [trainer.previous_minibatch_evaluation_average,
                                   trainer.previous_minibatch_sample_count]
    return res


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.LSTM",
                  "cntk.layers.GRU", "cntk.layers.RNNStep"],
           note="the parameters of a recurrence in CNTK 2.7's order: its depth-first walk from "
                "the step's output meets them (a lightlstm-style step computing "
                "b + times(x, W) + times(h, H) shows b, W, H).  Stadyn showed the step's "
                "captured values in the order Python computed them (W, b, H)")
def recurrence__parameter_order_of_user_steps(C, r):
    r.touch("cntk.parameter", "cntk.sequence.input_variable", "cntk.ops.times")
    x = C.sequence.input_variable(2)
    res = {}

    def names(f):
        return ["%s %s" % (p.name, "x".join(str(d) for d in p.shape)) for p in f.parameters]
    for label, make in (("LSTM", lambda: C.layers.LSTM(2)), ("GRU", lambda: C.layers.GRU(2)),
                        ("RNNStep", lambda: C.layers.RNNStep(2))):
        res[label] = names(C.layers.Recurrence(make())(x))
    W = C.parameter((2, 2), name="W", init=0.1)
    H = C.parameter((2, 2), name="H", init=0.1)
    b = C.parameter(2, name="b", init=0.1)
    s = C.parameter(2, name="s", init=1.0)

    def bias_first(h, u):
        return C.tanh(b + C.times(u, W) + C.times(h, H))

    def recurrent_first(h, u):
        return C.tanh(C.times(h, H) + C.times(u, W) + b)

    def light(h, u):            # a lightlstm-style step: gates of one projection
        proj = b + C.times(u, W) + C.times(h, H)
        return C.sigmoid(proj * s) * C.tanh(proj)
    res["b + W + H"] = names(C.layers.Recurrence(bias_first)(x))
    res["H + W + b"] = names(C.layers.Recurrence(recurrent_first)(x))
    res["lightlstm"] = names(C.layers.Recurrence(light)(x))
    return res
