"""Rules of NNabla's ``bc_add2``, ``prune`` and ``batch_cholesky``
(``stadyn/ops/_nnabla_tensor.py``), its further convolutions (``_nnabla_conv.py``), linear
quantisation (``_nnabla_qlinear.py``) and ONNX-compatible functions (``_nnabla_onnx.py``):
each is one NNabla 1.39 function in ``.nnp`` files."""

from __future__ import annotations

import numpy as np

from ... import functions as F
from ._nnabla import nnabla, spatial
from ._table import Unmapped, register_rules

_NOT_YET = Unmapped("not mapped to ONNX yet (NNabla 1.39's function: bc_add2 is ONNX's Add, "
                    "prune a TopK threshold, batch_cholesky has no ONNX op)")
for _f, _nnp in ((F.bc_add2, nnabla(F.bc_add2, "BcAdd2", broadcast=True, inplace=bool)),
                 (F.prune, nnabla(F.prune, "Prune", rate=float)),
                 (F.batch_cholesky, nnabla(F.batch_cholesky, "BatchCholesky", upper=bool))):
    register_rules(_f, onnx_export=_NOT_YET, onnx_import=_NOT_YET, nnp_import=_nnp)

# NNabla's defaults of a convolution's geometry the catalog leaves None
_GEOMETRY = {"pad": spatial(0), "stride": spatial(1), "dilation": spatial(1)}

_CONV = Unmapped("not mapped to ONNX yet (ONNX's ConvTranspose with group would hold "
                 "depthwise_deconvolution; unmapped so far)")
register_rules(F.depthwise_deconvolution, onnx_export=_CONV, onnx_import=_CONV,
               nnp_import=nnabla(F.depthwise_deconvolution, "DepthwiseDeconvolution",
                                 defaults=_GEOMETRY, base_axis=int, pad=tuple, stride=tuple,
                                 dilation=tuple, divisor=int))
_DEFORM = Unmapped("not mapped to ONNX yet (ONNX 19's DeformConv reads offsets on the output "
                   "grid, NNabla's on the input's)")
register_rules(F.deformable_convolution, onnx_export=_DEFORM, onnx_import=_DEFORM,
               nnp_import=nnabla(F.deformable_convolution, "DeformableConvolution",
                                 defaults=_GEOMETRY, base_axis=int, pad=tuple, stride=tuple,
                                 dilation=tuple, group=int, deformable_group=int,
                                 channel_last=bool))
_FUSED = Unmapped("not mapped to ONNX yet (a composition: export the unfused convolution, "
                  "batch_normalization and activation instead)")
_FUSED_FIELDS = dict(base_axis=int, pad=tuple, stride=tuple, dilation=tuple, group=int,
                     channel_last=bool, decay_rate=float, eps=float, batch_stat=bool,
                     nonlinearity=str, nonlinearity_args=list, pad_mode=str,
                     constant_value=float)


def _fused_convolution_build(node):
    """NNabla's ``FusedConvolution`` lists only the inputs given: ``x, weight``, a 1-d
    ``bias``, then ``beta, gamma, mean, variance`` together, then ``z``."""
    rest = [node.var(i) for i in range(2, node.n_inputs)]
    bias = rest.pop(0) if rest and len(node.shape(2)) == 1 else None
    bn = [rest.pop(0) for _ in range(4)] if len(rest) >= 4 else [None] * 4
    z = rest.pop(0) if rest else None
    if rest:
        node.unsupported(f"{node.n_inputs} inputs")
    fields = {f: node.field(f, kind) for f, kind in _FUSED_FIELDS.items()}
    return F.fused_convolution(node.var(0), node.var(1), bias, *bn, z, **fields)


register_rules(F.fused_convolution, onnx_export=_FUSED, onnx_import=_FUSED,
               nnp_export=nnabla(F.fused_convolution, "FusedConvolution", defaults=_GEOMETRY,
                                 **_FUSED_FIELDS)["FusedConvolution"].nnabla_declaration.export,
               nnp_import={"FusedConvolution": _fused_convolution_build})
_POOL_GRAD = Unmapped("a gradient computation (NNabla's internal one for higher-order "
                      "gradients); ONNX holds forward computations")
register_rules(F.max_pooling_backward, onnx_export=_POOL_GRAD, onnx_import=_POOL_GRAD,
               nnp_import=nnabla(F.max_pooling_backward, "MaxPoolingBackward",
                                 defaults={"stride": lambda e, i, a: tuple(a["kernel"]),
                                           "pad": lambda e, i, a: (0,) * len(a["kernel"])},
                                 kernel=tuple, stride=tuple, ignore_border=bool, pad=tuple,
                                 channel_last=bool))
_ADAPTIVE = Unmapped("ONNX has no op for per-pixel separable kernels (NNabla 1.39's "
                     "function)")
register_rules(F.adaptive_separable_convolution, onnx_export=_ADAPTIVE, onnx_import=_ADAPTIVE,
               nnp_import=nnabla(F.adaptive_separable_convolution,
                                 "AdaptiveSeparableConvolution"))

# NNabla's dtype numbers (nbla::dtypes) of quantize_linear's two output ranges
_QDTYPES = {"int8": 1, "uint8": 2}


def _quantize_fields(e, inputs, attrs) -> dict:
    name = np.dtype(attrs["dtype"]).name
    if name not in _QDTYPES:
        e.unsupported(f"dtype={name} (NNabla's quantize_linear has int8 and uint8)")
    return {"round_mode": attrs["round_mode"], "narrow_range": attrs["narrow_range"],
            "dtype": _QDTYPES[name]}


def _quantize_args(node, values) -> dict:
    names = {v: k for k, v in _QDTYPES.items()}
    if values["dtype"] not in names:
        node.unsupported(f"dtype {values['dtype']} (NNabla's int8 is 1, uint8 2)")
    return {"round_mode": values["round_mode"], "narrow_range": values["narrow_range"],
            "dtype": np.dtype(names[values["dtype"]]).type}


_QLINEAR = Unmapped("not mapped to ONNX yet (ONNX's QuantizeLinear gives int8/uint8 tensors "
                    "where NNabla's gives float32 values; DequantizeLinear takes them)")
register_rules(F.quantize_linear, onnx_export=_QLINEAR, onnx_import=_QLINEAR,
               nnp_import=nnabla(F.quantize_linear, "QuantizeLinear", export=_quantize_fields,
                                 convert=_quantize_args, round_mode=str, narrow_range=bool,
                                 dtype=int))
register_rules(F.dequantize_linear, onnx_export=_QLINEAR, onnx_import=_QLINEAR,
               nnp_import=nnabla(F.dequantize_linear, "DequantizeLinear"))

_ONNX_NOT_YET = Unmapped("not mapped to ONNX yet (NNabla 1.39's ONNX-compatible function: "
                         "ONNX's Resize / NonMaxSuppression would hold it; unmapped so far)")
register_rules(F.onnx_resize, onnx_export=_ONNX_NOT_YET, onnx_import=_ONNX_NOT_YET,
               nnp_import=nnabla(F.onnx_resize, "ONNXResize", roi=list, scales=list, sizes=list,
                                 mode=str, coordinate_transformation_mode=str,
                                 cubic_coeff_a=float, exclude_outside=int,
                                 extrapolation_value=float, nearest_mode=str))
register_rules(F.onnx_non_max_suppression, onnx_export=_ONNX_NOT_YET,
               onnx_import=_ONNX_NOT_YET,
               nnp_import=nnabla(F.onnx_non_max_suppression, "ONNXNonMaxSuppression",
                                 center_point_box=int, max_output_boxes_per_class=int,
                                 iou_threshold=float, score_threshold=float))
