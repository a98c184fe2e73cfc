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
