"""``nnabla.experimental.graph_converters`` on Stadyn: rebuild an NNabla graph function by
function with modifiers -- batch normalisation folded (``BatchNormalizationFoldingModifier``,
``BatchNormalizationSelfFoldingModifier``), fused and unfused
(``FusedBatchNormalizationModifier``, ``UnfusedBatchNormalizationModifier``), put in test mode
(``BatchNormBatchStatModifier``, ``TestModeModifier``), the layout switched
(``ChannelLastModifier``, ``ChannelFirstModifier``), functions removed
(``RemoveFunctionModifier``), inputs replaced (``IdentityModifier``), gradients cut
(``NoGradModifier``), weights pruned (``PruningModifier``), quantisation-aware training's
range recorders added (``QuantizeNonQNNToRecordingModifier``) and quantisation simulated
(``QuantizeRecordingToTrainingModifier``; see ``nnabla.utils.qnn``).  Checked against NNabla 1.39:
cases ``graph_converters__*`` of ``tests/compat/compat_cases/nnabla_graph_converters.py``.

Example:
    >>> import numpy as np
    >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.parametric_functions as PF
    >>> import stadyn.compat.nnabla.experimental.graph_converters as GC
    >>> x = nn.Variable.from_numpy_array(np.ones((1, 2, 4, 4)))
    >>> y = PF.batch_normalization(PF.convolution(x * 1.0, 3, (3, 3)), batch_stat=False)
    >>> z = GC.GraphConverter(GC.TestModeModifier()).convert(y)
    >>> z.parent.info.type_name
    'BatchNormalization'
"""

from ._batch_norm_folding import (AddBiasModifier, BatchNormalizationFoldingModifier,
                                 BatchNormalizationFoldingModifierInner,
                                 BatchNormalizationFoldingOppositeModifierInner,
                                 BatchNormalizationSelfFoldingModifier)
from ._channels import ChannelFirstModifier, ChannelLastModifier
from ._fused_batch_norm import FusedBatchNormalizationModifier, UnfusedBatchNormalizationModifier
from ._graph_converter import FunctionModifier, GraphConverter
from ._modifiers import (BatchNormBatchStatModifier, IdentityModifier, NoGradModifier,
                        RemoveFunctionModifier, TestModeModifier)
from ._prune import PruningModifier
from ._quantize import QuantizeNonQNNToRecordingModifier, QuantizeRecordingToTrainingModifier

__all__ = ["GraphConverter", "FunctionModifier", "BatchNormalizationFoldingModifier",
           "AddBiasModifier", "BatchNormalizationFoldingModifierInner",
           "BatchNormalizationFoldingOppositeModifierInner",
           "BatchNormalizationSelfFoldingModifier", "FusedBatchNormalizationModifier",
           "UnfusedBatchNormalizationModifier", "ChannelLastModifier", "ChannelFirstModifier",
           "RemoveFunctionModifier", "BatchNormBatchStatModifier", "TestModeModifier",
           "IdentityModifier", "NoGradModifier", "PruningModifier",
           "QuantizeNonQNNToRecordingModifier", "QuantizeRecordingToTrainingModifier"]
