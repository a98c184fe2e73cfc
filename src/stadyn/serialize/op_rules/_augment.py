"""Rules of the augmentation ops (``stadyn/ops/_augment.py``): ONNX has none of them."""

from __future__ import annotations

from ... import functions as F
from ._table import Unmapped, register_rules

_EXPORT = Unmapped("ONNX has no random augmentation ops: augment the data before an exported "
                   "network, as an ONNX runtime runs it for inference")
_IMPORT = Unmapped("ONNX has no random augmentation ops")

for _f in (F.image_augmentation, F.random_flip, F.random_shift, F.random_crop, F.random_erase):
    register_rules(_f, onnx_export=_EXPORT, onnx_import=_IMPORT)
