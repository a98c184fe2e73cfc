"""A CNTK user function in a model file (CNTK v2's, or Stadyn's for one of several outputs):
kept by its module, class, name and ``serialize()`` state, rebuilt on load with the class's
``deserialize`` (CNTK 2.7's way)."""

import os
import pathlib
import subprocess
import sys
import warnings

import numpy as np
import pytest
import peers

import stadyn.compat.cntk as C
from stadyn._errors import ModelFileError

FIXTURE = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "cntk_user_function"

# A module of user functions saved by name: the Scaled of the CNTK 2.7 fixture (cntk27_scaled_uf.py,
# whose scaled.model CNTK 2.7 wrote), and Both, of two outputs.
MODULE = (FIXTURE / "cntk27_scaled_uf.py").read_text() + '''

class Both(C.ops.functions.UserFunction):
    def __init__(self, a, shift, name="Both"):
        super().__init__([a], name=name)
        self.shift = shift

    def forward(self, arguments, outputs, device=None, outputs_to_retain=None):
        outputs[self.outputs[0]] = arguments * 2.0
        outputs[self.outputs[1]] = arguments + self.shift

    def backward(self, state, root_gradients, variables):
        pass

    def infer_outputs(self):
        x = self.inputs[0]
        return [C.output_variable(x.shape, x.dtype, x.dynamic_axes, name="twice"),
                C.output_variable(x.shape, x.dtype, x.dynamic_axes, name="shifted")]

    def serialize(self):
        return {"shift": self.shift}

    @staticmethod
    def deserialize(inputs, name, state):
        return Both(inputs[0], state["shift"], name=name)


class Pair(C.ops.functions.UserFunction):
    # two outputs declared with the sample shape (3,) (not the input's shape)
    def __init__(self, a, name="Pair"):
        super().__init__([a], name=name)

    def forward(self, arguments, outputs, device=None, outputs_to_retain=None):
        outputs[self.outputs[0]] = arguments * 2.0
        outputs[self.outputs[1]] = arguments + 1.0

    def backward(self, state, root_gradients, variables):
        pass

    def infer_outputs(self):
        x = self.inputs[0]
        return [C.output_variable((3,), x.dtype, x.dynamic_axes, name="twice"),
                C.output_variable((3,), x.dtype, x.dynamic_axes, name="next")]

    @staticmethod
    def deserialize(inputs, name, state):
        return Pair(inputs[0], name=name)


class Typed(Scaled):
    # a state holding None and integers past 32 bits, which CNTK 2.7's _py_dict_to_cntk_dict
    # keeps as None, SizeT (2 ** 40) and Double (-2 ** 40)
    def serialize(self):
        return {"factor": self.factor, "none": None, "big": 1 << 40, "neg": -(1 << 40)}
'''


@pytest.fixture
def scaled_module(tmp_path, monkeypatch):
    name = "stadyn_test_scaled_uf"
    (tmp_path / f"{name}.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield __import__(name)
    sys.modules.pop(name, None)


def test_a_saved_user_function_is_a_cntk_v2_file(scaled_module, tmp_path):
    """One output: the CNTK v2 file CNTK 2.7 writes (a ``UserDefinedFunction`` entry naming
    the module and class), no warning; it loads back with its state."""
    x = C.input_variable(3)
    f = C.plus(C.user_function(scaled_module.Scaled(x, 2.5)), 1.0)
    path = tmp_path / "scaled.model"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f.save(str(path))
    data = path.read_bytes()
    assert b"UserDefinedFunction" in data and b"stadyn_test_scaled_uf" in data
    loaded = C.load_model(str(path))
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(loaded.eval({loaded.arguments[0]: a}), a * 2.5 + 1.0)


def test_a_user_functions_state_is_typed_as_cntk_types_it(scaled_module, tmp_path):
    """None and integers past 32 bits in the serialize() state: CNTK's None, SizeT and
    Double (as CNTK 2.7's Python types them, and as a Trainer's external state is typed), in a
    CNTK v2 file; before, None was refused (Stadyn's file, with a warning) and 2 ** 40 failed
    as a 32-bit Int."""
    from stadyn.serialize._cntk_format import _decode_file
    x = C.input_variable(3)
    path = tmp_path / "typed.model"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        C.user_function(scaled_module.Typed(x, 2.0)).save(str(path))
    top = _decode_file(str(path), path.read_bytes())
    entry = next(f for f in top["primitive_functions"] if f["type"] == "UserDefinedFunction")
    state = entry["user_defined_state"]["state"]
    assert state == {"factor": 2.0, "none": None, "big": 1 << 40, "neg": -float(1 << 40)}
    assert [type(state[k]) for k in ("big", "neg")] == [int, float]


def test_a_user_function_of_two_outputs_in_stadyns_file(scaled_module, tmp_path):
    """Several outputs (which the CNTK v2 writer refuses): Stadyn's model file keeps it."""
    x = C.input_variable(3)
    f = C.user_function(scaled_module.Both(x, 0.5))
    path = str(tmp_path / "both.model")
    with pytest.warns(UserWarning, match="Stadyn model file"):
        C.combine(list(f.outputs)).save(path)
    loaded = C.load_model(path)
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = loaded.eval({loaded.arguments[0]: a})
    got = sorted((v for v in out.values()), key=lambda v: float(v.sum()))
    np.testing.assert_array_equal(got[0], a + 0.5)
    np.testing.assert_array_equal(got[1], a * 2.0)


def test_a_user_function_declaring_its_sample_shape_round_trips_in_stadyns_file(
        scaled_module, tmp_path):
    """Two outputs declared as ``(3,)`` samples on the batch axis: Stadyn's file keeps which
    inputs carry the batch axis, so the rebuilt function's ``infer_outputs`` sees the (3,)
    sample it saw when built.  Before, the input was rebuilt without its batch flag and the
    load failed: ModelFileError "the op gives shape (3,) float32, the file says (2, 3)"."""
    x = C.input_variable(3)
    f = C.user_function(scaled_module.Pair(x))
    path = str(tmp_path / "pair.model")
    with pytest.warns(UserWarning, match="Stadyn model file"):
        C.combine(list(f.outputs)).save(path)
    loaded = C.load_model(path)
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = loaded.eval({loaded.arguments[0]: a})
    got = sorted((v for v in out.values()), key=lambda v: float(v.sum()))
    np.testing.assert_array_equal(got[0], a + 1.0)
    np.testing.assert_array_equal(got[1], a * 2.0)
    assert [o.shape for o in loaded.outputs] == [(3,), (3,)]


def test_a_user_function_whose_module_is_gone_names_the_file(scaled_module, tmp_path):
    x = C.input_variable(3)
    f = C.user_function(scaled_module.Scaled(x, 2.0))
    path = str(tmp_path / "scaled.model")
    f.save(path)
    sys.modules.pop("stadyn_test_scaled_uf")
    sys.path.remove(str(tmp_path))
    with pytest.raises(ModelFileError, match=r"scaled\.model.*stadyn_test_scaled_uf\.Scaled "
                                             r"cannot be rebuilt.*No module"):
        C.load_model(path)



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
    # atol: an output near 0 is the difference of float32 terms near 6 (2 ulp of them is 1e-6):
    # an AVX-512 CPU rounds it 1.2e-7 away from the AVX2 one CNTK 2.7 ran on.
    np.testing.assert_allclose(out, expected["output"], rtol=1e-6, atol=1e-6)


def test_a_registered_callback_rebuilds_instead_of_the_module(scaled_module, tmp_path,
                                                               monkeypatch):
    """``Function.register_udf_deserialize_callback(op_name, callback)``: the callback
    rebuilds the op name's functions (the module need not be importable); CNTK 2.7's
    ``_UDFDeserializeCallbackWrapper``."""
    x = C.input_variable(3)
    f = C.user_function(scaled_module.Scaled(x, 2.0, name="s"))
    path = str(tmp_path / "scaled.model")
    f.save(path)
    Scaled, seen = scaled_module.Scaled, []
    monkeypatch.setattr(C.Function, "_udf_callback_map", {})
    sys.modules.pop("stadyn_test_scaled_uf")
    sys.path.remove(str(tmp_path))

    def callback(inputs, name, state):
        seen.append((name, state))
        return Scaled(inputs[0], state["factor"] + 1.0, name=name)
    C.Function.register_udf_deserialize_callback("stadyn_test_scaled_uf.Scaled", callback)
    with pytest.raises(ValueError, match="already been registered"):
        C.Function.register_udf_deserialize_callback("stadyn_test_scaled_uf.Scaled", callback)
    loaded = C.load_model(path)
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(loaded.eval({loaded.arguments[0]: a}), a * 3.0)
    assert seen == [("s", {"factor": 2.0})]


CNTK27 = peers.CNTK_PYTHON


@pytest.mark.skipif(not os.path.exists(CNTK27), reason="CNTK 2.7 (its Python 3.6 environment, "
                    "tests/peers.py) is not installed here")
def test_cntk_27_loads_stadyns_file_holding_a_user_function(tmp_path):
    """CNTK 2.7 reads the file Stadyn writes and rebuilds the user function (the fixture's
    module, importable on both) to the same output."""
    sys.path.insert(0, str(FIXTURE))
    try:
        from cntk27_scaled_uf import Scaled
        x = C.input_variable(3, name="x")
        z = C.plus(C.user_function(Scaled(x, 1.5, name="scaled")), 1.0)
        path = str(tmp_path / "stadyn.model")
        z.save(path)
    finally:
        sys.path.remove(str(FIXTURE))
        sys.modules.pop("cntk27_scaled_uf", None)
    script = ("import numpy as np, cntk as C\n"
              f"g = C.load_model({path!r})\n"
              "a = np.arange(6, dtype=np.float32).reshape(2, 3)\n"
              "print(repr(g.eval({g.arguments[0]: a}).ravel().tolist()))\n")
    env = dict(os.environ, LD_LIBRARY_PATH=peers.CNTK_LIBS,
               PYTHONPATH=str(FIXTURE))
    done = subprocess.run([CNTK27, "-W", "ignore", "-c", script], env=env, cwd=str(tmp_path),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    got = np.array(eval(done.stdout.strip().splitlines()[-1]))
    np.testing.assert_array_equal(got, (np.arange(6) * 1.5 + 1.0).tolist())


def test_a_cntk_27_file_whose_user_functions_module_is_gone_raises_a_runtime_error():
    # CNTK 2.7 loading scaled.model (make_model.py) where cntk27_scaled_uf is not importable:
    # RuntimeError "SWIG director method error." (its deserialize callback raised
    # ModuleNotFoundError); before rmA39 Stadyn raised UnsupportedModelError, no RuntimeError
    sys.modules.pop("cntk27_scaled_uf", None)
    with pytest.raises(RuntimeError, match=r"scaled\.model.*cntk27_scaled_uf\.Scaled cannot be "
                                           r"rebuilt.*No module"):
        C.load_model(str(FIXTURE / "scaled.model"))
