"""``load_model`` / ``Function.load`` of the CNTK compat layer on files written by CNTK 2.7
(``tests/fixtures/legacy``): they evaluate to what CNTK computed (``cntk_outputs.npz``, recorded
by ``make_cntk.py``) and train further with a ``Trainer``."""

from __future__ import annotations

import os

import numpy as np

import stadyn.compat.cntk as C

FIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "legacy")
REF = np.load(os.path.join(FIX, "cntk_outputs.npz"))


def test_load_model_evaluates_the_cifar_convnet_as_cntk_did():
    z = C.load_model(os.path.join(FIX, "cntk_convnet_cifar10.dnn"))
    (features,) = z.arguments
    assert features.name == "features" and tuple(features.shape) == (3, 32, 32)
    got = z.eval({features: REF["cntk_convnet_cifar10.dnn/in/Input3"]})
    np.testing.assert_allclose(got, REF["cntk_convnet_cifar10.dnn/out/Block1232_Output_0"],
                               rtol=1e-4, atol=1e-4)


def test_function_load_reads_the_large_layout():
    z = C.Function.load(os.path.join(FIX, "cntk_mlp_bn_large.model"))
    (x,) = z.arguments
    np.testing.assert_allclose(z.eval({x: REF["cntk_mlp_bn.model/in/Input1468"]}),
                               REF["cntk_mlp_bn.model/out/Block1635_Output_0"],
                               rtol=1e-4, atol=1e-4)


def test_a_loaded_model_trains_further_with_a_trainer():
    z = C.load_model(os.path.join(FIX, "cntk_mlp_bn.model"))
    (x,) = z.arguments
    assert [tuple(p.shape) for p in z.parameters] == [(5, 8), (8,), (8,), (8,), (8, 3), (3,)]
    y = C.input_variable(3)
    loss = C.cross_entropy_with_softmax(z, y)
    trainer = C.Trainer(z, (loss, None),
                        [C.learners.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    rng = np.random.RandomState(0)
    features = rng.normal(size=(16, 5)).astype(np.float32)
    labels = np.eye(3, dtype=np.float32)[rng.randint(0, 3, 16)]
    losses = []
    for _ in range(20):
        trainer.train_minibatch({x: features, y: labels})
        losses.append(trainer.previous_minibatch_loss_average)
    assert losses[-1] < 0.8 * losses[0]
