"""CNTK's tensor-shaping and matrix nodes for :class:`~._stadyn_library.StadynLibrary` (a mixin:
it uses the library's ``_value``, ``_node``, ``has_batch_axis`` and ``_whole``).

Axes are CNTK's: 1-based and column-major (axis 1 of a ``W:H:C`` image is its width), over each
sample's static axes; the batch and sequence axes are never touched.  Stadyn's per-sample
shape is CNTK's reversed (:func:`~._library.cntk_shape`), so CNTK axis ``k`` of a rank-``r``
sample is Stadyn's sample axis ``r - k``.

* ``Reshape``/``NewReshape`` (with ``beginAxis``/``endAxis``), ``ReshapeDimension``,
  ``FlattenDimensions``, ``SplitDimension``: CNTK's ``Reshape`` node, a sub-range of the axes
  replaced (a 0 in the new dimensions is inferred);
* ``Slice`` and ``RowSlice``: CNTK's ``Slice`` node (negative indices count from the end, an
  ``endIndex`` of 0 is the end; ``axis = -1`` slices the sequence axis);
* ``TransposeDimensions`` and ``Transpose``: two axes swapped, the sample's rank grown to reach
  the higher axis (a ``[N]`` vector transposes to ``[1 x N]``);
* ``Hardmax``, ``SumElements``, ``TransposeTimes``;
* ``Convolution``: the raw convolution node (kernel, map count, stride, padding as CNTK takes
  them), whose kernel may span the channel axis too (the 3-D kernels of an LRN);
* CNTK's deprecated ``ImageInput`` (the pooling nodes are ``_pooling_library.py``'s).
"""

from __future__ import annotations

import functools
import math
import numbers

import numpy as np
from typing import Any

from .. import functions as F
from .. import sequence as S
from .._errors import ConfigError
from ..cntk_semantics import (convolution, convolution_transpose, crop, crop_offsets,
                              reshape_sample, window_edges)
from ..graph import Variable
from ._layer_library import _as_dims
from ._windows import locally_connected

__all__ = ["TensorFunctions"]


def _check_cudnn_layout(layout: Any, what: str) -> None:
    """Refuse an ``imageLayout`` other than ``CHW``/``cudnn`` (the raw ``Convolution`` and the
    pooling nodes; the legacy ``HWC`` is only ``ImageInput``'s and NDL's)."""
    if str(layout).lower() not in ("chw", "cudnn"):
        raise ConfigError(f"{what}: imageLayout '{layout}' is not supported (CHW, cudnn)")


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ConfigError(f"{what} must be an integer, got {value!r}")
    return int(value)


def _dims(value: Any, what: str, zero: bool = True) -> tuple[int, ...]:
    items = value if isinstance(value, tuple) else (value,)
    low = 0 if zero else 1
    for v in items:
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < low:
            raise ConfigError(f"{what} must be {'non-negative' if zero else 'positive'} "
                              f"integers, got {value!r}")
    return tuple(int(v) for v in items)


def _fix(value: Any, filter_rank: int, rank: int, fill: Any, given: tuple = ()) -> tuple:
    """CNTK's per-axis convolution setting for a rank-``rank`` input (ConvolutionNodeBase's
    FixVectorShape): the last value repeated up to the kernel's rank, then the input's
    dimension (``given``) or ``fill`` for each axis the kernel left out."""
    items = list(value) if isinstance(value, tuple) else [value]
    while len(items) < filter_rank:
        items.append(items[-1])
    while len(items) < rank:
        items.append(given[len(items)] if len(items) < len(given) else fill)
    return tuple(items)


# CNTK's comparison nodes and the functions that compute them
_COMPARISONS = {"Equal": F.equal, "NotEqual": F.not_equal, "Less": F.less,
                "LessEqual": F.less_equal, "Greater": F.greater, "GreaterEqual": F.greater_equal}


class TensorFunctions:
    """CNTK's reshaping, slicing, transposing, matrix and raw convolution nodes."""

    def _init_tensors(self) -> dict[str, Any]:
        return {"Reshape": self.Reshape, "NewReshape": self.Reshape,
                "ReshapeDimension": self.ReshapeDimension,
                "FlattenDimensions": self.FlattenDimensions,
                "SplitDimension": self.SplitDimension,
                "Slice": self.Slice, "RowSlice": self.RowSlice, "Crop": self.Crop,
                "RowRepeat": self.RowRepeat,
                **{name: functools.partial(self._compare, name) for name in _COMPARISONS},
                "TransposeDimensions": self.TransposeDimensions, "Transpose": self.Transpose,
                "Hardmax": self.Hardmax, "SumElements": self.SumElements, "_If": self.If,
                "TransposeTimes": self.TransposeTimes, "Convolution": self.Convolution,
                "ConvolutionTranspose": self.ConvolutionTranspose,
                "ImageInput": self.ImageInput, "SparseImageInput": self.SparseImageInput}

    def _lead(self, x: Variable) -> int:
        """The leading non-sample axes of ``x``: 2 for a sequence, 1 for a batch, else 0."""
        return 2 if x.sequence_lengths is not None else int(self.has_batch_axis(x))

    # ---- reshaping ----------------------------------------------------------------------
    def Reshape(self, _, shape, beginAxis=0, endAxis=0, tag=""):
        """CNTK axes ``beginAxis`` to ``endAxis - 1`` (1-based; 0: from the first, to the
        last) of each sample reshaped to ``shape`` (column-major; one 0 is inferred)."""
        x = self._value(_, "Reshape")
        new = _dims(shape, "Reshape: shape")
        lead = self._lead(x)
        sample = tuple(reversed(x.shape[lead:]))         # CNTK's order
        rank = len(sample)
        b = _int(beginAxis, "Reshape: beginAxis")
        e = _int(endAxis, "Reshape: endAxis")
        begin = b - 1 if b > 0 else 0
        end = e - 1 if e > 0 else rank
        if not 0 <= begin <= end <= rank:
            raise ConfigError(f"Reshape: axes {beginAxis} to {endAxis} do not fit a sample of "
                              f"shape {sample} (column-major)")
        size = math.prod(sample[begin:end])
        if new.count(0) > 1:
            raise ConfigError(f"Reshape: more than one dimension of {new} is 0 (inferred)")
        known = math.prod(d for d in new if d)
        if (0 in new and (known == 0 or size % known)) or (0 not in new and known != size):
            raise ConfigError(f"Reshape: cannot reshape the sample's dimensions "
                              f"{sample[begin:end]} (of {sample}, column-major) to {new}")
        row_major = tuple(-1 if d == 0 else d for d in reversed(new))
        y = reshape_sample(x, row_major, lead > 0, rank - end, rank - begin, sequence=lead == 2)
        return self._node(y, "Reshape", tag)

    def ReshapeDimension(self, x, axis, tensorShape, tag=""):
        """CNTK axis ``axis`` split into ``tensorShape``."""
        a = _int(axis, "ReshapeDimension: axis")
        return self.Reshape(x, tensorShape, beginAxis=a, endAxis=a + 1, tag=tag)

    def FlattenDimensions(self, x, axis, num, tag=""):
        """CNTK axes ``axis`` to ``axis + num - 1`` merged into one."""
        a, n = _int(axis, "FlattenDimensions: axis"), _int(num, "FlattenDimensions: num")
        return self.Reshape(x, 0, beginAxis=a, endAxis=a + n, tag=tag)

    def SplitDimension(self, x, axis, N, tag=""):
        """CNTK axis ``axis`` split into ``(dim / N) : N``."""
        a = _int(axis, "SplitDimension: axis")
        return self.Reshape(x, (0, _int(N, "SplitDimension: N")), beginAxis=a, endAxis=a + 1,
                            tag=tag)

    # ---- slicing and transposing --------------------------------------------------------
    def Slice(self, beginIndex, endIndex, input, axis=1, tag=""):  # noqa: A002 - CNTK's name
        """Elements ``beginIndex`` to ``endIndex - 1`` along CNTK axis ``axis`` (negative
        indices count from the end; ``endIndex = 0`` is the end); ``axis = -1`` slices each
        sequence's steps."""
        x = self._value(input, "Slice")
        begin, end = _int(beginIndex, "Slice: beginIndex"), _int(endIndex, "Slice: endIndex")
        a = _int(axis, "Slice: axis")
        if a < 0:
            if x.sequence_lengths is None:
                raise ConfigError("Slice: axis = -1 (the sequence axis) needs a sequence")
            return self._node(S.slice(x, begin, end), "Slice", tag)
        lead = self._lead(x)
        rank = x.ndim - lead
        if not 1 <= a <= rank:
            raise ConfigError(f"Slice: axis must be 1 .. {rank} (column-major) or -1, got {a}")
        ax = lead + rank - a
        dim = x.shape[ax]
        lo = begin if begin >= 0 else begin + dim
        hi = end if end > 0 else end + dim
        if not 0 <= lo < hi <= dim:
            raise ConfigError(f"Slice: index range [{begin}, {end}) is empty or outside axis {a} "
                              f"of dimension {dim}")
        start = [None] * x.ndim
        stop = [None] * x.ndim
        start[ax], stop[ax] = lo, hi
        return self._node(F.slice(x, start, stop, [1] * x.ndim), "Slice", tag)

    def RowSlice(self, beginIndex, numRows, input, tag=""):  # noqa: A002 - CNTK's name
        """``numRows`` rows (CNTK axis 1) from ``beginIndex`` on."""
        begin = _int(beginIndex, "RowSlice: beginIndex")
        return self.Slice(begin, begin + _int(numRows, "RowSlice: numRows"), input, axis=1,
                          tag=tag)

    def TransposeDimensions(self, _, axis1, axis2, tag=""):
        """CNTK axes ``axis1`` and ``axis2`` swapped; a sample of lower rank first gets axes
        of dimension 1 (a ``[N]`` vector becomes ``[1 x N]``)."""
        x = self._value(_, "TransposeDimensions")
        a1 = _int(axis1, "TransposeDimensions: axis1")
        a2 = _int(axis2, "TransposeDimensions: axis2")
        if a1 < 1 or a2 < 1:
            raise ConfigError(f"TransposeDimensions: axes are 1-based static axes, got {a1} and "
                              f"{a2}")
        lead = self._lead(x)
        sample = tuple(x.shape[lead:])
        rank = max(len(sample), a1, a2)
        if rank > len(sample):
            x = reshape_sample(x, (1,) * (rank - len(sample)) + sample, lead > 0,
                               sequence=lead == 2)
        i1, i2 = lead + rank - a1, lead + rank - a2
        perm = list(range(x.ndim))
        perm[i1], perm[i2] = i2, i1
        y = x if a1 == a2 else F.transpose(x, tuple(perm))
        return self._node(y, "TransposeDimensions", tag)

    def Transpose(self, x, tag=""):
        """CNTK axes 1 and 2 swapped."""
        return self.TransposeDimensions(x, 1, 2, tag=tag)

    def Crop(self, input, referent, *ancestors, xOffset=None, yOffset=None,  # noqa: A002
             tag=""):
        """CNTK's ``Crop`` node (``new ComputationNode [operation = 'Crop' ; inputs = ...]``):
        ``input`` cut to ``referent``'s width and height (its first two, column-major axes) at
        ``xOffset``/``yOffset``, or, without them, at the offsets that align both with their
        common ancestor in the graph (``cntk_semantics.crop_offsets``; four inputs: the last
        two, above ``input`` and above ``referent``, stand for one another)."""
        what = "Crop"
        x, ref = self._value(input, what), self._value(referent, what)
        if len(ancestors) not in (0, 2):
            raise ConfigError(f"{what}: takes 2 or 4 inputs, got {2 + len(ancestors)}")
        if (xOffset is None) != (yOffset is None):
            raise ConfigError(f"{what}: give both xOffset and yOffset, or neither")
        if xOffset is not None:
            offsets = (_int(xOffset, f"{what}: xOffset"), _int(yOffset, f"{what}: yOffset"))
        else:
            pair = tuple(self._value(a, what) for a in ancestors) or None
            offsets = crop_offsets(x, ref, pair, what)
        lead = 2 if x.sequence_lengths is not None else int(self.has_batch_axis(x))
        if x.ndim - lead < 2:
            raise ConfigError(f"{what}: the input needs two spatial axes, got "
                              f"{tuple(reversed(x.shape[lead:]))} (column-major)")
        return self._node(crop(x, ref, *offsets, what=what), "Crop", tag)

    # ---- comparisons and selection ------------------------------------------------------
    def _compare(self, name, _, y, tag=""):
        """CNTK's comparison nodes (``Equal (a, b)``, ``Less``, ...; ``a == b`` & co. on
        nodes): 1 where the relation holds, else 0, element by element (broadcasting as
        ``Plus``), no gradient."""
        # a delay of a loop: its partner's dimensions
        values = self._sized_delays(self._number_nodes((_, y)), ((0, 1), (1, 0)))
        a, b = self._aligned(*(self._value(v, name) for v in values))
        return self._node(F.stop_gradient(_COMPARISONS[name](a, b)), name, tag)

    # the operators on nodes: a == b, a != b, a < b, ...
    def equal(self, a, b):
        return self._compare("Equal", a, b)

    def not_equal(self, a, b):
        return self._compare("NotEqual", a, b)

    def less(self, a, b):
        return self._compare("Less", a, b)

    def less_equal(self, a, b):
        return self._compare("LessEqual", a, b)

    def greater(self, a, b):
        return self._compare("Greater", a, b)

    def greater_equal(self, a, b):
        return self._compare("GreaterEqual", a, b)

    # ---- selection ----------------------------------------------------------------------
    def If(self, cond, thenVal, elseVal, tag=""):
        """CNTK's ``If`` node (``BS.Boolean.If``): ``thenVal`` where ``cond`` is not 0,
        ``elseVal`` elsewhere, element by element (the three broadcast as in ``Plus``); a
        number as ``cond`` picks one of them."""
        if isinstance(cond, (bool, numbers.Real)):
            return thenVal if cond else elseVal
        # a delay of a loop: its partner's dimensions
        values = self._sized_delays([cond, thenVal, elseVal], ((1, 2), (2, 1), (0, 1)))
        c, t, e = (self._value(v, "If") for v in values)
        t, e = self._aligned(t, e)
        c, t = self._aligned(c, t)
        c, e = self._aligned(c, e)
        return self._node(F.where(c, t, e), "If", tag)

    def if_then_else(self, cond, then, orelse):
        """``if cond then a else b`` with a node as ``cond``: cntk.exe's ``If`` node of the
        three (BrainScriptEvaluator.cpp:378; a number is a constant node, as for the other
        operators); a boolean ``then`` or ``else`` is refused, as cntk.exe refuses it
        (BrainScriptEvaluator.cpp:382-387)."""
        if isinstance(then, bool) or isinstance(orelse, bool):
            raise ConfigError("with a node as condition, 'then' and 'else' must be nodes or "
                              "numbers, not booleans (cntk.exe: operator not applicable to type "
                              "'Bool')")
        return self.If(cond, then, orelse)

    # ---- matrix nodes -------------------------------------------------------------------
    def _times_data_left(self, x: Variable, w: Variable, rank: int) -> Variable:
        """CNTK's ``Times (x, W)`` with the data on the left (G2P.cntk's ``h * hook``): the
        first ``rank`` (column-major) axes of ``x``'s sample are kept, the others reduced
        against ``W``'s first axes, and ``W``'s remaining axes follow the kept ones."""
        lead = 2 if x.sequence_lengths is not None else 1
        sample = tuple(x.shape[lead:])            # row-major: reduced axes, then kept ones
        if not 1 <= rank <= len(sample):
            raise ConfigError(f"Times: outputRank {rank} does not fit a left operand of "
                              f"shape {tuple(reversed(sample))} (column-major)")
        reduced, kept = sample[:len(sample) - rank], sample[len(sample) - rank:]
        if tuple(w.shape[w.ndim - len(reduced):]) != reduced or w.ndim < len(reduced):
            raise ConfigError(f"Times: a right operand of shape {tuple(reversed(w.shape))} "
                              f"does not start with the left operand's reduced axes "
                              f"{tuple(reversed(reduced))} (column-major)")
        rest = tuple(w.shape[:w.ndim - len(reduced)])
        xs = reshape_sample(x, (math.prod(reduced), math.prod(kept)), True,
                            sequence=lead == 2)
        ws = F.reshape(w, (math.prod(rest), math.prod(reduced)))
        y = F.einsum(xs, ws, equation="...rk,nr->...nk")
        return reshape_sample(y, rest + kept, True, sequence=lead == 2)

    def Hardmax(self, z, tag=""):
        """1 at the first largest element of each sample, 0 elsewhere (no gradient flows)."""
        x = self._value(z, "Hardmax")
        lead = self._lead(x)
        sample = tuple(x.shape[lead:])
        n = math.prod(sample)
        flat = S.reshape_samples(F.stop_gradient(x), lead, (n,))
        index = F.max(flat, axis=flat.ndim - 1, keepdims=True, only_index=True, rule="cntk")
        hot = F.cast(F.one_hot(F.cast(index, "int64"), (n,)), np.dtype(x.dtype).name)
        return self._node(S.reshape_samples(hot, lead, sample), "Hardmax", tag)

    def RowRepeat(self, input, numRepeats, tag=""):
        """Each sample ``numRepeats`` times, one after the other, along its last (column-major)
        axis, whose dimension is multiplied (CNTK's ``RowRepeatNode``: a vector ``[n]``
        becomes ``[n * numRepeats]``)."""
        x = self._value(input, "RowRepeat")
        if isinstance(numRepeats, bool) or not isinstance(numRepeats, numbers.Integral) \
                or numRepeats < 1:
            raise ConfigError(f"RowRepeat: numRepeats must be a positive integer, got "
                              f"{numRepeats!r}")
        lead = self._lead(x)
        if x.ndim == lead:
            raise ConfigError("RowRepeat needs a sample of at least one axis")
        joined = F.concatenate(*([x] * int(numRepeats)), axis=lead)
        return self._node(joined, "RowRepeat", tag)

    def SumElements(self, matrix, tag=""):
        """The sum of all elements, over the minibatch (and each sequence's steps) too: one
        number for the whole minibatch, as CNTK's ``SumElements`` node (the minibatch
        library's ``_whole``)."""
        return self._node(self._whole(self._value(matrix, "SumElements")), "SumElements", tag)

    def TransposeTimes(self, leftMatrix, rightMatrix, tag=""):
        """``leftMatrix^T rightMatrix``: a ``[M x N]`` matrix (or ``[M]`` vector) parameter
        transposed times ``[M]`` data gives ``[N]`` (``[1]``); two ``[M]`` data vectors give
        their dot product per sample, ``[1]``."""
        a = self._value(leftMatrix, "TransposeTimes")
        b = self._value(rightMatrix, "TransposeTimes")
        if self.has_batch_axis(a):
            if not self.has_batch_axis(b):
                raise ConfigError("TransposeTimes: a data left operand needs data on the right")
            la, lb = self._lead(a), self._lead(b)
            # cntk.exe multiplies [M] by [M x 1] too (a trailing 1 is a column of one)
            a, b = _as_vector(a, la), _as_vector(b, lb)
            if a.shape[la:] != b.shape[lb:] or len(a.shape[la:]) != 1:
                raise ConfigError(f"TransposeTimes: two data vectors must have the same "
                                  f"dimension, got {tuple(reversed(a.shape[la:]))} and "
                                  f"{tuple(reversed(b.shape[lb:]))}")
            y = F.sum(F.mul2(a, b), axis=a.ndim - 1, keepdims=True)
            return self._node(y, "TransposeTimes", tag)
        if a.ndim == 1:
            a = F.reshape(a, (1, a.shape[0]))           # [M] is [M x 1]
        if a.ndim != 2:
            raise ConfigError(f"TransposeTimes: the left operand must be a matrix [M x N], got "
                              f"{tuple(reversed(a.shape))} (column-major)")
        # Stadyn keeps a CNTK [M x N] matrix as (N, M): its transpose is Times' [N x M] weight
        return self._node(self.Times(F.transpose(a, (1, 0)), b), "TransposeTimes", tag)

    # ---- the raw convolution -------------------------------------------------------------
    def Convolution(self, weightNode, inputValueNode, kernelDims, mapDims=0, stride=1,
                    sharing=True, autoPadding=True, lowerPad=0, upperPad=0, dilation=1,
                    imageLayout="CHW", maxTempMemSizeInSamples=0, tag=""):
        """CNTK's ``Convolution`` node: ``kernelDims`` (column-major) over the first axes of
        each sample, the axes it leaves out reduced over whole; the last axis holds the input
        channels, which the kernel spans whole, and becomes ``mapDims`` output maps.  The
        weight is ``[kernel x maps]`` or any shape with that many elements (a ``[maps x kernel
        elements]`` ``Parameter`` matrix: its values are read in the same order, the kernel of
        each map in turn, as CNTK's engines read them).  ``lowerPad``/``upperPad`` pad the
        axes before the channel axis that ``autoPadding`` leaves off (CNTK's geometry:
        :func:`stadyn.cntk_semantics.window_edges`)."""
        what = "Convolution"
        x = self._value(inputValueNode, what)
        lead = self._lead(x)
        if lead != 1:
            raise ConfigError(f"{what}: the input must be a minibatch of samples (not a "
                              "sequence, not a parameter)")
        dims = tuple(reversed(x.shape[1:]))               # CNTK order
        rank = len(dims)
        kernel = _dims(kernelDims, f"{what}: kernelDims", zero=False)
        if not 2 <= rank <= 4 or len(kernel) > rank:
            raise ConfigError(f"{what}: a kernel {kernel} over a sample {dims} (column-major) is "
                              "not supported (1 to 3 axes plus the channel axis)")
        filter_rank = len(kernel)
        kernel = _fix(kernel, filter_rank, rank, 1, dims)
        strides = _fix(_dims(stride, f"{what}: stride", zero=False), filter_rank, rank, 1, dims)
        pads = _fix(autoPadding, filter_rank, rank, False)
        dil = _fix(_dims(dilation, f"{what}: dilation", zero=False)[:filter_rank], filter_rank,
                   rank, 1)
        if len(strides) > rank or len(pads) > rank:
            raise ConfigError(f"{what}: stride or autoPadding has more entries than the input "
                              f"{dims} has axes")
        shared = tuple(bool(v) for v in _fix(_as_dims(sharing), filter_rank, rank, True))
        if not all(shared) and (any(shared[:-1]) or rank != 3 or any(d != 1 for d in dil)):
            raise ConfigError(f"{what}: sharing = false is supported over the width and height "
                              "of W:H:C images with no dilation (sharing = false on every "
                              f"axis), got sharing {_as_dims(sharing)} over {dims}")
        lower = _fix(_dims(lowerPad, f"{what}: lowerPad"), filter_rank, rank, 0)
        upper = _fix(_dims(upperPad, f"{what}: upperPad"), filter_rank, rank, 0)
        explicit = any(lower) or any(upper)
        if explicit and (len(lower) > rank or len(upper) > rank or lower[-1] or upper[-1]
                         or any(d != 1 for d in dil) or not all(_as_dims(sharing))):
            raise ConfigError(f"{what}: explicit lowerPad {_as_dims(lowerPad)} / upperPad "
                              f"{_as_dims(upperPad)} are supported on the axes before the "
                              "channel axis (0 there), with no dilation and sharing (got "
                              f"{lower} / {upper} over {dims})")
        _check_cudnn_layout(imageLayout, what)
        channels = dims[-1]
        if kernel[-1] != channels:
            raise ConfigError(f"{what}: the kernel must span the last (channel) axis whole: "
                              f"kernel {kernel}, input {dims} (column-major)")
        maps = math.prod(_dims(mapDims, f"{what}: mapDims", zero=False)) if mapDims else None
        spatial = kernel[:-1]
        n_kernel = math.prod(kernel)
        w = self._value(weightNode, what)
        if not all(shared):
            return self._node(self._local(x, w, dims, kernel, strides, pads, maps), what, tag)
        if maps is None:
            maps = w.size // n_kernel
        if w.size != n_kernel * maps:
            raise ConfigError(f"{what}: the weight {tuple(reversed(w.shape))} (column-major) "
                              f"must have kernel {kernel} x {maps} maps = {n_kernel * maps} "
                              "elements")
        # CNTK's engines read the weight's values kernel after kernel (cuDNN's "row-major kernel
        # weight matrix"), whatever its shape: a [maps x kernel elements] Parameter too
        weight = F.reshape(w, (maps, channels) + tuple(reversed(spatial)))
        y = convolution(x, weight, None, tuple(reversed(strides[:-1])),
                        tuple(bool(p) for p in reversed(pads[:-1])),
                        tuple(reversed(dil[:-1])), lower_pad=tuple(reversed(lower[:-1])),
                        upper_pad=tuple(reversed(upper[:-1])))
        return self._node(y, "Convolution", tag)


    def _local(self, x, w, dims, kernel, strides, pads, maps):
        """``Convolution`` with ``sharing = false`` (CIFAR-10's 05_ConvLocal): a kernel per
        output position and map, ``w`` holding ``kernel elements x positions x maps`` values
        in CNTK's order (:func:`~._windows.locally_connected`)."""
        what = "Convolution"
        edges = [window_edges(*axis, what=what) for axis in
                 zip(dims[:2], kernel[:2], strides[:2], pads[:2], (0, 0), (0, 0))]
        out = [size + lo + hi - k + 1 for size, k, (lo, hi) in zip(dims, kernel, edges)]
        out = [(n - 1) // s + 1 for n, s in zip(out, strides)]
        n_kernel, positions = math.prod(kernel), out[0] * out[1]
        if maps is None:
            maps = w.size // (n_kernel * positions)
        if w.size != n_kernel * positions * maps or maps < 1:
            raise ConfigError(f"{what}: with sharing = false the weight "
                              f"{tuple(reversed(w.shape))} (column-major) must hold a kernel "
                              f"{kernel} for each of the {out[0]} x {out[1]} outputs of "
                              f"{maps or '?'} maps = {n_kernel * positions * (maps or 1)} values")
        weight = F.reshape(w, (maps, out[1], out[0], dims[2], kernel[1], kernel[0]))
        return locally_connected(x, weight, (strides[1], strides[0]), edges[::-1])

    def ConvolutionTranspose(self, weightNode, inputValueNode, kernelDims, mapDims=0,
                             stride=1, sharing=True, autoPadding=True, lowerPad=0, upperPad=0,
                             outputShape=None, dilation=1, imageLayout="CHW",
                             maxTempMemSizeInSamples=0, tag=""):
        """CNTK's transposed ``Convolution`` node (CNTK.core.bs:624, ``transpose = true``):
        ``kernelDims`` is the filter and the output maps (``5:5:outMaps``, column-major),
        ``weightNode`` ``[kernelDims : mapDims]`` with ``mapDims`` the input's channels (its
        last axis); ``autoPadding`` per filter axis (an output of ``(size - 1) * stride + 1``,
        else the full ``(size - 1) * stride + span``) or ``outputShape`` (``W:H``) sizes the output
        (``cntk_semantics.convolution_transpose``).  Explicit pads and ``sharing = false`` are
        not supported."""
        what = "ConvolutionTranspose"
        x, w = self._value(inputValueNode, what), self._value(weightNode, what)
        if self._lead(x) != 1:
            raise ConfigError(f"{what}: the input must be a minibatch of samples (not a "
                              "sequence, not a parameter)")
        kernel = _dims(kernelDims, f"{what}: kernelDims", zero=False)
        n, channels = len(kernel) - 1, x.shape[1]
        if not 1 <= n <= 3 or x.ndim - 2 != n:
            raise ConfigError(f"{what}: kernelDims {kernel} (a filter and the output maps) do not "
                              f"fit a sample {tuple(reversed(x.shape[1:]))} (column-major)")
        maps = _int(mapDims, f"{what}: mapDims")
        want = (channels, kernel[-1]) + tuple(reversed(kernel[:-1]))
        if maps not in (0, channels) or tuple(w.shape) != want:
            raise ConfigError(f"{what}: the weight must be [{' x '.join(map(str, kernel))} x "
                              f"{channels}] (kernelDims : the input's {channels} channels), got "
                              f"[{' x '.join(map(str, reversed(w.shape)))}] and mapDims {maps}")
        if any(_dims(lowerPad, f"{what}: lowerPad")) or any(_dims(upperPad, f"{what}: upperPad")) \
                or not all(_as_dims(sharing)):
            raise ConfigError(f"{what}: explicit lowerPad/upperPad and sharing = false are not "
                              "supported (use autoPadding)")
        shape = None
        if isinstance(outputShape, (tuple, numbers.Integral)) and outputShape != 0:
            shape = tuple(reversed(_dims(outputShape, f"{what}: outputShape", zero=False)[:n]))

        def per_axis(value):                    # the filter's axes, Stadyn's order
            return tuple(reversed(_fix(value, n, n, None)[:n]))
        strides = per_axis(_dims(stride, f"{what}: stride", zero=False))
        dil = per_axis(_dims(dilation, f"{what}: dilation", zero=False))
        pads = per_axis(tuple(bool(v) for v in _as_dims(autoPadding)))
        y = convolution_transpose(x, w, None, strides, pads, dil, shape)
        return self._node(y, "ConvolutionTranspose", tag)

    # ---- deprecated image nodes ----------------------------------------------------------
    def ImageInput(self, imageWidth, imageHeight, imageChannels, imageLayout="CHW",
                   dynamicAxis="", tag="feature"):
        """``Input`` of an image: ``imageWidth : imageHeight : imageChannels`` in the ``CHW``
        (``cudnn``) layout, ``imageChannels : imageWidth : imageHeight`` in the legacy
        ``HWC``; one image a sample, also in a network of sequences (unless it is given a
        ``dynamicAxis``)."""
        dims = tuple(_int(v, f"ImageInput: {n}") for v, n in (
            (imageWidth, "imageWidth"), (imageHeight, "imageHeight"),
            (imageChannels, "imageChannels")))
        layout = str(imageLayout).lower()
        if layout not in ("chw", "cudnn", "hwc", "legacy"):
            raise ConfigError(f"ImageInput: imageLayout must be CHW, cudnn or HWC, got "
                              f"'{imageLayout}'")
        if layout in ("hwc", "legacy"):
            dims = (dims[2], dims[0], dims[1])
        return self._new_input(dims, dynamicAxis, tag, image=True)

    def SparseImageInput(self, imageWidth, imageHeight, imageChannels, imageLayout="CHW",
                         dynamicAxis="", tag="feature"):
        """``ImageInput`` of sparse samples (CNTK.core.bs:578, a ``SparseInputValue`` with
        ``isImage``): the same dimensions and layouts; as for ``SparseInput``, the reader's
        values arrive dense."""
        return self.ImageInput(imageWidth, imageHeight, imageChannels, imageLayout=imageLayout,
                               dynamicAxis=dynamicAxis, tag=tag)


def _as_vector(v: Variable, lead: int) -> Variable:
    """A data node whose samples are ``[M x 1 x ...]`` (Stadyn ``(..., 1, M)``) as ``[M]``;
    others as they are."""
    sample = tuple(v.shape[lead:])
    if len(sample) > 1 and all(d == 1 for d in sample[:-1]):
        return S.reshape_samples(v, lead, sample[-1:])
    return v
