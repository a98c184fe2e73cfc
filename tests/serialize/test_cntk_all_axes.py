"""CNTK reductions over ``Axis.all_axes()`` (every axis, the batch and sequence axes too) read
from CNTK 2.7 model files: the model file of CNTK's ``Trainer.save_checkpoint`` (its
``aggregateLoss``/``aggregateEvalMetric``) and reductions of a sequence input.  The
references are CNTK 2.7's outputs (``cntk_all_axes/make_all_axes.py``)."""
import json
import os
import sys

import numpy as np
import pytest

import stadyn.compat.cntk as C

HERE = os.path.dirname(os.path.abspath(__file__))
REFS = os.path.join(HERE, "cntk_all_axes")
FIXTURES = os.path.join(HERE, "..", "fixtures", "cntk_checkpoints")
with open(os.path.join(REFS, "outputs.json")) as _fh:
    OUTPUTS = json.load(_fh)


def _network():
    sys.path.insert(0, FIXTURES)
    try:
        import network
    finally:
        sys.path.remove(FIXTURES)
    return network


@pytest.mark.parametrize("name", sorted(OUTPUTS["checkpoints"]))
def test_trainer_checkpoint_model_loads_as_cntk_does(name):
    N = _network()
    f = C.load_model(os.path.join(FIXTURES, name + ".model"))
    args = {a.name: a for a in f.arguments}
    targets = {(2,): N.LABELS, (3,): N.LABELS3}.get(tuple(args["y"].shape), N.TARGETS)
    out = f.eval({args["x"]: N.X[:5], args["y"]: targets[:5]})
    expected = OUTPUTS["checkpoints"][name]
    assert [o.name for o in f.outputs] == [n for n, _ in expected]
    for o, (oname, value) in zip(f.outputs, expected):
        np.testing.assert_allclose(np.asarray(out[o]), np.asarray(value), rtol=1e-5, atol=1e-6,
                                   err_msg=f"{name}: {oname!r}")
    # the Trainer's totals are one value with no batch axis, as in CNTK
    totals = {o.name: o for o in f.outputs if o.name.startswith("aggregate")}
    assert set(totals) == {"aggregateLoss", "aggregateEvalMetric"}
    assert all(tuple(o.shape) == () for o in totals.values())


def test_reductions_over_all_axes_of_sequences():
    f = C.load_model(os.path.join(REFS, "sequence_reductions.model"))
    (s,) = f.arguments
    seqs = [np.arange(6, dtype=np.float32).reshape(3, 2) - 2.5,
            np.array([[0.5, -1.0]], dtype=np.float32)]
    out = f.eval({s: seqs})
    expected = OUTPUTS["sequence_reductions"]
    assert sorted(o.name for o in f.outputs) == sorted(expected)
    for o in f.outputs:
        np.testing.assert_allclose(np.asarray(out[o]).reshape(()), expected[o.name],
                                   rtol=1e-5, err_msg=o.name)
