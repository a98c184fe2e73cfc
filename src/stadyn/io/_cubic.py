"""Bicubic resizing of 8-bit images bit for bit as CNTK 2.7's reader does it (OpenCV 3's
fixed-point ``INTER_CUBIC``): per output position the source position ``(d + 0.5) * scale -
0.5`` in float32, the four cubic weights (``A = -0.75``) in float32 scaled by 2048 and rounded to
int16, a horizontal then a vertical pass in integers, and one rounding at the end
(``(sum + 2^21) >> 22``, saturated to 0..255).  OpenCV 4's cubic rounds a few values the other
way."""

from __future__ import annotations

import numpy as np

__all__ = ["resize_cubic_u8"]

_A = np.float32(-0.75)
_ONE = np.float32(1)


def _weights(frac: np.ndarray) -> np.ndarray:
    """The four float32 cubic weights for fractional positions ``frac`` (float32 array)."""
    x = frac.astype(np.float32)
    x1 = x + _ONE
    w0 = ((_A * x1 - 5 * _A) * x1 + 8 * _A) * x1 - 4 * _A
    w1 = ((_A + 2) * x - (_A + 3)) * x * x + _ONE
    y = _ONE - x
    w2 = ((_A + 2) * y - (_A + 3)) * y * y + _ONE
    w3 = _ONE - w0 - w1 - w2
    return np.stack([w0, w1, w2, w3], axis=1).astype(np.float32)


def _table(src: int, dst: int) -> tuple[np.ndarray, np.ndarray]:
    """(source indices (dst, 4), int16 weights (dst, 4)) along one axis."""
    scale = np.float64(src) / np.float64(dst)
    pos = ((np.arange(dst, dtype=np.float64) + 0.5) * scale - 0.5).astype(np.float32)
    base = np.floor(pos).astype(np.int64)
    weights = _weights(pos - base.astype(np.float32))
    fixed = np.clip(np.rint(weights * np.float32(2048)), -32768, 32767).astype(np.int64)
    index = np.clip(base[:, None] + np.arange(-1, 3)[None, :], 0, src - 1)
    return index, fixed


def resize_cubic_u8(image: np.ndarray, width: int, height: int) -> np.ndarray:
    """``image`` (H, W, C) uint8 resized to (height, width, C) with CNTK's bicubic rounding.

    Example:
        >>> img = np.arange(12, dtype=np.uint8).reshape(3, 4, 1) * 20
        >>> resize_cubic_u8(img, 2, 2)[:, :, 0].tolist()
        [[23, 67], [153, 197]]
    """
    h, w = image.shape[:2]
    xi, xw = _table(w, int(width))
    yi, yw = _table(h, int(height))
    src = image.astype(np.int64)
    rows = np.einsum("hwkc,wk->hwc", src[:, xi, :], xw)          # (H, width, C)
    out = np.einsum("hkwc,hk->hwc", rows[yi, :, :], yw)           # (height, width, C)
    return np.clip((out + (1 << 21)) >> 22, 0, 255).astype(np.uint8)
