"""``nnabla.utils.image_utils`` on Stadyn (:mod:`stadyn.io.image_utils`); ``imwrite`` and
``imload`` are NNabla's other names of ``imsave`` and ``imread``."""

from ....io.image_utils import (get_available_backends, get_backend, imread, imresize, imsave,
                                minmax_auto_scale, rescale_pixel_intensity, set_backend)

imwrite = imsave
imload = imread

__all__ = ["imread", "imsave", "imresize", "imwrite", "imload", "set_backend", "get_backend",
           "get_available_backends", "rescale_pixel_intensity", "minmax_auto_scale"]
