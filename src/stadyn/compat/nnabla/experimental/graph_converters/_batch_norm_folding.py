"""Batch normalisation folded away: into the weights of the convolution, deconvolution or
affine next to it (``BatchNormalizationFoldingModifier``, with ``AddBiasModifier`` first), or
into a scale and a shift (``BatchNormalizationSelfFoldingModifier``).

The folded values are NNabla 1.39's: ``c0 = gamma / sqrt(var + eps)``, ``c1 = beta - c0 *
mean``; the weight becomes ``c0 * W`` and the bias ``c1 + c0 * b``, stored as new parameters
``w-folded`` / ``b-folded`` in the weight's scope.
"""

from __future__ import annotations

import numpy as np

from ... import functions as _F
from ..._parameter import get_parameter_or_create
from .....parametric import parameter_scope
from ._graph_converter import FunctionModifier

__all__ = ["AddBiasModifier", "BatchNormalizationFoldingModifierInner",
           "BatchNormalizationFoldingOppositeModifierInner",
           "BatchNormalizationFoldingModifier", "BatchNormalizationSelfFoldingModifier"]

_PRODUCTS = {"Affine": _F.affine, "Convolution": _F.convolution,
             "Deconvolution": _F.deconvolution}


def _type(f) -> str | None:
    return None if f is None else f.info.type_name


def _connect(f, x, w, b):
    """``f``'s product (affine, convolution, deconvolution) of ``x`` with ``w`` and ``b``."""
    return _PRODUCTS[f.info.type_name](x, w, b, **f.info.args)


def _bn_values(bn):
    """Copies of a batch normalisation's beta, gamma, mean and variance, and its eps."""
    return [v.d.copy() for v in bn.inputs[1:5]], bn.info.args["eps"]


def _scale_and_shift(beta, gamma, mean, var, eps):
    """The batch normalisation as ``c0 * x + c1``: ``c0 = gamma / sqrt(var + eps)``, ``c1 =
    beta - gamma * mean / sqrt(var + eps)``."""
    std = np.sqrt(var + eps)
    return gamma / std, beta - (gamma * mean) / std


def _channels_first(bn_parameters, channel_last):
    """``bn_parameters`` with their channel axis (1, or the last for ``channel_last``) swapped
    with axis 0, to broadcast along a convolution weight's first axis."""
    axes = list(range(bn_parameters[0].ndim))
    other = -1 if channel_last else 1
    axes[0], axes[other] = axes[other], axes[0]
    return [np.transpose(p, axes) for p in bn_parameters]


class _FoldingInner(FunctionModifier):
    """What the two folding directions share: the layout flag and the folded constants."""

    def __init__(self, channel_last=False):
        super().__init__()
        self._channel_last = channel_last

    def _folding_constants(self, ip_func, bn_func):
        """``c0``, ``c1`` of ``bn_func``, laid out by ``reshape_bn_parameters`` for
        ``ip_func``'s weight."""
        values, eps = _bn_values(bn_func)
        beta, gamma, mean, var = self.reshape_bn_parameters(ip_func, values,
                                                            self._channel_last)
        return _scale_and_shift(beta, gamma, mean, var, eps)


class AddBiasModifier(FunctionModifier):
    """Give a convolution, deconvolution or affine next to a batch normalisation a bias
    (zeros, parameter ``b`` in its weight's scope) when it has none.

    Example:
        >>> import numpy as np
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.parametric_functions as PF
        >>> import stadyn.compat.nnabla.experimental.graph_converters as GC
        >>> x = nn.Variable.from_numpy_array(np.ones((1, 2, 4, 4)))
        >>> y = PF.batch_normalization(PF.convolution(x * 1.0, 3, (3, 3), with_bias=False))
        >>> y = GC.GraphConverter([GC.AddBiasModifier()]).convert(y)
        >>> len(y.parent.inputs[0].parent.inputs), "conv/b" in nn.get_parameters()
        (3, True)
    """

    def modify(self, f, inputs):
        name = f.info.type_name
        if name not in _PRODUCTS:
            return None
        after = f.outputs[0].function_references
        if _type(f.inputs[0].parent) != "BatchNormalization" and \
                (not after or _type(after[0]) != "BatchNormalization"):
            return None
        if len(inputs) == 3:
            return None
        x, w = inputs[0], inputs[1]
        n_out = w.shape[1] if name == "Affine" else w.shape[0]
        with parameter_scope(self.get_parameter_scope(w)):
            b = get_parameter_or_create("b", (n_out,), np.zeros((n_out,), np.float32),
                                        True, True)
        return _connect(f, x, w, b)


class BatchNormalizationFoldingModifierInner(_FoldingInner):
    """Fold each batch normalisation that follows a convolution, deconvolution or affine (as
    the only reader of its output) into that function's weight and bias; run after
    :class:`AddBiasModifier` (``BatchNormalizationFoldingModifier`` pairs them).

    Example:
        >>> import stadyn.compat.nnabla.experimental.graph_converters as GC
        >>> GC.BatchNormalizationFoldingModifierInner(channel_last=False)._channel_last
        False
    """

    def modify(self, f, inputs):
        after = f.outputs[0].function_references
        if not after:
            return None
        if f.info.type_name == "BatchNormalization" and \
                _type(inputs[0].parent) in _PRODUCTS:
            return inputs[0]
        if _type(after[0]) != "BatchNormalization" or len(after) != 1 or \
                f.info.type_name not in _PRODUCTS:
            return None
        w_data, b_data = self._compute_folded_parameters(f, after[0])
        with parameter_scope(self.get_parameter_scope(inputs[1])):
            w = get_parameter_or_create("w-folded", inputs[1].shape, w_data,
                                        inputs[1].need_grad)
            b = get_parameter_or_create("b-folded", inputs[2].shape, b_data,
                                        inputs[2].need_grad)
        return _connect(f, inputs[0], w, b)

    def reshape_bn_parameters(self, ip_func, bn_parameters, channel_last):
        """The batch normalisation's parameters laid out to broadcast with the weight: a
        convolution's output maps are its first axis (from axis 1, or the last one for
        ``channel_last``), an affine's its second."""
        if ip_func.info.type_name == "Convolution":
            return _channels_first(bn_parameters, channel_last)
        if ip_func.info.type_name == "Affine":
            return [p.reshape(p.shape[1], p.shape[0]) for p in bn_parameters]
        return bn_parameters

    def _compute_folded_parameters(self, ip_func, bn_func):
        c0, b_data = self._folding_constants(ip_func, bn_func)
        w_data = c0 * ip_func.inputs[1].d
        if len(ip_func.inputs) == 3:
            b_data += c0 * ip_func.inputs[2].d.reshape(b_data.shape)
        return w_data, np.squeeze(b_data)


class BatchNormalizationFoldingOppositeModifierInner(_FoldingInner):
    """Fold each batch normalisation that precedes a convolution, deconvolution or affine
    into that function's weight and bias (NNabla writes the folded values into the existing
    weight and bias parameters; so does this).

    Example:
        >>> import stadyn.compat.nnabla.experimental.graph_converters as GC
        >>> GC.BatchNormalizationFoldingOppositeModifierInner()._channel_last
        False
    """

    def modify(self, f, inputs):
        after = f.outputs[0].function_references
        if not after:
            return None
        before = f.inputs[0].parent
        if f.info.type_name != "BatchNormalization" and \
                _type(before) != "BatchNormalization":
            return None
        if f.info.type_name == "BatchNormalization" and \
                any(_type(g) in _PRODUCTS for g in after):
            return inputs[0]
        if len(after) != 1 or f.info.type_name not in _PRODUCTS:
            return None
        w_data, b_data = self._compute_folded_parameters(f, before)
        f.inputs[1].d = w_data
        f.inputs[2].d = b_data
        return _connect(f, inputs[0], f.inputs[1], f.inputs[2])

    def reshape_bn_parameters(self, ip_func, bn_parameters, channel_last):
        """The batch normalisation's parameters laid out along the weight's input axis."""
        if ip_func.info.type_name == "Deconvolution":
            return _channels_first(bn_parameters, channel_last)
        if ip_func.info.type_name == "Affine":
            return [p.reshape(p.shape[1], p.shape[0], 1, 1) for p in bn_parameters]
        return bn_parameters

    def _compute_folded_parameters(self, ip_func, bn_func):
        c0, c1 = self._folding_constants(ip_func, bn_func)
        name = ip_func.info.type_name
        w_data = ip_func.inputs[1].d
        if name == "Affine":
            d0, d1, d2 = bn_func.inputs[0].shape[1:]
            d3 = w_data.shape[1:]
            w_data = np.reshape(w_data, (d0, d1, d2) + tuple(d3))
        w_data = c0 * w_data
        b_data = w_data * c1
        if name == "Affine":
            w_data = np.reshape(w_data, (-1,) + tuple(d3))
            reduce = (0, 1, 2)
        elif name == "Deconvolution":
            reduce = tuple(range(w_data.ndim - 1)) if self._channel_last else \
                (0,) + tuple(range(2, w_data.ndim))
        else:
            reduce = tuple(range(1, w_data.ndim))
        b_data = np.sum(b_data, reduce)
        if len(ip_func.inputs) == 3:
            b_data += ip_func.inputs[2].d
        return w_data, b_data


class BatchNormalizationFoldingModifier:
    """The modifiers that fold batch normalisation into the neighbouring convolution,
    deconvolution or affine: ``[AddBiasModifier(), BatchNormalizationFoldingModifierInner()]``
    (``opposite=True``: the batch normalisation before the function instead).

    Example:
        >>> import numpy as np
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.parametric_functions as PF
        >>> import stadyn.compat.nnabla.experimental.graph_converters as GC
        >>> x = nn.Variable.from_numpy_array(np.ones((1, 2, 4, 4)))
        >>> y = PF.batch_normalization(PF.convolution(x * 1.0, 3, (3, 3)), batch_stat=False)
        >>> z = GC.GraphConverter(GC.BatchNormalizationFoldingModifier()).convert(y)
        >>> y.forward(); z.forward(); z.parent.info.type_name, np.allclose(y.d, z.d, atol=1e-6)
        ('Convolution', True)
    """

    def __new__(cls, opposite=False, channel_last=False):
        inner = BatchNormalizationFoldingOppositeModifierInner if opposite else \
            BatchNormalizationFoldingModifierInner
        return [AddBiasModifier(), inner(channel_last=channel_last)]


class BatchNormalizationSelfFoldingModifier(FunctionModifier):
    """Replace each batch normalisation by ``c0 * x + c1`` with its running statistics
    folded into new parameters ``c0-<name>-<i>`` and ``c1-<name>-<i>`` in scope ``name``.

    Example:
        >>> import numpy as np
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.parametric_functions as PF
        >>> import stadyn.compat.nnabla.experimental.graph_converters as GC
        >>> x = nn.Variable.from_numpy_array(np.ones((2, 3)))
        >>> y = PF.batch_normalization(x * 2.0, batch_stat=False, name="bn1d")
        >>> z = GC.GraphConverter([GC.BatchNormalizationSelfFoldingModifier()]).convert(y)
        >>> names = []; z.visit(lambda f: names.append(f.info.type_name)); names
        ['MulScalar', 'Mul2', 'Add2']
    """

    def __init__(self, name="bn-self-folding"):
        super().__init__()
        self._cnt = 0
        self._name = name

    def modify(self, f, inputs):
        if f.info.type_name != "BatchNormalization":
            return None
        with parameter_scope(self._name):
            out = self._compute_self_folded_parameters(f, inputs, self._cnt)
        self._cnt += 1
        return out

    def _compute_self_folded_parameters(self, bn_func, inputs, cnt):
        values, eps = _bn_values(bn_func)
        c0_data, c1_data = _scale_and_shift(*[np.squeeze(v) for v in values], eps)
        shape = bn_func.inputs[1].shape
        c0_data, c1_data = c0_data.reshape(shape), c1_data.reshape(shape)
        c0 = get_parameter_or_create(f"c0-{self._name}-{cnt}", c0_data.shape, c0_data)
        c1 = get_parameter_or_create(f"c1-{self._name}-{cnt}", c1_data.shape, c1_data)
        return c0 * inputs[0] + c1

    def __finish__(self):
        self._cnt = 0
        self._name = "bn-self-folding"
