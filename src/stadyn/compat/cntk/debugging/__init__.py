"""``cntk.debugging``: the switches CNTK's training scripts call around their loop
(``set_computation_network_trace_level``, the profiler's ``start_profiler`` /
``enable_profiler`` / ``disable_profiler`` / ``stop_profiler``, ``set_checked_mode``,
``force_deterministic``).  Stadyn has no network trace or CNTK profiler: these are accepted
and do nothing, so a script such as CNTK's Examples/Image/Classification/ResNet (``from
cntk.debugging import *``, then ``enable_profiler()`` after each epoch) runs unchanged.
``force_deterministic`` asks torch for deterministic algorithms, as CNTK's does for cuDNN.

CNTK's interactive debugger (``debug_model``) and ``dump_function`` are not offered.

Example:
    >>> from stadyn.compat.cntk.debugging import enable_profiler, start_profiler, stop_profiler
    >>> start_profiler("profiler", sync_gpu=True); enable_profiler(); stop_profiler()
"""

from __future__ import annotations

from .._cntk_py import force_deterministic_algorithms, set_computation_network_trace_level

__all__ = ["set_computation_network_trace_level", "start_profiler", "stop_profiler",
           "enable_profiler", "disable_profiler", "set_checked_mode", "set_node_timing",
           "force_deterministic"]


def start_profiler(dir: str = "profiler", sync_gpu: bool = True, reserve_mem: int = 33554432
                   ) -> None:
    """Accepted; Stadyn has no CNTK profiler (torch.profiler profiles a Stadyn run)."""


def stop_profiler() -> None:
    """Accepted; see :func:`start_profiler`."""


def enable_profiler() -> None:
    """Accepted; see :func:`start_profiler`."""


def disable_profiler() -> None:
    """Accepted; see :func:`start_profiler`."""


def set_checked_mode(enable: bool) -> None:
    """Accepted; Stadyn checks shapes when a graph is built, always."""


def set_node_timing(enable: bool) -> None:
    """Accepted; Stadyn keeps no per-node timings."""


def force_deterministic(seed: int) -> None:
    """Deterministic algorithms from here on (CNTK 2.7 also fixes its random seed to
    ``seed``)."""
    from .._cntk_py import set_fixed_random_seed
    set_fixed_random_seed(seed)
    force_deterministic_algorithms(True)
