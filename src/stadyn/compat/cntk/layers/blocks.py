"""``cntk.layers.blocks``: the module CNTK 2.7 defines its recurrent blocks and their helpers
in (``from cntk.layers.blocks import LSTM``); the same objects as ``cntk.layers``.

Example:
    >>> import stadyn.compat.cntk as C
    >>> from stadyn.compat.cntk.layers.blocks import LSTM, Stabilizer
    >>> LSTM is C.layers.LSTM and Stabilizer is C.layers.Stabilizer
    True
"""

from . import (GRU, LSTM, BlockFunction, Constant, ForwardDeclaration, Function,
               InferredDimension, Parameter, RNNStep, RNNUnit, Stabilizer, UntestedBranchError,
               alias, combine, default_override_or, get_default_override, glorot_uniform,
               identity, placeholder, sigmoid, slice, softplus, tanh, times)

__all__ = ["BlockFunction", "Constant", "ForwardDeclaration", "Function", "GRU",
           "InferredDimension", "LSTM", "Parameter", "RNNStep", "RNNUnit", "Stabilizer",
           "UntestedBranchError", "alias", "combine", "default_override_or",
           "get_default_override", "glorot_uniform", "identity", "placeholder", "sigmoid", "slice",
           "softplus", "tanh", "times"]
