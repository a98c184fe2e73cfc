"""What a CNTK Function's runs carry to the next: ``trainer.model`` is a new Python Function at
each access (CNTK's wrapper), over the Trainer's model, whose recurrences' states it goes on
from.  (The states of a Function's own runs are compared in ``cntk_sequence_begin.py`` and
``cntk_examples.py``.)"""

import numpy as np

from compat_harness import cntk_case


@cntk_case(names=["cntk.Trainer.model", "cntk.Function.eval"],
           note="two trainer.model.eval calls after a training step, the second with "
                "sequence-begin flags False: it goes on from the first's states (Stadyn's "
                "states died with the first temporary Function, and the second eval raised "
                "SequenceBeginError); then flags True start again")
def trainer_model_eval_goes_on_from_the_last(C, r):
    r.touch("cntk.Trainer.model", "cntk.Function.eval", "cntk.Trainer.train_minibatch")
    x, y = C.sequence.input_variable(3), C.sequence.input_variable(2)
    z = C.layers.Sequential([C.layers.Recurrence(C.layers.LSTM(2)), C.layers.Dense(2)])(x)
    res = {"parameters": r.set_params(z.parameters)}
    loss = C.squared_error(z, y)
    trainer = C.Trainer(z, (loss, loss), [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    data = np.random.RandomState(0)
    a = [data.rand(4, 3).astype(np.float32) for _ in range(2)]
    b = [data.rand(4, 2).astype(np.float32) for _ in range(2)]
    trainer.train_minibatch({x: (a, [True, True]), y: b})
    res["loss"] = float(trainer.previous_minibatch_loss_average)
    res["first"] = np.array(trainer.model.eval({x: (a, [True, True])}))
    res["second, flags False"] = np.array(trainer.model.eval({x: (a, [False, False])}))
    res["third, flags False"] = np.array(trainer.model.eval({x: (a, [False, False])}))
    res["fourth, flags True"] = np.array(trainer.model.eval({x: (a, [True, True])}))
    return res


@cntk_case(names=["cntk.Trainer.train_minibatch"],
           note="after a minibatch of two sequences, three with flags False: the third has no "
                "slot of the previous minibatch to go on from, CNTK 2.7's RuntimeError (No "
                "matching sequence found in the saved previous MBLayout); then one sequence "
                "with False goes on from slot 0 of the last minibatch trained")
def sequence_begin_flags_from_a_slot_the_last_minibatch_lacks(C, r):
    from compat_cases.cntk_sequence_begin import _attempt
    r.touch("cntk.Trainer.train_minibatch", "cntk.Trainer.previous_minibatch_loss_average")
    x, y = C.sequence.input_variable(3), C.sequence.input_variable(2)
    z = C.layers.Sequential([C.layers.Recurrence(C.layers.LSTM(4)), C.layers.Dense(2)])(x)
    res = {"parameters": r.set_params(z.parameters)}
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])

    def train(lengths, flags):
        xs = [r.randn(n, 3) for n in lengths]
        ys = [r.onehot(n, 2) for n in lengths]
        trainer.train_minibatch(({x: xs, y: ys}, flags))
        return float(trainer.previous_minibatch_loss_average)
    res["steps"] = [_attempt(lambda: train([3, 3], [True, True])),
                    _attempt(lambda: train([3, 3, 3], [False, False, False])),
                    _attempt(lambda: train([3], [False]))]
    return res
