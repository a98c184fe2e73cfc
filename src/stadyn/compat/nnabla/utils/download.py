"""``nnabla.utils.download`` on Stadyn (:mod:`stadyn.io`): ``download`` returns a file already
in place and otherwise raises ``DownloadError`` saying where to put it; ``get_data_home`` is
``~/nnabla_data``."""

from ....io import download, get_data_home

__all__ = ["download", "get_data_home"]
