"""Keeping freed CPU memory in the process for the next step, as a CUDA caching allocator does.

A training step on the CPU allocates the same large tensors every step (a ConvNet's activations
and their gradients: 16 MB each for the CIFAR-10 ConvNet at batch 64) and frees them again.
glibc's ``malloc`` hands such blocks back to the kernel (``munmap``, or trimming the top of the
heap), so the next step's first write to each page is a page fault: 2,000-20,000 per step for
that ConvNet, up to ~45 ms of a ~300 ms one-thread step, in static mode and in hand-written
PyTorch alike (docs/performance.md).  Frameworks with their own CPU memory pool (MXNet's
``static_alloc``) never pay it.

:func:`keep_freed_cpu_memory` tells glibc to keep freed memory for reuse: blocks up to 32 MB
(glibc's largest heap threshold) come from the heap instead of their own mapping, and up to
1 GB of free memory at the heap's top stays in the process.  Stadyn calls it when the first
static plan or compiled step is built on the CPU; it changes the whole process (its resident
memory stays near the peak of a step instead of falling between steps) and is skipped when

* ``STADYN_KEEP_CPU_MEMORY=0`` is set (the opt-out);
* the user set glibc's own ``MALLOC_*`` thresholds or ``GLIBC_TUNABLES`` (their choice wins), or
  preloaded another allocator (jemalloc, tcmalloc, mimalloc: they pool memory themselves);
* the C library is not glibc.
"""

from __future__ import annotations

import ctypes
import os
import platform

__all__ = ["keep_freed_cpu_memory", "reason_not_kept", "OPT_OUT_ENV"]

#: ``STADYN_KEEP_CPU_MEMORY=0`` leaves glibc's malloc settings alone.
OPT_OUT_ENV = "STADYN_KEEP_CPU_MEMORY"

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD = 32 << 20      # glibc's maximum on 64-bit systems (HEAP_MAX_SIZE / 2)
_TRIM_THRESHOLD = 1 << 30
_USER_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_",
                  "MALLOC_MMAP_MAX_", "GLIBC_TUNABLES")
_OTHER_ALLOCATORS = ("jemalloc", "tcmalloc", "mimalloc")

_state: list[bool | None] = [None]      # None: not decided yet; then whether it was applied


def reason_not_kept() -> str | None:
    """Why the settings are not applied in this process (None: nothing stops them)."""
    if os.environ.get(OPT_OUT_ENV, "1").strip().lower() in ("0", "false", "no", "off"):
        return f"{OPT_OUT_ENV}=0"
    chosen = [k for k in _USER_SETTINGS if k in os.environ]
    if chosen:
        return f"{chosen[0]} is set"
    preload = os.environ.get("LD_PRELOAD", "")
    if any(name in preload for name in _OTHER_ALLOCATORS):
        return "another allocator is preloaded"
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return "the C library is not glibc"
    return None


def keep_freed_cpu_memory() -> bool:
    """Keep freed CPU memory in the process (see the module's docstring); decided once per
    process.  Returns whether the settings are in effect.

    Example:
        >>> from stadyn._memory import keep_freed_cpu_memory
        >>> keep_freed_cpu_memory() in (True, False)
        True
    """
    if _state[0] is None:
        applied = False
        if reason_not_kept() is None:
            try:
                libc = ctypes.CDLL("libc.so.6")
                applied = bool(libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)
                               and libc.mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD))
            except (OSError, AttributeError):
                applied = False
        _state[0] = applied
    return bool(_state[0])
