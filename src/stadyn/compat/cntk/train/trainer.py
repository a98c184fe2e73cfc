"""``cntk.train.trainer``: the module CNTK 2.7 defines ``Trainer`` in (``from
cntk.train.trainer import Trainer``); the same objects as ``cntk.train``.

Example:
    >>> import stadyn.compat.cntk as C
    >>> from stadyn.compat.cntk.train.trainer import Trainer
    >>> Trainer is C.Trainer
    True
"""

from .. import io as _io
from .._trainer import Trainer
from ..device import use_default_device

MinibatchData = _io.MinibatchData

__all__ = ["MinibatchData", "Trainer", "use_default_device"]
