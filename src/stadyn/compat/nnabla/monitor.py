"""``nnabla.monitor`` on Stadyn: :mod:`stadyn.train`'s monitors (NNabla's files and lines),
logging through the ``nnabla`` logger.

Example:
    >>> import os, tempfile
    >>> import stadyn.compat.nnabla.monitor as M
    >>> m = M.Monitor(tempfile.mkdtemp())
    >>> s = M.MonitorSeries("loss", m, verbose=False)
    >>> s.add(0, 1.5)
    >>> open(os.path.join(m.save_path, "loss.series.txt")).read()
    '0 1.5\\n'
"""

from ...train import Monitor, plot_series, plot_time_elapsed, tile_images
from ...train import MonitorImage as _MonitorImage
from ...train import MonitorImageTile as _MonitorImageTile
from ...train import MonitorSeries as _MonitorSeries
from ...train import MonitorTimeElapsed as _MonitorTimeElapsed
from .logger import logger as _logger

__all__ = ["Monitor", "MonitorSeries", "MonitorTimeElapsed", "MonitorImage", "MonitorImageTile",
           "tile_images", "plot_series", "plot_time_elapsed"]


class MonitorSeries(_MonitorSeries):
    """:class:`stadyn.train.MonitorSeries`, logging as ``[nnabla]``."""

    _logger = _logger


class MonitorTimeElapsed(_MonitorTimeElapsed):
    """:class:`stadyn.train.MonitorTimeElapsed`, logging as ``[nnabla]``."""

    _logger = _logger


class MonitorImage(_MonitorImage):
    """:class:`stadyn.train.MonitorImage`, logging as ``[nnabla]``."""

    _logger = _logger


class MonitorImageTile(_MonitorImageTile, MonitorImage):
    """:class:`stadyn.train.MonitorImageTile`, logging as ``[nnabla]``."""

    _logger = _logger
