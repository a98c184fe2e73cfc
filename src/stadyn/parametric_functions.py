"""``stadyn.parametric_functions`` (``PF``): layers that own parameters, NNabla's names.

Example:
    >>> import stadyn as sd, stadyn.parametric_functions as PF
    >>> with sd.parameter_registry(sd.ParameterRegistry()), sd.parameter_scope("fc"):
    ...     PF.affine(sd.Variable((4, 3)), 2).shape
    (4, 2)
"""

from .parametric._pf import (affine, batch_normalization, convolution, deconvolution, embed,
                             fused_batch_normalization, sync_batch_normalization)
# (the parameters a batch normalisation makes, alone: for front ends, not a PF function, so
# not in __all__, which compat.nnabla's PF copies)
from .parametric._pf import batch_normalization_parameters  # noqa: F401
from .parametric._pf_more import (depthwise_convolution, group_normalization,
                                  instance_normalization, layer_normalization, prelu,
                                  spectral_norm)
from .parametric._pf_binary import (binary_connect_affine, binary_connect_convolution,
                                    binary_weight_affine, binary_weight_convolution)
from .parametric._pf_quantized import (fixed_point_quantized_affine,
                                       fixed_point_quantized_convolution, min_max_quantize,
                                       min_max_quantized_affine, min_max_quantized_convolution,
                                       pow2_quantized_affine, pow2_quantized_convolution)
from .parametric._pf_inq import inq_affine, inq_convolution
from .parametric._pf_rnn import gru, lstm, lstm_cell, rnn
from .parametric._pf_lowrank import cpd3_convolution, svd_affine, svd_convolution
from .parametric._pf_pruned import pruned_affine, pruned_convolution
from .parametric._pf_conv import deformable_convolution, depthwise_deconvolution

__all__ = ["affine", "convolution", "deconvolution", "batch_normalization",
           "fused_batch_normalization", "sync_batch_normalization", "embed",
           "layer_normalization", "instance_normalization",
           "group_normalization", "prelu", "depthwise_convolution", "spectral_norm", "lstm_cell",
           "lstm", "gru", "rnn", "binary_connect_affine", "binary_weight_affine",
           "binary_connect_convolution", "binary_weight_convolution",
           "fixed_point_quantized_affine", "fixed_point_quantized_convolution",
           "pow2_quantized_affine", "pow2_quantized_convolution", "min_max_quantize",
           "min_max_quantized_affine", "min_max_quantized_convolution"]
# NNabla's low-rank and pruned layers
__all__ += ["svd_affine", "svd_convolution", "cpd3_convolution", "pruned_affine",
            "pruned_convolution"]
__all__ += ["depthwise_deconvolution", "deformable_convolution"]
# NNabla's incremental network quantisation layers
__all__ += ["inq_affine", "inq_convolution"]
