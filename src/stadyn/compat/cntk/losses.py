"""``cntk.losses``: CNTK's losses (one value per sample) and the names its module re-exports.

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> o, t = C.input_variable(2), C.input_variable(2)
    >>> C.losses.squared_error(o, t).eval({o: np.ones((1, 2), np.float32),
    ...                                    t: np.zeros((1, 2), np.float32)}).tolist()
    [2.0]
"""

from ._axis import Axis
from ._function import CloneMethod, Function
from ._ops_hsoftmax import hierarchical_softmax_layer
from ._ops_nce import nce_loss
from ._ops_losses import (binary_cross_entropy, cosine_distance,
                          cosine_distance_with_negative_samples, cross_entropy_with_softmax,
                          fmeasure, squared_error, weighted_binary_cross_entropy)
from ._ops_nn import SentinelValueForAutoSelectRandomSeed as auto_select
from ._ops_ranking import lambda_rank
from ._variables import Constant, Parameter, Variable, parameter
from .ops import softmax, times

__all__ = ["cross_entropy_with_softmax", "squared_error", "binary_cross_entropy",
           "weighted_binary_cross_entropy", "cosine_distance", "fmeasure", "lambda_rank",
           "cosine_distance_with_negative_samples", "hierarchical_softmax_layer", "nce_loss",
           "auto_select", "Axis",
           "CloneMethod",
           "Constant", "Function", "Parameter", "Variable", "parameter", "softmax", "times"]
