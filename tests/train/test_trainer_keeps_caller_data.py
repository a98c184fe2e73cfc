"""The Trainer reads the caller's minibatch arrays and never writes into them (it once kept a
minibatch's memory as the input's buffer and copied the next minibatch of that size into it:
training on ``data[:4]`` then ``data[4:]`` overwrote ``data[:4]``)."""

import numpy as np
import pytest
import torch

import stadyn.compat.cntk as C


@pytest.mark.usefixtures("fresh_parameters")
@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_training_leaves_the_callers_arrays_as_they_were(kind):
    x, y = C.input_variable(3), C.input_variable(2)
    z = C.layers.Dense(2)(x)
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    data = np.arange(24, dtype=np.float32).reshape(8, 3)
    labels = np.eye(2, dtype=np.float32)[[0, 1] * 4]
    if kind == "torch":
        data, labels = torch.from_numpy(data), torch.from_numpy(labels)
    expected = np.arange(24, dtype=np.float32).reshape(8, 3)
    for start in (0, 4, 0):
        trainer.train_minibatch({x: data[start:start + 4], y: labels[start:start + 4]})
        trainer.test_minibatch({x: data[start:start + 4], y: labels[start:start + 4]})
    np.testing.assert_array_equal(np.asarray(data), expected)
    np.testing.assert_array_equal(np.asarray(labels), np.eye(2, dtype=np.float32)[[0, 1] * 4])
