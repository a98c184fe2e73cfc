"""Rules of the random sources (``stadyn/ops/_random.py``)."""

from __future__ import annotations

from ... import functions as F
from ._nnabla import nnabla
from ._table import Unmapped, register_rules

_EXPORT = Unmapped("ONNX's random ops draw from the runtime's generator, not Stadyn's seeded "
                   "one: export the network with its noise as an input")
_IMPORT = Unmapped("ONNX's random ops are not imported: a network given noise as an input "
                   "imports")
# In .nnp files each is NNabla's function of the same name: the file holds the distribution
# and its seed, and each framework draws with its own generator (compat.nnabla's loaders
# draw NNabla's numbers: ``draws=True``).
for _f, _nnp in ((F.rand, nnabla(F.rand, "Rand", draws=True, low=float, high=float,
                                  shape=tuple, seed=int)),
                 (F.randn, nnabla(F.randn, "Randn", draws=True, mu=float, sigma=float,
                                  shape=tuple, seed=int)),
                 (F.randint, nnabla(F.randint, "Randint", draws=True, low=int, high=int,
                                    shape=tuple, seed=int))):
    register_rules(_f, onnx_export=_EXPORT, onnx_import=_IMPORT, nnp_import=_nnp)
