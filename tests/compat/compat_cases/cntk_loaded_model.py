"""A model file CNTK 2.7 wrote (``tests/fixtures/legacy/make_cntk.py``'s ``cntk_mlp_bn.model``:
Dense 8, batch normalisation, relu, Dense 3), loaded by ``cntk.load_model``: its parameters in
CNTK's order (its blocks walked from the output), then trained further by a Trainer."""

import os

import numpy as np

from compat_harness import cntk_case

_MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures",
                      "legacy", "cntk_mlp_bn.model")


@cntk_case(names=["cntk.load_model", "cntk.Function.parameters", "cntk.Trainer.train_minibatch"],
           note="the parameters' shapes in order (W, b of the last Dense, the batch "
                "normalisation's scale and bias, W, b of the first Dense); then 20 SGD steps "
                "of cross_entropy_with_softmax on 16 samples: the losses")
def load_model_parameters_and_training(C, r):
    r.touch("cntk.Function.parameters", "cntk.Function.arguments",
            "cntk.Trainer.train_minibatch", "cntk.Trainer.previous_minibatch_loss_average")
    z = C.load_model(_MODEL)
    (x,) = z.arguments
    res = {"shapes": [list(p.shape) for p in z.parameters]}
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
    res["losses"] = np.array(losses, np.float64)
    return res
