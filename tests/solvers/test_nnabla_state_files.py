"""``save_states("….h5")`` writes NNabla 1.39's HDF5 layout (nnabla-examples' checkpoints keep
``states_N.h5`` beside ``params_N.h5``) and ``load_states`` reads it back; a file that is not
one, or states that do not fit the solver's parameters, are one ModelFileError naming the file.
(Against NNabla itself: ``tests/compat/compat_cases/nnabla_examples.py``,
``examples_checkpoint``.)"""

from __future__ import annotations

import h5py
import numpy as np
import pytest

import stadyn as sd
import stadyn.solvers as S


def _solver(kind=S.Momentum, shape=(3, 2)):
    w = sd.Variable.from_numpy_array(np.arange(np.prod(shape), dtype=np.float32).reshape(shape),
                                     need_grad=True)
    b = sd.Variable.from_numpy_array(np.ones(shape[-1], np.float32), need_grad=True)
    s = kind(0.1)
    s.set_parameters({"fc/W": w, "fc/b": b})
    return s, (w, b)


def _step(s, params, scale):
    for p in params:
        p.g = np.full(p.shape, scale, np.float32)
    s.update()


def test_the_file_has_nnablas_layout_and_loads_back(tmp_path):
    s, params = _solver()
    _step(s, params, 1.0)
    _step(s, params, -2.0)
    path = tmp_path / "states_2.h5"
    s.save_states(path)
    with h5py.File(path, "r") as f:
        found = {}
        f.visititems(lambda k, o: found.__setitem__(k, (o.shape, str(o.dtype), o[()]))
                     if isinstance(o, h5py.Dataset) else None)
    # Momentum's one state 'm' per parameter (lr * grad accumulated: 0.9 * 0.1 - 0.2) and the
    # step count 't' as a 0-d int64, under the parameter's path
    assert sorted(found) == ["fc/W/m", "fc/W/t", "fc/b/m", "fc/b/t"]
    assert found["fc/W/t"][:2] == ((), "int64") and found["fc/W/t"][2] == 2
    np.testing.assert_allclose(found["fc/W/m"][2], np.full((3, 2), 0.9 * 0.1 - 0.2), rtol=1e-6)
    fresh, _ = _solver()
    fresh.load_states(path)
    for k, state in s.get_states().items():
        again = fresh.get_states()[k]
        assert again.t == state.t == 2
        np.testing.assert_array_equal(again.pstate["m"].d, state.pstate["m"].d)


def test_a_file_that_is_not_a_state_file_names_itself(tmp_path):
    s, _ = _solver()
    path = tmp_path / "states.h5"
    path.write_bytes(b"not hdf5")
    with pytest.raises(sd.ModelFileError, match="states.h5: not a readable NNabla solver state"):
        s.load_states(path)
    with h5py.File(tmp_path / "params.h5", "w") as f:     # a parameter file, not states
        f.create_dataset("fc/W", data=np.zeros((3, 2), np.float32))
    with pytest.raises(sd.ModelFileError, match=r"params.h5: no solver states"):
        s.load_states(tmp_path / "params.h5")


def test_states_that_do_not_fit_change_nothing_and_name_the_file(tmp_path):
    other, params = _solver(shape=(2, 2))
    _step(other, params, 1.0)
    other.save_states(tmp_path / "other.h5")
    s, _ = _solver()
    before = {k: v.pstate["m"].d.copy() for k, v in s.get_states().items()}
    with pytest.raises(sd.ModelFileError, match=r"other.h5: .*shape"):
        s.load_states(tmp_path / "other.h5")
    for k, v in s.get_states().items():
        np.testing.assert_array_equal(v.pstate["m"].d, before[k])
        assert v.t == 0
