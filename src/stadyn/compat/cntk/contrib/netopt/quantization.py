"""CNTK 2.7's ``cntk.contrib.netopt.quantization``: a model's ``Convolution`` layers made to
convolve 1-bit weights with 1-bit inputs (``convert_to_binary_convolution``, trainable),
to be retrained and then lowered to a native binary convolution.

The lowering (``convert_to_native_binary_convolution``, and so ``binarize_convolution``'s
last step) needs CNTK's Halide-built plugin ``Cntk.BinaryConvolution-2.7.so``, which CNTK 2.7
itself fails to load without Halide's library (``Plugin not found``); Stadyn has no such
kernel and says so.

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> import stadyn.compat.cntk.contrib.netopt.quantization as cq
    >>> x = C.input_variable((1, 6, 6))
    >>> z = C.layers.Convolution2D((3, 3), 2, pad=True, init=C.glorot_uniform(seed=1))(x)
    >>> binz = cq.convert_to_binary_convolution(z)
    >>> is_block = lambda f: type(f) is C.Function and f.is_block
    >>> [f.op_name for f in C.logging.graph.depth_first_search(binz, is_block)], binz.shape
    (['BinaryConvolution'], (2, 6, 6))
"""

from __future__ import annotations

from .....graph import topological_nodes
from ... import ops as _ops
from ..._adapt import unwrap
from ..._clone import rebuild
from ..._function import Function
from ..._graph import BLOCKS
from ...initializer import glorot_uniform
from ...variables import Parameter
from ._binarized import binarized
from ._convert import convert

__all__ = ["binarize_convolution", "convert_to_binary_convolution",
           "convert_to_native_binary_convolution", "binary_convolution"]


def binarize_convolution(model, train_function, filter_function=None):
    """``model`` binarised (:func:`convert_to_binary_convolution`), given to
    ``train_function`` to retrain it, then lowered to native binary convolutions
    (:func:`convert_to_native_binary_convolution`).  As CNTK 2.7's, every ``Convolution``
    layer is binarised: ``filter_function`` is taken and not used.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> z = C.layers.Convolution2D((3, 3), 2)(C.input_variable((1, 6, 6)))
        >>> binarize_convolution(z, lambda model: None)
        Traceback (most recent call last):
        ...
        NotImplementedError: convert_to_native_binary_convolution: ...
    """
    if not train_function:
        raise ValueError("binarize_convolution: a train_function is needed (it retrains the "
                         "binarised model before it is lowered)")
    binary = convert_to_binary_convolution(model)
    train_function(binary)
    return convert_to_native_binary_convolution(binary)


def convert_to_native_binary_convolution(model):
    """CNTK 2.7 replaces each ``BinaryConvolution`` block of ``model`` by its native,
    Halide-built ``BinaryConvolveOp`` (forward only; sign bits packed 64 to a word); Stadyn
    has no such kernel: this raises ``NotImplementedError`` (evaluate the model
    :func:`convert_to_binary_convolution` gave instead).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> z = C.layers.Convolution2D((3, 3), 2)(C.input_variable((1, 6, 6)))
        >>> convert_to_native_binary_convolution(convert_to_binary_convolution(z))
        Traceback (most recent call last):
        ...
        NotImplementedError: convert_to_native_binary_convolution: ...
    """
    raise NotImplementedError(
        "convert_to_native_binary_convolution: CNTK's native binary convolution is a Halide "
        "plugin (Cntk.BinaryConvolution-2.7.so, which CNTK 2.7 itself loads only beside "
        "Halide's library); Stadyn has no such kernel -- evaluate the model "
        "convert_to_binary_convolution gave (it computes the binarised convolution)")


def _is_convolution_layer(f, filter_function) -> bool:
    return (type(f) is Function and f.is_block and f.op_name == "Convolution"
            and (filter_function(f) if filter_function else True))


def convert_to_binary_convolution(model, filter_function=None):
    """``model`` with the convolution inside each ``Convolution`` layer that
    ``filter_function`` accepts (all, without one) replaced by a ``BinaryConvolution`` block
    (:func:`binary_convolution`: new weights, glorot-initialised, as CNTK 2.7's), the
    layer's bias and activation applied after it as before; the layer is no block any more.
    Layers need square strides and the same padding on both spatial axes.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> x = C.input_variable((1, 6, 6))
        >>> h = C.layers.Convolution2D((3, 3), 2, name="first_conv")(x)
        >>> z = C.layers.Convolution2D((3, 3), 4, name="second_conv")(h)
        >>> binz = convert_to_binary_convolution(z, lambda f: f.name != "first_conv")
        >>> is_block = lambda f: type(f) is C.Function and f.is_block
        >>> [(f.op_name, f.name) for f in C.logging.graph.depth_first_search(binz, is_block)]
        [('BinaryConvolution', ''), ('Convolution', 'first_conv')]
    """
    return convert(model, lambda f: _is_convolution_layer(f, filter_function),
                   _binary_layer)


def _binary_layer(layer):
    """``layer`` (a Convolution block) computed with a binary convolution of its input."""
    out = unwrap(layer.output)
    inputs = {id(unwrap(a)) for a in layer.inputs}
    node = next((n for n in topological_nodes([out]) if n.spec.name == "convolution"
                 and any(id(i) in inputs for i in n.inputs)), None)
    if node is None:
        raise ValueError(f"convert_to_binary_convolution: the Convolution layer "
                         f"{layer.name!r} has no convolution inside it to binarise")
    stride, pad = node.kwargs["stride"], node.kwargs["pad"]
    if len(set(stride)) != 1 or len(set(pad)) != 1:
        raise ValueError(f"convert_to_binary_convolution: the Convolution layer "
                         f"{layer.name!r} needs square strides and padding (strides "
                         f"{tuple(stride)}, padding {tuple(pad)})")
    W = layer.W
    num_filters, channels = W.shape[0], W.shape[1]
    binary = binary_convolution(tuple(W.shape[-2:]), num_filters=num_filters,
                                channels=channels, strides=stride[-1], pad=pad[-1] > 0,
                                name="BinaryConvolution")(layer.inputs[-1])
    names = [i.name for i in layer.inputs]
    replacement = binary + layer.b if "b" in names else binary
    conv_out = next(o for o in node.outputs if o is not None)
    new = rebuild([out], {conv_out: unwrap(replacement.output)}, "share")[0]
    if new is not unwrap(replacement.output):
        BLOCKS.pop(new, None)           # (the layer is no block any more, as in CNTK 2.7)
    return Function(new)


def binary_convolution(filter_shape, num_filters=1, channels=1, init=glorot_uniform(),
                       pad=False, strides=1, name="BinaryConvolution"):
    """A layer convolving its input with ``num_filters`` filters of ``filter_shape`` over
    ``channels`` channels, weights (the parameter ``filter``) and input binarised to one bit
    scaled by their mean magnitude (:func:`~._binarized.binarized`; trained through the
    straight-through gradient); shown as one block named ``name``.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> x = C.input_variable((1, 3, 3))
        >>> f = binary_convolution((3, 3), num_filters=1, channels=1, init=1.0)(x)
        >>> data = np.array([[[[1, -1, 2], [0, 3, 1], [-2, 1, 1]]]], np.float32)
        >>> f.eval({x: data}).tolist()     # mean |x| = 4/3; 6 positive, 3 not: 4/3 * 3
        [[[[4.0]]]]
    """
    W = Parameter((num_filters, channels) + tuple(filter_shape), init=init, name="filter")

    def convolution(operand):
        p = _ops.placeholder(operand.shape, operand.dynamic_axes, name="operand")
        inside = _ops.convolution(binarized(W), binarized(p), auto_padding=[False, pad, pad],
                                  strides=[strides])
        return _ops.as_block(inside, [(p, operand)], name)
    return convolution
