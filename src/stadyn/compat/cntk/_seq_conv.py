"""``cntk.layers.SequentialConvolution``: a convolution whose first filter axis runs along the
sequence axis (CNTK 2.7's semantics).

A step holds ``(channels, *spatial)`` (``reduction_rank=1``) or ``spatial`` only
(``reduction_rank=0``, one channel).  The layer convolves each sequence as the plane
``(steps, *spatial)`` with ``W`` ``(num_filters, channels, *filter_shape)`` and gives a sequence
of ``(num_filters, *spatial')`` steps: ``n - filter_shape[0] + 1`` of them without padding
(divided by the stride), ``ceil(n / stride)`` with ``pad=True`` -- windows centred on the
steps, zeros outside each sequence; the spatial axes auto-padded as
``cntk_semantics.convolution`` does (a stride of 3 or more may skip the first positions, as
CNTK's).  ``b`` is ``(num_filters, 1, ...)``, one axis fewer than ``Convolution``'s.

On the sequence axis with a stride of 3 or more, CNTK 2.7's auto-padding too may skip first
steps, by an amount that depends on the longest sequence of the minibatch (its padded axis):
the windows are computed at every step and every ``stride``-th kept from that start, read
when the graph runs.

``cntk.layers.Convolution(..., sequential=True)`` is the older spelling of the same layer
(CNTK 2.7 splices past and future values into a window centred as above and convolves it:
the same values, ``cntk/layers/layers.py``'s ``_window``): its ``b`` has one axis per filter
axis, ``(num_filters, 1, ...)``, a stride along the sequence axis is its
``NotImplementedError`` as the layer is made (a dilation there its ValueError when applied,
an input without a sequence axis its RuntimeError), and a
minibatch shorter than the window is taken (zeros outside the sequences); unpadded, a
sequence left no step is its RuntimeError.
"""

from __future__ import annotations

import inspect
import math

from ... import functions as F
from ... import sequence as S
from ...layers import Layer, default_override_or, glorot_uniform, resolve
from ...cntk_semantics import convolution as window_convolution
from ._layers import Convolution as _static_convolution
from ._layers import LayerFunction, _native
from ._run_checks import refuse_when_run
from ._sequence_begin import reads_across

__all__ = ["Convolution", "SequentialConvolution"]


def _tuple(value, n: int) -> tuple:
    value = tuple(value) if isinstance(value, (list, tuple)) else (value,)
    return value * n if len(value) == 1 and n > 1 else value


def _every_step_from_cntks_start(y, lengths, step: int, n: int):
    """Every ``step``-th of the windows ``y`` (``(B, K, T, *spatial)``, one per step, the
    first at step 0) from where CNTK 2.7's auto-padding starts them along a sequence: it
    centres them as on an axis as long as the longest sequence ``T``, skipping the first
    ``((T - 1) mod step) // 2`` steps (``ConvolveGeometry``'s lower pad less than the
    window's half), for every sequence of the minibatch alike.  ``T`` is read when the graph
    runs (the longest of ``lengths``); each possible start is cut from ``y`` (the same
    ``ceil(T / step)`` windows each) and the one ``T`` gives is kept."""
    longest = F.add_scalar(F.max(F.cast(lengths, "float32")), -1.0)
    rest = F.sub2(longest, F.mul_scalar(F.floor(F.mul_scalar(longest, 1.0 / step)),
                                        float(step)))
    skipped = F.floor(F.mul_scalar(rest, 0.5))          # ((T - 1) mod step) // 2
    y = F.pad(y, (0, step) + (0, 0) * (n - 1))          # (every start: ceil(T / step) windows)
    kept = None
    for start in range((step - 1) // 2 + 1):
        windows = F.slice(y, [start] + [None] * (n - 1), [start - step] + [None] * (n - 1),
                          [step] + [1] * (n - 1))
        # 1 where the start is the one CNTK takes, else 0 (a whole number's distance)
        chosen = F.maximum_scalar(F.add_scalar(F.mul_scalar(
            F.abs(F.add_scalar(skipped, -float(start))), -1.0), 1.0), 0.0)
        part = F.mul2(windows, F.cast(chosen, str(windows.dtype)))
        kept = part if kept is None else F.add2(kept, part)
    return kept


class _SequentialConvolution(Layer):
    """The layer (see :func:`SequentialConvolution`)."""

    def __init__(self, filter_shape, num_filters, activation, init, pad, strides, bias,
                 init_bias, reduction_rank, dilation, name, windowed: bool = False):
        super().__init__(name)
        self.windowed = windowed       # Convolution(sequential=True)'s: b of the filter's rank
        self.filter_shape = tuple(int(k) for k in _tuple(filter_shape, 1))
        n = len(self.filter_shape)
        self.num_filters = num_filters
        self.activation, self.init, self.bias, self.init_bias = activation, init, bias, init_bias
        self.pad = tuple(bool(p) for p in _tuple(pad, n))
        self.strides = tuple(int(s) for s in _tuple(strides, n))
        self.dilation = tuple(int(d) for d in _tuple(dilation, n))
        self.reduction_rank = reduction_rank
        self.unshared = False           # (SequentialConvolution(sharing=False): see apply)

    @property
    def kind(self) -> str:
        return "convolution" if self.windowed else "sequentialconvolution"

    def apply(self, x):
        n = len(self.filter_shape)
        if self.windowed and x.sequence_lengths is None:
            raise RuntimeError("PastValue/FutureValue Function: the input has no sequence "
                               "axis\nConvolution(sequential=True): CNTK 2.7 splices past and "
                               "future values of the steps of a sequence; make the input with "
                               "sequence.input_variable")
        if self.windowed and self.dilation[0] != 1 and self.filter_shape[0] > 1:
            # (CNTK 2.7 convolves the window it splices, filter_shape[0] steps, unpadded:
            # dilated, the filter no longer fits in it, and its reshape refuses the empty axis)
            raise ValueError(
                f"Convolution(sequential=True): a dilation of {self.dilation[0]} along the "
                f"sequence axis leaves no output of the window of {self.filter_shape[0]} steps "
                f"(CNTK 2.7: 'Reshape: Operand (sub-)dimensions '[0]' incompatible with "
                f"desired replacement (sub-)dimensions '[]''); dilate the spatial axes only")
        values, _ = S.unpack(x, 0.0)                       # (B, T, [C,] *spatial)
        # CNTK 2.7's window of past and future values: of future values only (padded, of up
        # to 2 steps), a sequence that goes on is looked up in the previous minibatch and then
        # read as begun; with past values CNTK carries them, which Stadyn refuses as it does
        # every sequence that goes on into a SequentialConvolution (UnpackSequence's); a
        # window of one step splices no past or future value and reads no other step
        span = self.dilation[0] * (self.filter_shape[0] - 1) + 1
        only_future = self.windowed and self.pad[0] and (span - 1) // 2 == 0
        rule = None if self.windowed and span == 1 else \
            "looked up" if only_future else "whole"
        reads_across(values, rule, "Convolution(sequential=True)" if self.windowed else
                     "SequentialConvolution")
        if self.reduction_rank == 0:
            values = F.stack(values, axis=2)
        channels = int(values.shape[2])
        if len(values.shape) - 3 != n - 1:
            raise ValueError(f"SequentialConvolution: a filter of rank {n} needs steps with "
                             f"{n - 1} spatial axes, got steps of shape {tuple(x.shape[2:])}")
        k = self.num_filters or 1
        fan_in = channels * math.prod(self.filter_shape)
        w = self.parameter("W", (k, channels) + self.filter_shape, self.init, fan_in,
                           k * math.prod(self.filter_shape))
        planes = F.transpose(values, (0, 2, 1) + tuple(range(3, 3 + n - 1)))
        # the sequence axis padded by the window's half (steps past a sequence's end are cut by
        # its length; the padding does not depend on the steps' count, which the graph takes
        # as it comes); the spatial axes auto-padded as CNTK's, which may skip first positions
        span = self.dilation[0] * (self.filter_shape[0] - 1) + 1
        before = (span - 1) // 2 if self.pad[0] else 0
        widths = (before, span - 1 - before) + (0, 0) * (n - 1)
        planes = F.pad(planes, widths) if any(widths) else planes
        step = self.strides[0]
        if self.pad[0] and step >= 3:       # (the first window's start depends on the steps)
            y = window_convolution(planes, w, None, (1,) + self.strides[1:],
                                   (False,) + self.pad[1:], self.dilation)
            y = _every_step_from_cntks_start(y, x.sequence_lengths, step, n)
        else:
            y = window_convolution(planes, w, None, self.strides, (False,) + self.pad[1:],
                                   self.dilation)
        y = F.transpose(y, (0, 2, 1) + tuple(range(3, 3 + n - 1)))   # (B, T', K, *spatial')
        if self.bias:
            b = self.parameter("b", (k,) + (1,) * (n - 1 + self.windowed), self.init_bias)
            y = F.add2(y, F.reshape(b, (1, 1, k) + (1,) * (n - 1)))
        if not self.num_filters:
            y = F.sum(y, axis=2)
        # (refuses a minibatch shorter than the window, or a sequence left no step, as CNTK;
        # the windowed layer's past and future values read zeros past the longest sequence
        # too, so it refuses a sequence left no step only: CNTK's "AddSequence" RuntimeError)
        kernel = 1 if self.windowed else self.filter_shape[0]
        lengths = F.sequence_window_lengths(x.sequence_lengths, kernel, span, self.strides[0],
                                            self.pad[0])
        y = S.to_sequence(y, lengths)
        y = self.activation(y) if self.activation is not None else y
        if self.unshared:       # (CNTK 2.7 builds it; its node refuses the kernel when run)
            refuse_when_run(y, "Convolution weight matrix W should have dimension [(filter "
                            "shape) x (input channels) x (output channels)]\n"
                            "SequentialConvolution(sharing=False): CNTK 2.7 takes it as made "
                            "and refuses it when run", RuntimeError)
        return y


def SequentialConvolution(filter_shape, num_filters=None,
                          activation=default_override_or(None),
                          init=default_override_or(glorot_uniform()),
                          pad=default_override_or(False), strides=1, sharing=True,
                          bias=default_override_or(True), init_bias=default_override_or(0),
                          reduction_rank=1, transpose_weight=False, dilation=1, groups=1,
                          max_temp_mem_size_in_samples=0, op_name="Convolution",
                          name: str = "") -> LayerFunction:
    """A convolution along the sequence axis and the steps' spatial axes (see the module's
    text); ``W`` is ``(num_filters, channels, *filter_shape)``.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> x = C.sequence.input_variable((2, 6))          # (channels, height) per step
        >>> f = C.layers.SequentialConvolution((3, 2), 4)
        >>> y = f(x)
        >>> y.shape, f.W.shape
        ((4, 5), (4, 2, 3, 2))
        >>> [a.shape for a in y.eval({x: [np.ones((5, 2, 6), np.float32)]})]
        [(3, 4, 5)]
    """
    return _sequence_convolution("SequentialConvolution", False, filter_shape, num_filters,
                                 activation, init, pad, strides, sharing, bias, init_bias,
                                 reduction_rank, transpose_weight, dilation, groups, op_name,
                                 name)


def _sequence_convolution(kind: str, windowed: bool, filter_shape, num_filters, activation,
                          init, pad, strides, sharing, bias, init_bias, reduction_rank,
                          transpose_weight, dilation, groups, op_name, name) -> LayerFunction:
    """The layer of :func:`SequentialConvolution` (``windowed``: of ``Convolution(...,
    sequential=True)``), its options resolved under ``kind``'s default options."""
    if reduction_rank not in (0, 1):
        raise NotImplementedError("Convolution: reduction_rank must be 0 or 1")
    if transpose_weight:
        raise NotImplementedError("Convolution: transpose_weight option currently not supported")
    n = len(_tuple(filter_shape, 1))
    for what, value in (("strides", strides), ("sharing", sharing)):
        if len(_tuple(value, n)) != n:         # (CNTK 2.7's _pad_to_shape)
            raise ValueError(f"{what} parameter ({value}) must be a scalar or have same number "
                             f"of elements as the filter_shape parameter ({filter_shape})")
    # (CNTK 2.7 checks ``not sharing`` of the padded tuple, never empty: sharing=False is
    # taken, the windowed layer's kernel shared; SequentialConvolution's refused when run)
    if windowed and _tuple(strides, n)[0] != 1:      # (CNTK's _window, as the layer is made)
        raise NotImplementedError("windowed convolution with stride not yet implemented")
    if groups <= 0:
        raise ValueError("Convolution: groups must be strictly positive, i.e. groups > 0.")
    if groups > 1:
        raise ValueError("Convolution: groups > 1, is not currently supported by Convolution "
                         "layer.")
    activation = _native(resolve(kind, "activation", activation))
    layer = _SequentialConvolution(
        filter_shape, num_filters, activation, resolve(kind, "init", init),
        resolve(kind, "pad", pad), strides, resolve(kind, "bias", bias),
        resolve(kind, "init_bias", init_bias), reduction_rank, dilation, name, windowed)
    layer.unshared = not windowed and not all(_tuple(sharing, n))
    return LayerFunction(layer, op_name, name)


_SEQUENCE_OPTIONS = inspect.signature(SequentialConvolution).parameters


def Convolution(*args, **kwargs) -> LayerFunction:
    if not (kwargs.get("sequential") if "sequential" in kwargs or len(args) < 3 else args[2]):
        return _static_convolution(*args, **kwargs)
    given = _static_convolution.__signature__.bind(*args, **kwargs).arguments
    given.pop("sequential")
    given.pop("max_temp_mem_size_in_samples", None)
    options = dict((k, p.default) for k, p in _SEQUENCE_OPTIONS.items()
                   if k != "max_temp_mem_size_in_samples")
    options.update(given)
    return _sequence_convolution("Convolution", True, **options)


Convolution.__doc__ = _static_convolution.__doc__
Convolution.__signature__ = _static_convolution.__signature__
