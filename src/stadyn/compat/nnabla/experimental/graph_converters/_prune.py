"""``PruningModifier``: the output channels of weights whose squared L2 norm is at most a
threshold set to zero."""

from __future__ import annotations

import numpy as np

from ... import functions as _F
from ..._parameter import get_parameter_or_create
from .....parametric import parameter_scope
from ._graph_converter import FunctionModifier

__all__ = ["PruningModifier"]

_PRUNABLE = {"Affine": _F.affine, "Convolution": _F.convolution,
             "Deconvolution": _F.deconvolution,
             "DepthwiseConvolution": _F.depthwise_convolution,
             "DepthwiseDeconvolution": _F.depthwise_deconvolution}


class PruningModifier(FunctionModifier):
    """Zero the output channels (with their biases) of the weights of ``functions_to_prune``
    whose sum of squares is at most ``pruning_threshold``; the pruned values are new
    parameters ``w-pruned`` / ``b-pruned`` in the weight's scope.  ``channel_last``: a
    deconvolution's output channels are its last weight axis.

    Example:
        >>> import numpy as np
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.parametric_functions as PF
        >>> import stadyn.compat.nnabla.experimental.graph_converters as GC
        >>> x = nn.Variable.from_numpy_array(np.ones((1, 2)))
        >>> y = PF.affine(x * 1.0, 2)
        >>> nn.get_parameters()["affine/W"].d = np.array([[1.0, 0.1], [1.0, 0.1]])
        >>> z = GC.GraphConverter([GC.PruningModifier(0.5)]).convert(y)
        >>> nn.get_parameters()["affine/w-pruned"].d.tolist()
        [[1.0, 0.0], [1.0, 0.0]]
    """

    def __init__(self, pruning_threshold, functions_to_prune=tuple(_PRUNABLE),
                 channel_last=False):
        super().__init__()
        self._threshold = pruning_threshold
        self._channel_last = channel_last
        self._functions = {n: _PRUNABLE[n] for n in functions_to_prune if n in _PRUNABLE}

    def calculate_axis(self, f) -> int:
        """The output-channel axis of ``f``'s weight."""
        name = f.info.type_name
        if name == "Affine":
            return 1
        if name == "Deconvolution":
            return -1 if self._channel_last else 1
        return 0

    def modify(self, f, inputs):
        fn = self._functions.get(f.info.type_name)
        if fn is None:
            return None
        x, w = inputs[0], inputs[1]
        b = inputs[2] if len(inputs) == 3 else None
        axes = list(range(w.ndim))
        axes.pop(self.calculate_axis(f))
        mask = np.sum(w.d ** 2, axis=tuple(axes), keepdims=True) > self._threshold
        with parameter_scope(self.get_parameter_scope(w)):
            w_new = get_parameter_or_create("w-pruned", w.shape, w.d * mask, True, True)
            b_new = None
            if b is not None:
                bd = b.d * mask.reshape((-1,))
                b_new = get_parameter_or_create("b-pruned", bd.shape, bd, True, True)
        return fn(x, w_new, b_new, **f.info.args)
