"""A CNTK 2.7 user's own programs (round 38), in the style of CNTK's tutorials and examples:
CNTK_106A's LSTM over sliding windows of a sine under ``default_options(initial_state=...)``,
learners with L1/L2 regularization and per-sample gradient clipping, schedules with epoch sizes
read back by ``learning_rate()`` and reset mid-run, ``combine`` of several outputs evaluated into
dicts, ``as_block``/``as_composite`` inside a trained model, the ``sequence.*`` reductions over
ragged lists with gradients, and a model saved and loaded mid-training beside a trainer's
checkpoint; each is run unchanged on CNTK 2.7 and on ``stadyn.compat.cntk``."""

import os

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import outcome


def _sine_windows(N, count, offset):
    """CNTK_106A's data, small: windows of ``N`` points of a sine, the next point the label."""
    t = np.arange(count + N + offset, dtype=np.float64)
    s = np.sin(t * 0.3)
    X = np.array([s[i + offset:i + offset + N] for i in range(count)], dtype=np.float32)
    Y = np.array([[s[i + offset + N]] for i in range(count)], dtype=np.float32)
    return X.reshape(count, N, 1), Y


# -- 1. CNTK_106A: an LSTM over windows of a sine, fsadagrad, squared error ---------------------

@cntk_case(names=["cntk.layers.default_options", "cntk.layers.Recurrence", "cntk.layers.LSTM",
                  "cntk.sequence.last", "cntk.learners.fsadagrad", "cntk.losses.squared_error",
                  "cntk.Trainer.train_minibatch", "cntk.Function.eval"],
           rtol=1e-4, atol=1e-5,
           note="CNTK_106A's create_model: Recurrence(LSTM(N)) under default_options("
                "initial_state=0.1), sequence.last, Dense(1) (the notebook's Dropout(0.2) "
                "left out: its draws are the framework's own); squared_error as loss and "
                "metric, fsadagrad(learning_parameter_schedule(0.02), momentum_schedule(0.9), "
                "unit_gain=True); windows of 5 points of a sine in minibatches of 4, 3 and 5; "
                "the losses, the parameters after, the predictions on later windows")
def user38_lstm_sine_fsadagrad(C, r):
    r.touch("cntk.Trainer.train_minibatch", "cntk.Function.eval")
    N, H = 5, 3
    x = C.sequence.input_variable(1, name="x")
    l = C.input_variable(1, name="y")
    with C.layers.default_options(initial_state=0.1):
        m = C.layers.Recurrence(C.layers.LSTM(H))(x)
        m = C.sequence.last(m)
        z = C.layers.Dense(1)(m)
    res = {"parameters": r.set_params(z.parameters)}
    loss = C.squared_error(z, l)
    error = C.squared_error(z, l)
    learner = C.fsadagrad(z.parameters, lr=C.learning_parameter_schedule(0.02),
                          momentum=C.momentum_schedule(0.9), unit_gain=True)
    trainer = C.Trainer(z, (loss, error), [learner])
    X, Y = _sine_windows(N, 12, 0)
    steps, start = [], 0
    for n in (4, 3, 5):
        trainer.train_minibatch({x: X[start:start + n], l: Y[start:start + n]})
        steps.append([trainer.previous_minibatch_loss_average,
                      trainer.previous_minibatch_evaluation_average])
        start += n
    res["steps"] = steps
    res["values"] = r.param_values(z.parameters)
    Xt, Yt = _sine_windows(N, 4, 20)
    res["predicted"] = z.eval({x: Xt})
    res["test mse"] = float(np.mean((z.eval({x: Xt}) - Yt) ** 2))
    return res


# -- 2. learners with L1/L2 regularization and gradient clipping per sample ---------------------

@cntk_case(names=["cntk.learners.sgd", "cntk.learners.momentum_sgd", "cntk.learners.adam",
                  "cntk.learners.rmsprop", "cntk.learners.adagrad", "cntk.learners.nesterov"],
           rtol=1e-4, atol=1e-5,
           note="one small classifier per learner, each trained on the same four minibatches "
                "of 3, 1, 4 and 2 samples: sgd with l2_regularization_weight and "
                "gradient_clipping_threshold_per_sample (truncation), momentum_sgd with "
                "l1_regularization_weight, nesterov with clipping by norm ("
                "gradient_clipping_with_truncation=False), adam with l2 and clipping, "
                "rmsprop with l1 and l2, adagrad with l2; the losses and the parameters after")
def user38_learners_regularized_clipped(C, r):
    x = C.input_variable(3, name="x")
    y = C.input_variable(2, name="y")
    lr = C.learning_parameter_schedule_per_sample(0.3)
    mom = C.momentum_schedule(0.8)
    makers = [
        ("sgd", lambda ps: C.learners.sgd(ps, lr, l2_regularization_weight=0.1,
                                          gradient_clipping_threshold_per_sample=0.5)),
        ("momentum_sgd", lambda ps: C.learners.momentum_sgd(
            ps, lr, mom, l1_regularization_weight=0.05)),
        ("nesterov", lambda ps: C.learners.nesterov(
            ps, lr, mom, gradient_clipping_threshold_per_sample=0.4,
            gradient_clipping_with_truncation=False)),
        ("adam", lambda ps: C.learners.adam(
            ps, C.learning_parameter_schedule(0.05), mom, l2_regularization_weight=0.2,
            gradient_clipping_threshold_per_sample=0.3)),
        ("rmsprop", lambda ps: C.learners.rmsprop(
            ps, C.learning_parameter_schedule(0.05), gamma=0.9, inc=1.5, dec=0.5, max=2.0,
            min=0.1, l1_regularization_weight=0.02, l2_regularization_weight=0.05)),
        ("adagrad", lambda ps: C.learners.adagrad(ps, lr, l2_regularization_weight=0.1)),
    ]
    batches = [(r.randn(n, 3), r.onehot(n, 2)) for n in (3, 1, 4, 2)]
    res = {}
    for name, make in makers:
        z = C.layers.Dense(2, activation=None, name="out")(
            C.layers.Dense(4, activation=C.tanh, name="hid")(x))
        res["parameters"] = r.set_params(z.parameters)
        trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), None), [make(z.parameters)])
        losses = []
        for X, Y in batches:
            trainer.train_minibatch({x: X, y: Y})
            losses.append(trainer.previous_minibatch_loss_average)
        res[name + " losses"] = losses
        for k, v in r.param_values(z.parameters).items():
            res[name + " " + k] = v
    return res


# -- 3. schedules with epoch sizes, read back and reset mid-run ---------------------------------

@cntk_case(names=["cntk.learners.learning_parameter_schedule_per_sample",
                  "cntk.learners.learning_parameter_schedule", "cntk.learners.momentum_schedule",
                  "cntk.Learner.learning_rate", "cntk.Learner.reset_learning_rate",
                  "cntk.Trainer.total_number_of_samples_seen"],
           rtol=1e-4, atol=1e-5,
           note="momentum_sgd with learning_parameter_schedule_per_sample([(2, 0.2), (1, 0.1), "
                "0.05], epoch_size=3) and momentum_schedule([0.9, 0.5], epoch_size=4); "
                "minibatches of 2, 2, 3, 1, 4; after each step the samples seen and the learning "
                "rate the learner reports; then reset_learning_rate(learning_parameter_schedule("
                "[0.4, 0.02], minibatch_size=2, epoch_size=5)) and two steps more; the schedules' "
                "values at sample counts 0..12 (schedule[count]; calling the schedule is a "
                "TypeError); the parameters after")
def user38_schedules_epoch_sizes_reset(C, r):
    r.touch("cntk.Learner.learning_rate", "cntk.Learner.reset_learning_rate",
            "cntk.Trainer.total_number_of_samples_seen")
    x = C.input_variable(2, name="x")
    y = C.input_variable(1, name="y")
    z = C.layers.Dense(1, name="lin")(x)
    res = {"parameters": r.set_params(z.parameters)}
    lr = C.learning_parameter_schedule_per_sample([(2, 0.2), (1, 0.1), 0.05], epoch_size=3)
    mom = C.momentum_schedule([0.9, 0.5], epoch_size=4)
    res["lr values"] = [lr[i] for i in range(13)]
    res["momentum values"] = [mom[i] for i in range(13)]
    res["schedule called"] = outcome(lambda: lr(0))
    learner = C.momentum_sgd(z.parameters, lr, mom)
    trainer = C.Trainer(z, (C.squared_error(z, y), None), [learner])
    steps = []
    for n in (2, 2, 3, 1, 4):
        trainer.train_minibatch({x: r.randn(n, 2), y: r.randn(n, 1)})
        steps.append([trainer.previous_minibatch_loss_average,
                      trainer.total_number_of_samples_seen, learner.learning_rate()])
    new_lr = C.learning_parameter_schedule([0.4, 0.02], minibatch_size=2, epoch_size=5)
    res["new lr values"] = [new_lr[i] for i in range(13)]
    learner.reset_learning_rate(new_lr)
    for n in (3, 2):
        trainer.train_minibatch({x: r.randn(n, 2), y: r.randn(n, 1)})
        steps.append([trainer.previous_minibatch_loss_average,
                      trainer.total_number_of_samples_seen, learner.learning_rate()])
    res["steps"] = steps
    res["values"] = r.param_values(z.parameters)
    return res


# -- 4. combine of several outputs, evaluated into dicts ----------------------------------------

@cntk_case(names=["cntk.ops.combine", "cntk.Function.eval", "cntk.Function.outputs",
                  "cntk.Function.output", "cntk.Variable.name", "cntk.ops.softmax",
                  "cntk.Function.forward"],
           rtol=1e-5, atol=1e-6,
           note="a classifier's hidden layer, logits, softmax and loss gathered by combine("
                "[...]); eval of the combination gives a dict keyed by the outputs (read back "
                "by each output and by each output's name), eval(..., outputs=[two of them]) "
                "and forward(..., outputs=) alike; combine of a tuple and of one output "
                "(eval then gives an array); the outputs' names and shapes")
def user38_combine_eval_dicts(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.outputs", "cntk.Function.output",
            "cntk.Variable.name", "cntk.Function.forward")
    x = C.input_variable(3, name="features")
    y = C.input_variable(2, name="labels")
    h = C.layers.Dense(4, activation=C.relu, name="hidden")(x)
    logits = C.layers.Dense(2, name="logits")(h)
    prob = C.softmax(logits, name="prob")
    loss = C.cross_entropy_with_softmax(logits, y, name="ce")
    res = {"parameters": r.set_params(logits.parameters)}
    both = C.combine([h, logits, prob, loss])
    res["outputs"] = [[o.name, list(o.shape)] for o in both.outputs]
    X, Y = r.randn(3, 3), r.onehot(3, 2)
    out = both.eval({x: X, y: Y})
    res["dict keys are the outputs"] = sorted(k.name for k in out)
    for o in both.outputs:
        res["by output " + o.name] = out[o]
    by_name = dict((k.name, v) for k, v in out.items())
    res["by name prob"] = by_name["prob"]
    some = both.eval({x: X, y: Y}, outputs=[prob.output, h.output])
    res["selected"] = sorted([k.name, np.asarray(v).tolist()] for k, v in some.items())
    _, fwd = both.forward({x: X, y: Y}, outputs=[loss.output])
    res["forward loss"] = fwd[loss.output]
    res["tuple"] = [o.name for o in C.combine((prob, logits)).outputs]
    single = C.combine([prob])
    res["single is array"] = isinstance(single.eval({x: X}), np.ndarray)
    res["single"] = single.eval({x: X})
    res["output of one"] = prob.output.name
    return res


# -- 5. as_block and as_composite inside a trained model ----------------------------------------

@cntk_case(names=["cntk.ops.as_block", "cntk.ops.as_composite", "cntk.Function.is_block",
                  "cntk.Function.block_root", "cntk.Function.root_function",
                  "cntk.Function.op_name", "cntk.Function.name", "cntk.ops.placeholder",
                  "cntk.Function.block_arguments_mapping", "cntk.Function.is_composite",
                  "cntk.Function.is_primitive"],
           rtol=1e-4, atol=1e-5,
           note="a gated residual unit written on placeholders, made a block by as_block("
                "composite, [(ph, x)], 'GatedResidual', 'gate1') and applied twice in a "
                "model; the blocks' op_name, name, is_block, is_composite, is_primitive, "
                "their block_root's op, the mapping's argument names; as_composite of the "
                "block's root_function; block_root of the composite refused (ValueError); "
                "the output before and after two sgd steps, and "
                "as_composite evaluated")
def user38_as_block_as_composite(C, r):
    r.touch("cntk.Function.is_block", "cntk.Function.block_root",
            "cntk.Function.root_function", "cntk.Function.op_name", "cntk.Function.name",
            "cntk.Function.block_arguments_mapping", "cntk.Function.is_composite",
            "cntk.Function.is_primitive")
    x = C.input_variable(3, name="x")
    y = C.input_variable(3, name="y")

    def gated(name, width):
        ph = C.placeholder(shape=(width,), name="inp")
        W = C.parameter((width, width), name=name + "_W", init=0.1)
        g = C.sigmoid(C.times(ph, W), name="gate")
        body = C.plus(ph, g * C.tanh(ph), name="mix")
        return ph, body

    ph1, body1 = gated("g1", 3)
    blk1 = C.as_block(body1, [(ph1, x)], "GatedResidual", "gate1")
    ph2, body2 = gated("g2", 3)
    blk2 = C.as_block(body2, [(ph2, blk1.output)], "GatedResidual", "gate2")
    z = C.layers.Dense(3, name="out")(blk2)
    res = {"parameters": r.set_params(z.parameters)}
    root1 = blk1.root_function
    res["block"] = [blk1.op_name, blk1.name, blk1.is_block, blk1.is_composite,
                    blk1.is_primitive, root1.op_name, root1.name, root1.is_block,
                    root1.is_composite, root1.is_primitive, blk2.root_function.op_name]
    res["block root of the composite"] = outcome(lambda: blk1.block_root)
    res["block root"] = [root1.block_root.root_function.op_name, root1.block_root.name,
                         root1.block_root.is_composite]
    res["mapping"] = sorted([a.name, b.name] for a, b in root1.block_arguments_mapping)
    comp = C.as_composite(blk2.root_function)
    res["composite"] = [comp.is_composite, comp.op_name, len(comp.parameters)]
    X = r.randn(4, 3)
    res["before"] = z.eval({x: X})
    trainer = C.Trainer(z, (C.squared_error(z, y), None),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    for _ in range(2):
        trainer.train_minibatch({x: X, y: r.randn(4, 3)})
    res["after"] = z.eval({x: X})
    res["composite after"] = comp.eval({comp.arguments[0]: X})
    res["values"] = r.param_values(z.parameters)
    return res


# -- 6. the sequence reductions over ragged lists, with gradients --------------------------------

@cntk_case(names=["cntk.sequence.reduce_sum", "cntk.sequence.reduce_max", "cntk.sequence.first",
                  "cntk.sequence.last", "cntk.sequence.is_first", "cntk.sequence.is_last",
                  "cntk.sequence.broadcast_as", "cntk.sequence.past_value",
                  "cntk.sequence.future_value", "cntk.sequence.slice"],
           rtol=1e-5, atol=1e-6,
           note="sequences of 3, 1, 4 and 2 steps of 2 values (a ragged list): the sum, "
                "max, first and last of each, is_first/is_last, the sum broadcast back "
                "over the steps and subtracted (a centring), past_value and future_value "
                "with initial states, slice(1, -1) (a one-step sequence sliced to nothing: "
                "CNTK 2.7 raises RuntimeError 'Sequences must be a least one frame long'); "
                "their values and the "
                "gradients of a weighted sum of all of them by forward/backward")
def user38_sequence_reductions_ragged(C, r):
    x = C.sequence.input_variable(2, name="x", needs_gradient=True)
    seqs = [r.randn(n, 2) for n in (3, 1, 4, 2)]
    total = C.sequence.reduce_sum(x)
    centred = x - C.sequence.broadcast_as(total / 3.0, x)
    parts = {
        "sum": total, "max": C.sequence.reduce_max(x), "first": C.sequence.first(x),
        "last": C.sequence.last(x), "is_first": C.sequence.is_first(x),
        "is_last": C.sequence.is_last(x), "centred": centred,
        "past": C.sequence.past_value(x, initial_state=0.5),
        "future": C.sequence.future_value(x, time_step=2),
    }
    res = {}
    for k, f in sorted(parts.items()):
        res[k] = [np.asarray(v) for v in f.eval({x: seqs})] if k not in (
            "sum", "max", "first", "last") else f.eval({x: seqs})
    sliced = C.sequence.slice(x, 1, -1)
    res["slice"] = [np.asarray(v) for v in sliced.eval({x: [seqs[0], seqs[2]]})]
    res["slice to nothing"] = outcome(lambda: sliced.eval({x: seqs}), convert=lambda v: [
        np.asarray(s).shape for s in v])
    scalar = (C.reduce_sum(C.sequence.reduce_sum(centred * C.sequence.past_value(x)))
              + C.reduce_sum(C.sequence.reduce_max(x) * C.sequence.last(x))
              + C.reduce_sum(C.sequence.first(x) * 2.0))
    value, grads = r.cntk_forward_backward(scalar, {x: seqs}, [x])
    res["scalar"] = value
    res["grad"] = [np.asarray(g) for g in grads[0]]
    return res


# -- 7. a model saved and loaded mid-training, beside a trainer's checkpoint ---------------------

@cntk_case(names=["cntk.Function.save", "cntk.Function.load", "cntk.ops.functions.load_model",
                  "cntk.Trainer.save_checkpoint", "cntk.Trainer.restore_from_checkpoint",
                  "cntk.learners.adam"],
           rtol=1e-4, atol=1e-5,
           note="a classifier trained by adam three steps; then (a) the model saved by "
                "Function.save, loaded by Function.load, its arguments found by name and "
                "trained on by a new Trainer with a new adam (its moments start again), (b) "
                "the first trainer checkpointed, trained two steps, restored and trained the "
                "same two steps again (the same losses and parameters: the moments come "
                "back), (c) the original continuing; the losses and parameters of all three; "
                "loading a missing file refused (CNTK 2.7: ValueError)")
def user38_save_load_mid_training(C, r):
    r.touch("cntk.Function.save", "cntk.Function.load", "cntk.Trainer.save_checkpoint",
            "cntk.Trainer.restore_from_checkpoint")
    x = C.input_variable(3, name="features")
    y = C.input_variable(2, name="labels")
    z = C.layers.Sequential([C.layers.Dense(4, activation=C.sigmoid, name="h"),
                             C.layers.Dense(2, name="o")])(x)
    res = {"parameters": r.set_params(z.parameters)}

    def adam(ps):
        return C.adam(ps, C.learning_parameter_schedule(0.05), C.momentum_schedule(0.9))
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y),
                            C.classification_error(z, y)), [adam(z.parameters)])
    batches = [(r.randn(n, 3), r.onehot(n, 2)) for n in (4, 2, 3, 5, 3)]
    first = []
    for X, Y in batches[:3]:
        trainer.train_minibatch({x: X, y: Y})
        first.append(trainer.previous_minibatch_loss_average)
    res["first"] = first
    with r.tempdir() as folder:
        path = os.path.join(folder, "mid.model")
        ckpt = os.path.join(folder, "mid.ckpt")
        z.save(path)
        trainer.save_checkpoint(ckpt)
        loaded = C.Function.load(path)
        lx = [a for a in loaded.arguments if a.name == "features"][0]
        ly = C.input_variable(2, name="labels2")
        t2 = C.Trainer(loaded, (C.cross_entropy_with_softmax(loaded, ly), None),
                       [adam(loaded.parameters)])
        second = []
        for X, Y in batches[3:]:
            t2.train_minibatch({lx: X, ly: Y})
            second.append(t2.previous_minibatch_loss_average)
        res["loaded"] = second
        res["loaded values"] = sorted([p.name, np.asarray(p.value).ravel().tolist()]
                                      for p in loaded.parameters)
        cont = []
        for X, Y in batches[3:]:
            trainer.train_minibatch({x: X, y: Y})
            cont.append([trainer.previous_minibatch_loss_average,
                         trainer.previous_minibatch_evaluation_average])
        res["continued"] = cont
        res["continued values"] = r.param_values(z.parameters)
        trainer.restore_from_checkpoint(ckpt)
        again = []
        for X, Y in batches[3:]:
            trainer.train_minibatch({x: X, y: Y})
            again.append([trainer.previous_minibatch_loss_average,
                          trainer.previous_minibatch_evaluation_average])
        res["restored"] = again
        res["restored values"] = r.param_values(z.parameters)
        res["missing"] = outcome(lambda: C.load_model(os.path.join(folder, "none.model")),
                                 convert=lambda f: "returned")
    return res
