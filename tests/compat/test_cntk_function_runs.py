"""What a CNTK Function keeps from one run to the next (compat/cntk/_function_runs.py): its
graph's run check, made once and again only where the graph changed, and its recurrences'
carried states, which go with the Function.  (The states' values are compared with CNTK 2.7 in
compat_cases/cntk_sequence_begin.py, and those ``trainer.model`` goes on from in
compat_cases/cntk_runs_state.py.)"""

import gc
import weakref

import numpy as np
import pytest

import stadyn.compat.cntk as C
from stadyn.compat.cntk import _run_checks

pytestmark = pytest.mark.usefixtures("fresh_parameters")


def _counting_checks(monkeypatch) -> list:
    """Record the roots of every walk of a graph for refused values."""
    walks = []
    check = _run_checks.check_runnable

    def counted(roots):
        walks.append(list(roots))
        return check(roots)     # (the values whose data each run checks)
    monkeypatch.setattr(_run_checks, "check_runnable", counted)
    return walks


def test_a_graph_is_checked_once_and_again_after_a_rewire(monkeypatch):
    x = C.input_variable(2, name="x")
    refused = x + C.constant(np.ones(2))     # float64: CNTK refuses it when it runs
    data = np.ones((1, 2), np.float32)
    p = C.placeholder(shape=(2,))
    f = C.tanh(p)
    f.replace_placeholders({p: x})
    walks = _counting_checks(monkeypatch)
    for _ in range(3):
        np.testing.assert_allclose(f.eval({x: data}), np.tanh(data), rtol=1e-6)
    assert len(walks) == 1      # the old code walked the graph at every run
    for _ in range(2):          # a refused graph raises at every run
        with pytest.raises(_run_checks.DataTypeError, match="float64 constant"):
            refused.eval({x: data})
    # (a placeholder on a sequence axis is in the graph from the start and replaced by a
    # rewire; one without waits, its graph built as it is bound.  CNTK 2.7 takes no data for
    # the placeholder: the run asks for an output that does not need it)
    xs, other = C.sequence.input_variable(2), C.sequence.input_variable(2)
    q = C.placeholder(shape=(2,), dynamic_axes=xs.dynamic_axes)
    g = C.combine([C.tanh(q), C.tanh(other)])
    np.testing.assert_allclose(g.eval({other: [data]}, outputs=[g.outputs[1]])[0],
                               np.tanh(data), rtol=1e-6)
    g.replace_placeholders({q: xs + C.constant(np.ones(2))})     # a rewire: checked again,
    with pytest.raises(_run_checks.DataTypeError, match="float64 constant"):   # and refused
        g.eval({xs: [data], other: [data]})


def test_a_trainer_checks_its_graph_once(monkeypatch):
    x, y = C.input_variable(2), C.input_variable(2)
    refused = C.input_variable(2) + C.constant(np.ones(2))     # alive, in another graph
    z = C.layers.Dense(2)(x)
    trainer = C.Trainer(z, (C.squared_error(z, y), C.squared_error(z, y)),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    walks = _counting_checks(monkeypatch)
    data = {x: np.ones((2, 2), np.float32), y: np.zeros((2, 2), np.float32)}
    for _ in range(3):
        trainer.train_minibatch(data)
        trainer.test_minibatch(data)
    assert len(walks) == 2 and refused is not None      # once to train, once to test


def test_a_functions_carried_states_go_with_it():
    """A recurrent Function's states (kept from every run) hold its graph only while a
    Function over its outputs does: a registry of them kept every such graph for ever."""
    alive = []
    for _ in range(2):
        x = C.sequence.input_variable(2)
        z = C.layers.Recurrence(C.layers.RNNStep(3))(x)
        z.eval({x: [np.ones((3, 2), np.float32)]})
        alive.append(weakref.ref(z.variable))
        del x, z
    gc.collect()
    assert [r() for r in alive] == [None, None]


def test_functions_over_the_same_outputs_share_their_states():
    """As CNTK's Python objects over one Function share its state: a Function made again over
    ``z``'s output (``trainer.model``, ``C.as_composite``) goes on from ``z``'s run, as the
    second half of one run over both pieces computes."""
    x = C.sequence.input_variable(2)
    z = C.layers.Recurrence(C.layers.RNNStep(3))(x)
    rs = np.random.RandomState(0)
    a, b = rs.randn(3, 2).astype(np.float32), rs.randn(3, 2).astype(np.float32)
    whole = z.eval({x: [np.concatenate([a, b])]})[0]
    z.eval({x: [a]})
    went_on = C.as_composite(z).eval(({x: [b]}, [False]))[0]
    np.testing.assert_allclose(went_on, whole[3:], rtol=1e-5, atol=1e-6)



def test_the_required_arguments_are_found_once_per_set_of_outputs(monkeypatch):
    # a run given no data for an argument is CNTK 2.7's ValueError (case
    # function__required_arguments_missing); the arguments each set of requested outputs
    # needs are found once (a walk of the graph), and again only after a rewire
    from stadyn.compat.cntk import _function
    x, y = C.input_variable(2, name="x"), C.input_variable(2, name="y")
    f = C.combine([C.tanh(x), x + y])
    data = np.ones((1, 2), np.float32)
    walks = []
    real = _function.Function.arguments.fget
    monkeypatch.setattr(_function.Function, "arguments",
                        property(lambda self: walks.append(1) or real(self)))
    for _ in range(3):
        f.eval({x: data, y: data})
        f.eval({x: data}, outputs=[f.outputs[0]])
    assert len(walks) == 2          # once for both outputs, once for the first alone
    with pytest.raises(ValueError, match=r"Values for 1 required arguments 'Input\('y'"):
        f.eval({x: data})


def test_a_run_s_data_is_not_copied_before_the_next_feed_with_or_without_a_batch_axis():
    # an input's data from a run is that run's only (CNTK's inputs hold nothing between
    # runs): FeedUndo keeps no copy of it, so a refused run that wrote it in place leaves the
    # refused values (nothing reads them); it copied a whole (3, 224, 224) input without a
    # batch axis on every run
    import stadyn as sd
    from stadyn.graph import FeedUndo, free_batch_input
    from stadyn.train import feed
    for v in (sd.Variable((2, 3)), free_batch_input(sd.Variable((2, 3)))):
        feed(v, np.ones((2, 3), np.float32))
        undo = FeedUndo()
        undo.keep(v)
        feed(v, np.full((2, 3), 7, np.float32))      # (the very shape: written in place)
        undo.undo()
        assert v.d.tolist() == [[7.0] * 3] * 2
    user = sd.Variable.from_numpy_array(np.full((2, 3), 5, np.float32))   # a user's data
    undo = FeedUndo()
    undo.keep(user)
    feed(user, np.ones((2, 3), np.float32))
    undo.undo()
    assert user.d.tolist() == [[5.0] * 3] * 2


def test_a_refused_run_leaves_its_inputs_as_they_were():
    # CNTK's inputs hold nothing between runs: a run refused after some of its data was fed
    # (layouts that differ, a later input's wrong shape, an argument given no data) leaves
    # every input as the run before left it: its shape, its sequences' lengths, whether it
    # was ever fed (a placeholder written in place holds its zeros again)
    from stadyn.compat.cntk._adapt import unwrap
    from stadyn.graph import holds_free_stand_ins
    x, y = C.input_variable(3, name="x"), C.input_variable(3, name="y")
    f = x + y
    f.eval({x: np.ones((2, 3), np.float32), y: np.ones((2, 3), np.float32)})
    refused = [{x: np.full((2, 3), 7, np.float32), y: np.ones((3, 3), np.float32)},
               {x: np.full((4, 3), 7, np.float32), y: np.ones((2, 4), np.float32)},
               {x: np.full((4, 3), 7, np.float32)}]
    for data in refused:
        with pytest.raises(ValueError):
            f.eval(data)
        assert unwrap(x).shape == (2, 3) and unwrap(y).shape == (2, 3)
    s, t = C.sequence.input_variable(2, name="s"), C.sequence.input_variable(2, name="t")
    g = s + t
    g.eval({s: [np.ones((3, 2), np.float32)], t: [np.ones((3, 2), np.float32)]})
    with pytest.raises(ValueError):
        g.eval({s: [np.ones((5, 2), np.float32)], t: [np.ones((4, 2), np.float32)]})
    assert unwrap(s).shape == (1, 3, 2) and unwrap(s).sequence_lengths.d.tolist() == [3]
    a, b = C.input_variable((C.FreeDimension, 3), name="a"), C.input_variable(3, name="b")
    h = C.reduce_sum(a, axis=0) + b
    for rows in (5, 1):     # (1 row: the stand-in's very shape, written in place)
        with pytest.raises(ValueError):
            h.eval({a: np.ones((2, rows, 3), np.float32), b: np.ones((3, 3), np.float32)})
        with pytest.raises(ValueError):
            h.eval({a: np.ones((1, rows, 3), np.float32)})
    assert holds_free_stand_ins(unwrap(a))      # never fed, as before the refused runs
    assert unwrap(a).shape == (1, 1, 3) and not unwrap(a).d.any()
