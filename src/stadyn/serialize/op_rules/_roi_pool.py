"""Rules of CNTK's max pooling over bins (``stadyn/ops/_roi_pool.py``): what a CNTK file's
``ROIPooling`` reads as (``stadyn.cntk_semantics.roi_pooling``, which cuts the regions into
bins and calls the op); ONNX has no pooling over given bins."""

from __future__ import annotations

from ... import functions as F
from ._cntk_read_others import roipooling_cntk
from ._table import Unmapped, register_rules

register_rules(F.cntk_bin_max_pooling,
               onnx_export=Unmapped("ONNX has no pooling over given bins (its MaxRoiPool takes "
                                    "the regions, and rounds and clips them otherwise than "
                                    "CNTK 2.7)"),
               onnx_import=Unmapped("ONNX's MaxRoiPool is not mapped (its rounding and "
                                    "clipping of the regions are not CNTK's)"),
               cntk_import={"ROIPooling": roipooling_cntk})
