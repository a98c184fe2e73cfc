"""``nnabla.ext_utils``: extension contexts map to Stadyn contexts, and the extension modules'
device helpers to torch's.

``import_extension_module(name)`` gives an object with NNabla's extension-module API:
``context(type_config)``, ``get_devices()``, ``get_device_count()``, ``synchronize(**kw)``,
``device_synchronize(device)``, ``clear_memory_cache()`` and ``array_classes()``.  ``'cpu'`` is
always there; ``'cuda'`` and ``'cudnn'`` are torch's CUDA device (without CUDA they fall back to
the CPU's with a warning, as :func:`get_extension_context` does, so GPU scripts run).  Another
name raises ``ModuleNotFoundError`` after logging NNabla's error line, as NNabla does for an
extension that is not installed.  ``list_extensions()`` names those there.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch

from ._context import DTYPES, TYPE_CONFIGS, Context, backends_for
from .logger import logger

__all__ = ["get_extension_context", "import_extension_module", "list_extensions"]

_ARRAY_CLASSES = {"cpu": ["CpuCachedArray", "CpuArray", "CpuDlpackArray"],
                  "cuda": ["CudaCachedArray", "CudaArray", "CudaDlpackArray"]}


def get_extension_context(ext_name: str = "cpu", device_id: int | str = "0",
                          type_config: str = "float", **kw: Any) -> Context:
    """NNabla's ``get_extension_context``: ``'cpu'``, ``'cuda'`` or ``'cudnn'``, as NNabla's
    :class:`~stadyn.compat.nnabla.Context` (its fields are NNabla 1.39's: the CPU's has
    ``device_id=''``, a CUDA one the ``device_id`` given, as a string).  Other keywords are
    taken and ignored, as NNabla 1.39's extension ``context(**kw)`` functions do: a misspelt
    ``dtype_config='half'`` gives the float context there (case
    ``nnabla_user_36.user36_half_context_on_cpu``).  The CPU's ``type_config`` is ``'float'``
    or ``'half'``, as NNabla's CPU extension's: another is its ``ValueError`` (case
    ``user36_cpu_context_type_configs``).

    Without CUDA, ``'cuda'``/``'cudnn'`` run on the CPU with a warning, so GPU scripts run.

    Example:
        >>> from stadyn.compat.nnabla.ext_utils import get_extension_context
        >>> get_extension_context('cpu')
        Context(backend=['cpu:float'], array_class='CpuCachedArray', device_id='')
        >>> get_extension_context('cpu', dtype_config='half').backend
        ['cpu:float']
    """
    if type_config not in DTYPES and type_config not in DTYPES.values():
        raise ValueError(f"Unknown data type config is given {type_config}")
    kind = TYPE_CONFIGS[DTYPES.get(type_config, type_config)]
    name = str(ext_name).lower()
    if name == "cuda.cudnn":      # NNabla 1.39 still takes the old name, with this warning
        logger.warning('Deprecated extension name "cuda.cudnn" passed. Use "cudnn" instead.')
        name = "cudnn"
    if name == "cpu":
        if type_config not in ("float", "half"):    # (NNabla's CPU extension's context())
            raise ValueError(f"Unknown data type config is given {type_config}")
        ctx = Context(backends_for("cpu", kind), "CpuCachedArray", "")
    elif name in ("cuda", "cudnn"):
        ctx = Context(backends_for(name, kind), "CudaCachedArray", str(device_id))
    else:
        raise ModuleNotFoundError(f"No module named 'nnabla_ext.{ext_name}'")
    ctx._to_stadyn()              # the device asked for is checked (and CUDA's fallback warned) now
    return ctx


class _Extension:
    """What ``import_extension_module`` gives: one extension's device helpers."""

    def __init__(self, name: str, cuda: bool):
        self.__name__ = f"nnabla_ext.{name}"
        self._ext, self._cuda = name, cuda

    def context(self, type_config: str = "float", **kw: Any) -> Context:
        """The extension's context (``device_id`` among ``kw``)."""
        if type_config not in ("float", "half", "mixed_half", "bfloat16"):
            raise ValueError(f"Unknown data type config is given {type_config}")
        return get_extension_context(self._ext if self._cuda else "cpu",
                                     str(kw.get("device_id", "0")), type_config)

    def get_devices(self) -> list[str]:
        return [str(i) for i in range(self.get_device_count())]

    def get_device_count(self) -> int:
        return torch.cuda.device_count() if self._cuda else 1

    def device_synchronize(self, device: Any = "") -> None:
        if self._cuda:
            torch.cuda.synchronize(int(device) if str(device) else None)

    def synchronize(self, **kw: Any) -> None:
        self.device_synchronize(kw.get("device_id", ""))

    def clear_memory_cache(self) -> None:
        if self._cuda:
            torch.cuda.empty_cache()

    def array_classes(self) -> list[str]:
        return list(_ARRAY_CLASSES["cuda" if self._cuda else "cpu"])

    def __repr__(self) -> str:
        return f"<extension {self.__name__!r} on Stadyn>"


def list_extensions() -> list[str]:
    """The extensions :func:`import_extension_module` finds: ``'cpu'``, and ``'cuda'`` and
    ``'cudnn'`` where torch has CUDA.

    Example:
        >>> "cpu" in list_extensions()
        True
    """
    return ["cpu"] + (["cuda", "cudnn"] if torch.cuda.is_available() else [])


def import_extension_module(ext_name: str) -> Any:
    """NNabla's extension module ``ext_name`` (see the module docstring).

    Example:
        >>> ext = import_extension_module("cpu")
        >>> ext.get_devices(), ext.synchronize(device_id="0")
        (['0'], None)
    """
    if ext_name == "cpu":
        return _Extension("cpu", cuda=False)
    if ext_name in ("cuda", "cudnn"):
        if torch.cuda.is_available():
            return _Extension(ext_name, cuda=True)
        warnings.warn(f"extension {ext_name!r} asked for, but CUDA is not available; using "
                      "the CPU's", RuntimeWarning, stacklevel=2)
        return _Extension(ext_name, cuda=False)
    logger.error(f"Extension `{ext_name}` does not exist.")
    raise ModuleNotFoundError(f"No module named 'nnabla_ext.{ext_name}'")
