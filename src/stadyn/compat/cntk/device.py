"""``cntk.device``: device descriptors mapped onto Stadyn contexts."""

from __future__ import annotations

from ...graph import context, get_current_context, set_default_context

__all__ = ["DeviceDescriptor", "cpu", "gpu", "try_set_default_device", "use_default_device",
           "all_devices"]

_CPU, _GPU = 0, 1   # CNTK's DeviceKind values, which DeviceDescriptor.type() returns


class DeviceDescriptor:
    """A device, as CNTK's: ``type()`` is 0 for the CPU and 1 for a GPU, ``id()`` its number.

    Example:
        >>> from stadyn.compat.cntk.device import cpu
        >>> d = cpu()
        >>> d, d.type(), d.id()
        (CPU, 0, 0)
    """

    def __init__(self, kind: int, device_id: int = 0):
        self._kind, self._id = kind, device_id

    def type(self) -> int:
        return self._kind

    def id(self) -> int:
        return self._id

    def __eq__(self, other) -> bool:
        return isinstance(other, DeviceDescriptor) and (other._kind, other._id) == (
            self._kind, self._id)

    def __hash__(self) -> int:
        return hash((self._kind, self._id))

    def __repr__(self) -> str:
        return f"GPU[{self._id}]" if self._kind == _GPU else "CPU"


def cpu() -> DeviceDescriptor:
    """The CPU."""
    return DeviceDescriptor(_CPU)


def gpu(device_id: int = 0) -> DeviceDescriptor:
    """GPU ``device_id`` (without CUDA, :func:`try_set_default_device` falls back to the CPU
    with a warning, so GPU scripts run; CNTK raises ValueError here instead)."""
    return DeviceDescriptor(_GPU, device_id)


def try_set_default_device(device: DeviceDescriptor, acquire_device_lock: bool = False) -> bool:
    """Use ``device`` from now on; a GPU without CUDA falls back to the CPU with a warning."""
    backend = "cuda" if device.type() == _GPU else "cpu"
    ctx = context(backend, device.id(), get_current_context().dtype)
    set_default_context(ctx)
    return ctx.backend == backend


def use_default_device() -> DeviceDescriptor:
    """The device computations run on."""
    ctx = get_current_context()
    return gpu(ctx.device_id) if ctx.backend == "cuda" else cpu()


def all_devices() -> list[DeviceDescriptor]:
    """The CPU and every CUDA GPU."""
    import torch
    return [cpu()] + [gpu(i) for i in range(torch.cuda.device_count())]
