"""A dense ``Value(batch=...)`` fed to a Trainer's input without a sequence axis keeps the
Trainer's own reshaping (a stream's size taking the input's shape), not the layout rule of
sequence inputs (case ``sparse_37__trainer_dense_layouts``; rmF37)."""

import numpy as np

import stadyn.compat.cntk as C


def test_value_of_the_inputs_size_takes_its_shape():
    x = C.input_variable((1, 2, 2))
    W = C.parameter((4, 1), init=1.0)
    z = C.times(C.reshape(x, 4), W)
    trainer = C.Trainer(z, (C.reduce_sum(z), None),
                        [C.sgd([W], C.learning_parameter_schedule(0.1))])
    assert trainer.train_minibatch({x: C.Value(batch=np.ones((3, 4), np.float32))})
    assert trainer.previous_minibatch_sample_count == 3
    # the mean gradient of z's sum is 1 for each weight: one step of 0.1
    np.testing.assert_allclose(W.value, np.full((4, 1), 0.9, np.float32), rtol=1e-6)
