"""``nnabla.logger``: the ``nnabla`` logger, writing NNabla's console lines
(``2026-12-01 18:10:31,752 [nnabla][INFO]: message``) to stderr at level INFO.

``import nnabla.logger as logger`` and ``from nnabla import logger`` give the logger itself, as
in NNabla (its package binds the name over the module).

Example:
    >>> from stadyn.compat.nnabla.logger import logger
    >>> logger.name, logger.level == log_console_level
    ('nnabla', True)
"""

import logging

__all__ = ["logger", "log_console_level", "log_console_format"]

log_console_level = logging.INFO
log_console_format = "%(asctime)s [%(name)s][%(levelname)s]: %(message)s"

logger = logging.getLogger("nnabla")
if not logger.handlers:
    _handler = logging.StreamHandler()
    _handler.setFormatter(logging.Formatter(log_console_format))
    logger.addHandler(_handler)
    logger.setLevel(log_console_level)
    logger.propagate = False
