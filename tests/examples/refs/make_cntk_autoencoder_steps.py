"""Writes cntk_autoencoder_steps.json: CNTK 2.7's losses and metrics over 20 minibatches of the
CNTK 105 recipe (examples/cntk/105_autoencoder: Dense 784-32-784, relu then sigmoid, the
hand-written binary cross entropy, classification_error of the reconstruction against the
picture, fsadagrad), started from seeded weights, on seeded 0-255 "pictures", so that a run
from the same weights can be compared step by step.

    LD_LIBRARY_PATH=/work/peers/cntk27/shimlib /work/peers/cntk27/venv36/bin/python -W ignore \\
        make_cntk_autoencoder_steps.py
"""
import json
import os

import numpy as np


def pictures():
    """320 pictures of 784 pixels, mostly dark with bright strokes, as digits are."""
    rng = np.random.RandomState(1)
    bright = rng.uniform(size=(320, 784)) < 0.2
    return np.where(bright, rng.randint(128, 256, (320, 784)), 0).astype(np.float32)


def run(C):
    """(losses, metrics, sums of |parameter| after training) of 20 minibatches of 64."""
    data = pictures()
    input = C.input_variable(784)
    label = C.input_variable(784)
    with C.layers.default_options(init=C.glorot_uniform()):
        encode = C.layers.Dense(32, activation=C.relu)(input / 255.0)
        model = C.layers.Dense(784, activation=C.sigmoid)(encode)
    rng = np.random.RandomState(0)
    for p in model.parameters:
        p.value = rng.uniform(-0.1, 0.1, p.shape).astype(np.float32)
    target = label / 255.0
    loss = -(target * C.log(model) + (1 - target) * C.log(1 - model))
    error = C.classification_error(model, target)
    learner = C.fsadagrad(model.parameters,
                          lr=C.learning_parameter_schedule_per_sample([0.00003],
                                                                      epoch_size=30000),
                          momentum=C.momentum_schedule_per_sample(0.9990913221888589))
    trainer = C.Trainer(model, (loss, error), learner)
    losses, metrics = [], []
    for i in range(20):
        batch = data[(i * 64) % 320:(i * 64) % 320 + 64]
        trainer.train_minibatch({input: batch, label: batch})
        losses.append(float(trainer.previous_minibatch_loss_average))
        metrics.append(float(trainer.previous_minibatch_evaluation_average))
    return losses, metrics, [float(np.abs(p.value).sum()) for p in model.parameters]


def main():
    import cntk as C
    losses, metrics, sums = run(C)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cntk_autoencoder_steps.json")
    with open(path, "w") as f:
        json.dump({"cntk": C.__version__, "losses": losses, "metrics": metrics,
                   "parameter_abs_sums": sums}, f, indent=1)
    print("wrote", path)


if __name__ == "__main__":
    main()
