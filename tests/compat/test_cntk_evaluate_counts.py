"""``Trainer.evaluate`` counts a test minibatch as ``test_minibatch`` does (and as CNTK 2.7's
Evaluator: a metric that is one number over a root whose first input has no dynamic axes counts
one sample a minibatch, Evaluator.cpp:38-46, 67-76), against CNTK 2.7's numbers in
``tests/fixtures/cntk_evaluate_counts/refs.json`` (written by its ``make_refs.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import stadyn.compat.cntk as C
from stadyn.compat.cntk.io import MinibatchSourceFromData

REFS = json.loads((Path(__file__).parents[1] / "fixtures" / "cntk_evaluate_counts"
                   / "refs.json").read_text())
METRICS = {
    "unbatched": lambda x, c: C.plus(C.reduce_sum(c), C.reduce_sum(x, axis=C.Axis.all_axes())),
    "per_sample": lambda x, c: C.reduce_sum(x * c),
}


def _trainer(label):
    x = C.input_variable(3, name="x")
    c = C.constant(np.array(REFS["c"], np.float32), name="c")
    p = C.parameter(3, init=1.0, name="p")
    loss = C.reduce_sum(x * p)
    return x, C.Trainer(loss, (loss, METRICS[label](x, c)), [C.sgd([p], 0.0)])


def _source():
    xs = np.array(REFS["x"], np.float32)
    return MinibatchSourceFromData(dict(x=xs), max_samples=len(xs))


@pytest.mark.parametrize("label", sorted(METRICS))
def test_evaluate_counts_as_cntk_test_minibatch(label):
    ref = REFS[label]
    x, trainer = _trainer(label)
    source = _source()
    assert trainer.evaluate(source, {x: source.streams.x}, minibatch_size=4) == \
        pytest.approx(ref["test"]["metric"], rel=1e-6)
    # the same sweep, minibatch by minibatch, as CNTK 2.7's test_minibatch
    x, trainer = _trainer(label)
    source = _source()
    values = []
    while True:
        mb = source.next_minibatch(4, input_map={x: source.streams.x})
        if not mb:
            break
        values.append(trainer.test_minibatch(mb))
    assert values == pytest.approx(ref["minibatches"], rel=1e-6)

