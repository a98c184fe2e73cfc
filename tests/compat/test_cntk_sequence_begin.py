"""CNTK's sequence-begin flags where Stadyn refuses what it does not imitate (the cases
compared with CNTK 2.7 are in compat_cases/cntk_examples.py and cntk_sequence_begin.py): a
False flag continuing a sequence from a slot of the previous minibatch that does not exist
(CNTK's error too: compat_cases/cntk_runs_state.py), from padding, or from past the previous
minibatch's values (where CNTK reads memory it does not own)."""

import numpy as np
import pytest

import stadyn.compat.cntk as C


def _trainer():
    x, y = C.sequence.input_variable(3), C.sequence.input_variable(2)
    z = C.layers.Sequential([C.layers.Recurrence(C.layers.LSTM(4)), C.layers.Dense(2)])(x)
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    return x, y, z, trainer


def _data(lengths, seed=0):
    rs = np.random.RandomState(seed)
    return ([rs.randn(n, 3).astype(np.float32) for n in lengths],
            [np.eye(2, dtype=np.float32)[rs.randint(0, 2, n)] for n in lengths])


@pytest.mark.usefixtures("fresh_parameters")
def test_a_false_flag_needs_a_previous_minibatch_with_that_slot():
    x, y, _, trainer = _trainer()
    xs, ys = _data([3, 3])
    with pytest.raises(ValueError, match="previous minibatch, which had no minibatch"):
        trainer.train_minibatch(({x: xs, y: ys}, [False, False]))
    trainer.train_minibatch(({x: xs, y: ys}, [True, True]))
    with pytest.raises(ValueError, match="3 sequence-begin flags for a minibatch of 2"):
        trainer.train_minibatch(({x: xs, y: ys}, [False, False, False]))
    three_x, three_y = _data([3, 3, 3])
    # CNTK 2.7's RuntimeError too (compat case sequence_begin_flags_from_a_slot_the_last_...)
    with pytest.raises(RuntimeError, match=r"sequence 2 from slot 2 of the previous "
                                           r"minibatch, which put its 2 sequences \(lengths "
                                           r"\[3, 3\]\) into 2 slots"):
        trainer.train_minibatch(({x: three_x, y: three_y}, [False, False, False]))
    # CNTK 2.7 reads sequence 0's state at column (3 - 1) * 3 + 0 of the previous 3 steps by
    # 2 slots: past them
    with pytest.raises(ValueError, match="reads its state past the values"):
        trainer.train_minibatch(({x: three_x, y: three_y}, [False, False, True]))
    one_x, one_y = _data([3])
    trainer.train_minibatch(({x: one_x, y: one_y}, [False]))     # slot 0, step 1 (see case)


@pytest.mark.usefixtures("fresh_parameters")
def test_a_sequence_is_not_continued_from_padding():
    x, y, _, trainer = _trainer()
    xs, ys = _data([3, 5])
    trainer.train_minibatch(({x: xs, y: ys}, [True, True]))
    with pytest.raises(ValueError, match=r"from step 4 of slot 0 of the previous minibatch "
                                         r"\(sequences of lengths \[3, 5\]\), where that "
                                         r"slot's sequences had ended"):
        trainer.train_minibatch(({x: xs, y: ys}, [False, True]))
    trainer.train_minibatch(({x: xs, y: ys}, [True, False]))     # slot 1 ended at step 4
    trainer.train_minibatch(({x: xs, y: ys}, [True, True]))     # starting afresh is fine


@pytest.mark.usefixtures("fresh_parameters")
def test_the_graph_starts_afresh_after_a_flagged_step():
    """eval after a flagged step (the parameters unchanged: a rate of 0) computes what it
    computed before: the recurrences read their own initial states again."""
    x, y = C.sequence.input_variable(3), C.sequence.input_variable(2)
    z = C.layers.Sequential([C.layers.Recurrence(C.layers.LSTM(4)), C.layers.Dense(2)])(x)
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.0))])
    probe = _data([4], seed=3)[0]
    before = z.eval({x: probe})[0]
    for k in range(2):
        xs, ys = _data([2], seed=k)
        trainer.train_minibatch(({x: xs, y: ys}, [k == 0]))
    np.testing.assert_array_equal(z.eval({x: probe})[0], before)


@pytest.mark.usefixtures("fresh_parameters")
def test_test_minibatch_refuses_what_train_minibatch_refuses_naming_itself():
    x, y, _, trainer = _trainer()
    xs, ys = _data([3, 3])
    with pytest.raises(ValueError, match="^test_minibatch: sequence-begin flags .* which had "
                                         "no minibatch"):
        trainer.test_minibatch(({x: xs, y: ys}, [False, False]))
    trainer.test_minibatch(({x: xs, y: ys}, [True, True]))
    with pytest.raises(ValueError, match="^test_minibatch: 1 sequence-begin flags for a "
                                         "minibatch of 2"):
        trainer.test_minibatch(({x: xs, y: ys}, [False]))
    # CNTK 2.7 builds its training network at the first train_minibatch: the tests before
    # leave it nothing to go on from (compat case sequence_begin_flags_first_train_minibatch)
    with pytest.raises(RuntimeError, match="^train_minibatch: .* first train_minibatch"):
        trainer.train_minibatch(({x: xs, y: ys}, [False, False]))
    trainer.train_minibatch(({x: xs, y: ys}, [True, True]))
    trainer.test_minibatch(({x: xs, y: ys}, [False, False]))       # goes on from the training
    trainer.train_minibatch(({x: xs, y: ys}, [False, False]))      # and on from the test


@pytest.mark.usefixtures("fresh_parameters")
def test_a_recurrence_that_carries_nothing_trains_with_flags_and_outputs():
    """A peephole LSTM's recurrence (run op by op) keeps no states to carry: a minibatch with
    flags all True still trains, returning ``True`` or, with outputs, ``(True, {z: values})``
    as the step computed them (a rate of 0: ``z.eval`` gives the same values); a False flag is
    refused naming the recurrence.  (The merge of efcb923's branches unpacked a bool here.)"""
    x, y = C.sequence.input_variable(3), C.sequence.input_variable(2)
    z = C.layers.Recurrence(C.layers.LSTM(2, use_peepholes=True))(x)
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.0))])
    xs, ys = _data([3, 3])
    assert trainer.train_minibatch(({x: xs, y: ys}, [True, True])) is True
    updated, values = trainer.train_minibatch(({x: xs, y: ys}, [True, True]), outputs=[z.output])
    assert updated is True and list(values) == [z.output]
    np.testing.assert_allclose(np.stack(values[z.output]), np.stack(z.eval({x: xs})),
                               rtol=1e-6, atol=1e-7)
    assert trainer.train_minibatch({x: xs, y: ys}, outputs=[]) is True
    with pytest.raises(ValueError, match="states nobody kept"):
        trainer.train_minibatch(({x: xs, y: ys}, [False, True]))
