"""Rules of NNabla's ``bc_add2``, ``prune`` and ``batch_cholesky``
(``stadyn/ops/_nnabla_tensor.py``), its further convolutions (``_nnabla_conv.py``), linear
quantisation (``_nnabla_qlinear.py``) and ONNX-compatible functions (``_nnabla_onnx.py``)."""

from __future__ import annotations

from ... import functions as F
from ._table import Unmapped, register_rules

_NOT_YET = Unmapped("not mapped to ONNX yet (NNabla 1.39's function: bc_add2 is ONNX's Add, "
                    "prune a TopK threshold, batch_cholesky has no ONNX op)")
for _f in (F.bc_add2, F.prune, F.batch_cholesky):
    register_rules(_f, onnx_export=_NOT_YET, onnx_import=_NOT_YET)

_CONV = Unmapped("not mapped to ONNX yet (ONNX's ConvTranspose with group would hold "
                 "depthwise_deconvolution; unmapped so far)")
register_rules(F.depthwise_deconvolution, onnx_export=_CONV, onnx_import=_CONV)
_DEFORM = Unmapped("not mapped to ONNX yet (ONNX 19's DeformConv reads offsets on the output "
                   "grid, NNabla's on the input's)")
register_rules(F.deformable_convolution, onnx_export=_DEFORM, onnx_import=_DEFORM)
_FUSED = Unmapped("not mapped to ONNX yet (a composition: export the unfused convolution, "
                  "batch_normalization and activation instead)")
register_rules(F.fused_convolution, onnx_export=_FUSED, onnx_import=_FUSED)
_POOL_GRAD = Unmapped("a gradient computation (NNabla's internal one for higher-order "
                      "gradients); ONNX holds forward computations")
register_rules(F.max_pooling_backward, onnx_export=_POOL_GRAD, onnx_import=_POOL_GRAD)
_ADAPTIVE = Unmapped("ONNX has no op for per-pixel separable kernels (NNabla 1.39's "
                     "function)")
register_rules(F.adaptive_separable_convolution, onnx_export=_ADAPTIVE, onnx_import=_ADAPTIVE)

_QLINEAR = Unmapped("not mapped to ONNX yet (ONNX's QuantizeLinear gives int8/uint8 tensors "
                    "where NNabla's gives float32 values; DequantizeLinear takes them)")
register_rules(F.quantize_linear, onnx_export=_QLINEAR, onnx_import=_QLINEAR)
register_rules(F.dequantize_linear, onnx_export=_QLINEAR, onnx_import=_QLINEAR)

_ONNX_NOT_YET = Unmapped("not mapped to ONNX yet (NNabla 1.39's ONNX-compatible function: "
                         "ONNX's Resize / NonMaxSuppression would hold it; unmapped so far)")
register_rules(F.onnx_resize, onnx_export=_ONNX_NOT_YET, onnx_import=_ONNX_NOT_YET)
register_rules(F.onnx_non_max_suppression, onnx_export=_ONNX_NOT_YET,
               onnx_import=_ONNX_NOT_YET)
