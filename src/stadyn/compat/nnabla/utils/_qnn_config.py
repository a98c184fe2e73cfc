"""The settings of NNabla 1.39's quantisation-aware training (``nnabla.utils.qnn``):
``PrecisionMode``, ``QNNState``, ``QATConfig`` (with its ``RoundingMethod`` and
``RecorderPosition``), ``QATTensorRTConfig`` and ``FunctionsRankRecorder``, the numbering of a
graph's functions the quantisation modifiers name their parameter scopes by
(``'<TypeName>-<rank>'``)."""

from __future__ import annotations

from enum import Enum

import numpy as np

from ..experimental.graph_converters._quantize import PrecisionMode
from ._qnn_recorders import MaxMvaRecorderCallback, MinMaxMinMaxRecorderCallback

__all__ = ["PrecisionMode", "QNNState", "QATConfig", "QATTensorRTConfig", "qat_default_config",
           "FunctionsRankRecorder"]


class QNNState(Enum):
    """Where a :class:`~stadyn.compat.nnabla.utils.qnn.QATScheduler` stands: ``NON_QNN``,
    ``RECORDING``, ``TRAINING`` (``DEPLOYMENT`` is named, not reached).

    Example:
        >>> QNNState.RECORDING.value
        1
    """

    NON_QNN = 0
    RECORDING = 1
    TRAINING = 2
    DEPLOYMENT = 3


class QATConfig:
    """The settings of quantisation-aware training, as class attributes (set them on an
    instance): int8 (``dtype``), symmetric (zero point 0), ``precision_mode`` ``SIM_QNN``,
    scales rounded to powers of two (``pow2``), round mode ``'HALF_TO_EVEN'``, the recorders
    (``recorder_weight`` MinMaxMinMax, ``recorder_activation`` MaxMva) added before every
    function (``record_layers`` empty) but batch normalisation, the network's first
    convolutions and last affine (``skip_inputs_layers``, ``skip_outputs_layers``);
    ``niter_to_recording``, ``niter_to_training``, ``learning_rate_scale`` for the scheduler.

    Example:
        >>> config = QATConfig()
        >>> config.pow2, config.recorder_position, config.skip_outputs_layers
        (<RoundingMethod.ROUND: 'ROUND'>, <RecorderPosition.BEFORE: 0>, ['Affine'])
    """

    ext_name = "cudnn"
    zero_point = False
    dtype = np.int8
    precision_mode = PrecisionMode.SIM_QNN
    channel_last = False
    channel_wise = False
    niter_to_recording = 0
    niter_to_training = -1

    class RoundingMethod(Enum):
        """How a recorded scale is rounded to a power of two (``NOTROUND``: it is not)."""

        CEIL = "CEIL"
        ROUND = "ROUND"
        FLOOR = "FLOOR"
        NOTROUND = "NOTROUND"

    pow2 = RoundingMethod.ROUND
    narrow_range = False
    round_mode = "HALF_TO_EVEN"
    bn_folding = False
    bn_self_folding = False
    recorder_weight = MinMaxMinMaxRecorderCallback
    recorder_activation = MaxMvaRecorderCallback
    record_layers: list = []

    class RecorderPosition(Enum):
        """Where activations are recorded: ``BEFORE`` a function, or ``BOTH`` before and
        after."""

        BEFORE = 0
        BOTH = 1

    recorder_position = RecorderPosition.BEFORE
    skip_inputs_layers = ["Convolution", "Deconvolution"]
    skip_outputs_layers = ["Affine"]
    learning_rate_scale = 0.1
    skip_bias = False


class QATTensorRTConfig(QATConfig):
    """:class:`QATConfig` for TensorRT: batch normalisation folded, recorders only before
    convolutions, affine, batch matmul and ReLU.

    Example:
        >>> QATTensorRTConfig().bn_folding, QATTensorRTConfig.record_layers[:2]
        (True, ['Convolution', 'Deconvolution'])
    """

    pow2 = QATConfig.RoundingMethod.ROUND
    bn_folding = True
    bn_self_folding = True
    record_layers = ["Convolution", "Deconvolution", "Affine", "BatchMatmul", "ReLU"]
    record_position = QATConfig.RecorderPosition.BEFORE


qat_default_config = QATTensorRTConfig()


class FunctionsRankRecorder:
    """Numbers a graph's functions in the order ``y.visit`` walks them (``functions_ranks``:
    function -> number), leaving out those that only run in training
    (``functions_only_for_training``).

    Example:
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> ranks = FunctionsRankRecorder()
        >>> F.relu(F.dropout(nn.Variable((2,)), 0.5) * 2.0).visit(ranks)
        >>> sorted((f.info.type_name, r) for f, r in ranks.functions_ranks.items())
        [('MulScalar', 0), ('ReLU', 1)]
    """

    def __init__(self, functions_only_for_training=("ImageAugmentation", "Dropout")):
        self.functions_only_for_training = list(functions_only_for_training)
        self.rank = 0
        self.functions_ranks: dict = {}

    def __call__(self, f) -> None:
        if f.info.type_name not in self.functions_only_for_training:
            self.functions_ranks[f] = self.rank
            self.rank += 1
