"""``nnabla.utils.data_source_loader`` on Stadyn (:mod:`stadyn.io`): local files only --
``download`` returns a file already in place and otherwise raises ``DownloadError`` saying
where to put it.  ``load`` is NNabla 1.39's: the extension as given, with its case (``'.PNG'``
is refused where :func:`stadyn.io.load`, which reads any case, takes it), ``'.dcm'`` an image's,
and a reader a callback module gives (``nnabla.utils.callback.get_load_image_func``) first.
"""

from typing import Callable

from .... import io as _io
from ....io import (FileReader, download, get_data_home, get_file_extension, load_csv,
                    load_image, load_npy)
from . import callback

__all__ = ["FileReader", "download", "get_data_home", "get_file_extension", "load_image",
           "load_csv", "load_npy", "load"]

# NNabla 1.39's extensions (``_load_functions``); a DICOM file is read as an image there too.
_EXTENSIONS = (".bmp", ".jpg", ".jpeg", ".png", ".gif", ".tif", ".tiff", ".dcm", ".csv",
               ".npy", ".wav")


def load(ext: str) -> Callable:
    """The reader of files with the extension ``ext``, as NNabla 1.39's: the one a callback
    module gives (:func:`~stadyn.compat.nnabla.utils.callback.get_load_image_func`), else its
    own for ``'.png'`` (lower case, with its dot), ``'.csv'``, ...; another spelling raises
    ``ValueError``.

    Example:
        >>> load(".png").__name__, load(".dcm").__name__
        ('load_image', 'load_image')
        >>> load(".PNG")
        Traceback (most recent call last):
        ...
        ValueError: File format with extension ".PNG" is not supported.
    """
    found = callback.get_load_image_func(ext)   # a host application's reader first, as NNabla's
    if found is not None:
        return found
    if ext not in _EXTENSIONS:
        raise ValueError(f'File format with extension "{ext}" is not supported.')
    return load_image if ext == ".dcm" else _io.load(ext)
