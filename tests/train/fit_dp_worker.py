"""One worker of ``test_fit_data_parallel.py``: ``Trainer.fit`` data-parallel on a small affine
model (``python -m stadyn.distributed.run --nproc 2 fit_dp_worker.py OUT``); each rank writes its
parameters and its minibatch records to OUT.  ``train(None)`` is the one-process reference."""

from __future__ import annotations

import json
import os
import sys

import numpy as np

import stadyn as sd
import stadyn.functions as F
import stadyn.layers as L
import stadyn.solvers as S
from stadyn.io import MinibatchSourceFromData
from stadyn.train import Trainer, TrainingCallback


class Steps(TrainingCallback):
    def __init__(self):
        self.steps = []

    def on_minibatch_end(self, trainer, record):
        self.steps.append({k: record[k] for k in ("epoch", "samples", "loss_sum", "outputs")})


def data() -> dict[str, np.ndarray]:
    rng = np.random.RandomState(3)
    labels = rng.randint(0, 3, 28)
    return {"x": (np.eye(3)[labels] @ rng.randn(3, 5) + rng.randn(28, 5)).astype(np.float32),
            "y": np.eye(3, dtype=np.float32)[labels]}


def train(dp) -> tuple[dict[str, np.ndarray], list[dict]]:
    """Two epochs (minibatches of 8, then 6: global sizes) with the input sum as extra output."""
    with sd.parameter_registry(sd.ParameterRegistry()):
        sd.seed(0)
        x, y = sd.Variable((1, 5)), sd.Variable((1, 3))
        z = L.Dense(3)(x)
        solver = S.Momentum(lr=0.05, momentum=0.9)
        solver.set_parameters(sd.get_parameters())
        trainer = Trainer(z, (F.cross_entropy_with_softmax(z, y), F.classification_error(z, y)),
                          [solver], data_parallel=dp)
        source = MinibatchSourceFromData(data(), randomize=False)
        steps = Steps()
        trainer.fit(source, {x: source.streams.x, y: source.streams.y}, epochs=2,
                    minibatch_size=[8, 6], outputs=[F.sum(x)], callbacks=[steps],
                    progress_bar=False)
        return {k: v.d.copy() for k, v in sd.get_parameters().items()}, steps.steps


if __name__ == "__main__":
    import stadyn.distributed as dist
    dist.init()
    params, steps = train(dist.DataParallel())
    out = sys.argv[1]
    np.savez(os.path.join(out, f"params-rank{dist.rank()}.npz"), **params)
    with open(os.path.join(out, f"steps-rank{dist.rank()}.json"), "w") as f:
        json.dump(steps, f)
