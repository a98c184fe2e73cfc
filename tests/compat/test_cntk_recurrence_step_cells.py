"""A recurrence's Python step whose states' shapes Stadyn cannot find: one clear error naming
the step and what to write (cases compared with CNTK 2.7, where the cell is found, are
``Recurrence__cell_in_list`` and ``Recurrence__cell_by_attribute_or_computed_index``)."""

import numpy as np
import pytest

import stadyn.compat.cntk as C

pytestmark = pytest.mark.usefixtures("fresh_parameters")


def test_a_step_whose_cell_is_not_found_is_refused_naming_it():
    def step(h, c, inp):    # (no cell, and no shapes it maps to themselves: CNTK 2.7 makes it
        return C.combine([h + inp, c + inp])    # and fails as it is applied, a RuntimeError)
    with pytest.raises(ValueError, match=r"the recurrence step '.*step' \(.*"
                                         r"test_cntk_recurrence_step_cells.py:\d+\) takes 2 "
                                         r"states.*cell = self.cell; lambda h, c, x: "
                                         r"cell\(h, c, x\)"):
        C.layers.Recurrence(step)


def test_a_step_reading_its_cells_outputs_by_a_computed_index_finds_the_cell():
    recs = [C.layers.LSTM(4), C.layers.LSTM(6)]
    k = 1

    def step(h, c, inp):    # (the cell's call on placeholders has its two outputs, as CNTK's)
        out = recs[k](h, c, inp)
        return out.outputs[0], out.outputs[1]
    x = C.sequence.input_variable(3)
    assert C.layers.Recurrence(step)(x).shape == (6,)
    cell = recs[k]

    def named(h, c, inp):
        out = cell(h, c, inp)
        return out.outputs[0], out.outputs[1]
    assert C.layers.Recurrence(named)(x).shape == (6,)


def test_a_step_of_one_state_with_a_default_argument_and_no_cell_keeps_one_state():
    x = C.sequence.input_variable(2)
    y = C.layers.Recurrence(lambda h, inp, scale=0.5: C.tanh(h * scale + inp))(x)
    data = np.random.RandomState(0).randn(4, 2).astype(np.float32)
    h, want = np.zeros(2), []
    for step in data:                  # h_t = tanh(0.5 h_{t-1} + x_t), in NumPy
        h = np.tanh(0.5 * h + step)
        want.append(h)
    np.testing.assert_allclose(y.eval({x: [data]})[0], np.array(want), rtol=1e-5, atol=1e-6)


_LSTM = C.layers.LSTM(2)


@pytest.mark.parametrize("step, states", [(C.plus, 1), (C.element_times, 1),
                                          (lambda h, inp, scale=2.0: h * scale + inp, 1),
                                          (lambda h, c, inp, name="": _LSTM(h, c, inp), 2)])
def test_a_function_step_counts_its_required_arguments_but_the_input_as_states(step, states):
    # CNTK 2.7 makes a Function of a Python step's arguments without a default: C.plus(left,
    # right, name='') has one state (Recurrence(C.plus) and Fold(C.plus, return_full_state=
    # True) give one output in CNTK 2.7; case fold__leaves_at_the_call lists one state's
    # scalars); Stadyn counted name= as a second state
    from stadyn.compat.cntk._recurrent import FunctionStep
    assert FunctionStep(step).n_states == states
