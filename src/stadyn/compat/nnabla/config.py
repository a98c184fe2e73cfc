"""``nnabla.config``: ``nnabla_config``, the ``configparser.RawConfigParser`` of NNabla's
settings, read once at import.

It starts from NNabla 1.39's defaults (sections ``DATA_ITERATOR``, ``LOG``, ``MISC``,
``CALLBACK``, ``CHECKPOINT``, ``MULTINODE``), then reads, each overriding the one before,
``/etc/nnabla.conf``, ``~/.nnabla`` and ``./nnabla.conf`` (the working directory at import) on
POSIX systems, and the file ``NNABLA_CONFIG_FILE_PATH`` names if it exists -- NNabla's
order.  Programs read and set values in it (``nnabla_config.get('MISC',
'misc_show_progress')``, the ImageNet cache script's ``nnabla_config.set('DATA_ITERATOR',
'cache_file_format', '.h5')``).

The ``nnabla`` logger reads the ``LOG`` section when it is imported (``logger.py``), as
NNabla's does.  The file caches of ``nnabla.utils``' data iterators, ``DataSourceWithFileCache``
and ``CreateCache`` read ``DATA_ITERATOR``'s cache size, file format and location when they are
made, as NNabla's do (``utils/_cache_settings.py``).  Other values set here are kept and read
back, and change nothing else.

Example:
    >>> from stadyn.compat.nnabla.config import nnabla_config
    >>> nnabla_config.get('DATA_ITERATOR', 'data_source_file_cache_size')
    '100'
    >>> nnabla_config.set('DATA_ITERATOR', 'cache_file_format', '.h5')
    >>> nnabla_config.get('DATA_ITERATOR', 'cache_file_format')
    '.h5'
    >>> nnabla_config.set('DATA_ITERATOR', 'cache_file_format', '.npy')   # the default again
"""

from __future__ import annotations

import configparser
import os

__all__ = ["nnabla_config"]

# NNabla 1.39's nnabla.conf: the values it ships (section -> option -> value)
_DEFAULTS = {
    "DATA_ITERATOR": {
        "cache_file_format": ".npy",
        "data_source_file_cache_num_of_threads": "10",
        "cache_file_cache_num_of_threads": "4",
        "data_source_file_cache_size": "100",
        "data_source_file_cache_location": "",
        "data_source_buffer_max_size": "1073741824",
    },
    "LOG": {
        "log_file_name": "",
        "log_file_level": "DEBUG",
        "log_file_format": "%(asctime)s [%(name)s][%(levelname)s]: %(pathname)s : "
                           "%(funcName)s : %(lineno)s : %(message)s",
        "log_console_level": "INFO",
        "log_console_format": "%(asctime)s [%(name)s][%(levelname)s]: %(message)s",
    },
    "MISC": {"misc_show_progress": "True", "nnp_param_format": ".h5"},
    "CALLBACK": {"util_callback_module": ""},
    "CHECKPOINT": {"optimizer_interval": "5"},
    "MULTINODE": {
        "analyse_gpu_status_interval": "20",
        "gpu_slowing_warning_threshold": "2",
        "gpu_slowing_error_threshold": "10",
    },
}


def _config_files() -> list[str]:
    files = []
    if os.name == "posix":
        files += ["/etc/nnabla.conf", os.path.abspath(os.path.expanduser("~/.nnabla"))]
    files.append(os.path.abspath(os.path.join(os.getcwd(), "nnabla.conf")))
    named = os.environ.get("NNABLA_CONFIG_FILE_PATH")
    if named and os.path.exists(named):
        files.append(named)
    return files


def _read_config() -> configparser.RawConfigParser:
    config = configparser.RawConfigParser()
    config.read_dict(_DEFAULTS)
    for path in _config_files():
        if os.path.exists(path):
            try:
                config.read(path)
            except configparser.Error as e:
                raise configparser.Error(f"{path}: not an NNabla configuration file: "
                                         f"{e}") from e
    return config


nnabla_config = _read_config()
