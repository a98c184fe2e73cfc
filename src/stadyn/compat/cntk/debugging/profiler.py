"""``cntk.debugging.profiler``: the module of CNTK 2.7's profiler calls; the same functions as
``cntk.debugging`` (accepted, doing nothing: see there).

Example:
    >>> from stadyn.compat.cntk.debugging.profiler import start_profiler, stop_profiler
    >>> start_profiler(); stop_profiler()
"""

from . import disable_profiler, enable_profiler, start_profiler, stop_profiler

__all__ = ["disable_profiler", "enable_profiler", "start_profiler", "stop_profiler"]
