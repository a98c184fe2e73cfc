"""A function's arguments as NNabla 1.39 shows them (``f.info.args``, the profiler CSV's
``args_info`` column), from the attributes Stadyn's op was called with.

NNabla's ``info.args`` lists every argument of the function in its declaration's order, with
the defaults its Python wrapper resolved (a convolution's ``stride`` ``[1, 1]``, a pooling's
``stride`` its kernel, a reduction's ``axes`` every axis, a softmax's ``axis`` the last one),
under its own names (``axes``/``keep_dims`` of ``Sum``, ``Mean``, ``Max``, ``Min``; a batch
normalisation's ``no_scale``/``no_bias``, whether ``gamma``/``beta`` were left out), and its
``float`` arguments (a batch normalisation's ``decay_rate`` and ``eps``, a leaky ReLU's
``alpha``) as the float32 it stores (``0.8999999761581421`` for 0.9).  Stadyn's attributes
that NNabla's function has not (``output_stat``, ``time_constant``, ``scale`` beside
``output_size``, Dropout's ``output_mask``/``train_only``) are left out.  A function not in
:data:`_RULES` shows Stadyn's attributes as they are (nearly all share NNabla's names; checked
against NNabla 1.39 for 69 functions, case ``function_info_args__nnabla_names``).

Example:
    >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
    >>> args = F.max_pooling(nn.Variable((2, 3, 6, 6)), (2, 2)).parent.info.args
    >>> list(args.items())[:4]
    [('kernel', [2, 2]), ('stride', [2, 2]), ('ignore_border', True), ('pad', [0, 0])]
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

__all__ = ["nnabla_args"]


def _f32(value: Any) -> Any:
    return float(np.float32(value)) if isinstance(value, float) else value


def _listed(value: Any) -> Any:
    return [_listed(v) for v in value] if isinstance(value, (tuple, list)) else value


def _ndim(f: Any, k: int = 0) -> int:
    return len(f.inputs[k].shape)


def _spatial(f: Any) -> int:
    """The spatial axes of a convolution: its weight's dimensions less the two of channels."""
    return len(f.inputs[1].shape) - 2


def _or(name: str, default: Callable[[Any, dict], Any]) -> Callable[[Any, dict], Any]:
    def get(f, attrs):
        value = attrs.get(name)
        return default(f, attrs) if value is None else _listed(value)
    return get


def _same(name: str) -> Callable[[Any, dict], Any]:
    return lambda f, attrs: _listed(attrs.get(name))


def _float32(name: str) -> Callable[[Any, dict], Any]:
    return lambda f, attrs: _f32(attrs.get(name))


def _axes(f: Any, attrs: dict) -> list:
    axis = attrs.get("axis", attrs.get("axes"))
    if axis is None:
        return list(range(_ndim(f)))
    return [int(axis)] if isinstance(axis, (int, np.integer)) else [int(a) for a in axis]


def _last_axis(f: Any, attrs: dict) -> int:
    return _ndim(f) - 1


def _left_out(k: int) -> Callable[[Any, dict], bool]:
    """Whether the function's input ``k`` (``beta``, ``gamma``) was not given."""
    return lambda f, attrs: len(f.args) <= k or f.args[k] is None


def _output_size(f: Any, attrs: dict) -> Any:
    size = attrs.get("output_size")
    if size is not None:
        return _listed(size)
    n = len(attrs.get("scale") or ())
    shape = list(f.outputs[0].shape)
    return shape[-n - 1:-1] if attrs.get("channel_last") else shape[-n:]


_CONV = [("base_axis", _same("base_axis")),
         ("pad", _or("pad", lambda f, a: [0] * _spatial(f))),
         ("stride", _or("stride", lambda f, a: [1] * _spatial(f))),
         ("dilation", _or("dilation", lambda f, a: [1] * _spatial(f))),
         ("group", _same("group")), ("channel_last", _same("channel_last"))]
_POOL = [("kernel", _same("kernel")),
         ("stride", _or("stride", lambda f, a: _listed(a["kernel"]))),
         ("ignore_border", _same("ignore_border")),
         ("pad", _or("pad", lambda f, a: [0] * len(a["kernel"]))),
         ("channel_last", _same("channel_last"))]
_REDUCE = [("axes", _axes), ("keep_dims", lambda f, a: bool(a.get("keepdims", False)))]
_INDEXED = _REDUCE + [("with_index", _same("with_index")), ("only_index", _same("only_index"))]
_NORM = [("axes", _same("axes")), ("decay_rate", _float32("decay_rate")),
         ("eps", _float32("eps")), ("batch_stat", _same("batch_stat"))]
_BY_AXIS = [("axis", _or("axis", _last_axis))]

# NNabla's type name -> its arguments in order, each read from the node and its attributes.
_RULES: dict[str, list] = {
    "Convolution": _CONV,
    "Deconvolution": _CONV + [("output_padding",
                               _or("output_padding", lambda f, a: [0] * _spatial(f)))],
    "MaxPooling": _POOL, "SumPooling": _POOL,
    "AveragePooling": _POOL + [("including_pad", _same("including_pad"))],
    "BatchNormalization": _NORM + [("no_scale", _left_out(2)), ("no_bias", _left_out(1))],
    "FusedBatchNormalization": _NORM + [("nonlinearity", _same("nonlinearity"))],
    "LayerNormalization": [("batch_axis", _same("batch_axis")), ("eps", _float32("eps")),
                           ("no_scale", _left_out(2)), ("no_bias", _left_out(1))],
    "LeakyReLU": [("alpha", _float32("alpha")), ("inplace", _same("inplace"))],
    "Sum": _REDUCE, "Mean": _REDUCE, "Prod": _REDUCE,
    "Max": _INDEXED, "Min": _INDEXED,
    "Softmax": _BY_AXIS, "LogSoftmax": _BY_AXIS, "SoftmaxCrossEntropy": _BY_AXIS,
    "CategoricalCrossEntropy": _BY_AXIS,
    "TopNError": _BY_AXIS + [("n", _same("n"))],
    "Flip": [("axes", _or("axes", lambda f, a: [_ndim(f) - 1]))],
    "Slice": [("start", _same("start")), ("stop", _same("stop")),
              ("step", _or("step", lambda f, a: [1] * len(a["start"])))],
    "Dropout": [("p", _same("p")), ("seed", _same("seed"))],
    "SigmoidCrossEntropy": [],
    "Interpolate": [("output_size", _output_size), ("mode", _same("mode")),
                    ("align_corners", _same("align_corners")),
                    ("half_pixel", _same("half_pixel")),
                    ("half_pixel_for_nn", _same("half_pixel_for_nn")),
                    ("channel_last", _same("channel_last"))],
}


def nnabla_args(f: Any, type_name: str, attrs: dict) -> dict:
    """The arguments NNabla 1.39 shows for the function ``f`` of NNabla type ``type_name``
    whose op has attributes ``attrs`` (``rule`` already left out; tuples as lists)."""
    rules = _RULES.get(type_name)
    if rules is None:
        return attrs
    try:
        return {name: get(f, attrs) for name, get in rules}
    except (KeyError, IndexError, TypeError):     # an op called in a way the table misses
        return attrs
