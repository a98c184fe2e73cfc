"""A CNTK user function in Stadyn's model file: kept by its module, class, name and
``serialize()`` state, rebuilt on load with the class's ``deserialize`` (CNTK 2.7's way)."""

import pathlib
import sys

import numpy as np
import pytest

import stadyn.compat.cntk as C
from stadyn._errors import ModelFileError

MODULE = '''
import numpy as np
import stadyn.compat.cntk as C


class Scaled(C.ops.functions.UserFunction):
    def __init__(self, a, factor, name="Scaled"):
        super().__init__([a], name=name)
        self.factor = factor

    def forward(self, argument, device=None, outputs_to_retain=None):
        return None, argument * self.factor

    def backward(self, state, root_gradients):
        return root_gradients * self.factor

    def infer_outputs(self):
        x = self.inputs[0]
        return [C.output_variable(x.shape, x.dtype, x.dynamic_axes)]

    def serialize(self):
        return {"factor": self.factor}

    @staticmethod
    def deserialize(inputs, name, state):
        return Scaled(inputs[0], state["factor"], name=name)
'''


@pytest.fixture
def scaled_module(tmp_path, monkeypatch):
    name = "stadyn_test_scaled_uf"
    (tmp_path / f"{name}.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield __import__(name)
    sys.modules.pop(name, None)


def test_a_saved_user_function_loads_with_its_state(scaled_module, tmp_path):
    x = C.input_variable(3)
    f = C.plus(C.user_function(scaled_module.Scaled(x, 2.5)), 1.0)
    path = str(tmp_path / "scaled.model")
    with pytest.warns(UserWarning, match="Stadyn model file"):
        f.save(path)
    loaded = C.load_model(path)
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(loaded.eval({loaded.arguments[0]: a}), a * 2.5 + 1.0)


def test_a_user_function_whose_module_is_gone_names_the_file(scaled_module, tmp_path):
    x = C.input_variable(3)
    f = C.user_function(scaled_module.Scaled(x, 2.0))
    path = str(tmp_path / "scaled.model")
    with pytest.warns(UserWarning):
        f.save(path)
    sys.modules.pop("stadyn_test_scaled_uf")
    sys.path.remove(str(tmp_path))
    with pytest.raises(ModelFileError, match=r"scaled\.model.*stadyn_test_scaled_uf\.Scaled "
                                             r"cannot be rebuilt.*ModuleNotFoundError"):
        C.load_model(path)


FIXTURE = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "cntk_user_function"


def test_a_cntk_27_file_holding_a_user_function_loads(monkeypatch):
    """``scaled.model`` (CNTK 2.7 wrote it, ``make_model.py``) keeps the user function as
    ``UserDefinedFunction`` with its module, class and state: rebuilt by the class's
    ``deserialize``, the model gives CNTK 2.7's output."""
    monkeypatch.syspath_prepend(str(FIXTURE))
    try:
        loaded = C.load_model(str(FIXTURE / "scaled.model"))
        expected = np.load(FIXTURE / "expected.npz")
        out = loaded.eval({loaded.arguments[0]: expected["input"]})
    finally:
        sys.modules.pop("cntk27_scaled_uf", None)
    np.testing.assert_allclose(out, expected["output"], rtol=1e-6)
