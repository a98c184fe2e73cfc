"""``cntk.debugging``: the switches CNTK's training scripts call around their loop
(``set_computation_network_trace_level``, the profiler's ``start_profiler`` /
``enable_profiler`` / ``disable_profiler`` / ``stop_profiler``, ``set_checked_mode``,
``force_deterministic``).  ``set_checked_mode(True)`` makes the Functions and Trainers that
run first after it check every op's output, and the gradients it gives, for NaN, raising
CNTK's RuntimeError naming the op (see :mod:`stadyn.compat.cntk._checked_mode`).  Stadyn
has no network trace or CNTK profiler: those are accepted and do nothing, so a script such as
CNTK's Examples/Image/Classification/ResNet (``from cntk.debugging import *``, then
``enable_profiler()`` after each epoch) runs unchanged.
``force_deterministic`` asks torch for deterministic algorithms, as CNTK's does for cuDNN.

``dump_signature`` and ``dump_function`` print a Function's signature and a listing of its
graph as CNTK 2.7 does; ``save_as_legacy_model`` writes a Function as a CNTK v1 model file
(what ``cntk.exe`` reads).  ``debug_model`` is CNTK's interactive debugger: a clone of a model
that stops after each node in both passes and reads commands (their help text is
``DEBUG_USAGE``; see :mod:`stadyn.compat.cntk.debugging._debugger`).  Like CNTK's
module it also hands out ``CloneMethod``, ``UserFunction``, ``output_variable`` and
``user_function`` (the same objects as ``cntk``'s).

Example:
    >>> from stadyn.compat.cntk.debugging import enable_profiler, start_profiler, stop_profiler
    >>> start_profiler("profiler", sync_gpu=True); enable_profiler(); stop_profiler()
"""

from __future__ import annotations

from .._checked_mode import set_checked_mode
from .._cntk_py import force_deterministic_algorithms, set_computation_network_trace_level
from .._function import CloneMethod
from .._legacy_model_save import save_as_legacy_model
from .._variables import output_variable
from ..ops.functions import UserFunction
from ..ops.functions import _user_function as user_function
from ._debugger import DEBUG_USAGE, debug_model
from ._dump import dump_function, dump_signature

__all__ = ["set_computation_network_trace_level", "start_profiler", "stop_profiler",
           "enable_profiler", "disable_profiler", "set_checked_mode", "set_node_timing",
           "force_deterministic", "dump_function", "dump_signature", "CloneMethod",
           "UserFunction", "output_variable", "user_function", "debug_model", "DEBUG_USAGE",
           "save_as_legacy_model"]


def start_profiler(dir: str = "profiler", sync_gpu: bool = True, reserve_mem: int = 33554432
                   ) -> None:
    """Accepted; Stadyn has no CNTK profiler (torch.profiler profiles a Stadyn run)."""


def stop_profiler() -> None:
    """Accepted; see :func:`start_profiler`."""


def enable_profiler() -> None:
    """Accepted; see :func:`start_profiler`."""


def disable_profiler() -> None:
    """Accepted; see :func:`start_profiler`."""


def set_node_timing(enable: bool) -> None:
    """Accepted; Stadyn keeps no per-node timings."""


def force_deterministic(seed: int) -> None:
    """Deterministic algorithms from here on (CNTK 2.7 also fixes its random seed to
    ``seed``)."""
    from .._cntk_py import set_fixed_random_seed
    set_fixed_random_seed(seed)
    force_deterministic_algorithms(True)
