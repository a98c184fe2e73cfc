"""``F.*(..., outputs=[nd, ...])``: a function's outputs hold the ``nn.NdArray``s given, as
NNabla 1.39's (checked there: a static graph's ``y.forward()`` writes into ``nd``, a dynamic
one's (``nn.auto_forward()``) and an imperative call's (NdArray inputs) have written into it when
the call returns; ``y.d`` and ``nd.data`` are one array).  An array of another size is NNabla's
RuntimeError, anything but an NdArray its TypeError; arrays past the function's outputs are left
alone.  NNabla 1.39's functions written in Python over others, and a few more, take no
``outputs=`` (:data:`TAKING_NO_OUTPUTS`, read from its signatures): they refuse it with Python's
TypeError, as there.  What makes an output hold the array is ``_own_arrays.give_array`` (also
``y.data = nd``).

Example:
    >>> import numpy as np, stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
    >>> x = nn.Variable.from_numpy_array(np.zeros((2,), np.float32))
    >>> nd = nn.NdArray((2,)); y = F.add_scalar(x, 3.0, outputs=[nd])
    >>> y.forward(); nd.data.tolist()
    [3.0, 3.0]
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable

import torch

from ...graph import data_of, get_auto_forward, hand_out, renew_value
from ._ndarray import NdArray
from ._own_arrays import give_array, give_ndarray

__all__ = ["writing_given_arrays", "checked_arrays", "into_given_arrays", "TAKING_NO_OUTPUTS"]

# NNabla 1.39's functions whose signature has no ``outputs`` (``inspect.signature`` there).
TAKING_NO_OUTPUTS = frozenset((
    "add_n", "batch_normalization", "clip_by_norm", "clip_by_value", "concatenate", "dot",
    "einsum", "fused_batch_normalization", "gather_nd", "group_normalization",
    "instance_normalization", "interpolate", "istft", "layer_normalization", "linspace", "max",
    "mean", "mean_subtraction", "meshgrid", "min", "mul_n", "multi_head_attention", "norm",
    "norm_normalization", "patch_correlation", "prod", "quantize_linear", "reduce",
    "scatter_add", "scatter_nd", "sink", "sort", "spectral_norm", "split", "stack", "stft",
    "sum", "sync_batch_normalization", "tensor_normalization", "tile",
    "weight_standardization"))


def writing_given_arrays(name: str, fn: Callable) -> Callable:
    """``fn`` (NNabla's function ``name``) taking ``outputs=``, a list of ``nn.NdArray``s its
    outputs hold (see the module docstring).

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> out = nn.NdArray((2,)); a = nn.NdArray.from_numpy_array(np.ones(2, np.float32))
        >>> r = F.mul_scalar(a, 2.0, outputs=[out]); out.data.tolist()
        [2.0, 2.0]
    """
    @functools.wraps(fn)
    def call(*args: Any, outputs: Any = None, **kwargs: Any) -> Any:
        if outputs is None:
            return fn(*args, **kwargs)
        if name in TAKING_NO_OUTPUTS:
            raise TypeError(f"{name}() got an unexpected keyword argument 'outputs'")
        arrays = checked_arrays(name, outputs)
        return into_given_arrays(name, fn(*args, **kwargs), arrays)
    return call


def checked_arrays(name: str, outputs: Any) -> list:
    """The ``outputs=`` of NNabla's function ``name`` as a list, each an ``nn.NdArray``
    (NNabla's TypeError otherwise).

    Example:
        >>> import stadyn.compat.nnabla as nn
        >>> len(checked_arrays("exp", [nn.NdArray((2,))]))
        1
    """
    arrays = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    for a in arrays:
        if not isinstance(a, NdArray):
            raise TypeError(f"{name}(..., outputs=...): Cannot convert "
                            f"{type(a).__module__}.{type(a).__name__} to "
                            "nnabla._nd_array.NdArray (give nn.NdArrays)")
    return arrays


def into_given_arrays(name: str, out: Any, arrays: list) -> Any:
    """``out`` (what NNabla's function ``name`` gave: a Variable, an NdArray or a list of
    them) with its outputs holding ``arrays`` in turn (see the module docstring).

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn
        >>> nd = nn.NdArray((2,))
        >>> r = into_given_arrays("identity", nn.NdArray.from_numpy_array(np.ones(2)), [nd])
        >>> nd.data.tolist()
        [1.0, 1.0]
    """
    many = isinstance(out, (list, tuple))
    results = list(out) if many else [out]
    for i, (r, a) in enumerate(zip(results, arrays)):
        t, size = a._t, math.prod(r.shape)
        if t.numel() != size:
            raise RuntimeError(f"{name}(..., outputs=...): the array given as output {i} "
                               f"has {t.numel()} elements, the output {size} "
                               f"(shape {tuple(r.shape)}): in-place array size and "
                               "function output size must match")
        computed = r._t if isinstance(r, NdArray) else data_of(r)
        if (computed is not None and computed.dtype != t.dtype
                and (isinstance(r, NdArray) or get_auto_forward())):
            # written now, in the function's dtype: NNabla casts the array given (float16,
            # int) to it (a static graph's run casts it: ``give_ndarray``)
            t = a._retensor(torch.empty(tuple(t.shape), dtype=computed.dtype))
        t = t.view(tuple(r.shape))
        if isinstance(r, NdArray):              # computed at once (NdArray inputs)
            t.copy_(r._t.to(t.dtype))
            results[i] = NdArray._wrap(t)
            continue
        if get_auto_forward() and computed is not None:
            with torch.no_grad():
                t.copy_(computed.detach().to(t.dtype))
            if computed.grad_fn is not None:
                # its op's backward, where it reads its output (tanh, exp), reads ``nd``:
                # what is written there after the call, as NNabla's reads the array
                hand_out(renew_value(r, t))
            else:
                give_array(r, t)
        else:
            give_ndarray(r, a, t)
    return type(out)(results) if many else results[0]

