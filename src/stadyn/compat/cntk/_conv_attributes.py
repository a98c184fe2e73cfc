"""The attributes CNTK 2.7 shows for its ``Convolution`` and ``Pooling`` ops
(``root_function.attributes`` of ``convolution``, ``convolution_transpose``, ``pooling``).
A convolution's are filled in as its C++ makes the op
(PrimitiveFunction.cpp ``ConvolutionOpOutputShape``): every per-axis option given for fewer
axes than the kernel's is made as long as the kernel's by repeating its last value (CNTK
orders axes last-first: its first value is Python's last), then as long as the operand's
rank -- ``strides`` from the operand's own sizes, ``autoPadding`` False, ``sharing`` True,
``dilation`` 1, the pads 0 (``FixNDShape``, ``ConvolutionNodeBase::FixVectorShape``); a
transposed convolution fills one axis fewer from the values given.  A pooling's are its
arguments as given (``poolingType`` 0 for max, 1 for average; pads ``(0,)``).

Example:
    >>> a = convolution_attributes((3, 2, 3, 3), (2, 5, 5), strides=(2, 1))
    >>> a["strides"], a["autoPadding"], a["kernelShape"], a["sharing"]
    ((2, 2, 1), [True, True, True], (2, 3, 3), [True, True, True])
    >>> convolution_attributes((2, 3, 3, 3), (2, 5, 5), transpose=True)["strides"]
    (2, 1, 1)
"""

from __future__ import annotations

__all__ = ["convolution_attributes", "pooling_attributes"]


def _as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _filled(values: list, fill_rank: int, rank: int, default, given: "list | None" = None):
    """CNTK's ``FixVectorShape`` over values in its order (last axis first)."""
    values = list(values)
    if not values:
        return values
    while len(values) < fill_rank:
        values.append(values[-1])
    while len(values) < rank:
        values.append(given[len(values)] if given is not None and len(values) < len(given)
                      else default)
    return values


def convolution_attributes(map_shape: tuple, operand_shape: tuple, strides=(1,),
                           sharing=(True,), auto_padding=(True,), dilation=(1,),
                           groups: int = 1, max_temp_mem_size_in_samples: int = 0,
                           sequential: bool = False, transpose: bool = False,
                           output_shape=None) -> dict:
    """CNTK 2.7's attributes of the ``Convolution`` op of a map of ``map_shape`` over an
    operand of sample shape ``operand_shape`` (both in Python's order), with the options as
    ``convolution`` / ``convolution_transpose`` take them."""
    rank = len(operand_shape)
    kernel = tuple(int(d) for d in map_shape[len(map_shape) - rank:])
    fill = len(kernel) - (1 if transpose else 0)
    operand = [int(d) for d in reversed(operand_shape)]

    def shown(values, default, given=None) -> list:       # (filled, in Python's order)
        return list(reversed(_filled(list(reversed(values)), fill, rank, default, given)))
    return {"strides": tuple(int(d) for d in shown(_as_list(strides), 1, operand)),
            "sharing": [bool(b) for b in shown(_as_list(sharing), True)],
            "autoPadding": [bool(b) for b in shown(_as_list(auto_padding), False)],
            "dilation": tuple(int(d) for d in shown(_as_list(dilation), 1)),
            "lowerPad": tuple(shown([0], 0)), "upperPad": tuple(shown([0], 0)),
            "kernelShape": kernel, "groups": int(groups),
            "maxTempMemSizeInSamples": int(max_temp_mem_size_in_samples),
            "sequential": bool(sequential), "transpose": bool(transpose),
            "outputShape": tuple(int(d) for d in _as_list(output_shape))
            if output_shape is not None else (0,)}


def pooling_attributes(pooling_type: int, window: tuple, strides=(1,), auto_padding=(False,),
                       ceil_out_dim: bool = False, include_pad: bool = False) -> dict:
    """CNTK 2.7's attributes of the ``Pooling`` op ``pooling`` makes (``pooling_type`` its
    ``PoolingType``, 0 max or 1 average).

    Example:
        >>> sorted(pooling_attributes(1, (3, 2), strides=2).items())[-2:]
        [('strides', (2,)), ('upperPad', (0,))]
    """
    return {"poolingType": int(pooling_type), "poolingWindowShape": tuple(int(k) for k in window),
            "strides": tuple(int(d) for d in _as_list(strides)),
            "autoPadding": [bool(b) for b in _as_list(auto_padding)],
            "lowerPad": (0,), "upperPad": (0,), "ceilOutDim": bool(ceil_out_dim),
            "includePad": bool(include_pad)}
