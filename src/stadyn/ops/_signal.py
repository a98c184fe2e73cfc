"""Fourier transforms, as NNabla 1.39 lays them out: ``fft`` and ``ifft`` (complex values as a
last axis of two, real and imaginary part) and the short-time transforms ``stft`` / ``istft``
(a real signal ``(batch, samples)`` to real and imaginary parts ``(batch, fft_size // 2 + 1,
frames)`` and back).  Gradients are torch's of the same linear maps, which are NNabla's
backward rules (the adjoint transform).

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> x = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]])   # an impulse, N = 4
    >>> with sd.auto_forward():
    ...     y = F.fft(sd.Variable.from_numpy_array(x), signal_ndim=1)
    >>> y.d[:, 0].tolist(), y.d[:, 1].tolist()
    ([1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0])
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as TF

from ._registry import op

_C = "signal"
_WINDOWS = ("hanning", "hamming", "rectangular")
_PAD_MODES = ("constant", "reflect")


def _complex(name, x, signal_ndim):
    n = int(signal_ndim)
    if n not in (1, 2, 3):
        raise ValueError(f"{name}: signal_ndim={signal_ndim} must be 1, 2 or 3")
    if x.ndim < n + 1 or x.shape[-1] != 2:
        raise ValueError(f"{name}: the input {tuple(x.shape)} must have at least "
                         f"signal_ndim + 1 = {n + 1} axes and a last axis of 2 (real and "
                         "imaginary part)")
    if not x.is_floating_point():
        raise TypeError(f"{name}: the input must be floating point, not {x.dtype}")
    work = x if x.dtype in (torch.float32, torch.float64) else x.float()
    return torch.view_as_complex(work.contiguous()), tuple(range(-n, 0))


@op(1, category=_C)
def fft(x, signal_ndim, normalized=False):
    """Complex-to-complex discrete Fourier transform over the ``signal_ndim`` (1, 2 or 3) axes
    before the last; the last axis (of 2) holds the real and the imaginary part (NNabla's
    ``fft``).  ``normalized``: multiplied by ``1 / sqrt(N)`` (``N`` the signal's size).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = np.zeros((2, 4, 3, 2), np.float32); x[:, 0, 0, 0] = 1.0
        >>> with sd.auto_forward():
        ...     y = F.fft(sd.Variable.from_numpy_array(x), signal_ndim=2, normalized=True)
        >>> y.shape, float(y.d[0, 1, 2, 0])
        ((2, 4, 3, 2), 0.28867512941360474)
    """
    c, dims = _complex("fft", x, signal_ndim)
    y = torch.fft.fftn(c, dim=dims, norm="ortho" if normalized else "backward")
    return torch.view_as_real(y).to(x.dtype)


@op(1, category=_C)
def ifft(x, signal_ndim, normalized=False):
    """Complex-to-complex inverse discrete Fourier transform (NNabla's ``ifft``; the layout of
    :func:`fft`): divided by ``N``, or by ``sqrt(N)`` when ``normalized``.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.random.rand(3, 5, 2))
        >>> with sd.auto_forward():
        ...     z = F.ifft(F.fft(x, 1), 1)
        >>> bool(np.allclose(z.d, x.d, atol=1e-6))
        True
    """
    c, dims = _complex("ifft", x, signal_ndim)
    y = torch.fft.ifftn(c, dim=dims, norm="ortho" if normalized else "backward")
    return torch.view_as_real(y).to(x.dtype)


def _check_stft(name, window_size, stride, fft_size, window_type, pad_mode):
    window_type = "rectangular" if window_type is None else window_type
    if window_type not in _WINDOWS:
        raise ValueError(f"{name}: unknown window type {window_type!r} (one of "
                         f"{', '.join(_WINDOWS)} or None)")
    if pad_mode not in _PAD_MODES:
        raise ValueError(f"{name}: pad_mode {pad_mode!r} must be 'constant' or 'reflect'")
    if int(window_size) < 1 or int(stride) < 1:
        raise ValueError(f"{name}: window_size={window_size} and stride={stride} must be "
                         "positive")
    if int(fft_size) < int(window_size):
        raise ValueError(f"{name}: fft_size={fft_size} has to be at least as large as "
                         f"window_size={window_size}")
    return window_type


def _window(window_type, window_size, fft_size, device):
    """NNabla's analysis window (periodic Hann or Hamming, or ones) of ``window_size``, centred
    in ``fft_size`` zeros; float64."""
    i = torch.arange(window_size, dtype=torch.float64, device=device)
    if window_type == "hanning":
        w = 0.5 - 0.5 * torch.cos(2.0 * math.pi * i / window_size)
    elif window_type == "hamming":
        w = 0.54 - 0.46 * torch.cos(2.0 * math.pi * i / window_size)
    else:
        w = torch.ones_like(i)
    left = (fft_size - window_size) // 2
    return TF.pad(w, (left, fft_size - window_size - left))


def _angles(fft_size, device):
    w = torch.arange(fft_size // 2 + 1, dtype=torch.float64, device=device)[:, None]
    t = torch.arange(fft_size, dtype=torch.float64, device=device)[None, :]
    return 2.0 * math.pi * w * t / fft_size


def _stft_weights(window_type, window_size, fft_size, dtype, device):
    """The convolution kernels ``(fft_size // 2 + 1, 1, fft_size)`` of the real and imaginary
    part: the windowed DFT rows."""
    win = _window(window_type, window_size, fft_size, device)
    ang = _angles(fft_size, device)
    return ((torch.cos(ang) * win)[:, None].to(dtype),
            (-torch.sin(ang) * win)[:, None].to(dtype))


def _istft_weights(window_type, window_size, fft_size, dtype, device):
    """NNabla's inverse kernels: the one-sided inverse DFT rows (``1 / fft_size``, doubled
    for the bins that stand for two) times the window."""
    win = _window(window_type, window_size, fft_size, device)
    ang = _angles(fft_size, device)
    alpha = torch.full((fft_size // 2 + 1, 1), 2.0 / fft_size, dtype=torch.float64,
                       device=device)
    alpha[0] = 1.0 / fft_size
    alpha[fft_size // 2] = 1.0 / fft_size
    return ((torch.cos(ang) * alpha * win)[:, None].to(dtype),
            (-torch.sin(ang) * alpha * win)[:, None].to(dtype))


def _window_values(window_type, window_size, fft_size):
    left = (fft_size - window_size) // 2
    w = [0.0] * fft_size
    for i in range(window_size):
        c = math.cos(2.0 * math.pi * i / window_size)
        w[left + i] = (0.5 - 0.5 * c if window_type == "hanning" else
                       0.54 - 0.46 * c if window_type == "hamming" else 1.0)
    return w


def _inverse_window(name, window_type, window_size, fft_size, stride, size, center, dtype,
                    device):
    """The overlap-added squared window over a signal of ``size`` samples (frames every
    ``stride``), which ``istft`` divides by; NNabla's NOLA check: nonzero where it divides
    (all but the ``fft_size // 2`` padding on each side when ``center``)."""
    w = _window_values(window_type, window_size, fft_size)
    inv = [0.0] * size
    for start in range(0, size - fft_size + 1, stride):
        for j in range(fft_size):
            inv[start + j] += w[j] * w[j]
    lo, hi = (fft_size // 2, size - fft_size // 2) if center else (0, size)
    for i in range(lo, hi):
        if not inv[i] >= 1e-11:
            raise ValueError(f"{name}: the NOLA (nonzero overlap-add) condition is not met: "
                             f"the overlap-added squared window is {inv[i]} at sample {i} "
                             f"(window_type={window_type!r}, window_size={window_size}, "
                             f"stride={stride}, fft_size={fft_size}, center={center})")
    inv[:lo] = [1.0] * lo
    inv[hi:] = [1.0] * (size - hi)
    return torch.tensor(inv, dtype=dtype, device=device)


def _source_index(length, pad, pad_mode):
    """The padded positions that copy a sample of a signal of ``length`` padded by ``pad`` on
    both sides, and the samples they copy (reflection; a constant pad copies none)."""
    kept, source = [], []
    for j in range(length + 2 * pad):
        s = j - pad
        if pad_mode == "reflect":
            s = abs(s)
            s = 2 * (length - 1) - s if s >= length else s
        elif not 0 <= s < length:
            continue
        kept.append(j)
        source.append(s)
    return kept, source


def _pad_signal(x, pad, pad_mode):
    if pad_mode == "reflect" and pad >= x.shape[-1]:
        raise ValueError(f"stft: a reflection pad of {pad} needs more than {pad} samples, "
                         f"the signal has {x.shape[-1]}")
    return TF.pad(x, (pad, pad), mode=pad_mode)


def _unpad_signal(g, length, pad, pad_mode):
    """The adjoint of :func:`_pad_signal`: each padded position's gradient added to the sample
    it copies."""
    kept, source = _source_index(length, pad, pad_mode)
    kept = torch.tensor(kept, dtype=torch.long, device=g.device)
    source = torch.tensor(source, dtype=torch.long, device=g.device)
    return g.new_zeros(g.shape[:-1] + (length,)).index_add(-1, source, g.index_select(-1, kept))


def _check_signal(name, x):
    if x.ndim != 2:
        raise ValueError(f"{name}: the signal must be (batch_size, sample_size), not "
                         f"{tuple(x.shape)}")


def _check_spectrum(name, y_r, y_i, fft_size):
    if y_r.ndim != 3 or tuple(y_r.shape) != tuple(y_i.shape) or y_r.shape[1] != fft_size // 2 + 1:
        raise ValueError(f"{name}: y_r {tuple(y_r.shape)} and y_i {tuple(y_i.shape)} must both "
                         f"be (batch_size, fft_size // 2 + 1 = {fft_size // 2 + 1}, frames)")


@op(1, category=_C)
def stft(x, window_size, stride, fft_size, window_type="hanning", center=True,
         pad_mode="reflect", as_istft_backward=False):
    """Short-time Fourier transform of ``x`` ``(batch_size, sample_size)``: the real and
    imaginary parts ``(batch_size, fft_size // 2 + 1, frames)`` of the DFTs of windows every
    ``stride`` samples (NNabla's ``stft``).  ``window_type``: ``"hanning"``, ``"hamming"``,
    ``"rectangular"`` (or ``None``), ``window_size`` samples centred in ``fft_size``;
    ``center``: the signal is first padded by ``fft_size // 2`` on both sides (``pad_mode``
    ``"reflect"`` or ``"constant"`` zeros).  ``as_istft_backward``: compute what
    :func:`istft`'s backward computes instead (the adjoint of ``istft``; NNabla's ``nn.grad``
    uses it).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.random.randn(2, 64))
        >>> with sd.auto_forward():
        ...     y_r, y_i = F.stft(x, window_size=16, stride=4, fft_size=16)
        >>> y_r.shape
        (2, 9, 17)
    """
    window_type = _check_stft("stft", window_size, stride, fft_size, window_type, pad_mode)
    _check_signal("stft", x)
    fft_size, stride = int(fft_size), int(stride)
    if as_istft_backward:
        if pad_mode != "constant":
            raise ValueError("stft: as_istft_backward=True takes pad_mode='constant' (istft "
                             "ignores pad_mode and slices its output)")
        _check_istft_stride("stft", fft_size, stride)
        g = TF.pad(x, (fft_size // 2, fft_size // 2)) if center else x
        g = g / _inverse_window("stft", window_type, int(window_size), fft_size, stride,
                                g.shape[-1], center, x.dtype, x.device)
        cos, sin = _istft_weights(window_type, int(window_size), fft_size, x.dtype, x.device)
        return TF.conv1d(g[:, None], cos, stride=stride), TF.conv1d(g[:, None], sin,
                                                                     stride=stride)
    w_r, w_i = _stft_weights(window_type, int(window_size), fft_size, x.dtype, x.device)
    xp = _pad_signal(x[:, None], fft_size // 2, pad_mode) if center else x[:, None]
    if xp.shape[-1] < fft_size:
        raise ValueError(f"stft: {x.shape[-1]} samples are fewer than one frame of "
                         f"fft_size={fft_size}")
    return TF.conv1d(xp, w_r, stride=stride), TF.conv1d(xp, w_i, stride=stride)


def _check_istft_stride(name, fft_size, stride):
    if fft_size % stride:
        raise ValueError(f"{name}: fft_size={fft_size} needs to be a multiple of "
                         f"stride={stride}")


@op(2, category=_C)
def istft(y_r, y_i, window_size, stride, fft_size, window_type="hanning", center=True,
          pad_mode="reflect", as_stft_backward=False):
    """Inverse short-time Fourier transform (NNabla's ``istft``): the signal ``(batch_size,
    samples)`` whose :func:`stft` has real part ``y_r`` and imaginary part ``y_i``: the
    windowed inverse DFTs of the frames overlap-added and divided by the overlap-added squared
    window (an error where that is zero: NNabla's NOLA check).  ``fft_size`` must be a
    multiple of ``stride``.  As in NNabla 1.39, ``pad_mode`` must be ``"constant"`` (it does
    nothing) unless ``as_stft_backward``: then the op computes :func:`stft`'s backward (its
    adjoint, with that ``pad_mode``).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.random.randn(1, 64))
        >>> with sd.auto_forward():
        ...     y_r, y_i = F.stft(x, 16, 4, 16, pad_mode="constant")
        ...     z = F.istft(y_r, y_i, 16, 4, 16, pad_mode="constant")
        >>> bool(np.allclose(z.d[:, 12:-12], x.d[:, 12:-12], atol=1e-5))
        True
    """
    window_type = _check_stft("istft", window_size, stride, fft_size, window_type, pad_mode)
    fft_size, stride = int(fft_size), int(stride)
    _check_spectrum("istft", y_r, y_i, fft_size)
    _check_istft_stride("istft", fft_size, stride)
    pad = fft_size // 2
    if as_stft_backward:
        w_r, w_i = _stft_weights(window_type, int(window_size), fft_size, y_r.dtype, y_r.device)
        g = (TF.conv_transpose1d(y_r, w_r, stride=stride)
             + TF.conv_transpose1d(y_i, w_i, stride=stride))[:, 0]
        if not center:
            return g
        return _unpad_signal(g, g.shape[-1] - 2 * pad, pad, pad_mode)
    if pad_mode != "constant":
        raise ValueError("istft: pad_mode should be 'constant' for the normal use of ISTFT "
                         "(as_stft_backward=False), since pad_mode is ignored there (NNabla "
                         "1.39's rule)")
    cos, sin = _istft_weights(window_type, int(window_size), fft_size, y_r.dtype, y_r.device)
    x = (TF.conv_transpose1d(y_r, cos, stride=stride)
         + TF.conv_transpose1d(y_i, sin, stride=stride))[:, 0]
    x = x / _inverse_window("istft", window_type, int(window_size), fft_size, stride,
                            x.shape[-1], center, x.dtype, x.device)
    return x[:, pad:x.shape[-1] - pad] if center else x
