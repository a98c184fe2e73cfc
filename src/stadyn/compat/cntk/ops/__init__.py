"""``cntk.ops``: CNTK's ops on Stadyn's op catalog.

Axes are per sample, as CNTK's Python shows shapes (row-major; ``axis=0`` is a sample's first
axis, Stadyn's axis 1 behind the batch axis); binary ops broadcast with the sample axes aligned
on the right and the batch axis apart.  The ops are in ``_ops_math`` (element-wise),
``_ops_shape`` (shapes), ``_ops_select`` (slice, gather), ``_ops_times`` (products),
``_ops_reduce`` (reductions, softmax), ``_ops_nn`` (convolution, pooling, normalisation) and
``_ops_losses`` (losses and metrics).

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> x = C.input_variable((2, 3))
    >>> f = C.reduce_mean(C.softmax(x, axis=1) * 3.0, axis=0)
    >>> f.shape, f.eval(np.zeros((1, 2, 3), np.float32)).tolist()
    ((1, 3), [[[1.0, 1.0, 1.0]]])
"""

import sys

from .._assign import assign
from .._axis import Axis
from .._ops_crop import crop_manual, roipooling
from .._ops_crop_auto import crop_automatic, crop_automatic_with_ancestors
from .._ops_ctc import forward_backward, labels_to_graph
from .._ops_sampling import random_sample, random_sample_inclusion_frequency
from .._defaults import default_override_or, get_default_override
from .._blocks import BlockFunction, as_block, as_composite
from .._renaming import refuse_name
from .._function import CloneMethod, Function, ModelFormat, combine_outputs, load_model
from .._ops_losses import (binary_cross_entropy, classification_error, cosine_distance,
                          cross_entropy_with_softmax, fmeasure, squared_error,
                          weighted_binary_cross_entropy)
from .._ops_act_blocks import elu, hard_sigmoid, leaky_relu, param_relu, selu, softplus
from .._ops_math import (abs, acos, alias, asin, asinh, associative_multi_arg, atan, atanh, cast,
                        ceil, clip, cos, cosh, element_and, element_divide, element_max,
                        element_min, element_not, element_or, element_select, element_times,
                        element_xor, equal, exp, floor, greater, greater_equal,
                        less, less_equal, log, log_add_exp, mean,
                        minus, negate, not_equal, plus, pow, reciprocal, relu,
                        round, sigmoid, sin, sinh, softsign, sqrt, square,
                        stop_gradient, straight_through_impl, sum, tan, tanh)
from .._ops_nn import (AVG_POOLING, MAX_POOLING, MAX_UNPOOLING, PoolingType_Average,
                      PoolingType_Max, SentinelValueForAutoSelectRandomSeed, batch_normalization,
                      convolution, convolution_transpose, dropout, image_scaler,
                      local_response_normalization, mean_variance_normalization,
                      per_dim_mean_variance_normalize, pooling, unpooling)
from .._ops_reduce import (argmax, argmin, hardmax, log_softmax, reduce_l1, reduce_l2,
                          reduce_log_sum_exp, reduce_max, reduce_mean, reduce_min, reduce_prod,
                          reduce_sum, reduce_sum_square, softmax, top_k)
from .._ops_shape import (CONSTANT_PAD, REFLECT_PAD, SYMMETRIC_PAD, TIMES_NO_INFERRED_INPUT_RANK,
                         TIMES_REDUCE_SEQUENCE_AXIS_WITHOUT_INFERRED_INPUT_RANK, depth_to_space,
                         expand_dims, eye_like, flatten, one_hot, ones_like, pad,
                         reconcile_dynamic_axes, reshape, space_to_depth, splice,
                         squeeze, swapaxes, to_batch, transpose, unpack_batch, zeros_like)
from .._ops_select import gather, slice
from .._ops_times import times, times_transpose
from .._variables import (constant, input_variable, output_variable, parameter, placeholder)
from .._ops_sequence import to_sequence, to_sequence_like
from ..device import use_default_device
from ..io import INFINITELY_REPEAT

from . import functions  # noqa: E402
from .._late import bind as _bind
from .._adapt import adapt as _adapt_rnnstack
from .._deferrable import deferrable as _deferrable
from ....sequence import optimized_rnnstack as _sd_sequence_ors
from .._inferred_parameters import infer_rnnstack as _infer_rnnstack
import functools as _functools  # noqa: E402
import inspect as _inspect  # noqa: E402

input = input_variable  # noqa: A001 - CNTK's name
# (seq-engine) CNTK's cuDNN RNN stack; not in __all__ until tests/compat has a case for it
_rnnstack = _adapt_rnnstack(_sd_sequence_ors, op="OptimizedRNNStack")


@_functools.wraps(_sd_sequence_ors)
def optimized_rnnstack(*args, **kwargs):
    """CNTK's cuDNN RNN stack (``stadyn.sequence.optimized_rnnstack``); weights made with
    ``InferredDimension`` take their shape from the operand first, as CNTK 2.7 infers them."""
    call = _inspect.signature(_sd_sequence_ors).bind_partial(
        *args, **{k: v for k, v in kwargs.items() if k != "name"})
    if {"x", "weights", "hidden_size"} <= set(call.arguments):
        _infer_rnnstack(*(call.arguments.get(k, default) for k, default in (
            ("x", None), ("weights", None), ("hidden_size", 1), ("num_layers", 1),
            ("bidirectional", False), ("recurrent_op", "lstm"))))
    return _rnnstack(*args, **kwargs)


def combine(*operands, name: str = ""):
    """Several Functions' outputs as one Function: ``.outputs`` lists them, ``eval`` returns
    ``{output: value}``.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> x = C.input_variable(2)
        >>> g = C.combine([C.relu(x), C.sigmoid(x)])
        >>> len(g.outputs), len(g.eval(np.zeros((1, 2), np.float32)))
        (2, 2)
    """
    refuse_name(name, "combine")
    items = []
    for op in operands:
        items.extend(op if isinstance(op, (list, tuple)) else [op])
    return combine_outputs(items, name)


combine.combines_outputs = True     # (a waiting combine's outputs are its operands', _deferred)
combine = _deferrable(combine)       # of ops waiting for their placeholders' shapes: waits too


__all__ = [
    "Axis", "BlockFunction", "CloneMethod", "Function", "ModelFormat", "as_block",
    "as_composite", "combine", "load_model", "functions", "default_override_or",
    "get_default_override",
    "use_default_device", "INFINITELY_REPEAT",
    "input_variable", "input", "output_variable", "placeholder", "parameter", "constant",
    "assign",
    # element-wise
    "abs", "acos", "alias", "asin", "asinh", "associative_multi_arg", "atan", "atanh", "cast",
    "ceil", "clip", "cos", "cosh", "element_and", "element_divide", "element_max", "element_min",
    "element_not", "element_or", "element_select", "element_times", "element_xor", "elu",
    "equal", "exp", "floor", "greater", "greater_equal", "hard_sigmoid", "leaky_relu", "less",
    "less_equal", "log", "log_add_exp", "mean", "minus", "negate", "not_equal", "param_relu",
    "plus", "pow", "reciprocal", "relu", "round", "selu", "sigmoid", "sin", "sinh", "softplus",
    "softsign", "sqrt", "square", "stop_gradient", "straight_through_impl", "sum", "tan",
    "tanh",
    # shapes and products
    "CONSTANT_PAD", "REFLECT_PAD", "SYMMETRIC_PAD", "TIMES_NO_INFERRED_INPUT_RANK",
    "TIMES_REDUCE_SEQUENCE_AXIS_WITHOUT_INFERRED_INPUT_RANK", "depth_to_space", "expand_dims",
    "eye_like", "flatten", "gather", "one_hot", "ones_like", "pad", "reconcile_dynamic_axes",
    "reshape", "slice", "space_to_depth", "splice", "squeeze", "swapaxes", "times",
    "times_transpose", "to_batch", "transpose", "unpack_batch", "zeros_like",
    "to_sequence", "to_sequence_like",
    # reductions
    "argmax", "argmin", "hardmax", "log_softmax", "reduce_l1", "reduce_l2", "reduce_log_sum_exp",
    "reduce_max", "reduce_mean", "reduce_min", "reduce_prod", "reduce_sum", "reduce_sum_square",
    "softmax", "top_k",
    # networks
    "AVG_POOLING", "MAX_POOLING", "MAX_UNPOOLING", "PoolingType_Average", "PoolingType_Max",
    "SentinelValueForAutoSelectRandomSeed", "batch_normalization", "convolution",
    "crop_manual", "crop_automatic", "crop_automatic_with_ancestors", "roipooling",
    "random_sample", "random_sample_inclusion_frequency",
    "convolution_transpose", "dropout", "image_scaler", "local_response_normalization",
    "mean_variance_normalization", "per_dim_mean_variance_normalize", "pooling", "unpooling",
    # losses and metrics
    "binary_cross_entropy", "classification_error", "cosine_distance",
    "cross_entropy_with_softmax", "fmeasure", "squared_error", "weighted_binary_cross_entropy",
    "forward_backward", "labels_to_graph",
]

_bind(ops=sys.modules[__name__])     # the operators of Functions and Variables (_mixins)
