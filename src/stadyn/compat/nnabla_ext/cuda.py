"""``nnabla_ext.cuda``: NNabla's CUDA extension module (another wheel in NNabla) on torch's
CUDA device; without CUDA it warns and runs on the CPU, as
:func:`stadyn.compat.nnabla.ext_utils.get_extension_context` does (see
:mod:`stadyn.compat.nnabla_ext`).

Example:
    >>> from stadyn.compat.nnabla_ext import cuda
    >>> ctx = cuda.context(device_id="0")      # the CPU's where torch has no CUDA
    >>> ctx.backend[-1], cuda.get_device_count() >= 1
    ('cpu:float', True)
"""

from ..nnabla.ext_utils import import_extension_module

__all__ = ["context", "synchronize", "device_synchronize", "clear_memory_cache",
           "array_classes", "get_device_count", "get_devices"]

_EXTENSION = import_extension_module("cuda")
context = _EXTENSION.context
synchronize = _EXTENSION.synchronize
device_synchronize = _EXTENSION.device_synchronize
clear_memory_cache = _EXTENSION.clear_memory_cache
array_classes = _EXTENSION.array_classes
get_device_count = _EXTENSION.get_device_count
get_devices = _EXTENSION.get_devices
