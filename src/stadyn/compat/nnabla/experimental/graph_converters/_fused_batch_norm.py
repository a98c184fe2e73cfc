"""``BatchNormalization -> Add2 -> ReLU`` fused into one ``FusedBatchNormalization``, and
back (``FusedBatchNormalizationModifier``, ``UnfusedBatchNormalizationModifier``).

As in NNabla 1.39 the new batch normalisations are made by the parametric functions, so they
get new parameters with the initial values (beta 0, gamma 1, mean 0, variance 1): the fused
block's in scope ``fused-<i>``, the unfused one's in the current scope (``bn``).
"""

from __future__ import annotations

from ... import functions as _F
from ... import parametric_functions as _PF
from ._graph_converter import FunctionModifier

__all__ = ["FusedBatchNormalizationModifier", "UnfusedBatchNormalizationModifier"]

_NONLINEAR = {"ReLU": "relu"}


class FusedBatchNormalizationModifier(FunctionModifier):
    """Fuse each ``BatchNormalization -> Add2 -> ReLU`` block into a
    ``FusedBatchNormalization`` (new parameters: see the module docstring).

    Example:
        >>> import numpy as np
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> import stadyn.compat.nnabla.parametric_functions as PF
        >>> import stadyn.compat.nnabla.experimental.graph_converters as GC
        >>> x = nn.Variable.from_numpy_array(np.ones((2, 3, 2, 2)))
        >>> h = x * 1.0
        >>> y = F.relu(F.add2(PF.batch_normalization(h), h)) * 1.0
        >>> z = GC.GraphConverter([GC.FusedBatchNormalizationModifier()]).convert(y)
        >>> names = []; z.visit(lambda f: names.append(f.info.type_name)); names
        ['MulScalar', 'FusedBatchNormalization', 'MulScalar']
    """

    def __init__(self):
        super().__init__()
        self.__finish__()

    def _is_fused_bn_block(self, f) -> bool:
        nxt = f.outputs[0].function_references[0]
        after = nxt.outputs[0].function_references
        return (bool(after) and f.info.type_name == "BatchNormalization"
                and nxt.info.type_name == "Add2" and after[0].info.type_name in _NONLINEAR)

    def modify(self, f, inputs):
        if not f.outputs[0].function_references:
            return None
        if not self._block and self._is_fused_bn_block(f):
            self._block = True
        if not self._block:
            return None
        name = f.info.type_name
        if name == "BatchNormalization":
            self._bn_args = f.info.args
            self._name = self.get_parameter_scope(inputs[0])
            return inputs[0]
        if name == "Add2":
            self._add2_input1 = inputs[1]
            return inputs[0]
        if name in _NONLINEAR:
            out = _PF.fused_batch_normalization(
                inputs[0], self._add2_input1, nonlinearity=_NONLINEAR[name], **self._bn_args,
                name=f"fused{self._name}-{self._cnt}")
            self._cnt += 1
            self._block = False
            return out
        return None

    def __finish__(self):
        self._name = ""
        self._block = False
        self._bn_args = None
        self._add2_input1 = None
        self._cnt = 1


class UnfusedBatchNormalizationModifier(FunctionModifier):
    """Replace each ``FusedBatchNormalization`` by ``BatchNormalization`` (new parameters:
    see the module docstring), the ``Add2`` of its second input when it has one, and its
    non-linearity (``relu``).

    Example:
        >>> import numpy as np
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.parametric_functions as PF
        >>> import stadyn.compat.nnabla.experimental.graph_converters as GC
        >>> x = nn.Variable.from_numpy_array(np.ones((2, 3, 2, 2)))
        >>> h = x * 1.0
        >>> y = PF.fused_batch_normalization(h, h, name="fbn")
        >>> z = GC.GraphConverter([GC.UnfusedBatchNormalizationModifier()]).convert(y)
        >>> names = []; z.visit(lambda f: names.append(f.info.type_name)); names
        ['MulScalar', 'BatchNormalization', 'Add2', 'ReLU']
    """

    _FUNCTIONS = {"relu": _F.relu}

    def modify(self, f, inputs):
        if f.info.type_name != "FusedBatchNormalization":
            return None
        args = dict(f.info.args)
        nonlinearity = self._FUNCTIONS[args.pop("nonlinearity")]
        h = _PF.batch_normalization(inputs[0], **args)
        return nonlinearity(h) if len(inputs) == 5 else nonlinearity(inputs[5] + h)
