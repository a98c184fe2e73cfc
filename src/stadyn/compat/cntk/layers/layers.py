"""``cntk.layers.layers``: the module CNTK 2.7 defines its basic layers in (``from
cntk.layers.layers import Dense``); the same objects as ``cntk.layers``.

Example:
    >>> import stadyn.compat.cntk as C
    >>> from stadyn.compat.cntk.layers.layers import Dense
    >>> Dense is C.layers.Dense
    True
"""

from . import (Activation, AveragePooling, BatchNormalization, BlockFunction, Constant,
               Convolution, Convolution1D, Convolution2D, Convolution3D, ConvolutionTranspose,
               ConvolutionTranspose1D, ConvolutionTranspose2D, ConvolutionTranspose3D, Dense,
               Dropout, Embedding, Function, GlobalAveragePooling, GlobalMaxPooling, Label,
               LayerNormalization, MaxPooling, MaxUnpooling, NDShape, Parameter,
               PoolingType_Average, PoolingType_Max, Record, SentinelValueForAutoSelectRandomSeed,
               SequentialConvolution, UntestedBranchError, batch_normalization, convolution,
               convolution_transpose, default_override_or, dropout, get_default_override,
               identity, is_default_override, pooling, reduce_mean, reshape, splice, sqrt, times,
               unpooling)

__all__ = ["Activation", "AveragePooling", "BatchNormalization", "BlockFunction", "Constant",
           "Convolution", "Convolution1D", "Convolution2D", "Convolution3D",
           "ConvolutionTranspose", "ConvolutionTranspose1D", "ConvolutionTranspose2D",
           "ConvolutionTranspose3D", "Dense", "Dropout", "Embedding", "Function",
           "GlobalAveragePooling", "GlobalMaxPooling", "Label", "LayerNormalization",
           "MaxPooling", "MaxUnpooling", "NDShape", "Parameter", "PoolingType_Average",
           "PoolingType_Max", "Record", "SentinelValueForAutoSelectRandomSeed",
           "SequentialConvolution", "UntestedBranchError", "batch_normalization", "convolution",
           "convolution_transpose", "default_override_or", "dropout", "get_default_override",
           "identity", "is_default_override", "pooling", "reduce_mean", "reshape", "splice",
           "sqrt", "times", "unpooling"]
