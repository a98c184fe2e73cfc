"""``nnabla.utils.data_source_loader`` on Stadyn (:mod:`stadyn.io`): local files only --
``download`` returns a file already in place and otherwise raises ``DownloadError`` saying
where to put it."""

from ....io import (FileReader, download, get_data_home, get_file_extension, load_csv,
                    load_image, load_npy)

__all__ = ["FileReader", "download", "get_data_home", "get_file_extension", "load_image",
           "load_csv", "load_npy"]
