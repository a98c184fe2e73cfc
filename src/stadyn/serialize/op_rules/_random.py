"""Rules of the random sources (``stadyn/ops/_random.py``)."""

from __future__ import annotations

from ... import functions as F
from ._table import Unmapped, register_rules

_EXPORT = Unmapped("ONNX's random ops draw from the runtime's generator, not Stadyn's seeded "
                   "one: export the network with its noise as an input")
_IMPORT = Unmapped("ONNX's random ops are not imported: a network given noise as an input "
                   "imports")
for _f in (F.rand, F.randn, F.randint):
    register_rules(_f, onnx_export=_EXPORT, onnx_import=_IMPORT)
