"""nnabla-examples' capsule network (``image-classification/capsulenet``: its ``model.py``,
unchanged, with three routing iterations, ``F.constant`` logits and ``Variable.reshape`` on
them) trains on Stadyn as on NNabla 1.39: the losses, predictions and parameters after three
Adam steps at batch 2 (driver ``nnabla_capsulenet.py``; reference
``refs/nnabla139_capsulenet.json``).  The program is read from a copy of nnabla-examples
(``program_copies.nnabla_examples_run``: without one the test skips).  Before Stadyn's
``F.constant`` gave an NNabla Variable, ``model.py`` failed at ``v.reshape(...)``
(``AttributeError``).
"""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from program_copies import nnabla_examples_run  # noqa: E402
from nnabla_capsulenet import PROGRAMS  # noqa: E402


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return nnabla_examples_run(tmp_path_factory, "nnabla_capsulenet.py", PROGRAMS,
                               "nnabla139_capsulenet.json")


def test_capsule_network_trains_as_on_nnabla(runs):
    mine, real = (r["capsulenet"] for r in runs)
    assert mine["parameters"] == real["parameters"]
    # Same data, same initial values, no random op: float32 rounding apart (routing's
    # softmax over 1152 capsules and Adam's first steps magnify it a little).
    for key in ("loss", "margin loss", "reconstruction loss", "prediction"):
        np.testing.assert_allclose(mine[key], real[key], rtol=1e-4, atol=1e-6, err_msg=key)
    assert sorted(mine["digest"]) == sorted(real["digest"])
    for name, values in real["digest"].items():
        np.testing.assert_allclose(mine["digest"][name], values, rtol=1e-4, atol=1e-6,
                                   err_msg=name)
