"""Rules of NNabla's ``roi_align``, ``warp_by_flow``, ``nms_detection2d``, ``patch_correlation``
(``stadyn/ops/_nnabla_vision.py``) and
``random_choice`` (``_nnabla_sampling.py``), and of the ops whose shapes depend on values
(``_nnabla_values.py``): each is one NNabla 1.39 function in ``.nnp`` files
(``patch_correlation`` on channels-first inputs: between transposes, as NNabla writes it)."""

from __future__ import annotations

from ... import functions as F
from ._nnabla import nnabla
from ._table import Unmapped, register_rules

_ROI = Unmapped("not mapped to ONNX yet (ONNX has RoiAlign; NNabla's box rows carry the batch "
                "index, unmapped so far)")
register_rules(F.roi_align, onnx_export=_ROI, onnx_import=_ROI,
               nnp_import=nnabla(F.roi_align, "RoiAlign",
                                 defaults={"sampling_ratio": -1, "channel_last": False},
                                 output_size=tuple, spatial_scale=list, sampling_ratio=int,
                                 channel_last=bool))
_WARP = Unmapped("ONNX has no flow warp (a GridSample of x + flow would be its composition)")
register_rules(F.warp_by_flow, onnx_export=_WARP, onnx_import=_WARP,
               nnp_import=nnabla(F.warp_by_flow, "WarpByFlow"))
_NMS = Unmapped("ONNX's NonMaxSuppression returns the kept boxes' indices; NNabla's "
                "nms_detection2d zeroes the suppressed scores in place of them")
register_rules(F.nms_detection2d, onnx_export=_NMS, onnx_import=_NMS,
               nnp_import=nnabla(F.nms_detection2d, "NmsDetection2d",
                                 defaults={"thresh": 0.5, "nms": 0.45, "nms_per_class": True},
                                 thresh=float, nms=float, nms_per_class=bool))

_CORRELATION_FIELDS = ("patch", "shift", "patch_step", "shift_step", "padding")


def _patch_correlation_nnp(e, inputs, attrs):
    """NNabla's ``PatchCorrelation`` reads channels-last inputs ``(N, H, W, C)``; channels
    first, NNabla's ``F.patch_correlation`` writes it between ``Transpose`` functions."""
    params = {f: tuple(int(v) for v in attrs[f]) for f in _CORRELATION_FIELDS}
    if attrs["channel_last"]:
        e.function("PatchCorrelation", inputs[:2], params)
        return
    moved = []
    for name in inputs[:2]:
        n, c, h, w = e.shape(name)
        out = e.variable(f"{name}_nhwc", (n, h, w, c))
        e.function("Transpose", [name], {"axes": [0, 2, 3, 1]}, [out])
        moved.append(out)
    n, ty, tx, oh, ow = e.shape(e.outputs[0])
    corr = e.variable("patch_correlation_nhwc", (n, oh, ow, ty, tx))
    e.function("PatchCorrelation", moved, params, [corr])
    e.function("Transpose", [corr], {"axes": [0, 3, 4, 1, 2]})


def _patch_correlation_build(node):
    fields = {f: node.field(f, tuple) for f in _CORRELATION_FIELDS}
    return F.patch_correlation(node.var(0), node.var(1), channel_last=True, **fields)


_CORR = Unmapped("ONNX has no correlation op (FlowNet's patch correlation)")
register_rules(F.patch_correlation, onnx_export=_CORR, onnx_import=_CORR,
               nnp_export=_patch_correlation_nnp,
               nnp_import={"PatchCorrelation": _patch_correlation_build})
_DRAW = Unmapped("a random draw: the runtime's generator is not Stadyn's (as rand)")
register_rules(F.random_choice, onnx_export=_DRAW, onnx_import=_DRAW,
               nnp_import=nnabla(F.random_choice, "RandomChoice", draws=True, shape=tuple,
                                 replace=bool, seed=int))

_VALUES = Unmapped("not mapped to ONNX yet (an output shape that depends on values: ONNX's "
                   "NonZero, Unique and Compress are close, unmapped so far)")
# NNabla 1.39 runs Unique in auto_forward mode only ("Unique can be used only if auto_forward
# is true"), so a network holding it never runs there: Stadyn reads it, does not write it.
register_rules(F.unique, onnx_export=_VALUES, onnx_import=_VALUES,
               nnp_export=Unmapped("NNabla 1.39 runs Unique only in auto_forward mode, never in "
                                   "a network loaded from a file"),
               nnp_import=nnabla(F.unique, "Unique", flatten=bool, axis=int, sorted=bool,
                                 with_index=bool, with_inverse=bool, with_counts=bool))
for _f, _nnp in (
        (F.nonzero, nnabla(F.nonzero, "NonZero")),
        (F.bool_gather, nnabla(F.bool_gather, "BoolGather")),
        (F.bool_scatter, nnabla(F.bool_scatter, "BoolScatter")),
        (F.pack_padded_sequence, nnabla(F.pack_padded_sequence, "PackPaddedSequence",
                                        batch_first=bool)),
        (F.pad_packed_sequence, nnabla(F.pad_packed_sequence, "PadPackedSequence",
                                       defaults={"padding_value": 0.0, "total_length": -1},
                                       batch_first=bool, padding_value=float,
                                       total_length=int))):
    register_rules(_f, onnx_export=_VALUES, onnx_import=_VALUES, nnp_import=_nnp)
