"""A Python recurrence step's state shape is searched once per input step shape
(``FunctionStep.state_shapes_for``): the search applies the step's layer dry, twice for an
Elman step, so each application of the same layer searched again
(``benchmarks/cntk_elman_build.py``: a second application took as long as the first)."""

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
