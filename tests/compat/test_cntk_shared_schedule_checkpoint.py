"""A rate schedule given to two learners, the first with ``minibatch_size=8``: CNTK 2.7's
learner function writes 8 into the schedule (``cntk/learners/__init__.py:568-570``), so the
second learner's checkpoint holds ``ref_mb_size`` 8 too.  CNTK 2.7's
``sgd(z.parameters, lr).create_checkpoint()['learnig_rate_schedule']`` after
``sgd(..., lr, minibatch_size=8)``, for the regressor of ``tests/fixtures/cntk_checkpoints``
(the values below, as CNTK 2.7 printed them for the same network and schedules):

    constant 0.1:                  {'schedule': {'0': 0.1}, 'ref_mb_size': 8, 'epoch_size': 0}
    [0.1, 0.05], epoch_size=6:     {'schedule': {'6': 0.1, '12': 0.05}, 'ref_mb_size': 8,
                                    'epoch_size': 6}

Stadyn wrote ``ref_mb_size`` 0 for the second learner (``_cntk_schedule.cntk_schedule`` read
only the schedule's own minibatch size)."""

import importlib.util
import os

import pytest

import stadyn.compat.cntk as C
from stadyn.serialize import _cntk_checkpoint as K

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_checkpoints")
_spec = importlib.util.spec_from_file_location("ckpt_network_shared",
                                               os.path.join(FIXTURES, "network.py"))
network = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(network)


@pytest.mark.parametrize("make,schedule,epoch", [
    (lambda: C.learning_parameter_schedule(0.1), {"0": 0.1}, 0),
    (lambda: C.learning_parameter_schedule([0.1, 0.05], epoch_size=6),
     {"6": 0.1, "12": 0.05}, 6)])
def test_inherited_minibatch_size_is_the_checkpoints_ref_mb_size(tmp_path, make, schedule,
                                                                 epoch):
    lr = make()
    z_first = network.build(C, "regressor", "sgd")[2]
    C.sgd(z_first.parameters, lr, minibatch_size=8)
    x, y, z, _ = network.build(C, "regressor", "sgd")
    trainer = C.Trainer(z, ((z - y) * (z - y), C.abs(z - y)), [C.sgd(z.parameters, lr)])
    trainer.save_checkpoint(str(tmp_path / "a.model"))
    saved = K.read_checkpoint_file(str(tmp_path / "a.model.ckp"))["Learners"][0][
        "learnig_rate_schedule"]
    assert saved == {"epoch_size": epoch, "ref_mb_size": 8, "schedule": schedule,
                     "type": "TrainingParameterSchedule", "version": 2}
