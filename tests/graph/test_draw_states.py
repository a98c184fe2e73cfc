"""Which front ends have the generators' states noted before a static forward
(``graph/_draw_states.py``): compat.nnabla's, whose ``y.backward()`` after ``loss.forward()``
reads the forward's draws; not Stadyn's own Variables nor compat.cntk's (a ``Trainer`` with
dropout pays nothing for it)."""

import numpy as np

import stadyn as sd
import stadyn.compat.cntk as C
import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as NF
import stadyn.functions as F
from stadyn.graph import topological_nodes
from stadyn.graph._draw_states import replays


def test_nnabla_graphs_have_their_draws_noted():
    y = NF.dropout(nn.Variable.from_numpy_array(np.ones(4, np.float32)), 0.5, seed=3)
    loss = NF.sum(y)
    loss.forward()
    assert replays(topological_nodes([y]))


def test_stadyn_graphs_note_nothing():
    y = F.dropout(sd.Variable.from_numpy_array(np.ones(4, np.float32)), 0.5, seed=3)
    loss = F.sum(y)
    loss.forward()
    assert not replays(topological_nodes([y]))


def test_cntk_trainer_with_dropout_notes_nothing():
    x = C.input_variable(4)
    z = C.layers.Dense(2)(C.layers.Dropout(0.5)(x))
    label = C.input_variable(2)
    loss = C.cross_entropy_with_softmax(z, label)
    trainer = C.Trainer(z, (loss, None), [C.sgd(z.parameters, C.learning_rate_schedule(
        0.1, C.UnitType.minibatch))])
    trainer.train_minibatch({x: np.ones((3, 4), np.float32),
                             label: np.eye(2, dtype=np.float32)[[0, 1, 0]]})
    nodes = topological_nodes([loss.output.variable])
    assert any("seed" in n.spec.attrs for n in nodes) and not replays(nodes)
