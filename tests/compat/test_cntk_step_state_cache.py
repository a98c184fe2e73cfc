"""A Python recurrence step's state shape is searched once per input step shape
(``FunctionStep.state_shapes_for``): the search applies the step's layer dry, twice for an
Elman step, so each application of the same layer searched again
(``benchmarks/cntk_elman_build.py``: a second application took as long as the first).  The
states a step of several states leaves unread are found once per step too
(``_step_refusals.refuse_unread_states``' memo; ``benchmarks/cntk_unread_states_ab.py``)."""

import numpy as np
import pytest

import stadyn.compat.cntk as C
from stadyn.compat.cntk import _function_step

pytestmark = pytest.mark.usefixtures("fresh_parameters")


def test_an_elman_steps_state_is_searched_once_per_input_step_shape(monkeypatch):
    searched = []
    passes = _function_step.fixed_point_shapes     # (CNTK's loop passes, the layer dry)

    def counted(step, step_shape, *args, **kwargs):
        searched.append(tuple(step_shape))
        return passes(step, step_shape, *args, **kwargs)
    monkeypatch.setattr(_function_step, "fixed_point_shapes", counted)
    d = C.layers.Dense(3)
    layer = C.layers.Recurrence(lambda h, x: d(C.splice(h, x)))
    shapes = [layer(C.sequence.input_variable(4)).shape for _ in range(3)]
    assert shapes == [(3,)] * 3 and searched == [(4,)]
    # (another input step shape is searched for: d's weight refuses it when applied)
    with pytest.raises(ValueError):
        layer(C.sequence.input_variable(5))
    assert searched == [(4,), (5,)]
    assert [p.shape for p in layer.parameters] == [(7, 3), (3,)]


def test_the_states_a_steps_output_leaves_unread_are_found_once_per_step(monkeypatch):
    from stadyn.compat.cntk import _step_refusals
    calls = []
    called = _step_refusals._called

    def counted(fn, n_states):
        calls.append(n_states)
        return called(fn, n_states)
    monkeypatch.setattr(_step_refusals, "_called", counted)
    layer = C.layers.Recurrence(lambda h, c, v: (C.tanh(h + v), c + h * 0.5))
    data = [np.ones((2, 3), np.float32)]
    for _ in range(3):
        x = C.sequence.input_variable(3)
        z = layer(x)
        # (each application still refused at its first run, as CNTK 2.7's: c is unread)
        with pytest.raises(RuntimeError, match="does not match the SampleLayout"):
            z.eval({x: data})
    assert calls.count(2) == 1      # (before cntkrec38: once per application, 3)
