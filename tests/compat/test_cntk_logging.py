"""``cntk.logging.log_number_of_parameters`` on model outputs prints what CNTK 2.7 prints: the
same program (``cntk_log_parameters.py``) run on ``stadyn.compat.cntk`` gives the text CNTK
2.7 wrote (``cntk_log_parameters.txt``)."""

from __future__ import annotations

import contextlib
import importlib.util
import io
from pathlib import Path

import pytest

import stadyn as sd
import stadyn.compat.cntk as C
import stadyn.functions as F
import stadyn.parametric_functions as PF
from stadyn.compat.cntk.logging import log_number_of_parameters

HERE = Path(__file__).resolve().parent


def _program():
    spec = importlib.util.spec_from_file_location("_cntk_log_parameters",
                                                  HERE / "cntk_log_parameters.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_model_outputs_print_what_cntk_prints():
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        _program().cases(C, log_number_of_parameters)
    assert text.getvalue() == (HERE / "cntk_log_parameters.txt").read_text()


@pytest.mark.usefixtures("fresh_parameters")
def test_the_2017_beta_name_and_native_outputs():
    from stadyn.compat.cntk.utils import log_number_of_parameters as beta
    x = sd.Variable((2, 3))
    y = PF.affine(F.relu(PF.affine(x, 5, name="a")), 4, name="b")
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        beta(y)
        beta(C.combine([y, F.relu(y)]))
    assert text.getvalue() == "Training 44 parameters in 4 parameter tensors.\n" * 2


def test_other_things_still_count_as_before(capsys):
    log_number_of_parameters([sd.Variable((3, 2)), sd.Variable((2,))])
    assert capsys.readouterr().out == "Training 8 parameters in 2 parameter tensors.\n"
    with pytest.raises(TypeError, match="parameters"):
        log_number_of_parameters(42)
