"""Harness entries of the Fourier transforms (``stadyn/ops/_signal.py``: ``fft``, ``ifft``,
``stft``, ``istft``), merged into ``test_ops.ENTRIES``.  The references are NumPy: ``np.fft``
for the DFTs, and the short-time transforms written out frame by frame from NNabla 1.39's
definition (tests/compat's ``nnabla_signal`` cases compare with NNabla's own numbers).
"""

from __future__ import annotations

import numpy as np

from op_harness_types import Data

_D = Data(4242)
normal = _D.normal


def _complex(x):
    return x[..., 0] + 1j * x[..., 1]


def _real(c):
    return np.stack([c.real, c.imag], axis=-1)


def ref_fft(x, signal_ndim, normalized=False):
    axes = tuple(range(-signal_ndim, 0))
    return _real(np.fft.fftn(_complex(x), axes=axes, norm="ortho" if normalized else None))


def ref_ifft(x, signal_ndim, normalized=False):
    axes = tuple(range(-signal_ndim, 0))
    return _real(np.fft.ifftn(_complex(x), axes=axes, norm="ortho" if normalized else None))


def _window(window_type, window_size, fft_size):
    i = np.arange(window_size)
    w = {"hanning": 0.5 - 0.5 * np.cos(2 * np.pi * i / window_size),
         "hamming": 0.54 - 0.46 * np.cos(2 * np.pi * i / window_size)}.get(
        window_type, np.ones(window_size))
    left = (fft_size - window_size) // 2
    return np.pad(w, (left, fft_size - window_size - left))


def ref_stft(x, window_size, stride, fft_size, window_type="hanning", center=True,
             pad_mode="reflect", as_istft_backward=False):
    assert not as_istft_backward
    w = _window(window_type or "rectangular", window_size, fft_size)
    if center:
        x = np.pad(x, ((0, 0), (fft_size // 2, fft_size // 2)), mode=pad_mode)
    frames = (x.shape[1] - fft_size) // stride + 1
    spec = np.stack([np.fft.rfft(x[:, f * stride:f * stride + fft_size] * w, axis=-1)
                     for f in range(frames)], axis=-1)
    return spec.real, spec.imag


def ref_istft(y_r, y_i, window_size, stride, fft_size, window_type="hanning", center=True,
              pad_mode="reflect", as_stft_backward=False):
    assert not as_stft_backward and pad_mode == "constant"
    w = _window(window_type or "rectangular", window_size, fft_size)
    frames = y_r.shape[2]
    size = (frames - 1) * stride + fft_size
    out, norm = np.zeros((y_r.shape[0], size)), np.zeros(size)
    for f in range(frames):
        seg = np.fft.irfft(y_r[:, :, f] + 1j * y_i[:, :, f], n=fft_size, axis=-1)
        out[:, f * stride:f * stride + fft_size] += seg * w
        norm[f * stride:f * stride + fft_size] += w * w
    if center:
        p = fft_size // 2
        return out[:, p:size - p] / norm[p:size - p]
    return out / norm


def _real_spectrum(batch, fft_size, frames):
    """The spectrum of a real signal (what istft inverts): imaginary parts 0 at DC/Nyquist."""
    y_r, y_i = normal(batch, fft_size // 2 + 1, frames), normal(batch, fft_size // 2 + 1, frames)
    y_i[:, 0] = 0
    if fft_size % 2 == 0:
        y_i[:, -1] = 0
    return y_r, y_i


def signal_entries(Case, Entry) -> dict:
    return {
        "fft": Entry([Case((normal(3, 8, 2),), {"signal_ndim": 1}),
                      Case((normal(2, 4, 3, 2),), {"signal_ndim": 2, "normalized": True}),
                      Case((normal(2, 3, 2, 2),), {"signal_ndim": 3})], ref_fft),
        "ifft": Entry([Case((normal(3, 8, 2),), {"signal_ndim": 1}),
                       Case((normal(2, 4, 3, 2),), {"signal_ndim": 2, "normalized": True})],
                      ref_ifft),
        "stft": Entry([Case((normal(2, 40),), {"window_size": 8, "stride": 4, "fft_size": 8}),
                       Case((normal(1, 30),), {"window_size": 6, "stride": 3, "fft_size": 10,
                                               "window_type": "hamming", "center": False}),
                       Case((normal(2, 21),), {"window_size": 7, "stride": 2, "fft_size": 7,
                                               "window_type": None, "pad_mode": "constant"})],
                      ref_stft),
        "istft": Entry([Case(_real_spectrum(2, 8, 9), {"window_size": 8, "stride": 2,
                                                       "fft_size": 8, "pad_mode": "constant"}),
                        Case(_real_spectrum(1, 10, 6), {"window_size": 10, "stride": 5,
                                                        "fft_size": 10, "center": False,
                                                        "window_type": "rectangular",
                                                        "pad_mode": "constant"})],
                       ref_istft),
    }
