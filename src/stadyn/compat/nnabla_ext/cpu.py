"""``nnabla_ext.cpu``: NNabla 1.39's CPU extension module (see :mod:`stadyn.compat.nnabla_ext`).

Example:
    >>> from stadyn.compat.nnabla_ext import cpu
    >>> cpu.context("half"), cpu.get_devices(), cpu.array_classes()[0]
    (Context(backend=['cpu:half', 'cpu:float'], array_class='CpuCachedArray', device_id=''), \
['0'], 'CpuCachedArray')
"""

from __future__ import annotations

from typing import Any

from ..nnabla import Context
from ..nnabla.ext_utils import get_extension_context, import_extension_module

__all__ = ["context", "synchronize", "device_synchronize", "clear_memory_cache",
           "array_classes", "get_device_count", "get_devices"]

_CPU = import_extension_module("cpu")
device_synchronize = _CPU.device_synchronize
clear_memory_cache = _CPU.clear_memory_cache
array_classes = _CPU.array_classes
get_device_count = _CPU.get_device_count
get_devices = _CPU.get_devices


def context(type_config: str = "float", **kw: Any) -> Context:
    """The CPU's context: ``['cpu:float']``, or ``['cpu:half', 'cpu:float']`` for ``'half'``;
    another ``type_config`` raises ``ValueError`` (NNabla's CPU extension knows no
    ``'mixed_half'``)."""
    if type_config not in ("float", "half"):
        raise ValueError(f"Unknown data type config is given {type_config}")
    return get_extension_context("cpu", type_config=type_config)


def synchronize(**kw: Any) -> None:
    """Nothing to wait for on the CPU."""
    device_synchronize("")
