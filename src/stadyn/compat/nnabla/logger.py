"""``nnabla.logger``: the ``nnabla`` logger, writing NNabla's console lines
(``2026-12-01 18:10:31,752 [nnabla][INFO]: message``) to stderr at level INFO.

``import nnabla.logger as logger`` and ``from nnabla import logger`` give the logger itself, as
in NNabla (its package binds the name over the module).

The ``LOG`` section of ``nnabla_config`` (``nnabla.conf``, ``~/.nnabla``, the file
``NNABLA_CONFIG_FILE_PATH`` names: ``config.py``) sets it up as in NNabla 1.39:
``log_console_level`` (``DEBUG``, ``INFO``, ``WARNING``, ``ERROR``, ``CRITICAL``) is the level
of the messages kept, ``log_console_format`` their console lines' format, and a
``log_file_name`` also writes them (from ``log_file_level`` up) to that file in
``log_file_format``.  NNabla configures Python's root logger so (``logging.basicConfig``);
here the ``nnabla`` logger is, and the program's own loggers are left alone.

Example:
    >>> from stadyn.compat.nnabla.logger import logger
    >>> logger.name, logger.level == log_console_level
    ('nnabla', True)
"""

import logging

from .config import nnabla_config

__all__ = ["logger", "log_console_level", "log_console_format"]

_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _level(option: str) -> int:
    """The logging level the ``LOG`` option ``option`` names."""
    name = nnabla_config.get("LOG", option)
    if name not in _LEVELS:
        raise ValueError(f"nnabla configuration [LOG] {option} = {name!r}: not a level "
                         f"({', '.join(_LEVELS)})")
    return getattr(logging, name)


log_console_level = _level("log_console_level")
log_console_format = nnabla_config.get("LOG", "log_console_format")

logger = logging.getLogger("nnabla")
if not logger.handlers:
    _handler = logging.StreamHandler()
    _handler.setFormatter(logging.Formatter(log_console_format))
    logger.addHandler(_handler)
    logger.setLevel(log_console_level)
    logger.propagate = False
    if nnabla_config.get("LOG", "log_file_name") != "":
        _file = logging.FileHandler(nnabla_config.get("LOG", "log_file_name"))
        _file.setLevel(_level("log_file_level"))
        _file.setFormatter(logging.Formatter(nnabla_config.get("LOG", "log_file_format")))
        logger.addHandler(_file)
