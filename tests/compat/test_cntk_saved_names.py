"""What a saved and loaded CNTK Function keeps of its own, as CNTK 2.7's does, and what
pickling one raises.

``tests/fixtures/cntk_saved_files/`` (``make_cntk.py``): CNTK 2.7's file of ``x * 2 + 1``
renamed ``z.name = "renamed"``, whose loaded model CNTK names ``renamed`` (its root function
``''``).  Before, Stadyn's file of it lost the name (its loaded model was named ``''``), and
Stadyn's load of CNTK's file did too.  Pickling a Function raised ``pickle.PicklingError``
where CNTK 2.7 raises ``TypeError("can't pickle SwigPyObject objects")`` (CNTK's Functions
wrap C++ objects), for ``random_sample_inclusion_frequency``'s as for any.  CNTK 2.7's file of
``Recurrence(LSTM(2), return_full_state=True)`` (``cntk_lstm_state.model``) loaded with a
``Combine`` at its root where CNTK shows the ``LSTM`` block of two outputs.
"""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest

import stadyn.compat.cntk as C

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_saved_files")


def test_a_renamed_composite_keeps_its_name_in_the_file(tmp_path):
    x = C.input_variable(3, name="x")
    z = x * 2 + 1
    z.name = "renamed"
    path = str(tmp_path / "renamed.model")
    z.save(path)
    loaded = C.load_model(path)
    assert (loaded.name, loaded.root_function.name) == ("renamed", "")
    np.testing.assert_allclose(loaded.eval({loaded.arguments[0]: np.ones((1, 3), np.float32)}),
                               [[3.0, 3.0, 3.0]])


def test_cntks_file_of_a_renamed_composite_loads_with_its_name():
    loaded = C.load_model(os.path.join(FIXTURES, "cntk_renamed.model"))
    assert (loaded.name, loaded.root_function.name) == ("renamed", "")


def test_a_function_of_a_named_root_keeps_that_name(tmp_path):
    x = C.input_variable(3, name="x")
    path = str(tmp_path / "named.model")
    C.plus(x, 1, name="p").save(path)
    loaded = C.load_model(path)
    assert (loaded.name, loaded.root_function.name) == ("p", "p")


@pytest.mark.parametrize("build", [
    lambda: C.random_sample_inclusion_frequency(C.constant(np.arange(1.0, 5.0, dtype=np.float32)),
                                                2, False),
    lambda: C.input_variable(3) * 2])
def test_pickling_a_function_raises_cntks_type_error(build):
    with pytest.raises(TypeError, match="can't pickle SwigPyObject objects"):
        pickle.dumps(build())


def test_cntks_file_of_an_lstm_with_its_full_state_loads_with_the_lstm_at_its_root():
    # CNTK 2.7's file of Recurrence(LSTM(2), return_full_state=True): its root function the
    # LSTM block of two outputs (h, c); before, Stadyn's load showed a Combine of them, both
    # outputs named <uid>_Output_0
    lstm = dict(np.load(os.path.join(FIXTURES, "cntk_lstm_state.npz")))
    loaded = C.load_model(os.path.join(FIXTURES, "cntk_lstm_state.model"))
    assert loaded.root_function.op_name == "LSTM"
    uid = loaded.root_function.uid
    assert [o.uid for o in loaded.outputs] == [f"{uid}_Output_0", f"{uid}_Output_1"]
    got = loaded.eval({loaded.arguments[0]: [lstm["xs"]]})
    for k, name in enumerate(("h", "c")):
        np.testing.assert_allclose(got[loaded.outputs[k]][0], lstm[name], rtol=1e-5, atol=1e-6)
