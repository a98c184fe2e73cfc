"""Rules of NNabla's ``roi_align``, ``warp_by_flow``, ``nms_detection2d``, ``patch_correlation``
(``stadyn/ops/_nnabla_vision.py``) and
``random_choice`` (``_nnabla_sampling.py``), and of the ops whose shapes depend on values
(``_nnabla_values.py``)."""

from __future__ import annotations

from ... import functions as F
from ._table import Unmapped, register_rules

_ROI = Unmapped("not mapped to ONNX yet (ONNX has RoiAlign; NNabla's box rows carry the batch "
                "index, unmapped so far)")
register_rules(F.roi_align, onnx_export=_ROI, onnx_import=_ROI)
_WARP = Unmapped("ONNX has no flow warp (a GridSample of x + flow would be its composition)")
register_rules(F.warp_by_flow, onnx_export=_WARP, onnx_import=_WARP)
_NMS = Unmapped("ONNX's NonMaxSuppression returns the kept boxes' indices; NNabla's "
                "nms_detection2d zeroes the suppressed scores in place of them")
register_rules(F.nms_detection2d, onnx_export=_NMS, onnx_import=_NMS)
_CORR = Unmapped("ONNX has no correlation op (FlowNet's patch correlation)")
register_rules(F.patch_correlation, onnx_export=_CORR, onnx_import=_CORR)
_DRAW = Unmapped("a random draw: the runtime's generator is not Stadyn's (as rand)")
register_rules(F.random_choice, onnx_export=_DRAW, onnx_import=_DRAW)

_VALUES = Unmapped("not mapped to ONNX yet (an output shape that depends on values: ONNX's "
                   "NonZero, Unique and Compress are close, unmapped so far)")
for _f in (F.nonzero, F.unique, F.bool_gather, F.bool_scatter, F.pack_padded_sequence,
           F.pad_packed_sequence):
    register_rules(_f, onnx_export=_VALUES, onnx_import=_VALUES)
