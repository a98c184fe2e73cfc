"""Quantisation-aware training on Stadyn beyond the harness cases (tests/compat/compat_cases/
nnabla_qnn.py): the errors (NNabla 1.39 crashes or asserts there, so there is no reference).
A graph converted twice (as QATScheduler does) training its first layer: tests/graph/
test_view_chains.py."""

import pytest

import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.experimental.graph_converters as GC
from stadyn.compat.nnabla.utils import qnn


def test_training_modes_nnabla_lacks_are_refused():
    config = qnn.QATConfig()
    config.precision_mode = qnn.PrecisionMode.QNN
    with pytest.raises(NotImplementedError, match="SIM_QNN"):
        GC.QuantizeRecordingToTrainingModifier({}, config=config)


def test_recorder_range_of_another_shape_is_refused():
    x = nn.Variable((2, 3))
    with pytest.raises(ValueError, match=r"MaxMaxRecorder: max must hold one value"):
        qnn.max_max_recorder(x, nn.Variable((1, 3)))
    with pytest.raises(ValueError, match=r"takes the data and min, max \(3 inputs\), got 2"):
        qnn.MinMaxMinMaxRecorder()(x, nn.Variable((1, 1)))


def test_save_for_deployment_is_refused():
    config = qnn.QATConfig()
    config.niter_to_training = 2
    with pytest.raises(NotImplementedError, match="deploy"):
        qnn.QATScheduler(config).save("never.nnp", nn.Variable((1,)), deploy=True)
