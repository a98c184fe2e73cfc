"""Integers beyond 2**24 going into an NNabla Variable that needs a gradient: NNabla 1.39 keeps
the integer array exactly (its functions read it as float32; reference case
``nnabla_fidelity_15.large_integers__need_grad``), Stadyn's Variable holds float32, which
rounds them.  What Stadyn owes the user is a warning at their line, naming a value lost; the
values that float32 holds exactly get none."""

import inspect
import warnings

import numpy as np
import pytest

import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as F

BIG = np.array([3, 2 ** 24 + 1, -(2 ** 25) - 1], np.int64)


def _line_below() -> int:
    return inspect.currentframe().f_back.f_lineno + 1


def _rounding_warnings(caught):
    return [w for w in caught if issubclass(w.category, UserWarning)
            and "float32" in str(w.message) and "NNabla 1.39 keeps" in str(w.message)]


def _writes():
    """Each way the integers reach a float32 Variable, with the user's line it happens at."""
    def from_numpy():
        line = _line_below()
        nn.Variable.from_numpy_array(BIG, need_grad=True)
        return line

    def assigned():
        v = nn.Variable((3,), need_grad=True)
        line = _line_below()
        v.d = BIG
        return line

    def made_trainable():
        v = nn.Variable.from_numpy_array(BIG)
        line = _line_below()
        v.need_grad = True
        return line

    def read_by_a_graph():
        v = nn.Variable((3,))
        y = F.relu(v)                   # a graph reads v as float data
        line = _line_below()
        v.d = BIG.astype(np.int32)
        del y
        return line

    return {"from_numpy_array": from_numpy, "d =": assigned, "need_grad =": made_trainable,
            "read by a graph": read_by_a_graph}


@pytest.mark.parametrize("how", sorted(_writes()))
def test_rounded_integers_warn_at_the_users_line(how):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = _writes()[how]()
    found = _rounding_warnings(caught)
    assert len(found) == 1, [str(w.message) for w in caught]
    assert found[0].filename == __file__ and found[0].lineno == line
    assert "16777217" in str(found[0].message) and "16777216" in str(found[0].message)


def test_integers_float32_holds_exactly_give_no_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        v = nn.Variable.from_numpy_array(np.array([2 ** 24, -7, 2 ** 30]), need_grad=True)
        w = nn.Variable((2,), need_grad=True)
        w.d = np.array([1, 2], np.int32)
    assert _rounding_warnings(caught) == []
    assert v.d.tolist() == [2.0 ** 24, -7.0, 2.0 ** 30]
