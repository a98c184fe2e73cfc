"""A CNTK 2.7 user's own programs (round 39, second part): CNTK_202's language understanding
with a lookahead window of ``past_value``/``future_value``, CNTK_204's sequence-to-sequence
decoder input (``is_first``, ``scatter``, ``element_select``) with greedy decoding by hand,
CNTK_201B's convnet with ``momentum_as_time_constant_schedule`` and a per-epoch learning rate
list, CNTK_600's U-Net with a Dice loss, a trainer checkpointed mid-epoch and restored into a
rebuilt model, and CNTK_106B's GRU forecaster with ``unit_gain=False``; each is run unchanged
on CNTK 2.7 and on ``stadyn.compat.cntk``."""

import os

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import as_raised, outcome


def _one_hots(r, V, lengths):
    return [np.eye(V, dtype=np.float32)[r.randint(0, V, (n,))] for n in lengths]


def _set_sorted(r, params):
    """Seeded values by the parameters' order sorted on name and shape (the two frameworks
    list a model's parameters in their own orders); returns the listing."""
    listing = sorted([p.name, list(p.shape)] for p in params)
    for i, p in enumerate(sorted(params, key=lambda p: (p.name, list(p.shape)))):
        p.value = r.param_value("p%d_%s" % (i, p.name), p.shape)
    return listing


def _sorted_values(params):
    return [np.asarray(p.value).ravel() for p in
            sorted(params, key=lambda p: (p.name, list(p.shape)))]


# -- 7. CNTK_202: a slot tagger reading a window of past and future words --------------------

@cntk_case(names=["cntk.sequence.past_value", "cntk.sequence.future_value", "cntk.ops.splice",
                  "cntk.layers.Embedding", "cntk.layers.Recurrence", "cntk.layers.GRU",
                  "cntk.sequence.input_variable"],
           rtol=1e-4, atol=1e-5,
           note="CNTK_202's 'lookahead' exercise: Embedding(4) of the words, spliced with "
                "sequence.past_value and sequence.future_value of it (zeros beyond the ends), "
                "Recurrence(GRU(3)) and Dense(5) per word; cross_entropy_with_softmax and "
                "classification_error per word, adam over ragged sequences of 3, 1 and 4 "
                "words, then 2 and 5; the losses, outputs, the parameters after")
def user39_lookahead_slot_tagger(C, r):
    V, K = 7, 5
    x = C.sequence.input_variable(V, name="query")
    y = C.sequence.input_variable(K, name="slot_labels")
    e = C.layers.Embedding(4, name="embed")(x)
    window = C.splice(C.sequence.past_value(e), e, C.sequence.future_value(e))
    h = C.layers.Recurrence(C.layers.GRU(3), name="rec")(window)
    z = C.layers.Dense(K, name="classify")(h)
    res = {"parameters": _set_sorted(r, z.parameters), "window": list(window.shape)}
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [C.adam(z.parameters, C.learning_parameter_schedule_per_sample(0.02),
                                C.momentum_schedule(0.9))])
    steps = []
    for lengths in ((3, 1, 4), (2, 5)):
        X = _one_hots(r, V, lengths)
        Y = _one_hots(r, K, lengths)
        trainer.train_minibatch({x: X, y: Y})
        steps.append([trainer.previous_minibatch_loss_average,
                      trainer.previous_minibatch_evaluation_average,
                      trainer.previous_minibatch_sample_count])
    res["steps"] = steps
    res["outputs"] = [np.asarray(v) for v in z.eval({x: _one_hots(r, V, (2, 3))})]
    res["values"] = _sorted_values(z.parameters)
    return res


# -- 8. CNTK_204: the decoder's input spliced from a start symbol; greedy decoding by hand ------

@cntk_case(names=["cntk.sequence.is_first", "cntk.sequence.first", "cntk.sequence.scatter",
                  "cntk.ops.element_select", "cntk.sequence.past_value",
                  "cntk.sequence.broadcast_as", "cntk.sequence.last", "cntk.ops.hardmax"],
           rtol=1e-4, atol=1e-5,
           note="CNTK_204's create_model without attention: an LSTM encoder whose last state "
                "is broadcast (sequence.broadcast_as) along the label sequence; the decoder's "
                "input is element_select(is_first(labels), scatter(first(labels), "
                "is_first(labels)), past_value(labels)) (the start symbol, then the previous "
                "label); Recurrence(LSTM(4)) over its splice with the thought vector and "
                "Dense(V); two adam steps; then the greedy decoder as a user writes it: start "
                "from <s>, evaluate the model on the prefix so far, append hardmax of the "
                "last step, four times")
def user39_seq2seq_greedy_by_hand(C, r):
    V = 5
    inp = C.sequence.input_variable(V, name="raw_input",
                                    sequence_axis=C.Axis("inputAxis"))
    lab = C.sequence.input_variable(V, name="raw_labels",
                                    sequence_axis=C.Axis("labelAxis"))
    thought = C.sequence.last(C.layers.Recurrence(C.layers.LSTM(3), name="encoder")(inp))
    is_first = C.sequence.is_first(lab)
    start = C.sequence.scatter(C.sequence.first(lab), is_first)
    dec_in = C.element_select(is_first, start, C.sequence.past_value(lab))
    ctx = C.sequence.broadcast_as(thought, lab)
    h = C.layers.Recurrence(C.layers.LSTM(4), name="decoder")(C.splice(dec_in, ctx))
    z = C.layers.Dense(V, name="proj")(h)
    res = {"parameters": _set_sorted(r, z.parameters)}
    ce = C.cross_entropy_with_softmax(z, lab)
    trainer = C.Trainer(z, (ce, C.classification_error(z, lab)),
                        [C.adam(z.parameters, C.learning_parameter_schedule(0.05),
                                C.momentum_schedule(0.9))])
    steps = []
    for _ in range(2):
        src = _one_hots(r, V, (3, 4))
        tgt = [np.vstack([np.eye(V, dtype=np.float32)[[0]], s]) for s in
               _one_hots(r, V, (2, 3))]
        trainer.train_minibatch({inp: src, lab: tgt})
        steps.append([trainer.previous_minibatch_loss_average,
                      trainer.previous_minibatch_evaluation_average])
    res["steps"] = steps
    source = _one_hots(r, V, (4,))
    decoded = [np.eye(V, dtype=np.float32)[0]]
    tokens = []
    for _ in range(4):
        out = z.eval({inp: source, lab: [np.array(decoded)]})[0]
        step = C.hardmax(out[-1]).eval()
        tokens.append(int(np.argmax(step)))
        decoded.append(np.asarray(step, np.float32))
    res["tokens"] = tokens
    res["last outputs"] = out
    res["values"] = _sorted_values(z.parameters)
    return res


# -- 9. CNTK_201B: a small convnet, momentum as a time constant, a per-epoch rate list ---------

@cntk_case(names=["cntk.learners.momentum_as_time_constant_schedule",
                  "cntk.learners.learning_rate_schedule", "cntk.learners.momentum_sgd",
                  "cntk.layers.Convolution2D", "cntk.layers.MaxPooling",
                  "cntk.layers.BatchNormalization", "cntk.layers.Dropout",
                  "cntk.learners.Learner.learning_rate"],
           rtol=1e-4, atol=1e-5,
           note="CNTK_201B's create_basic_model_with_batch_normalization, small: "
                "Convolution2D((3, 3), 3, pad=True) -> BatchNormalization(map_rank=1) -> relu "
                "-> MaxPooling((2, 2), strides=(2, 2)) -> Dense(6) -> Dropout(0.25) -> Dense(3)"
                " over element_times(1/256, image); momentum_sgd with learning_rate_schedule("
                "[0.05]*2 + [0.02], UnitType.sample, epoch_size=6), "
                "momentum_as_time_constant_schedule(20), l2_regularization_weight=0.001; the "
                "dropout is kept out of the compared numbers: the training steps run with "
                "Dropout(0) in the same place, and test_minibatch and eval (inference) are "
                "compared; the rates as the steps go, the running statistics, parameters")
def user39_convnet_time_constant(C, r):
    r.touch("cntk.learners.Learner.learning_rate")
    x = C.input_variable((2, 4, 4), name="image")
    y = C.input_variable(3, name="label")
    scaled = C.element_times(1.0 / 256.0, x)
    with C.layers.default_options(activation=None, pad=False, bias=True):
        z = C.layers.Sequential([
            C.layers.Convolution2D((3, 3), 3, pad=True, name="conv"),
            C.layers.BatchNormalization(map_rank=1, name="bn"),
            C.relu,
            C.layers.MaxPooling((2, 2), strides=(2, 2)),
            C.layers.Dense(6, activation=C.relu, name="fc"),
            C.layers.Dropout(0.0),
            C.layers.Dense(3, name="out")])(scaled)
    res = {"parameters": _set_sorted(r, z.parameters)}
    learner = C.momentum_sgd(z.parameters, C.learning_rate_schedule(
        [0.05] * 2 + [0.02], C.UnitType.sample, epoch_size=6),
        C.momentum_as_time_constant_schedule(20), l2_regularization_weight=0.001)
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [learner])
    steps = []
    for n in (4, 4, 5, 3, 4):
        X = (r.rand(n, 2, 4, 4) * 256.0).astype(np.float32)
        trainer.train_minibatch({x: X, y: r.onehot(n, 3)})
        steps.append([trainer.previous_minibatch_loss_average, learner.learning_rate()])
    res["steps"] = steps
    X = (r.rand(3, 2, 4, 4) * 256.0).astype(np.float32)
    res["test"] = trainer.test_minibatch({x: X, y: r.onehot(3, 3)})
    res["eval"] = z.eval({x: X})
    res["values"] = _sorted_values(z.parameters)
    res["constants"] = sorted([c.name, np.asarray(c.value).ravel().tolist()]
                              for c in z.constants)
    return res


# -- 10. CNTK_600: a small U-Net with a Dice coefficient loss --------------------------------

@cntk_case(names=["cntk.layers.ConvolutionTranspose", "cntk.layers.Convolution",
                  "cntk.layers.MaxPooling", "cntk.ops.splice", "cntk.ops.reduce_sum",
                  "cntk.ops.element_times", "cntk.learners.adam"],
           rtol=1e-4, atol=1e-5,
           note="CNTK_600's create_model and dice_coefficient, small: Convolution((3, 3), 2, "
                "relu, pad=True) -> MaxPooling((2, 2), (2, 2)) -> Convolution((3, 3), 4) -> "
                "ConvolutionTranspose((2, 2), 2, strides=(2, 2), output_shape=(8, 8)) spliced "
                "along axis 0 with the first convolution's output -> Convolution((1, 1), 1, "
                "sigmoid); loss 1 - dice with dice = 2 * reduce_sum(x * y) / (reduce_sum(x) + "
                "reduce_sum(y)) over the whole map (axis=C.Axis.all_static_axes()... as the "
                "notebook: reduce_sum over axes (0, 1, 2)); adam, three steps; the maps, "
                "losses, the parameters after")
def user39_unet_dice(C, r):
    x = C.input_variable((1, 8, 8), name="image")
    y = C.input_variable((1, 8, 8), name="mask")
    c1 = C.layers.Convolution((3, 3), 2, activation=C.relu, pad=True, name="c1")(x)
    p1 = C.layers.MaxPooling((2, 2), strides=(2, 2))(c1)
    c2 = C.layers.Convolution((3, 3), 4, activation=C.relu, pad=True, name="c2")(p1)
    u1 = C.layers.ConvolutionTranspose((2, 2), 2, strides=(2, 2), output_shape=(8, 8),
                                       name="up")(c2)
    m = C.splice(u1, c1, axis=0)
    z = C.layers.Convolution((1, 1), 1, activation=C.sigmoid, name="head")(m)
    res = {"parameters": _set_sorted(r, z.parameters),
           "shapes": [list(c1.shape), list(u1.shape), list(m.shape), list(z.shape)]}
    inter = C.reduce_sum(C.element_times(z, y), axis=(0, 1, 2))
    dice = 2 * inter / (C.reduce_sum(z, axis=(0, 1, 2)) + C.reduce_sum(y, axis=(0, 1, 2)))
    loss = 1 - dice
    trainer = C.Trainer(z, (loss, dice), [C.adam(z.parameters, C.learning_parameter_schedule(
        0.05), C.momentum_schedule(0.9))])
    I = r.randn(3, 1, 8, 8)
    M = (r.rand(3, 1, 8, 8) > 0.6).astype(np.float32)
    steps = []
    for _ in range(3):
        trainer.train_minibatch({x: I, y: M})
        steps.append([trainer.previous_minibatch_loss_average,
                      trainer.previous_minibatch_evaluation_average])
    res["steps"] = steps
    res["maps"] = z.eval({x: I[:1]})
    res["dice"] = dice.eval({x: I, y: M})
    res["values"] = _sorted_values(z.parameters)
    return res


# -- 11. a trainer checkpointed mid-epoch, restored into a model built again -----------------

def _ckpt_model(C):
    x = C.input_variable(3, name="x")
    y = C.input_variable(2, name="y")
    z = C.layers.Dense(2, name="out")(C.layers.Dense(4, activation=C.sigmoid, name="h")(x))
    learner = C.adam(z.parameters, C.learning_parameter_schedule([0.1, 0.05, 0.02],
                                                                 epoch_size=5),
                     C.momentum_schedule(0.9), variance_momentum=C.momentum_schedule(0.99))
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [learner])
    return x, y, z, learner, trainer


@cntk_case(names=["cntk.Trainer.save_checkpoint", "cntk.Trainer.restore_from_checkpoint",
                  "cntk.Trainer.total_number_of_samples_seen", "cntk.learners.adam",
                  "cntk.learners.Learner.learning_rate"],
           rtol=1e-4, atol=1e-5,
           note="Trainer.save_checkpoint after two of five minibatches (of 3, 4, 2, 5 and 3 "
                "samples) with external_state; the model built again by the same code, its "
                "parameters scrambled, restore_from_checkpoint gives back the parameters, the "
                "adam state (the remaining steps match an uninterrupted run's), the sample "
                "count and the rate schedule's position (epoch_size=5); the returned external "
                "state; the files the checkpoint wrote")
def user39_checkpoint_mid_epoch_rebuilt(C, r):
    r.touch("cntk.Trainer.total_number_of_samples_seen", "cntk.Learner.learning_rate",
            "cntk.Trainer.save_checkpoint", "cntk.Trainer.restore_from_checkpoint")
    batches = [(r.randn(n, 3), r.onehot(n, 2)) for n in (3, 4, 2, 5, 3)]
    init = None
    runs = []
    for interrupted in (False, True):
        x, y, z, learner, trainer = _ckpt_model(C)
        if init is None:
            init = _set_sorted(r, z.parameters)
            start = [np.array(p.value) for p in z.parameters]
        else:
            for p, v in zip(z.parameters, start):
                p.value = v
        losses = []
        state = None
        for i, (X, Y) in enumerate(batches):
            if interrupted and i == 2:
                trainer.save_checkpoint("mid.ckp", {"epoch": 0, "minibatch": i})
                x, y, z, learner, trainer = _ckpt_model(C)
                for p in z.parameters:
                    p.value = np.zeros(p.shape, np.float32) + 0.3
                state = trainer.restore_from_checkpoint("mid.ckp")
                losses.append(["restored", trainer.total_number_of_samples_seen,
                               learner.learning_rate()])
            trainer.train_minibatch({x: X, y: Y})
            losses.append([trainer.previous_minibatch_loss_average, learner.learning_rate()])
        runs.append({"losses": losses, "values": _sorted_values(z.parameters),
                     "state": state, "samples": trainer.total_number_of_samples_seen})
    return {"parameters": init, "runs": runs, "files": sorted(os.listdir("."))}


# -- 12. CNTK_106B: a GRU forecaster over ragged windows, adam with unit_gain=False ------------

@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.GRU", "cntk.sequence.last",
                  "cntk.learners.adam", "cntk.losses.squared_error",
                  "cntk.Trainer.previous_minibatch_sample_count"],
           rtol=1e-4, atol=1e-5,
           note="CNTK_106B's create_model with GRU in place of LSTM: Recurrence(GRU(3)), "
                "sequence.last, Dense(1); squared_error; adam(learning_parameter_schedule("
                "0.05), momentum_schedule(0.9), unit_gain=False) -- CNTK's non-unit-gain "
                "momentum (the gradient not scaled by 1 - momentum); windows of 4, 6 and 3 "
                "readings; the losses, sample counts, predictions and parameters after")
def user39_gru_forecaster_no_unit_gain(C, r):
    r.touch("cntk.Trainer.previous_minibatch_sample_count")
    x = C.sequence.input_variable(2, name="readings")
    y = C.input_variable(1, name="next")
    z = C.layers.Dense(1, name="fc")(C.sequence.last(
        C.layers.Recurrence(C.layers.GRU(3), name="gru")(x)))
    res = {"parameters": _set_sorted(r, z.parameters)}
    trainer = C.Trainer(z, (C.squared_error(z, y), C.squared_error(z, y)), [C.adam(
        z.parameters, C.learning_parameter_schedule(0.05), C.momentum_schedule(0.9),
        unit_gain=False)])
    steps = []
    for lengths in ((4, 6, 3), (5, 2), (3, 3, 4, 1)):
        X = [r.randn(n, 2) for n in lengths]
        Y = np.array([[float(np.sum(s[:, 0]))] for s in X], np.float32) * 0.1
        trainer.train_minibatch({x: X, y: Y})
        steps.append([trainer.previous_minibatch_loss_average,
                      trainer.previous_minibatch_sample_count])
    res["steps"] = steps
    res["predicted"] = z.eval({x: [r.randn(n, 2) for n in (2, 5)]})
    res["values"] = _sorted_values(z.parameters)
    return res


# -- 13. layers called on NumPy arrays, with and without a signature ---------------------------

@cntk_case(names=["cntk.layers.Dense", "cntk.layers.Sequential", "cntk.Function.update_signature",
                  "cntk.layers.Embedding", "cntk.Function.with_signature"],
           rtol=1e-5, atol=1e-6,
           note="CNTK's layers tutorial (CNTK_200's 'a layer is a function'): a layer given a "
                "signature (update_signature, Function.with_signature) called directly on "
                "NumPy arrays evaluates (its values compared); one without a signature, "
                "Dense, Embedding or a Sequential of them, called on an array is CNTK 2.7's "
                "eval over its untyped placeholders: RuntimeError 'Unknown DataType.' (before "
                "cntkuser39 Stadyn raised TypeError); on a CNTK input_variable it applies")
def user39_layer_called_on_arrays(C, r):
    r.touch("cntk.Function.update_signature", "cntk.Function.with_signature")
    X = r.randn(2, 3)
    res = {}
    typed = C.layers.Dense(2, init=C.glorot_uniform(seed=3), name="typed")
    typed.update_signature(3)
    r.set_params(typed.parameters)
    res["typed on arrays"] = typed(X)

    @C.Function.with_signature(C.layers.Tensor[3])
    def scaled(v):
        return v * 2.0 + 1.0
    res["with_signature on arrays"] = scaled(X)
    for name, make in [("Dense", lambda: C.layers.Dense(2)),
                       ("Embedding", lambda: C.layers.Embedding(4)),
                       ("Sequential", lambda: C.layers.Sequential([C.layers.Dense(4),
                                                                  C.layers.Dense(2)]))]:
        res[name + " on arrays"] = outcome(lambda: make()(X),
                                           raised=lambda e: as_raised(e, first_line=True))
        res[name + " on an input"] = list(make()(C.input_variable(3)).shape)
    return res


# -- 14. a session killed before its last checkpoint, run again: restored from the newest kept --

def _session_run(C, r, X, Y, max_samples, restore, scrambled=False):
    x = C.input_variable(3, name="x")
    y = C.input_variable(2, name="y")
    z = C.layers.Dense(2, name="out")(x)
    r.set_params(z.parameters)
    if scrambled:       # (what a restore replaces; training from the start would keep it)
        for p in z.parameters:
            p.value = np.full(p.shape, 0.3, np.float32)
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [C.momentum_sgd(z.parameters, C.learning_parameter_schedule(0.1),
                                        C.momentum_schedule(0.5))])
    src = C.io.MinibatchSourceFromData(dict(x=X, y=Y), max_samples=C.io.INFINITELY_REPEAT)
    C.training_session(trainer=trainer, mb_source=src, mb_size=4,
                       model_inputs_to_streams={x: src.streams.x, y: src.streams.y},
                       max_samples=max_samples,
                       checkpoint_config=C.CheckpointConfig("ckpt/model", frequency=8,
                                                            restore=restore,
                                                            preserve_all=True)).train()
    return [trainer.total_number_of_samples_seen, r.param_values(z.parameters)]


@cntk_case(names=["cntk.training_session", "cntk.CheckpointConfig",
                  "cntk.io.MinibatchSourceFromData", "cntk.Trainer.total_number_of_samples_seen"],
           rtol=1e-5, atol=1e-6,
           note="a training session checkpointing every 8 samples with preserve_all=True "
                "(files model0, model1, ... and, at the end, model) whose last file is lost "
                "as when the job is killed before its end (model, model.ckp and model2 "
                "removed); run again with restore=True over parameters set otherwise, CNTK "
                "2.7 restores from the kept checkpoint of the highest index "
                "(TrainingSession.cpp:455-493: 'model' + a number with its .ckp beside it) "
                "and trains on to max_samples; the samples seen, the "
                "parameters after (those of an uninterrupted run of as many samples), the "
                "files left; before cntkuser39 Stadyn restored only from 'model' itself and "
                "trained again from the start")
def user39_session_resumes_from_preserved(C, r):
    r.touch("cntk.Trainer.total_number_of_samples_seen")
    X, Y = r.randn(20, 3), r.onehot(20, 2)
    res = {"first": _session_run(C, r, X, Y, 24, False),
           "files": sorted(os.listdir("ckpt"))}
    os.remove(os.path.join("ckpt", "model"))
    os.remove(os.path.join("ckpt", "model.ckp"))
    os.remove(os.path.join("ckpt", "model2"))      # (and the newest kept one, unfinished)
    res["resumed"] = _session_run(C, r, X, Y, 36, True, scrambled=True)
    res["files after"] = sorted(os.listdir("ckpt"))
    for name in os.listdir("ckpt"):
        os.remove(os.path.join("ckpt", name))
    res["uninterrupted"] = _session_run(C, r, X, Y, 36, False)
    return res
