"""Where BN-Inception's loss parts from CNTK 2.7's (``bn_inception_cifar10_distributed``:
2.515611 against Stadyn's 2.515860): the network of CNTK's
``Examples/Image/Classification/GoogLeNet/BN-Inception/Python/BN_Inception.py``
(``bn_inception_cifar_model``, 44 convolution + batch normalisation + ReLU layers) built by the
framework this runs on, 8 samples through it in training mode and three steps of the example's
learner (momentum SGD, 0.25 a minibatch, momentum 0.9, L2 0.0001), written as ``OUT.npz``.

    PY=/work/peers/cntk27/venv36/bin/python; export LD_LIBRARY_PATH=.../shimlib
    $PY -W ignore tests/examples/bn_inception_precision.py BN_Inception.py /tmp/c32 cntk
    python tests/examples/bn_inception_precision.py BN_Inception.py /tmp/s32 stadyn
    (the same with ``float64`` after the framework: every weight drawn here, the same in both)
    python tests/examples/bn_inception_precision.py --compare /tmp/c64.npz /tmp/s64.npz

Found (docs/cntk-examples.md): in float64 with the same weights every layer's output, the three
losses and every weight after the steps agree to 1e-13 (relative); in float32 (each framework's
own he_normal weights, equal to the bit) the first layer's convolution is the same to the bit
and its batch normalisation is not: CNTK 2.7 trains batch normalisation on CPUs with MKL's
``dnnBatchNormalizationCreateForward_v2`` (Source/Math/BatchNormalizationEngine.cpp:105-107,
:291; CPUMatrix's own refuses training, CPUMatrixImpl.h:5006-5007), whose float32 batch mean
and variance are 8x further from the float64 values than torch's.  Parses under Python 3.6.
"""

from __future__ import print_function

import os
import sys

import numpy as np


def run(model_file, out, framework, dtype):
    if framework == "cntk":
        import cntk as C
    else:
        import stadyn.compat.cntk as C
        sys.modules["cntk"] = C
        for name in ("initializer", "layers", "ops"):
            sys.modules["cntk." + name] = getattr(C, name)
    sys.path.insert(0, os.path.dirname(os.path.abspath(model_file)))
    import BN_Inception as B
    layers, made = [], []

    def recording(factory, into):
        def make(*args, **kwargs):
            result = factory(*args, **kwargs)
            into.append(result)
            return result
        return make
    B.conv_bn_relu_layer = recording(B.conv_bn_relu_layer, layers)
    if dtype == np.float64:          # every weight drawn here (float64 draws differ)
        B.Convolution, B.Dense = recording(B.Convolution, made), recording(B.Dense, made)
    with C.default_options(dtype=dtype):
        x = C.input_variable((3, 32, 32), dtype=dtype)
        y = C.input_variable(10, dtype=dtype)
        z = B.bn_inception_cifar_model(x, 10, 4096)
        ce = C.cross_entropy_with_softmax(z, y)
    for i, layer in enumerate(made):
        w = layer.W
        w.value = (np.random.RandomState(100 + i).normal(size=w.shape) *
                   (2.0 / np.prod(w.shape[1:])) ** 0.5).astype(dtype)
    rng = np.random.RandomState(0)
    xv = (rng.normal(size=(8, 3, 32, 32)) * 50).astype(dtype)
    yv = np.eye(10, dtype=dtype)[rng.randint(0, 10, 8)]
    f = C.combine([r.output for r in layers] + [z.output, ce.output])
    _, values = f.forward({x: xv, y: yv}, f.outputs, keep_for_backward={f.outputs[-1]})
    result = {"layer%03d" % i: np.asarray(values[o]) for i, o in enumerate(f.outputs)}
    learner = C.momentum_sgd(z.parameters, C.learning_parameter_schedule(0.25),
                             C.momentum_schedule(0.9), l2_regularization_weight=0.0001)
    trainer = C.Trainer(z, (ce, C.classification_error(z, y)), learner)
    losses = []
    for _ in range(3):
        trainer.train_minibatch({x: xv, y: yv})
        losses.append(trainer.previous_minibatch_loss_average)
    result["losses"] = np.array(losses)
    for i, layer in enumerate(made):
        result["trained%03d" % i] = np.asarray(layer.W.value)
    np.savez(out, **result)
    print("losses", losses)


def compare(a, b):
    a, b = np.load(a), np.load(b)
    for key in sorted(a.files):
        u, v = a[key].astype(np.float64), b[key].astype(np.float64)
        print("%-10s %-20s relative %.3g" % (key, u.shape, np.abs(u - v).max() /
                                              (np.abs(u).max() + 1e-300)))


if __name__ == "__main__":
    if sys.argv[1] == "--compare":
        compare(sys.argv[2], sys.argv[3])
    else:
        run(sys.argv[1], sys.argv[2], sys.argv[3],
            np.float64 if sys.argv[4:] == ["float64"] else np.float32)
