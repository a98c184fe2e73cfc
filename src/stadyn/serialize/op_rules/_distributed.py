"""Rules of the ops that communicate (``stadyn/ops/_distributed.py``)."""

from __future__ import annotations

from ... import functions as F
from ._nn import _batch_normalization_onnx
from ._table import Unmapped, register_rules

# In inference (what an export is) it is batch normalisation on the running statistics.
register_rules(F.sync_batch_normalization, onnx_export=_batch_normalization_onnx,
               onnx_import=Unmapped("an inference graph has no collectives: BatchNormalization "
                                    "imports as batch_normalization"))
