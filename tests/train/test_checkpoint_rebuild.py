"""Restoring a checkpoint into a network built again in the same process (a script run twice
in a notebook: the new parameters have new generated names).  CNTK 2.7 restores such a network
by each parameter's place in the graph; Stadyn's checkpoint does the same when the shapes and
the names but for their generated counters agree, and refuses anything else with one
ModelFileError.  References: CNTK 2.7's losses of the same program
(``rebuild_restore/rebuild_restore.py``)."""
import json
import os
import sys

import numpy as np
import pytest

import stadyn.compat.cntk as C
from stadyn import ModelFileError

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rebuild_restore")
with open(os.path.join(HERE, "losses.json")) as _fh:
    CNTK_LOSSES = json.load(_fh)


@pytest.fixture(scope="module")
def program():
    sys.path.insert(0, HERE)
    try:
        import rebuild_restore
    finally:
        sys.path.remove(HERE)
    return rebuild_restore


@pytest.mark.filterwarnings("ignore:.*written as Stadyn's checkpoint")
@pytest.mark.parametrize("case", sorted(CNTK_LOSSES))
def test_rebuilt_network_restores_and_trains_on_as_cntk(case, program, tmp_path):
    net, kind = case.split("_", 1)
    first, then = program.run(C, str(tmp_path), net, kind)
    np.testing.assert_allclose(first + then, CNTK_LOSSES[case], rtol=1e-5, atol=1e-6)


def _classifier(hidden, layers=1, container=False):
    """A classifier; ``container``: its loss through ``pow``, which the CNTK writer refuses, so
    its checkpoint is Stadyn's own container (else CNTK's pair)."""
    x, y = C.input_variable(3, name="x"), C.input_variable(2, name="y")
    h = x
    for k in range(layers):
        h = C.layers.Dense(hidden, init=C.glorot_uniform(seed=1 + k))(h)
    z = C.layers.Dense(2, init=C.glorot_uniform(seed=2))(h)
    loss = C.reduce_sum(C.pow(z - y, 2)) if container else C.cross_entropy_with_softmax(z, y)
    return z, C.Trainer(z, (loss, C.classification_error(z, y)),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])


@pytest.mark.filterwarnings("ignore:.*written as Stadyn's checkpoint")
@pytest.mark.parametrize("container,other,message", [
    (True, dict(hidden=5), r"matching by position fails at parameter 0: the checkpoint's "
                           r"'dense_\d+/W' \(4, 2\), the model's 'dense_\d+/W' \(5, 2\)"),
    (True, dict(hidden=4, layers=2), "holds 5 parameters where the model has 7"),
    (False, dict(hidden=5), r"parameter 'W' has shape \(4, 2\), the trainer's 'W' \(5, 2\)"),
    (False, dict(hidden=4, layers=2), "the file holds 4 parameters, the trainer's network 6")],
    ids=["container, other shape", "container, other count", "CNTK pair, other shape",
         "CNTK pair, other count"])
def test_rebuilt_network_that_differs_is_refused_and_left_alone(container, other, message,
                                                                 tmp_path):
    path = str(tmp_path / "m.ckpt")
    _, trainer = _classifier(4, container=container)
    trainer.save_checkpoint(path)
    assert os.path.exists(path + ".ckp") != container
    _classifier(4, container=container)                      # the names move on
    z, trainer = _classifier(**other, container=container)
    before = [p.value.copy() for p in z.parameters]
    with pytest.raises(ModelFileError, match=message):
        trainer.restore_from_checkpoint(path)
    for p, old in zip(z.parameters, before):
        np.testing.assert_array_equal(p.value, old)
