"""Rules of the Fourier transforms (``stadyn/ops/_signal.py``: NNabla's ``fft``, ``ifft``,
``stft``, ``istft``): ONNX 17's ``DFT`` and ``STFT`` are close but not mapped yet (ONNX's STFT
has no centring pad and no inverse)."""

from __future__ import annotations

from ... import functions as F
from ._nnabla import nnabla
from ._table import Unmapped, register_rules

_NOT_YET = Unmapped("not mapped to ONNX yet (ONNX 17's DFT/STFT are close; NNabla's centring "
                    "pad, normalisation and inverse window are not expressed so far)")
_WINDOW = dict(window_size=int, stride=int, fft_size=int, window_type=str, center=bool,
               pad_mode=str)
for _f, _nnp in (
        (F.fft, nnabla(F.fft, "FFT", signal_ndim=int, normalized=bool)),
        (F.ifft, nnabla(F.ifft, "IFFT", signal_ndim=int, normalized=bool)),
        (F.stft, nnabla(F.stft, "STFT", as_istft_backward=bool, **_WINDOW)),
        (F.istft, nnabla(F.istft, "ISTFT", as_stft_backward=bool, **_WINDOW))):
    register_rules(_f, onnx_export=_NOT_YET, onnx_import=_NOT_YET, nnp_import=_nnp)
