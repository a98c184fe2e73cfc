"""Rules of CNTK's CTC criterion and edit distance error (``stadyn/ops/_ctc.py``): ONNX has
neither, and they are training and evaluation criteria, not part of an inference graph."""

from __future__ import annotations

from ... import functions as F
from ._cntk_read_others import edit_distance_error_cntk, forward_backward_cntk
from ._table import Unmapped, register_rules

register_rules(F.cntk_forward_backward,
               onnx_export=Unmapped("ONNX has no CTC criterion (CNTK's ForwardBackward): "
                                    "export the network that computes the output"),
               onnx_import=Unmapped("ONNX has no CTC criterion"),
               cntk_import={"ForwardBackward": forward_backward_cntk})
register_rules(F.cntk_edit_distance_error,
               onnx_export=Unmapped("ONNX has no edit distance (CNTK's EditDistanceError): "
                                    "export the network that computes the output"),
               onnx_import=Unmapped("ONNX has no edit distance"),
               cntk_import={"EditDistanceError": edit_distance_error_cntk})
