"""Stadyn's logger: ``logging.getLogger("stadyn")`` with a default stderr handler.

Lines look like NNabla's: ``2026-11-29 22:10:05,832 [stadyn][INFO]: compiling ...``.  Configure the
``stadyn`` logger as usual to change it; ``STADYN_LOG_LEVEL`` sets the default level.
"""

from __future__ import annotations

import logging
import os

__all__ = ["logger"]

logger = logging.getLogger("stadyn")
if not logger.handlers:
    _handler = logging.StreamHandler()
    _handler.setFormatter(logging.Formatter("%(asctime)s [stadyn][%(levelname)s]: %(message)s"))
    logger.addHandler(_handler)
    logger.setLevel(os.environ.get("STADYN_LOG_LEVEL", "INFO").upper())
    logger.propagate = False
