"""``nnabla.utils.image_utils`` on Stadyn (:mod:`stadyn.io.image_utils`); ``imwrite`` and
``imload`` are NNabla's other names of ``imsave`` and ``imread``, and ``backend_manager`` the
object NNabla's functions go through (programs call its ``set_backend`` directly)."""

from ....io.image_utils import (get_available_backends, get_backend, imread, imresize, imsave,
                                minmax_auto_scale, rescale_pixel_intensity, set_backend)

imwrite = imsave
imload = imread


class _BackendManager:
    """NNabla's ``backend_manager``: the backend choice and the image functions, as methods.

    Example:
        >>> from stadyn.compat.nnabla.utils.image_utils import backend_manager
        >>> backend_manager.set_backend("PilBackend"); backend_manager.get_backend()
        'PilBackend'
        >>> backend_manager.set_backend(None)
    """

    def set_backend(self, name):
        """Use the backend ``name`` for every call (an unknown name: choose per call)."""
        set_backend(name)

    def get_backend(self):
        """The backend set, else the one the last call used (``''`` before any)."""
        return get_backend()

    def get_available_backends(self):
        """The names of the backends installed."""
        return get_available_backends()

    def imread(self, path, grayscale=False, size=None, interpolate="bilinear",
               channel_first=False, as_uint16=False, num_channels=-1):
        return imread(path, grayscale, size, interpolate, channel_first, as_uint16,
                      num_channels)

    def imsave(self, path, img, channel_first=False, as_uint16=False, auto_scale=True):
        return imsave(path, img, channel_first, as_uint16, auto_scale)

    def imresize(self, img, size, interpolate="bilinear", channel_first=False):
        return imresize(img, size, interpolate, channel_first)


backend_manager = _BackendManager()

__all__ = ["imread", "imsave", "imresize", "imwrite", "imload", "set_backend", "get_backend",
           "get_available_backends", "rescale_pixel_intensity", "minmax_auto_scale",
           "backend_manager"]
