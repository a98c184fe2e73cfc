"""``cntk.device``: device descriptors mapped onto Stadyn contexts."""

from __future__ import annotations

from ...graph import context, get_current_context, set_default_context

__all__ = ["DeviceDescriptor", "cpu", "gpu", "try_set_default_device", "use_default_device",
           "all_devices"]


class DeviceDescriptor:
    def __init__(self, kind: str, device_id: int = 0):
        self.type, self.id = kind, device_id

    def __repr__(self) -> str:
        return f"{self.type.upper()}[{self.id}]" if self.type == "gpu" else "CPU"


def cpu() -> DeviceDescriptor:
    return DeviceDescriptor("cpu")


def gpu(device_id: int = 0) -> DeviceDescriptor:
    return DeviceDescriptor("gpu", device_id)


def try_set_default_device(device: DeviceDescriptor, acquire_device_lock: bool = False) -> bool:
    """Use ``device`` from now on; a GPU without CUDA falls back to the CPU with a warning."""
    ctx = context("cuda" if device.type == "gpu" else "cpu", device.id,
                  get_current_context().dtype)
    set_default_context(ctx)
    return ctx.backend == ("cuda" if device.type == "gpu" else "cpu")


def use_default_device() -> DeviceDescriptor:
    ctx = get_current_context()
    return gpu(ctx.device_id) if ctx.backend == "cuda" else cpu()


def all_devices() -> list[DeviceDescriptor]:
    import torch
    return [cpu()] + [gpu(i) for i in range(torch.cuda.device_count())]
