"""CNTK's network ops: convolution (and its transpose), pooling and unpooling, batch and other
normalisations, dropout.  Samples are channels first; CNTK's auto-padding centres the windows.

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> x = C.input_variable((1, 4, 4))
    >>> w = C.parameter((2, 1, 3, 3), init=1.0)
    >>> C.convolution(w, x, auto_padding=[False, True, True]).shape
    (2, 4, 4)
    >>> C.pooling(x, C.MAX_POOLING, (2, 2), strides=(2, 2)).shape
    (1, 2, 2)
"""

from __future__ import annotations

import warnings

import numpy as np

from ... import cntk_semantics as S
from ... import functions as F
from . import _graph as G
from ._deferrable import defer_module
from ._sparse_operands import refuse_sparse_operands
from ._run_checks import InvalidAtRunError, refuse_when_run
from ._seq_axes import refuse_free_windows
from ._adapt import (batched, const, float_arrays, named, one_op, operand as _as_operand,
                     refuse_several_outputs, sample_shape, wrap)
from ._cntk_attributes import CNTK_ATTRIBUTES
from ._conv_attributes import convolution_attributes, pooling_attributes
from ._inferred_parameters import infer_batch_norm
from ._mixins import GraphObject
from ._seeds import SentinelValueForAutoSelectRandomSeed, drawn_seed, resolved_seed

__all__ = ["convolution", "convolution_transpose", "pooling", "unpooling", "batch_normalization",
           "dropout", "local_response_normalization", "mean_variance_normalization",
           "per_dim_mean_variance_normalize", "image_scaler", "MAX_POOLING", "AVG_POOLING",
           "MAX_UNPOOLING", "PoolingType_Max", "PoolingType_Average",
           "SentinelValueForAutoSelectRandomSeed"]

PoolingType_Max, PoolingType_Average = 0, 1
MAX_POOLING, AVG_POOLING = PoolingType_Max, PoolingType_Average
MAX_UNPOOLING = 0


def _trailing(value, n: int, default) -> tuple:
    """A per-axis option given for all of a sample's axes (channel first) or for the spatial
    ones only, as the ``n`` spatial values."""
    if value is None:
        return (default,) * n
    if isinstance(value, (bool, int, np.integer)):
        return (value,) * n
    value = tuple(value)
    if len(value) == 1:
        return value * n
    return value[len(value) - n:]


def _channels_first(x, reduction_rank: int):
    v = _as_operand(x)
    if reduction_rank == 0:
        v = F.reshape(v, ((-1,) if batched(x) else ()) + (1,) + tuple(sample_shape(x)))
    if not batched(x):
        v = F.reshape(v, (1,) + tuple(v.shape))
    return v


def _unbatch(y, x):
    return y if batched(x) else F.reshape(y, tuple(y.shape[1:]))


def convolution(convolution_map, operand, strides=(1,), sharing=(True,), auto_padding=(True,),
                sequential: bool = False, dilation=(1,), reduction_rank: int = 1, groups: int = 1,
                max_temp_mem_size_in_samples: int = 0, name: str = ""):
    """``convolution_map`` (``(out, in, *kernel)``) slid over ``operand`` (``(in, *spatial)``;
    ``reduction_rank=0``: no channel axis).  ``strides``, ``auto_padding`` and ``dilation`` are
    per axis, given for the spatial axes or for all of them (channel first).  A map of the
    operand's rank (``(in, *kernel)``, no output axis) gives one output map, as in CNTK 2.7:
    CNTK's Examples/Image/Classification/ConvNet's local response normalisation slides a
    ``(1, 2n+1, 1, 1)`` map over ``(1, channels, h, w)``."""
    if sequential:
        raise ValueError("convolution: sequential=True needs a sequence axis, which Stadyn's "
                         "compat does not have")
    w = _as_operand(convolution_map)
    x = _channels_first(operand, reduction_rank)
    if reduction_rank == 1 and w.ndim == x.ndim - 1:
        w = F.reshape(w, (1,) + tuple(w.shape))
    elif reduction_rank == 0 and w.ndim == x.ndim - 1:
        # (maps, *kernel): CNTK 2.7's map without an input-channel axis
        w = F.reshape(w, (int(w.shape[0]), 1) + tuple(w.shape[1:]))
    n = w.ndim - 2
    refuse_free_windows(x, tuple(w.shape[2:]), _trailing(strides, n, 1),
                        _trailing(auto_padding, n, True), _trailing(dilation, n, 1), "Convolution")
    groups = int(groups)
    if groups > 1:
        _refuse_groups(int(x.shape[1]), tuple(int(d) for d in w.shape[:2]), groups)
    channels = None
    if reduction_rank == 1 and w.ndim == x.ndim >= 3:
        channels = _channel_geometry(int(x.shape[1]), int(w.shape[1]) * groups, strides,
                                     auto_padding, dilation, n + 1)
    if channels is None:
        y = S.convolution(x, w, None, _trailing(strides, n, 1),
                          _trailing(auto_padding, n, True), _trailing(dilation, n, 1), groups)
        G.hide_padding(y, [x, w])       # (CNTK's Convolution pads inside: no Pad shown)
        out = _unbatch(y, operand)
        if out is not y:                # (one Convolution over an operand without a batch
            one_op(out, convolution_map, operand)   # axis: no Reshape of Stadyn's shown)
        G.show_operands_in_order(out, (_as_operand(convolution_map), _as_operand(operand)))
        _refuse_unshared(out, sharing, convolution_map)
        return _shown(named(wrap(out), name, "Convolution"), convolution_map, operand,
                      strides, sharing, auto_padding, dilation, groups,
                      max_temp_mem_size_in_samples, sequential)
    # the map slides along the channel axis too: CNTK 2.7 builds (maps * positions, ...) and
    # refuses it at the first run; the values stand in for the shape (each position the
    # convolution of the map's channels), never shown
    positions, message = channels
    S.refuse_window_beyond_input(tuple(w.shape[2:]), tuple(x.shape[2:]), "convolution")
    part = F.slice(x, [None, 0] + [None] * n, [None, int(w.shape[1])] + [None] * n,
                   [1] * x.ndim)
    y = S.convolution(part, w, None, _trailing(strides, n, 1),
                      _trailing(auto_padding, n, True), _trailing(dilation, n, 1), 1)
    y = F.concatenate(*([y] * positions), axis=1) if positions else F.slice(
        y, [None] * y.ndim, [None, 0] + [None] * n, [1] * y.ndim)
    out = _unbatch(y, operand)
    refuse_when_run(out, message, InvalidAtRunError)
    _refuse_unshared(out, sharing, convolution_map)
    return _shown(named(wrap(out), name, "Convolution"), convolution_map, operand, strides,
                  sharing, auto_padding, dilation, groups, max_temp_mem_size_in_samples,
                  sequential)


def _refuse_groups(channels: int, map_shape: tuple, groups: int) -> None:
    """CNTK 2.7's refusals of a grouped convolution as it is made (a RuntimeError): the
    input's channels must be the map's input channels times ``groups``, the map's output
    channels a multiple of ``groups``.

    Example:
        >>> _refuse_groups(4, (3, 2), 2)
        Traceback (most recent call last):
          ...
        RuntimeError: groups: number of output channels must be divisble by groups.
        (convolution: 3 maps in 2 groups; as CNTK 2.7 refuses it)
    """
    maps, kernel_channels = map_shape
    if channels > 0 and channels != kernel_channels * groups:
        raise RuntimeError(
            "groups: number of input channels (C) must be equal to number of input kernel "
            f"channels (kC) * groups (G).\n(convolution: the input has {channels} channels, "
            f"the map {kernel_channels} per group, {groups} groups; as CNTK 2.7 refuses it)")
    if maps % groups:
        raise RuntimeError(
            f"groups: number of output channels must be divisble by groups.\n(convolution: "
            f"{maps} maps in {groups} groups; as CNTK 2.7 refuses it)")


def _refuse_unshared(out, sharing, convolution_map) -> None:
    """``sharing=False`` on any axis: CNTK 2.7 builds the convolution (shapes as shared) and
    refuses it when it first runs, its weight not being of an unshared convolution's layout;
    so does Stadyn."""
    flags = (sharing,) if isinstance(sharing, (bool, int, np.integer)) else tuple(sharing)
    if all(bool(f) for f in flags):
        return
    uid = getattr(convolution_map, "uid", None) or "W"
    refuse_when_run(out, f"Convolution weight matrix {uid} should have dimension [(filter "
                         "shape) x (input channels) x (output channels)]\n(CNTK 2.7 builds a "
                         "convolution with sharing=False but cannot run it; Stadyn neither: "
                         "give sharing=True)", InvalidAtRunError)


def _refuse_transpose_output_shape(operand, sizes: tuple, kernel: tuple, strides,
                                   auto_padding, dilation, output_shape) -> None:
    """CNTK 2.7 convolves ``output_shape`` with the transposed convolution's options and
    refuses (a RuntimeError as the op is made) a result other than the operand's shape;
    an ``output_shape`` with its channel axis while ``auto_padding`` pads that axis (a single
    True, CNTK's default, does) never gives it."""
    n = len(kernel)
    out = tuple(int(v) for v in output_shape)
    pads, steps = _trailing(auto_padding, n, True), _trailing(strides, n, 1)
    got = []
    for o, k, st, pad, dil in zip(out[-n:], kernel, steps, pads, _trailing(dilation, n, 1)):
        st = max(1, int(st))
        got.append(-(-o // st) if pad else (o - (int(dil) * (k - 1) + 1)) // st + 1)
    channel_pad = len(out) > n and bool(_full_rank(auto_padding, n + 1, True)[0])
    if tuple(got) == tuple(sizes) and not channel_pad:
        return
    shape = list(sample_shape(operand))

    def dims(s):
        return "[" + " x ".join(str(d) for d in s) + "]"
    why = ("auto_padding pads the channel axis too (give auto_padding=[False, True, ...])"
           if channel_pad else f"its spatial axes give {dims(got)}")
    raise RuntimeError(
        f"Convolution transpose: The shape '{dims(shape)}' of the convolution transpose "
        f"operand is different than the resulting shape from convolving the specified output "
        f"shape '{dims(out)}' using the provided options.\n({why}; CNTK 2.7 refuses it too)")


def _full_rank(value, rank: int, default) -> tuple:
    """A per-axis option over all ``rank`` axes of the map (channel first), as CNTK 2.7 reads
    it: one value for every axis, a longer list right-aligned, a shorter one's missing leading
    axes taking its first value."""
    if value is None:
        return (default,) * rank
    if isinstance(value, (bool, int, np.integer)):
        return (value,) * rank
    value = tuple(value)
    if len(value) >= rank:
        return value[len(value) - rank:]
    return (value[0],) * (rank - len(value)) + value


def _channel_geometry(size: int, kernel: int, strides, auto_padding, dilation, rank: int):
    """Where a convolution map slides along the input's channel axis (CNTK 2.7 treats it as
    one more axis of the window: ``strides``, ``auto_padding`` and ``dilation`` given for every
    axis, or one value for all, reach it): ``(positions, why CNTK refuses to run it)``, or
    ``None`` where the map covers the channels once (the usual convolution).  With
    auto-padding the positions are ``ceil(size / stride)``; without, ``(size - span) //
    stride + 1`` (none where the dilated span exceeds the channels).

    Example:
        >>> _channel_geometry(4, 4, (1,), (True,), (1,), 3)[0]       # C.convolution's default
        4
        >>> _channel_geometry(4, 4, (1,), (False, True, True), (1,), 3) is None
        True
    """
    if size <= 0 or kernel <= 0:      # not known yet
        return None
    stride = int(_full_rank(strides, rank, 1)[0])
    if stride <= 0:         # InferredDimension: the whole axis, one position (as CNTK 2.7)
        stride = size
    pad = bool(_full_rank(auto_padding, rank, True)[0])
    dilate = int(_full_rank(dilation, rank, 1)[0])
    span = dilate * (kernel - 1) + 1
    if pad:
        positions = -(-size // stride)
        padding = max(0, (positions - 1) * stride + span - size)
    else:
        positions, padding = max(0, (size - span) // stride + 1), 0
    if positions == 1 and padding == 0 and kernel == size:
        return None
    if padding:
        return positions, ("Convolution operation: detected padding over channel axis. This is "
                           "not supported in cuDnn. Please try setting autoPadding to false for "
                           "channel axis.\n(CNTK 2.7 refuses auto-padding over the channel axis "
                           "when it runs: give auto_padding=[False, True, ...])")
    if positions == 0:
        return positions, (f"Convolution operation: the map's {kernel} input channels dilated "
                           f"by {dilate} span {span}, more than the input's {size} channels: "
                           "no output values (CNTK 2.7 builds this shape and cannot run it; "
                           "give the channel axis dilation 1: dilation=(1, d, d))")
    return positions, (f"Mismatching outputShape and mapCount\n(the map has {kernel} input "
                       f"channels, the input {size}: CNTK 2.7 slides the map along the channels "
                       f"to {positions} positions and refuses that when it runs)")


def _shown(result, convolution_map, operand, *options, **more):
    """``result`` (a Convolution made of ``convolution_map`` over ``operand``) with CNTK
    2.7's attributes recorded as its ``root_function.attributes`` (``_conv_attributes``)."""
    if isinstance(result, GraphObject):
        CNTK_ATTRIBUTES[result.variable] = convolution_attributes(
            tuple(np.shape(convolution_map) if not hasattr(convolution_map, "shape")
                  else convolution_map.shape),
            tuple(np.shape(operand) if not hasattr(operand, "shape") else operand.shape),
            *options, **more)
    return result


def convolution_transpose(convolution_map, operand, strides=(1,), sharing=(True,),
                          auto_padding=(True,), output_shape=None, dilation=(1,),
                          reduction_rank: int = 1, max_temp_mem_size_in_samples: int = 0,
                          name: str = ""):
    """The transpose of :func:`convolution` with ``convolution_map`` of shape
    ``(in, out, *kernel)``; ``output_shape`` picks the output size when strides leave a
    choice.  A map of the operand's rank of one input channel (``(1, *kernel)``) gives one
    output map, as in CNTK 2.7 (which refuses more input channels there: "Mismatching
    outputShape and mapCount")."""
    w = _as_operand(convolution_map)
    x = _channels_first(operand, reduction_rank)
    if reduction_rank == 1 and w.ndim == x.ndim - 1 and w.shape[0] == 1:
        w = F.reshape(w, (w.shape[0], 1) + tuple(w.shape[1:]))
    n = w.ndim - 2
    if output_shape is not None:
        _refuse_transpose_output_shape(operand, tuple(int(d) for d in x.shape[2:]),
                                       tuple(int(d) for d in w.shape[2:]), strides,
                                       auto_padding, dilation, output_shape)
    y = S.convolution_transpose(x, w, None, _trailing(strides, n, 1),
                                _trailing(auto_padding, n, True), _trailing(dilation, n, 1),
                                output_shape)
    out = _unbatch(y, operand)
    _refuse_unshared(out, sharing, convolution_map)
    # (CNTK 2.7 builds it as its Convolution op, transposed inside: Convolution(W, x))
    one_op(out, convolution_map, operand)
    G.show_operands_in_order(out, (_as_operand(convolution_map), _as_operand(operand)))
    return _shown(named(wrap(out), name, "Convolution"), convolution_map, operand, strides,
                  sharing, auto_padding, dilation, 1, max_temp_mem_size_in_samples, False,
                  transpose=True, output_shape=output_shape)


def pooling(operand, pooling_type, pooling_window_shape, strides=(1,), auto_padding=(False,),
            ceil_out_dim: bool = False, include_pad: bool = False, name: str = ""):
    """Max (``MAX_POOLING``) or average (``AVG_POOLING``) pooling over the trailing
    ``len(pooling_window_shape)`` axes; with auto-padding an average counts only the values
    inside the input unless ``include_pad``.  ``ceil_out_dim=True`` rounds the output count
    up, as CNTK's geometry does (:func:`stadyn.cntk_semantics.window_edges`): the last window
    hangs over the end, its padding never winning a max and counted in an average only with
    ``include_pad``."""
    window = tuple(int(k) for k in pooling_window_shape)
    n = len(window)
    x = _channels_first(operand, 1)
    strides_ = _trailing(strides, n, 1)
    pads = _trailing(auto_padding, n, False)
    refuse_free_windows(x, window, strides_, pads, 1, "Pooling", bool(ceil_out_dim))
    average = pooling_type == AVG_POOLING
    y = S.pooling(x, window, strides_, pads, average, include_pad=average and bool(include_pad),
                  ceil_out_dim=bool(ceil_out_dim))
    G.hide_padding(y, [x])              # (CNTK's Pooling pads inside: no Pad shown)
    result = named(wrap(_unbatch(y, operand)), name, "Pooling")
    if isinstance(result, GraphObject):     # (CNTK 2.7's attributes: _conv_attributes)
        CNTK_ATTRIBUTES[result.variable] = pooling_attributes(
            pooling_type, window, strides, auto_padding, ceil_out_dim, include_pad)
    return result


def unpooling(operand, pooling_input, unpooling_type, unpooling_window_shape, strides=(1,),
              auto_padding=(False,), name: str = ""):
    """Max unpooling: each value of ``operand`` goes back to where the maximum of its window
    was in ``pooling_input`` (zeros elsewhere), the windows, strides and auto-padding those of
    the pooling that made ``operand``; where overlapping windows have their maximum at one
    place, the last window's value (row-major) is kept, as CNTK 2.7's."""
    window = tuple(int(k) for k in unpooling_window_shape)
    n = len(window)
    if unpooling_type != MAX_UNPOOLING:
        raise ValueError("unpooling: only MAX_UNPOOLING exists")
    y = S.max_unpooling(_channels_first(operand, 1), _channels_first(pooling_input, 1), window,
                        _trailing(strides, n, 1), _trailing(auto_padding, n, False))
    # (one op reading the pooled values and the pooling's input, as CNTK 2.7 shows it)
    return named(wrap(one_op(_unbatch(y, operand), operand, pooling_input)), name, "Unpooling")


def batch_normalization(operand, scale, bias, running_mean, running_inv_std, spatial: bool,
                        normalization_time_constant=5000, blend_time_constant=0,
                        epsilon=0.00001, use_cudnn_engine: bool = False,
                        disable_regularization: bool = False, name: str = "",
                        running_count=None):
    """CNTK's batch normalisation with the given parameters and running statistics (constants
    updated in place while training; ``running_inv_std`` holds the running variance)."""
    from ._variables import constant
    if running_count is None:       # (CNTK 2.7 warns so, and counts from a constant 0)
        warnings.warn("batch_normalization requires an additional 'running_count' parameter, "
                      "which can be instantiated as 'constant(0)'", Warning, stacklevel=2)
    count = _as_operand(running_count if running_count is not None else constant(0.0, shape=()))
    infer_batch_norm(operand, (scale, bias, running_mean, running_inv_std), bool(spatial))
    # (an operand without dynamic axes is one sample, as CNTK 2.7's eval normalises it)
    x = _channels_first(operand, 1)
    tc = float(normalization_time_constant) if normalization_time_constant is not None else 0.0
    out = F.cntk_batch_normalization(x, _as_operand(scale), _as_operand(bias),
                                     _as_operand(running_mean), _as_operand(running_inv_std),
                                     count, x.sequence_lengths, bool(spatial), tc,
                                     float(blend_time_constant or 0.0), float(epsilon))
    return named(wrap(_unbatch(out, operand)), name, "BatchNormalization")


def dropout(x, dropout_rate: float = 0.0, seed=SentinelValueForAutoSelectRandomSeed,
            name: str = ""):
    """Each value zeroed with probability ``dropout_rate`` and the rest scaled by
    ``1 / (1 - dropout_rate)`` while training; the identity in inference.  Its rate is checked
    and its seed drawn as it is called, as CNTK 2.7 does, where its operand has no shape yet
    too (:func:`_dropout_as_called`)."""
    refuse_several_outputs(x, "dropout")
    v = _as_operand(x)
    stream = resolved_seed(seed).for_operand(v)
    return named(wrap(F.dropout(v, float(dropout_rate), seed=stream, train_only=True)), name,
                 "Dropout")


def _dropout_as_called(arguments: dict) -> None:
    """``dropout``'s rate refused outside ``[0, 1)`` (a ValueError), then its seed drawn."""
    rate = float(arguments["dropout_rate"])
    if not 0.0 <= rate < 1.0:
        raise ValueError(f"dropout: the rate must be in [0, 1), got {rate}")
    arguments["seed"] = drawn_seed(arguments["seed"])


def local_response_normalization(operand, depth_radius: int, bias: float, alpha: float,
                                 beta: float, name: str = ""):
    """``x / (bias + alpha / (2r + 1) * sum of x**2 over the 2r + 1 nearest channels) ** beta``
    (``r = depth_radius``).  Over fewer channels than ``2r + 1`` the window is CNTK 2.7's: as
    many channels as there are, from ``(channels - 1) // 2`` below (CNTK rounds its kernel down
    to the channels, warning that the values do not change; they do), the scale still
    ``alpha / (2r + 1)``."""
    v = _channels_first(operand, 1)
    r = int(depth_radius)
    sq = F.mul2(v, v)
    c = v.shape[1]
    window = min(2 * r + 1, c)
    below = (window - 1) // 2            # (r where the window is whole)
    padded = F.pad(sq, (r, r) + (0, 0) * (v.ndim - 2))
    total = None
    for k in range(r - below, r - below + window):
        start = [None, k] + [None] * (v.ndim - 2)
        stop = [None, k + c] + [None] * (v.ndim - 2)
        part = F.slice(padded, start, stop, [1] * v.ndim)
        total = part if total is None else F.add2(total, part)
    den = F.pow_scalar(F.add_scalar(F.mul_scalar(total, float(alpha) / (2 * r + 1)),
                                    float(bias)), float(beta))
    # one op reading the operand, as CNTK 2.7 shows its LocalResponseNormalization block
    out = one_op(wrap(_unbatch(F.div2(v, den), operand)), operand)
    return named(out, name, "LocalResponseNormalization")


@float_arrays("operand")
def mean_variance_normalization(operand, epsilon: float = 0.00001,
                                use_stats_across_channels: bool = False,
                                do_variance_scaling: bool = True, name: str = ""):
    """Each sample minus its mean (per channel, or over all of it), divided by its standard
    deviation plus ``epsilon`` when ``do_variance_scaling``."""
    v = _channels_first(operand, 1)
    axes = list(range(1, v.ndim)) if use_stats_across_channels else list(range(2, v.ndim))
    if not axes:
        axes = list(range(1, v.ndim))
    x0 = F.sub2(v, F.mean(v, axis=axes, keepdims=True))
    if do_variance_scaling:
        var = F.mean(F.mul2(x0, x0), axis=axes, keepdims=True)
        x0 = F.div2(x0, F.add_scalar(F.sqrt(var), float(epsilon)))
    return named(wrap(one_op(_unbatch(x0, operand), operand)), name,
                 "MeanVarianceNormalization")


@float_arrays("mean", "inv_stddev")
def per_dim_mean_variance_normalize(operand, mean, inv_stddev, name: str = ""):
    """``(x - mean) * inv_stddev``."""
    from ._ops_math import element_times, minus
    return named(element_times(minus(operand, mean), inv_stddev), name,
                 "PerDimMeanVarianceNormalize")


def image_scaler(x, scalar: float, biases, name: str = ""):
    """``x * scalar`` plus one bias per channel."""
    v = _as_operand(x)
    b = np.asarray(biases, dtype=np.float32).reshape((-1,) + (1,) * (len(sample_shape(x)) - 1))
    out = F.add2(F.mul_scalar(v, float(scalar)), const(b))
    return named(wrap(out), name, "ImageScaler")


# CNTK 2.7 refuses these when run on a sparse input (a tensor operation on sparse data)
refuse_sparse_operands(globals(), ["mean_variance_normalization"])

# ops on placeholders without a shape (or on layers) wait for their shapes; dropout checks
# its rate and draws its seed as it is called
defer_module(globals(), __all__, as_called={"dropout": _dropout_as_called})
