"""Images as NumPy arrays, NNabla's ``image_utils``: :func:`imread`, :func:`imsave`,
:func:`imresize` and the choice of backend (Pillow or OpenCV); see ``stadyn.io._image_utils``
for the conventions.

Example:
    >>> import numpy as np, os, tempfile
    >>> from stadyn.io import image_utils
    >>> path = os.path.join(tempfile.mkdtemp(), "a.png")
    >>> image_utils.imsave(path, np.zeros((4, 6, 3), np.uint8))
    >>> image_utils.imresize(image_utils.imread(path), (3, 2)).shape
    (2, 3, 3)
"""

from ._image_utils import (get_available_backends, get_backend, imread, imresize, imsave,
                           minmax_auto_scale, rescale_pixel_intensity, set_backend)

__all__ = ["imread", "imsave", "imresize", "set_backend", "get_backend",
           "get_available_backends", "rescale_pixel_intensity", "minmax_auto_scale"]
