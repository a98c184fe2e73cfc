"""CNTK's pooling nodes for :class:`~._stadyn_library.StadynLibrary` (a mixin: it uses the
library's ``_value``, ``_node``, ``_lead`` and ``has_batch_axis``).  Shapes are CNTK's,
column-major (a ``W:H:C`` image; Stadyn's per-sample shape is its reverse).

* ``Pooling``: CNTK.core.bs's raw pooling node, ``Pooling (input, poolKind, kernelDims,
  stride = 1, autoPadding = true, ...)``: ``"max"`` or ``"average"`` over windows of
  ``kernelDims``; the axes the kernel leaves out are not pooled.  Auto-padding is CNTK's,
  whatever it makes of each axis: more padding after than before for an even window or a
  stride of 2 or more, the first positions skipped where a stride of 3 or more leaves more
  than half a window before the first centre (``ConvolveGeometry::GetLowerPad``).  Explicit
  ``lowerPad``/``upperPad`` (on the axes ``autoPadding`` leaves off) pad by that much, and the
  windows must then cover the padded axis exactly, as CNTK insists; ``ceilOutDim = true``
  rounds the output count up, the last window hanging over the end (an average counts only
  the values inside the input unless ``includePad``; a window wholly outside the input gives
  -inf for a max, NaN for such an average, 0 with ``includePad``, as CNTK 2.7 on the CPU);
* ``MaxUnpooling``: each value of a max pooling's output put back where its window's maximum
  was (the gradient flows to the values only, as in CNTK);
* ``ROIPooling (input, ROIs, shape, spatialScale = 0.0625)``: Fast R-CNN's max pooling of the
  ``W:H:C`` feature maps over each region of ``ROIs`` (``4:R``: ``x1, y1, x2, y2`` in the
  image's pixels, which ``spatialScale`` maps onto the feature map) into a ``shape``
  (``w:h``) grid: ``w:h:C:R`` per sample;
* CNTK's deprecated image nodes ``MaxPooling`` and ``AveragePooling`` (window and subsampling
  given as width and height, no padding).
"""

from __future__ import annotations

from typing import Any

from .. import functions as F
from .._errors import ConfigError
from ..cntk_semantics import max_unpooling, pooling, roi_pooling
from ._tensor_library import _check_cudnn_layout, _dims, _fix, _int

__all__ = ["PoolingFunctions"]


def _flag(value, what: str) -> bool:
    if isinstance(value, bool) or value in (0, 1):
        return bool(value)
    raise ConfigError(f"{what} must be true or false, got {value!r}")


class PoolingFunctions:
    """CNTK's pooling nodes: ``Pooling``, ``MaxUnpooling``, ``ROIPooling`` and the deprecated
    ``MaxPooling``/``AveragePooling``."""

    def _init_poolings(self) -> dict[str, Any]:
        return {"Pooling": self.Pooling, "MaxPooling": self.MaxPooling,
                "AveragePooling": self.AveragePooling, "MaxUnpooling": self.MaxUnpooling,
                "ROIPooling": self.ROIPooling}

    def Pooling(self, input, poolKind, kernelDims, stride=1, autoPadding=True,  # noqa: A002
                lowerPad=0, upperPad=0, ceilOutDim=False, includePad=False, imageLayout="CHW",
                tag=""):
        """CNTK's ``Pooling`` node: the max or average of each window of ``kernelDims``
        (column-major) every ``stride``, CNTK's auto-padding on the axes it is set for,
        ``lowerPad``/``upperPad`` on the others (an average counts only the values inside the
        input; ``includePad = true``: the whole window, the padding as zeros);
        ``ceilOutDim = true`` keeps a last window that hangs over the end."""
        what = "Pooling"
        x = self._value(input, what)
        if self._lead(x) != 1:
            raise ConfigError(f"{what}: the input must be a minibatch of samples (not a "
                              "sequence, not a parameter)")
        kind = str(poolKind).lower()
        if kind not in ("max", "average"):
            raise ConfigError(f"{what}: poolKind must be \"max\" or \"average\", got "
                              f"{poolKind!r}")
        dims = tuple(reversed(x.shape[1:]))               # CNTK order
        rank = len(dims)
        kernel = _dims(kernelDims, f"{what}: kernelDims", zero=False)
        strides = _dims(stride, f"{what}: stride", zero=False)
        pads = autoPadding if isinstance(autoPadding, tuple) else (autoPadding,)
        if max(len(kernel), len(strides), len(pads)) > rank:
            raise ConfigError(f"{what}: kernelDims, stride or autoPadding has more entries "
                              f"than the input {dims} (column-major) has axes")
        filter_rank = len(kernel)
        kernel = _fix(kernel, filter_rank, rank, 1)
        strides = _fix(strides, filter_rank, rank, 1)
        pads = tuple(bool(p) for p in _fix(pads, filter_rank, rank, False))
        lower = _fix(_dims(lowerPad, f"{what}: lowerPad"), filter_rank, rank, 0)
        upper = _fix(_dims(upperPad, f"{what}: upperPad"), filter_rank, rank, 0)
        if len(lower) > rank or len(upper) > rank:
            raise ConfigError(f"{what}: lowerPad or upperPad has more entries than the input "
                              f"{dims} (column-major) has axes")
        ceil = _flag(ceilOutDim, f"{what}: ceilOutDim")
        include = _flag(includePad, f"{what}: includePad")
        _check_cudnn_layout(imageLayout, what)
        # the axes pooled: up to the last one (column-major) a window, stride or pad touches
        n = max((i + 1 for i in range(rank) if (kernel[i], strides[i], pads[i], lower[i],
                                                 upper[i]) != (1, 1, False, 0, 0)), default=1)
        if n > 3:
            raise ConfigError(f"{what}: pooling over {n} axes is not supported (1 to 3)")
        average = kind == "average"
        window, steps = tuple(reversed(kernel[:n])), tuple(reversed(strides[:n]))
        y = pooling(x, window, steps, tuple(reversed(pads[:n])), average=average,
                    include_pad=average and include, ceil_out_dim=ceil,
                    lower_pad=tuple(reversed(lower[:n])), upper_pad=tuple(reversed(upper[:n])))
        return self._node(y, "Pooling", tag)

    def MaxPooling(self, input, windowWidth, windowHeight, horizontalSubsample,  # noqa: A002
                   verticalSubsample, imageLayout="CHW", tag=""):
        """Max pooling of ``windowWidth x windowHeight`` windows every ``horizontalSubsample``
        columns and ``verticalSubsample`` rows, without padding."""
        return self._legacy_pooling(input, windowWidth, windowHeight, horizontalSubsample,
                                    verticalSubsample, imageLayout, tag, "MaxPooling")

    def AveragePooling(self, input, windowWidth, windowHeight, horizontalSubsample,  # noqa: A002
                       verticalSubsample, imageLayout="CHW", tag=""):
        """Average pooling, as ``MaxPooling``."""
        return self._legacy_pooling(input, windowWidth, windowHeight, horizontalSubsample,
                                    verticalSubsample, imageLayout, tag, "AveragePooling")

    def _legacy_pooling(self, input, w, h, sw, sh, layout, tag, what):  # noqa: A002
        x = self._value(input, what)
        _check_cudnn_layout(layout, what)
        if self._lead(x) != 1 or x.ndim != 4:
            raise ConfigError(f"{what}: needs a minibatch of W:H:C images, got shape "
                              f"{tuple(reversed(x.shape[1:]))} (column-major)")
        window = (_int(h, f"{what}: windowHeight"), _int(w, f"{what}: windowWidth"))
        strides = (_int(sh, f"{what}: verticalSubsample"),
                   _int(sw, f"{what}: horizontalSubsample"))
        if min(window + strides) < 1 or window[0] > x.shape[2] or window[1] > x.shape[3]:
            raise ConfigError(f"{what}: window {window[1]} x {window[0]} and subsampling "
                              f"{strides[1]} x {strides[0]} do not fit an image "
                              f"{x.shape[3]} x {x.shape[2]}")
        y = pooling(x, window, strides, False, average=what == "AveragePooling")
        return self._node(y, what, tag)

    def MaxUnpooling(self, unpoolInput, poolInput, kernelDims, stride=1, autoPadding=True,
                     lowerPad=0, upperPad=0, imageLayout="CHW", tag=""):
        """``unpoolInput`` (the output of a max pooling of ``poolInput`` with this window,
        stride and padding: auto-padding, or ``lowerPad``/``upperPad`` on the axes without it)
        spread to ``poolInput``'s shape: each value at its window's maximum, zeros
        elsewhere."""
        what = "MaxUnpooling"
        y, x = self._value(unpoolInput, what), self._value(poolInput, what)
        if self._lead(x) != 1 or x.ndim != 4 or self._lead(y) != 1:
            raise ConfigError(f"{what}: needs minibatches of W:H:C images")
        window = _fix(_dims(kernelDims, f"{what}: kernelDims", zero=False), 2, 2, 1)[:2]
        strides = _fix(_dims(stride, f"{what}: stride", zero=False), 2, 2, 1)[:2]
        pads = _fix(autoPadding, 2, 2, False)[:2]
        lower = _fix(_dims(lowerPad, f"{what}: lowerPad"), 2, 2, 0)[:2]
        upper = _fix(_dims(upperPad, f"{what}: upperPad"), 2, 2, 0)[:2]
        window, strides, pads = window[::-1], strides[::-1], pads[::-1]    # (H, W)
        lower, upper = lower[::-1], upper[::-1]
        pooled = pooling(x, window, strides, pads, average=False, lower_pad=lower,
                         upper_pad=upper)
        if tuple(pooled.shape[1:]) != tuple(y.shape[1:]):
            raise ConfigError(f"{what}: the values {tuple(reversed(y.shape[1:]))} are not the "
                              f"shape of this pooling of {tuple(reversed(x.shape[1:]))}, "
                              f"{tuple(reversed(pooled.shape[1:]))} (column-major)")
        return self._node(max_unpooling(y, x, window, strides, pads, lower, upper), what, tag)

    def ROIPooling(self, input, ROIs, shape, spatialScale=0.0625):  # noqa: A002
        """CNTK's ``ROIPooling`` node: the max of ``input``'s ``W:H:C`` feature maps over
        ``shape`` (``w:h``) bins of each region of ``ROIs`` (``4:R``, ``x1, y1, x2, y2`` in
        the image's pixels, times ``spatialScale`` on the map): ``w:h:C:R``."""
        what = "ROIPooling"
        x, rois = self._value(input, what), self._value(ROIs, what)
        if self._lead(x) != 1 or x.ndim != 4:
            raise ConfigError(f"{what}: the input must be a minibatch of W:H:C feature maps, "
                              f"got {tuple(reversed(x.shape[self._lead(x):]))} (column-major)")
        if self._lead(rois) != 1 or rois.ndim not in (2, 3) or rois.shape[-1] != 4:
            raise ConfigError(f"{what}: ROIs must be a minibatch of 4:R regions, got "
                              f"{tuple(reversed(rois.shape[self._lead(rois):]))} "
                              "(column-major)")
        if rois.ndim == 2:                                # one region: [4]
            rois = F.reshape(rois, (rois.shape[0], 1, 4))
        grid = _dims(shape, f"{what}: shape", zero=False)
        if len(grid) != 2:
            raise ConfigError(f"{what}: shape must be w:h, got {grid}")
        y = roi_pooling(x, rois, (grid[1], grid[0]), float(spatialScale))
        return self._node(y, what, "")
