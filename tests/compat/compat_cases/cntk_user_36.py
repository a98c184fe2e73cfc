"""A CNTK 2.7 user's own programs (round 36), in the style of CNTK's tutorials: a DCGAN whose
generator is a ConvolutionTranspose2D stack (CNTK_206B), a sampled softmax built of
``random_sample`` and ``random_sample_inclusion_frequency`` (CNTK_207), transfer learning by
``clone(CloneMethod.freeze)`` of a loaded model (CNTK_301), a deep autoencoder under
``default_options`` trained by fsadagrad with ``train_minibatch(outputs=...)`` (CNTK_105), a
sequence classifier by ``Fold`` (CNTK_599's pattern), a deconvolution network with
``MaxUnpooling`` (Examples/Image/GettingStarted/07_Deconvolution_PY.py), a BatchNormalization
/ LayerNormalization Sequential, a Huber loss of ``element_select`` and ``clip`` (CNTK_203) and a
training session with checkpoint, cross-validation and test configs; each is run unchanged on
CNTK 2.7 and on ``stadyn.compat.cntk``."""

import contextlib
import io
import os
import re

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import outcome

_TIMING = re.compile(r"\d+\.\d+s \( *\d+\.\d+ samples/s\)")
_NUMBER = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?")


def _printed(text):
    """Printed lines, timings masked, their decimals apart (compared to the harness's
    tolerance: the last printed digit may round either way)."""
    lines = [_TIMING.sub("<time>", ln) for ln in text.splitlines() if ln.strip()]
    return [[_NUMBER.sub("#", ln), [float(v) for v in _NUMBER.findall(ln)]] for ln in lines]


def _write_ctf(path, rows):
    with open(path, "w") as f:
        for seq, fields in rows:
            f.write("%d %s\n" % (seq, " ".join(
                "|%s %s" % (name, " ".join("%g" % v for v in fields[name]))
                for name in sorted(fields))))


# -- 1. a DCGAN: ConvolutionTranspose2D generator, strided convolution discriminator ------------

@cntk_case(names=["cntk.layers.ConvolutionTranspose2D", "cntk.layers.BatchNormalization",
                  "cntk.ops.param_relu", "cntk.layers.Convolution2D", "cntk.Function.clone",
                  "cntk.learners.adam", "cntk.Trainer.train_minibatch"],
           rtol=1e-4, atol=1e-5,
           note="CNTK_206B's DCGAN, small: a generator Dense -> BatchNormalization(map_rank=1) "
                "-> relu -> ConvolutionTranspose2D(strides 2, pad, output_shape) -> tanh; a "
                "discriminator of a strided Convolution2D, BatchNormalization and a leaky relu "
                "by param_relu of a constant, Dense sigmoid; the discriminator on fakes a "
                "clone(share) substituting the generator's output for the image; two adam "
                "trainers alternating three steps; losses, the generated images and every "
                "parameter after")
def user36_dcgan_conv_transpose(C, r):
    r.touch("cntk.Function.clone", "cntk.Trainer.train_minibatch")
    g_dim = 3
    z_in = C.input_variable(g_dim, name="noise")
    x_real = C.input_variable((1, 6, 6), name="image")

    def generator(z):
        with C.layers.default_options(init=C.normal(scale=0.02)):
            h = C.layers.Dense((2, 3, 3), bias=False, name="g_fc")(z)
            h = C.relu(C.layers.BatchNormalization(map_rank=1, name="g_bn")(h))
            return C.layers.ConvolutionTranspose2D((3, 3), num_filters=1, strides=(2, 2),
                                                   pad=True, output_shape=(6, 6),
                                                   activation=C.tanh, name="g_dc")(h)

    def discriminator(x):
        with C.layers.default_options(init=C.normal(scale=0.02)):
            h = C.layers.Convolution2D((2, 2), num_filters=4, strides=(2, 2), pad=True,
                                       bias=False, name="d_conv")(x)
            h = C.layers.BatchNormalization(map_rank=1, name="d_bn")(h)
            h = C.param_relu(C.constant((np.ones(h.shape) * 0.2).astype(np.float32)), h)
            return C.layers.Dense(1, activation=C.sigmoid, name="d_out")(h)

    g_fake = generator(z_in)
    d_real = discriminator(x_real - 0.5)
    d_fake = d_real.clone(method="share", substitutions={x_real: g_fake.output})
    res = {"g parameters": r.set_params(g_fake.parameters),
           "d parameters": r.set_params(d_real.parameters),
           "shapes": [list(g_fake.shape), list(d_real.shape), list(d_fake.shape)]}
    g_loss = 1.0 - C.log(d_fake)
    d_loss = -(C.log(d_real) + C.log(1.0 - d_fake))
    lr = C.learning_parameter_schedule_per_sample(0.05)
    g_trainer = C.Trainer(g_fake, (g_loss, None), [C.adam(
        g_fake.parameters, lr, momentum=C.momentum_schedule(0.5))])
    d_trainer = C.Trainer(d_real, (d_loss, None), [C.adam(
        d_real.parameters, lr, momentum=C.momentum_schedule(0.5))])
    losses = []
    for step in range(3):
        noise = r.rand(4, g_dim, low=-1.0, high=1.0)
        images = r.rand(4, 1, 6, 6)
        d_trainer.train_minibatch({x_real: images, z_in: noise})
        g_trainer.train_minibatch({z_in: r.rand(4, g_dim, low=-1.0, high=1.0)})
        losses.append([d_trainer.previous_minibatch_loss_average,
                       g_trainer.previous_minibatch_loss_average])
    res["losses"] = losses
    res["generated"] = g_fake.eval({z_in: r.rand(2, g_dim, low=-1.0, high=1.0)})
    res["g values"] = r.param_values(g_fake.parameters)
    res["d values"] = r.param_values(d_real.parameters)
    return res


# -- 2. a sampled softmax (CNTK_207) ------------------------------------------------------------

@cntk_case(names=["cntk.ops.random_sample", "cntk.ops.random_sample_inclusion_frequency",
                  "cntk.ops.times_transpose", "cntk.ops.reduce_log_sum_exp",
                  "cntk.ops.log_add_exp", "cntk.learners.sgd"],
           note="CNTK_207's cross_entropy_with_sampled_softmax: the sampled classes by "
                "random_sample (sparse one-hot rows), their log prior by the log of "
                "random_sample_inclusion_frequency, times_transpose, reduce_log_sum_exp and "
                "log_add_exp.  CNTK 2.7 refuses as many samples as classes without duplicates "
                "(ValueError); with four of five and class 0's weight 1e-6 the four others "
                "are drawn, so the loss (a log-sum-exp over them) does not hang on the draws. "
                "Without duplicates CNTK 2.7 estimates the inclusion frequencies from ten "
                "samplings of the op's own random stream (TrainingNodes.cpp:236-248): explicit "
                "seeds, so that the numbers do not hang on the ops made before.  Of three "
                "draws, what is certain (shape, one 1 per row, no class twice without "
                "duplicates) and the frequencies with and without duplicates.  As the "
                "tutorial writes it, z = times_transpose(W, h) + reshape(b, (1, V)) is "
                "(V, 1) + (1, V): (V, V) on both sides; CNTK 2.7 takes a (V,) label against "
                "it (broadcast over the rows) in classification_error and "
                "cross_entropy_with_softmax")
def user36_sampled_softmax(C, r):
    V, D = 5, 3
    weights_np = np.array([1e-6, 1.0, 2.0, 1.5, 3.0], dtype=np.float32)
    hidden_in = C.input_variable(4, name="x")
    label = C.input_variable(V, name="y")
    hidden = C.layers.Dense(D, activation=C.tanh, name="h")(hidden_in)

    def sampled_ce(num_samples, allow_duplicates):
        sw = C.constant(weights_np)
        bias = C.parameter(shape=(V, 1), init=0, name="sbias")
        w = C.parameter(shape=(V, D), init=C.glorot_uniform(), name="sweights")
        selector = C.random_sample(sw, num_samples, allow_duplicates, seed=1)
        log_prior = C.log(C.random_sample_inclusion_frequency(sw, num_samples,
                                                              allow_duplicates, seed=2))
        ws = C.times(selector, w)
        zs = (C.times_transpose(ws, hidden) + C.times(selector, bias)
              - C.times_transpose(selector, log_prior))
        wt = C.times(label, w)
        zt = (C.times_transpose(wt, hidden) + C.times(label, bias)
              - C.times_transpose(label, log_prior))
        ce = C.log_add_exp(zt, C.reduce_log_sum_exp(zs)) - zt
        z = C.times_transpose(w, hidden) + C.reshape(bias, (1, V))
        return z, ce, selector, log_prior

    res = {"as many samples as classes": outcome(
        lambda: C.random_sample(C.constant(weights_np), V, False, seed=1))}
    z, ce, selector, _ = sampled_ce(V - 1, False)
    res["parameters"] = r.set_params(ce.parameters)
    X, Y = r.randn(6, 4), r.onehot(6, V)
    res["loss"] = ce.eval({hidden_in: X, label: Y})
    # (the tutorial's metric, classification_error(z, label), of z's (V, V) shape)
    res["metric of the (V, V) scores"] = outcome(lambda: C.classification_error(z, label).eval(
        {hidden_in: X[:2], label: Y[:2]}))
    res["full softmax of the (V, V) scores"] = outcome(
        lambda: C.cross_entropy_with_softmax(z, label).eval({hidden_in: X[:2], label: Y[:2]}))
    trainer = C.Trainer(z, (ce, None),
                        [C.sgd(ce.parameters, C.learning_parameter_schedule(0.2))])
    steps = []
    for i in range(3):
        trainer.train_minibatch({hidden_in: X[2 * i:2 * i + 2], label: Y[2 * i:2 * i + 2]})
        steps.append(trainer.previous_minibatch_loss_average)
    res["steps"] = steps
    res["values"] = r.param_values(ce.parameters)
    res["scores"] = z.eval({hidden_in: X[:2]})
    classes = C.constant(np.arange(V, dtype=np.float32).reshape(V, 1))
    res["all drawn"] = sorted(C.times(selector, classes).eval().ravel().tolist())
    for dup in (False, True):
        _, _, sel3, prior3 = sampled_ce(3, dup)
        drawn = C.times(sel3, classes).eval().ravel()
        ones = C.reduce_sum(C.times(sel3, C.constant(np.ones((V, 1), np.float32))))
        key = "duplicates" if dup else "no duplicates"
        res[key + " rows"] = [list(sel3.shape), float(ones.eval()),
                              bool(dup or len(set(drawn.tolist())) == 3),
                              bool(np.all((drawn >= 0) & (drawn < V)))]
        res[key + " log prior"] = prior3.eval()
    return res


# -- 3. transfer learning: a loaded model's layers frozen by clone (CNTK_301) -------------------

@cntk_case(names=["cntk.ops.functions.CloneMethod", "cntk.logging.find_by_name",
                  "cntk.ops.combine", "cntk.ops.placeholder", "cntk.ops.functions.load_model",
                  "cntk.Function.save", "cntk.learners.momentum_sgd",
                  "cntk.layers.MaxPooling"],
           rtol=1e-4, atol=1e-5,
           note="CNTK_301's transfer learning: a small conv net trained and saved; loaded, "
                "its 'features' input and 'hidden' node found by name, combine([hidden.owner])"
                ".clone(CloneMethod.freeze, {features: placeholder}) applied to the new "
                "input minus a constant, a new Dense head; the new model's parameters (the "
                "head's only) and constants, losses of four momentum_sgd steps, the frozen "
                "layer's values unchanged, the cloned output")
def user36_transfer_learning_freeze(C, r):
    r.touch("cntk.Function.save")
    res = {}
    feats = C.input_variable((1, 4, 4), name="features")
    labels = C.input_variable(3, name="labels")
    base = C.layers.Sequential([
        C.layers.Convolution2D((3, 3), 2, pad=True, activation=C.relu, name="conv"),
        C.layers.MaxPooling((2, 2), strides=(2, 2), name="pool"),
        C.layers.Dense(5, activation=C.relu, name="hidden"),
        C.layers.Dense(3, name="out")])(feats)
    r.set_params(base.parameters)
    X, Y = r.rand(8, 1, 4, 4), r.onehot(8, 3)
    tr = C.Trainer(base, (C.cross_entropy_with_softmax(base, labels), None),
                   [C.sgd(base.parameters, C.learning_parameter_schedule(0.1))])
    tr.train_minibatch({feats: X, labels: Y})
    with r.tempdir() as folder:
        path = os.path.join(folder, "base.model")
        base.save(path)
        loaded = C.load_model(path)
    feature_node = C.logging.find_by_name(loaded, "features")
    last_node = C.logging.find_by_name(loaded, "hidden")
    cloned = C.combine([last_node.owner]).clone(
        C.CloneMethod.freeze, {feature_node: C.placeholder(name="features")})
    new_in = C.input_variable((1, 4, 4), name="new_features")
    z = C.layers.Dense(2, name="new_out")(cloned(new_in - C.constant(0.25)))
    res["new parameters"] = r.set_params(z.parameters)
    res["constants"] = sorted([c.name, list(c.shape)] for c in z.constants)
    frozen_before = sorted(np.asarray(c.value).ravel().tolist() for c in z.constants)
    new_labels = C.input_variable(2, name="new_labels")
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, new_labels),
                            C.classification_error(z, new_labels)),
                        [C.momentum_sgd(z.parameters, C.learning_parameter_schedule(0.2),
                                        C.momentum_schedule(0.9))])
    Y2 = r.onehot(8, 2)
    losses = []
    for i in range(4):
        trainer.train_minibatch({new_in: X[2 * i:2 * i + 2], new_labels: Y2[2 * i:2 * i + 2]})
        losses.append(trainer.previous_minibatch_loss_average)
    res["losses"] = losses
    res["frozen unchanged"] = frozen_before == sorted(
        np.asarray(c.value).ravel().tolist() for c in z.constants)
    res["cloned out"] = cloned(new_in).eval({new_in: X[:2]})
    res["placeholder fed"] = outcome(lambda: cloned.eval({cloned.arguments[0]: X[:2]}))
    res["z"] = z.eval({new_in: X[:3]})
    res["values"] = r.param_values(z.parameters)
    return res


# -- 4. a deep autoencoder under default_options, fsadagrad, outputs= (CNTK_105) ---------------

@cntk_case(names=["cntk.layers.default_options", "cntk.learners.fsadagrad",
                  "cntk.momentum_schedule_per_sample", "cntk.ops.binary_cross_entropy",
                  "cntk.Trainer.train_minibatch", "cntk.layers.Dense"],
           rtol=1e-4, atol=1e-5,
           note="CNTK_105's deep autoencoder, small: Dense layers made in loops under "
                "default_options(activation=relu, init=glorot_uniform()), a last sigmoid layer "
                "overriding it; binary_cross_entropy against the scaled input, fsadagrad with "
                "a per-sample rate and momentum and gradient clipping per sample; "
                "train_minibatch(feed, outputs=[model.output]) returning (updated, outputs); "
                "the losses, the outputs it returned, and the model after")
def user36_autoencoder_default_options(C, r):
    r.touch("cntk.Trainer.train_minibatch")
    x = C.input_variable(6, name="pixels")
    scaled = x / 255.0
    with C.layers.default_options(activation=C.relu, init=C.glorot_uniform()):
        h = scaled
        for i, dim in enumerate([4, 2]):
            h = C.layers.Dense(dim, name="enc%d" % i)(h)
        encoded = h
        for i, dim in enumerate([5]):
            h = C.layers.Dense(dim, name="dec%d" % i)(h)
        model = C.layers.Dense(6, activation=C.sigmoid, name="recon")(h)
    res = {"parameters": r.set_params(model.parameters)}
    loss = C.binary_cross_entropy(model, scaled)
    err = C.reduce_mean(C.abs(model - scaled))
    learner = C.fsadagrad(model.parameters,
                          lr=C.learning_parameter_schedule_per_sample(0.01),
                          momentum=C.momentum_schedule_per_sample(0.99),
                          gradient_clipping_threshold_per_sample=0.5,
                          gradient_clipping_with_truncation=True)
    trainer = C.Trainer(model, (loss, err), [learner])
    X = np.floor(r.rand(9, 6) * 255).astype(np.float32)
    steps, outs = [], []
    for i in range(3):
        updated, got = trainer.train_minibatch({x: X[3 * i:3 * i + 3]},
                                               outputs=[model.output])
        steps.append([bool(updated), trainer.previous_minibatch_loss_average,
                      trainer.previous_minibatch_evaluation_average])
        outs.append(np.asarray(got[model.output]))
    res["steps"] = steps
    res["outputs"] = np.stack(outs)
    res["encoded"] = encoded.eval({x: X[:2]})
    res["activations"] = [str(model.find_by_name("enc0").root_function.op_name)]
    res["values"] = r.param_values(model.parameters)
    return res


# -- 5. a sequence classifier by Fold, tested by an Evaluator ------------------------------------

@cntk_case(names=["cntk.layers.Fold", "cntk.layers.GRU", "cntk.layers.Embedding",
                  "cntk.learners.rmsprop", "cntk.eval.Evaluator", "cntk.sequence.last",
                  "cntk.layers.Recurrence"],
           rtol=1e-4, atol=1e-5,
           note="a sequence classifier Embedding -> Fold(GRU) -> Dense, trained by rmsprop on "
                "sequences of several lengths; Fold's value beside sequence.last of a "
                "Recurrence sharing the same GRU and a Fold of a plain lambda (a running "
                "sum); another Fold of the same GRU made before training and one made after "
                "it; an Evaluator's classification error on new sequences")
def user36_fold_sequence_classifier(C, r):
    V, K = 6, 3
    x = C.sequence.input_variable(V, name="words")
    y = C.input_variable(K, name="label")
    emb = C.layers.Embedding(4, name="emb")
    gru = C.layers.GRU(3, name="gru")
    z = C.layers.Sequential([emb, C.layers.Fold(gru, name="fold"),
                             C.layers.Dense(K, name="cls")])(x)
    res = {"parameters": r.set_params(z.parameters)}
    last = C.sequence.last(C.layers.Recurrence(gru)(emb(x)))
    folded = C.layers.Fold(lambda h, v: h + v)(x)
    fold_before = C.layers.Fold(gru)(emb(x))

    def batch(lengths):
        seqs = [np.eye(V, dtype=np.float32)[r.randint(0, V, (n,))] for n in lengths]
        return seqs, r.onehot(len(lengths), K)
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [C.rmsprop(z.parameters, C.learning_parameter_schedule(0.05),
                                   gamma=0.9, inc=1.2, dec=0.8, max=2.0, min=0.5)])
    losses = []
    for lengths in ([3, 1, 4], [2, 5], [1, 2, 3, 2]):
        seqs, labels = batch(lengths)
        trainer.train_minibatch({x: seqs, y: labels})
        losses.append([trainer.previous_minibatch_loss_average,
                       trainer.previous_minibatch_sample_count])
    res["losses"] = losses
    seqs, labels = batch([2, 4, 1])
    fold_in = C.layers.Fold(gru)(emb(x))
    res["fold made after"] = outcome(lambda: fold_in.eval({x: seqs}), convert=np.asarray)
    res["fold made before"] = np.asarray(fold_before.eval({x: seqs}))
    res["last"] = np.asarray(last.eval({x: seqs}))
    res["running sum"] = np.asarray(folded.eval({x: seqs}))
    ev = C.Evaluator(C.classification_error(z, y))
    res["test error"] = ev.test_minibatch({x: seqs, y: labels})
    res["z"] = np.asarray(z.eval({x: seqs}))
    return res


# -- 6. a deconvolution network: MaxUnpooling and ConvolutionTranspose2D -------------------------

@cntk_case(names=["cntk.layers.MaxUnpooling", "cntk.layers.MaxPooling",
                  "cntk.layers.ConvolutionTranspose2D", "cntk.ops.sqrt",
                  "cntk.learning_parameter_schedule_per_sample", "cntk.Function.find_by_name"],
           rtol=1e-4, atol=1e-5,
           note="Examples/Image/GettingStarted/07_Deconvolution_PY.py, small: Convolution2D "
                "relu, MaxPooling, MaxUnpooling of the pool by the convolution, "
                "ConvolutionTranspose2D without bias back to the image; an RMSE loss by "
                "sqrt(reduce_sum(square)/dim); momentum_sgd on a per-sample rate; the "
                "pooled values of the node found by name 'pool1'")
def user36_deconvolution_unpooling(C, r):
    r.touch("cntk.Function.find_by_name")
    x = C.input_variable((1, 4, 4), name="image")
    scaled = x / 255.0
    conv = C.layers.Convolution2D((2, 2), 2, pad=True, activation=C.relu, name="conv1")(scaled)
    pool = C.layers.MaxPooling((2, 2), (2, 2), name="pool1")(conv)
    unpool = C.layers.MaxUnpooling((2, 2), (2, 2), name="unpool1")(pool, conv)
    z = C.layers.ConvolutionTranspose2D((3, 3), 1, pad=True, bias=False,
                                        init=C.glorot_uniform(0.001), name="output")(unpool)
    res = {"parameters": r.set_params(z.parameters),
           "shapes": [list(conv.shape), list(pool.shape), list(unpool.shape), list(z.shape)]}
    rmse = C.sqrt(C.reduce_sum(C.square(scaled - z)) / 16.0)
    trainer = C.Trainer(z, (rmse, rmse), [C.momentum_sgd(
        z.parameters, C.learning_parameter_schedule_per_sample(0.02),
        C.momentum_schedule(0.9))])
    X = np.floor(r.rand(6, 1, 4, 4) * 255).astype(np.float32)
    losses = []
    for i in range(3):
        trainer.train_minibatch({x: X[2 * i:2 * i + 2]})
        losses.append(trainer.previous_minibatch_loss_average)
    res["losses"] = losses
    res["decoded"] = z.eval({x: X[:2]})
    pool_node = z.find_by_name("pool1")
    res["pooled"] = outcome(lambda: pool_node.eval({x: X[:1]}))
    res["pooled by combine"] = C.combine([pool_node.outputs[0]]).eval({x: X[:1]})
    res["values"] = r.param_values(z.parameters)
    return res


# -- 7. BatchNormalization(map_rank) and LayerNormalization in a Sequential ---------------------

@cntk_case(names=["cntk.layers.BatchNormalization", "cntk.layers.LayerNormalization",
                  "cntk.layers.Sequential", "cntk.layers.For", "cntk.learners.momentum_sgd",
                  "cntk.Function.constants"],
           rtol=1e-4, atol=1e-5,
           note="a classifier of image-like input: Convolution2D, BatchNormalization(map_rank"
                "=1) (one statistic per channel), relu, Dense, LayerNormalization, a For of two "
                "Dense tanh, Dense; momentum_sgd with l2 regularisation over four minibatches; "
                "the parameter listing, losses, the model's inference values after (running "
                "statistics) and its constants' shapes")
def user36_batch_and_layer_norm(C, r):
    r.touch("cntk.Function.constants")
    x = C.input_variable((2, 3, 3), name="x")
    y = C.input_variable(3, name="y")
    z = C.layers.Sequential([
        C.layers.Convolution2D((2, 2), 4, name="conv"),
        C.layers.BatchNormalization(map_rank=1, normalization_time_constant=4, name="bn"),
        C.relu,
        C.layers.Dense(7, name="fc"),
        C.layers.LayerNormalization(name="ln"),
        C.layers.For(range(2), lambda i: C.layers.Dense(6 - i, activation=C.tanh,
                                                        name="deep%d" % i)),
        C.layers.Dense(3, name="out")])(x)
    res = {"parameters": r.set_params(z.parameters)}
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [C.momentum_sgd(z.parameters, C.learning_parameter_schedule(0.1),
                                        C.momentum_schedule(0.8),
                                        l2_regularization_weight=0.01)])
    X, Y = r.randn(12, 2, 3, 3), r.onehot(12, 3)
    losses = []
    for i in range(4):
        trainer.train_minibatch({x: X[3 * i:3 * i + 3], y: Y[3 * i:3 * i + 3]})
        losses.append(trainer.previous_minibatch_loss_average)
    res["losses"] = losses
    res["inference"] = z.eval({x: X[:4]})
    res["constants"] = sorted(list(c.shape) for c in z.constants)
    res["values"] = r.param_values(z.parameters)
    return res


# -- 8. a Huber loss of element_select, clipped targets (CNTK_203) -------------------------------

@cntk_case(names=["cntk.ops.element_select", "cntk.ops.less", "cntk.ops.clip",
                  "cntk.ops.square", "cntk.Function.grad", "cntk.ops.optimized_rnnstack",
                  "cntk.learners.adam", "cntk.ops.reduce_max", "cntk.ops.stop_gradient"],
           rtol=1e-4, atol=1e-5,
           note="CNTK_203's Q-learning pieces: a Q network (two Dense), targets "
                "r + gamma * reduce_max of a target clone's output, clip()ped and behind "
                "stop_gradient, the Huber loss of element_select(less(|e|, 1), ...) on the "
                "chosen action; its gradient w.r.t. the parameters and the input by grad, "
                "three adam steps; and optimized_rnnstack, which CNTK 2.7's CPU build refuses "
                "(cuDNN only: Matrix.cpp:5043 RNNForward, 'Feature Not Implemented', a "
                "RuntimeError), as its outcome",
           known={"optimized_rnnstack": "CNTK 2.7's CPU build infers the parameter of shape "
                  "(InferredDimension, 4) as (36, 4) and refuses at eval (RuntimeError, no "
                  "RNNForward on the CPU); Stadyn infers the same shape "
                  "(cntk:inferred_parameter__in_optimized_rnnstack) and runs the stack "
                  "(torch's LSTM), as CNTK's GPU build does"})
def user36_huber_element_select_clip(C, r):
    r.touch("cntk.Function.grad")
    S, A = 4, 3
    state = C.input_variable(S, needs_gradient=True, name="state")
    action = C.input_variable(A, name="action")
    reward = C.input_variable(1, name="reward")
    nxt = C.input_variable(S, name="next")
    q = C.layers.Sequential([C.layers.Dense(5, activation=C.relu, name="q_h"),
                             C.layers.Dense(A, name="q_out")])(state)
    res = {"parameters": r.set_params(q.parameters)}
    target_q = q.clone(C.CloneMethod.freeze, {state: nxt})
    target = C.stop_gradient(C.clip(reward + 0.9 * C.reduce_max(target_q, axis=0), -1.0, 1.0))
    err = C.reduce_sum(q * action, axis=0) - target
    abs_err = C.abs(err)
    huber = C.reduce_sum(C.element_select(C.less(abs_err, 0.5), 0.5 * C.square(err),
                                          0.5 * abs_err - 0.125), name="loss")
    S0, S1 = r.randn(5, S) * 2, r.randn(5, S)
    acts, rew = r.onehot(5, A), r.randn(5, 1) * 2
    feed = {state: S0, action: acts, reward: rew, nxt: S1}
    res["huber"] = huber.eval(feed)
    res["clipped targets"] = target.eval({reward: rew, nxt: S1})
    w_out = q.find_by_name("q_out").W
    grads = huber.grad(feed, wrt=[w_out, state])
    res["grad W"], res["grad state"] = grads[w_out], grads[state]
    trainer = C.Trainer(q, (huber, None), [C.adam(q.parameters, C.learning_parameter_schedule(
        0.05), C.momentum_schedule(0.9))])
    steps = []
    for _ in range(3):
        trainer.train_minibatch(feed)
        steps.append(trainer.previous_minibatch_loss_average)
    res["steps"] = steps
    res["values"] = r.param_values(q.parameters)
    seq = C.sequence.input_variable(3, name="seq")
    res["optimized_rnnstack"] = outcome(lambda: C.optimized_rnnstack(
        seq, C.parameter((C.InferredDimension, 4), init=0.1, name="rnn_w"), 4, 1,
        recurrent_op="lstm").eval({seq: [r.randn(2, 3)]}))
    return res


# -- 9. a training session: checkpoints, cross-validation with a callback, a test --------------

@cntk_case(names=["cntk.training_session", "cntk.CheckpointConfig",
                  "cntk.CrossValidationConfig", "cntk.TestConfig",
                  "cntk.logging.ProgressPrinter", "cntk.io.CTFDeserializer",
                  "cntk.learning_parameter_schedule"],
           note="a training session over a CTF file with a ProgressPrinter, a CheckpointConfig "
                "(every 8 samples, preserve_all), a CrossValidationConfig whose callback "
                "records its arguments and lowers the learner's rate, a TestConfig: the "
                "printed lines, the callback's calls, the rates, the checkpoint files and "
                "the parameters after")
def user36_session_cv_callback(C, r):
    X, Y = r.randn(20, 3), r.onehot(20, 2)
    res = {}
    with r.tempdir() as folder:
        ctf = os.path.join(folder, "data.ctf")
        _write_ctf(ctf, [(i, {"x": X[i], "y": Y[i]}) for i in range(20)])

        def source(sweeps):
            return C.io.MinibatchSource(C.io.CTFDeserializer(ctf, C.io.StreamDefs(
                features=C.io.StreamDef(field="x", shape=3),
                labels=C.io.StreamDef(field="y", shape=2))), randomize=False,
                max_sweeps=sweeps)
        x = C.input_variable(3, name="x")
        y = C.input_variable(2, name="y")
        z = C.layers.Dense(2, name="out")(C.layers.Dense(4, activation=C.tanh, name="h")(x))
        res["parameters"] = r.set_params(z.parameters)
        learner = C.sgd(z.parameters, C.learning_parameter_schedule([0.2, 0.1], epoch_size=8))
        out = io.StringIO()
        calls = []

        def on_cv(index, average, samples, minibatches):
            calls.append([index, average, samples, minibatches])
            learner.reset_learning_rate(C.learning_parameter_schedule(0.05))
            return True
        with contextlib.redirect_stdout(out):
            printer = C.logging.ProgressPrinter(freq=2, tag="session")
            trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y),
                                    C.classification_error(z, y)), [learner], [printer])
            src = source(C.io.INFINITELY_REPEAT)
            streams = {x: src.streams.features, y: src.streams.labels}
            cv = source(1)
            test = source(1)
            C.training_session(
                trainer=trainer, mb_source=src, mb_size=4, model_inputs_to_streams=streams,
                max_samples=24, progress_frequency=8,
                checkpoint_config=C.CheckpointConfig(os.path.join(folder, "m.ckp"),
                                                     frequency=8, preserve_all=True,
                                                     restore=False),
                cv_config=C.CrossValidationConfig(
                    cv, frequency=12, minibatch_size=5, callback=on_cv,
                    model_inputs_to_streams={x: cv.streams.features, y: cv.streams.labels}),
                test_config=C.TestConfig(test, minibatch_size=6, model_inputs_to_streams={
                    x: test.streams.features, y: test.streams.labels})).train()
        res["printed"] = _printed(out.getvalue())
        res["cv calls"] = calls
        res["rate"] = learner.learning_rate()
        res["files"] = sorted(os.listdir(folder))
        res["values"] = r.param_values(z.parameters)
        res["samples"] = trainer.total_number_of_samples_seen
    return res


# -- 10. pretrained embeddings, cosine similarity, hardmax and top_k (CNTK_2xx word vectors) --

@cntk_case(names=["cntk.layers.Embedding", "cntk.ops.cosine_distance", "cntk.ops.hardmax",
                  "cntk.ops.top_k", "cntk.learners.nesterov"],
           rtol=1e-4, atol=1e-5,
           note="a word-vector program: an Embedding of given weights (not learned) and a "
                "learned one over sparse one-hot words, cosine_distance of the two, hardmax "
                "and top_k of a Dense scorer over the mean of a sequence's embeddings "
                "(sequence.reduce_sum / sequence count); nesterov steps on ragged sequences")
def user36_embeddings_cosine_top_k(C, r):
    V = 7
    table = r.randn(V, 3)
    x = C.sequence.input_variable(V, is_sparse=True, name="words")
    y = C.input_variable(4, name="topic")
    fixed = C.layers.Embedding(weights=table, name="fixed")(x)
    learned = C.layers.Embedding(3, name="learned")(x)
    sim = C.cosine_distance(fixed, learned)
    count = C.sequence.reduce_sum(C.reduce_sum(fixed) * 0 + 1)
    mean = C.sequence.reduce_sum(learned + fixed) / count
    z = C.layers.Dense(4, name="score")(mean)
    res = {"parameters": r.set_params(z.parameters), "constants": sorted(
        [c.name, list(c.shape)] for c in z.constants)}
    words = [[1, 3, 5], [0], [6, 6, 2, 4]]
    feed = {x: C.Value.one_hot(words, V)}
    res["similarity"] = sim.eval(feed)
    res["hardmax"] = C.hardmax(z).eval(feed)
    top = C.top_k(z, 2)
    got = top.eval(feed)
    res["top values"] = got[top.outputs[0]]
    res["top indices"] = got[top.outputs[1]]
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [C.nesterov(z.parameters, C.learning_parameter_schedule(0.1),
                                    C.momentum_schedule(0.9))])
    steps = []
    for i in range(3):
        batch = [words[(i + k) % 3] for k in range(2)]
        trainer.train_minibatch({x: C.Value.one_hot(batch, V), y: r.onehot(2, 4)})
        steps.append([trainer.previous_minibatch_loss_average,
                      trainer.previous_minibatch_evaluation_average])
    res["steps"] = steps
    res["values"] = r.param_values(z.parameters)
    return res


# -- 11. a small CIFAR-style net: pooling, dropout at inference, test_minibatch, checkpoints ----

@cntk_case(names=["cntk.layers.AveragePooling", "cntk.layers.GlobalAveragePooling",
                  "cntk.layers.Dropout", "cntk.Trainer.test_minibatch",
                  "cntk.Trainer.save_checkpoint", "cntk.Trainer.restore_from_checkpoint",
                  "cntk.ops.softmax"],
           rtol=1e-4, atol=1e-5,
           note="Examples/Image/Classification ConvNet, small: Convolution2D, AveragePooling, "
                "Convolution2D, GlobalAveragePooling, Dropout(0.5), Dense under "
                "default_options(activation=relu); Dropout is random in training, so the "
                "trainer trains a clone(share) that substitutes the pooled output for the "
                "dropout's (no dropout left, the parameters shared); a checkpoint saved after "
                "two steps and restored after a third: the values, test_minibatch's error, "
                "softmax of the model (dropout the identity at inference)")
def user36_convnet_checkpoint_test(C, r):
    r.touch("cntk.Trainer.test_minibatch", "cntk.Trainer.save_checkpoint",
            "cntk.Trainer.restore_from_checkpoint")
    x = C.input_variable((1, 6, 6), name="img")
    y = C.input_variable(3, name="cls")
    with C.layers.default_options(activation=C.relu, pad=True):
        h = C.layers.Convolution2D((3, 3), 2, name="c1")(x)
        h = C.layers.AveragePooling((2, 2), strides=(2, 2), name="p1")(h)
        h = C.layers.Convolution2D((2, 2), 4, name="c2")(h)
        pooled = C.layers.GlobalAveragePooling(name="gap")(h)
        dropped = C.layers.Dropout(0.5, name="drop")(pooled)
        z = C.layers.Dense(3, activation=None, name="out")(dropped)
    res = {"parameters": r.set_params(z.parameters), "shapes": [list(h.shape),
                                                                 list(pooled.shape)]}
    X, Y = r.rand(8, 1, 6, 6), r.onehot(8, 3)
    res["inference"] = z.eval({x: X[:3]})
    res["softmax"] = C.softmax(z).eval({x: X[:3]})
    plain = z.clone(C.CloneMethod.share, {dropped.output: pooled.output})
    trainer = C.Trainer(plain, (C.cross_entropy_with_softmax(plain, y),
                                C.classification_error(plain, y)),
                        [C.momentum_sgd(plain.parameters, C.learning_parameter_schedule(0.3),
                                        C.momentum_schedule(0.5))])
    with r.tempdir() as folder:
        path = os.path.join(folder, "net.ckp")
        losses = []
        for i in range(3):
            trainer.train_minibatch({x: X[2 * i:2 * i + 2], y: Y[2 * i:2 * i + 2]})
            losses.append(trainer.previous_minibatch_loss_average)
            if i == 1:
                trainer.save_checkpoint(path)
        res["after three"] = r.param_values(z.parameters)
        trainer.restore_from_checkpoint(path)
        res["restored"] = r.param_values(z.parameters)
        res["samples after restore"] = trainer.total_number_of_samples_seen
    res["losses"] = losses
    res["test error"] = trainer.test_minibatch({x: X[6:], y: Y[6:]})
    res["same parameters"] = sorted(p.name for p in plain.parameters) == sorted(
        p.name for p in z.parameters)
    return res
