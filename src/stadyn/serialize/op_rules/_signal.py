"""Rules of the Fourier transforms (``stadyn/ops/_signal.py``: NNabla's ``fft``, ``ifft``,
``stft``, ``istft``): ONNX 17's ``DFT`` and ``STFT`` are close but not mapped yet (ONNX's STFT
has no centring pad and no inverse)."""

from __future__ import annotations

from ... import functions as F
from ._table import Unmapped, register_rules

_NOT_YET = Unmapped("not mapped to ONNX yet (ONNX 17's DFT/STFT are close; NNabla's centring "
                    "pad, normalisation and inverse window are not expressed so far)")
for _f in (F.fft, F.ifft, F.stft, F.istft):
    register_rules(_f, onnx_export=_NOT_YET, onnx_import=_NOT_YET)
