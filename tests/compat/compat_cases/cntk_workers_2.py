"""What CNTK 2.7's training reads and may be asked, in one process: a Trainer's averages
before a minibatch of samples."""

import numpy as np

from compat_harness import cntk_case


def _error(e):
    """The error's type and message, without Stadyn's explanation in parentheses."""
    return "%s: %s" % (type(e).__name__, str(e).splitlines()[0].split(" (")[0])


@cntk_case(names=["cntk.Trainer.previous_minibatch_loss_average",
                  "cntk.Trainer.previous_minibatch_evaluation_average"],
           note="Stadyn gave NaN and None before a minibatch (and after one of no samples: "
                "the end of a distributed training session)")
def trainer_averages_before_training(C, r):
    """Before any minibatch, a Trainer's loss and metric averages are CNTK 2.7's RuntimeError
    (its message); after one, the averages."""
    r.touch("cntk.Trainer.previous_minibatch_loss_average",
            "cntk.Trainer.previous_minibatch_evaluation_average")
    x = C.input_variable(2)
    y = C.input_variable(1)
    z = C.layers.Dense(1, init=C.glorot_uniform(seed=1))(x)
    trainer = C.Trainer(z, (C.squared_error(z, y), C.squared_error(z, y)),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    res = {}

    def read(key):
        for name in ("previous_minibatch_loss_average",
                     "previous_minibatch_evaluation_average"):
            try:
                res[key + name] = float(getattr(trainer, name))
            except RuntimeError as e:
                res[key + name] = _error(e)
    read("before_")
    trainer.train_minibatch({x: np.ones((3, 2), np.float32), y: np.zeros((3, 1), np.float32)})
    read("after_")
    res["count"] = trainer.previous_minibatch_sample_count
    return res
