"""A call of an untyped ``@C.Function`` builds the graph its body made as it was decorated on
the call's operands (``_waiting_function._Deferred._replayed``: CNTK 2.7 runs the body once
and clones that graph).  Where that replay failed, for whatever reason, the body ran again on the
operands and its result was taken: a failure of Stadyn's own (not an op refusing the operands)
was hidden, the body run once more than under CNTK.  Now only an op's refusal (ValueError,
RuntimeError: the errors CNTK 2.7 raises for operands an op cannot take) leads to the body's
run, which raises it at the user's line; anything else surfaces."""

from __future__ import annotations

import numpy as np
import pytest

import stadyn.compat.cntk as C
from stadyn.compat.cntk._deferred import Deferred


def _counted():
    runs = []

    @C.Function
    def f(x):
        runs.append(1)
        return C.relu(x) * 2
    return f, runs


def test_a_replay_failing_otherwise_than_an_op_surfaces(monkeypatch):
    f, runs = _counted()

    def broken(self, *args, **kwargs):
        raise KeyError("a failure of the replay itself")
    monkeypatch.setattr(Deferred, "clone", broken)
    with pytest.raises(KeyError, match="replay itself"):
        f(C.input_variable(3))
    assert len(runs) == 1       # (before: the body ran again and its graph was returned)


def test_an_ops_refusal_in_a_replay_is_still_the_ops_error():
    # CNTK 2.7: times of a (4,) input by the (3, 2) weight is its ValueError on the call
    w = C.parameter((3, 2), init=1.0)

    @C.Function
    def f(x):
        return C.relu(C.times(x, w))
    assert f(C.input_variable(3)).shape == (2,)
    with pytest.raises(ValueError):
        f(C.input_variable(4))


def test_a_replay_still_gives_the_bodys_values():
    f, runs = _counted()
    a = f(C.input_variable(3))
    data = np.array([[-1.0, 0.5, 2.0]], np.float32)
    np.testing.assert_array_equal(a.eval({a.arguments[0]: data}), [[0.0, 1.0, 4.0]])
    assert len(runs) == 1
