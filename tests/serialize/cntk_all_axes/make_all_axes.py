"""Writes the references of ``test_cntk_all_axes.py`` with CNTK 2.7 (run from the repository
root: ``LD_LIBRARY_PATH=/work/peers/cntk27/shimlib /work/peers/cntk27/venv36/bin/python -W ignore
tests/serialize/cntk_all_axes/make_all_axes.py``).

``outputs.json``: for each model file of ``tests/fixtures/cntk_checkpoints`` (what CNTK's
``Trainer.save_checkpoint`` writes: the Combine of the model, loss, metric and the Trainer's
``aggregateLoss``/``aggregateEvalMetric``, sums over ``Axis.all_axes()``), the outputs CNTK's
``load_model`` gives on the first 5 samples.  ``sequence_reductions.model``: reductions over
``Axis.all_axes()`` of a sequence input (sum, mean, max, min, log-sum-exp), and their outputs
on two sequences of different lengths."""
import json
import os
import sys

import cntk as C
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "fixtures", "cntk_checkpoints")
sys.path.insert(0, FIXTURES)
import network as N  # noqa: E402

SEQUENCES = [np.arange(6, dtype=np.float32).reshape(3, 2) - 2.5,
             np.array([[0.5, -1.0]], dtype=np.float32)]


def checkpoint_outputs():
    result = {}
    for name in sorted(f[:-6] for f in os.listdir(FIXTURES) if f.endswith(".model")):
        f = C.load_model(os.path.join(FIXTURES, name + ".model"))
        args = {a.name: a for a in f.arguments}
        y = args["y"]
        targets = {(2,): N.LABELS, (3,): N.LABELS3}.get(tuple(y.shape), N.TARGETS)
        out = f.eval({args["x"]: N.X[:5], y: targets[:5]})
        result[name] = [[o.name, np.asarray(out[o], dtype=np.float64).tolist()]
                        for o in f.outputs]
    return result


def sequence_reductions():
    x = C.sequence.input_variable(2, name="s")
    every = C.Axis.all_axes()
    f = C.combine([C.reduce_sum(x, axis=every, name="sum"),
                   C.reduce_mean(x, axis=every, name="mean"),
                   C.reduce_max(x, axis=every, name="max"),
                   C.reduce_min(x, axis=every, name="min"),
                   C.reduce_log_sum_exp(x, axis=every, name="logsum")])
    f.save(os.path.join(HERE, "sequence_reductions.model"))
    out = f.eval({x: SEQUENCES})
    return {o.name: np.asarray(out[o], dtype=np.float64).tolist() for o in f.outputs}


if __name__ == "__main__":
    refs = {"checkpoints": checkpoint_outputs(), "sequence_reductions": sequence_reductions()}
    with open(os.path.join(HERE, "outputs.json"), "w") as fh:
        json.dump(refs, fh, indent=1, sort_keys=True)
    print(json.dumps(refs["sequence_reductions"]))
