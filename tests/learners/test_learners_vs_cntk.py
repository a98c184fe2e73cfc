"""``stadyn.learners`` against the real CNTK 2.7: each case of ``cntk_learner_cases.py`` was run
on CNTK by ``make_cntk_learner_refs.py`` (committed output ``cntk_refs/learners.npz``: the
initial values, the summed gradients of each step, and CNTK's parameters and learning rate
after each step).  Here the same case source builds a Stadyn learner, is fed the same
gradients, and must land on CNTK's parameters after every step."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.learners as L
import stadyn.schedules as S

HERE = Path(__file__).parent
_spec = importlib.util.spec_from_file_location("cntk_learner_cases", HERE / "cntk_learner_cases.py")
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)
REFS = np.load(HERE / "cntk_refs" / "learners.npz")
NAMES = [name for name, _, _ in cases.CASES]


def test_every_case_has_a_reference():
    stored = {key.split("/")[0] for key in REFS.files}
    assert stored == set(NAMES), "rerun tests/learners/make_cntk_learner_refs.py on CNTK 2.7"


@pytest.mark.parametrize("name", NAMES)
def test_learner_matches_cntk_27(name):
    _, sizes, make = cases.CASES[NAMES.index(name)]
    np.testing.assert_array_equal(REFS[f"{name}/sizes"], sizes)
    keys = [k for k, _ in cases.SHAPES]
    variables = {k: sd.Variable.from_tensor(torch.tensor(REFS[f"{name}/init/{k}"]),
                                            need_grad=True) for k in keys}
    learner = make(L, S, [variables[k] for k in sorted(keys)])
    for step, m in enumerate(sizes):
        for k in keys:
            variables[k].grad = torch.tensor(REFS[f"{name}/grad{step}/{k}"])
        assert learner.update(int(m)) is True
        for k in keys:
            np.testing.assert_allclose(variables[k].data.detach().numpy(),
                                       REFS[f"{name}/w{step}/{k}"], rtol=1e-9, atol=1e-12,
                                       err_msg=f"{name}: {k} after step {step}")
        assert learner.learning_rate() == pytest.approx(float(REFS[f"{name}/lr{step}"]),
                                                        rel=1e-12)
