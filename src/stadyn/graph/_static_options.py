"""The settings of how static graphs are lowered (``_runner.py``): how many eager runs stand
for one build (``build_runs``), how many plans (``max_plans``) and counted trial signatures
(``max_trials``) each set of roots keeps.  They live in ``_runner`` as ``BUILD_RUNS``,
``MAX_PLANS`` and ``MAX_TRIALS`` (read at every forward); :func:`set_static_options` and the
:func:`static_options` block set them there (docs/performance.md).
"""

from __future__ import annotations

import contextlib
from typing import Iterator

from . import _runner

__all__ = ["get_static_options", "set_static_options", "static_options"]

#: option -> (the runner's name, the least value it takes)
_OPTIONS = {"build_runs": ("BUILD_RUNS", 0), "max_plans": ("MAX_PLANS", 1),
            "max_trials": ("MAX_TRIALS", 1)}


def get_static_options() -> dict[str, int]:
    """The current settings, by name.

    Example:
        >>> import stadyn as sd
        >>> sd.get_static_options()
        {'build_runs': 50, 'max_plans': 32, 'max_trials': 64}
    """
    return {name: getattr(_runner, held) for name, (held, _) in _OPTIONS.items()}


def set_static_options(build_runs: int | None = None, max_plans: int | None = None,
                       max_trials: int | None = None) -> dict[str, int]:
    """Set how static graphs are lowered (an option left None keeps its value); returns the
    settings before, for :func:`set_static_options` ``(**previous)`` to put back.

    * ``build_runs`` (50): how many eager runs of a graph holding a loop stand for one build;
      0 lowers every graph on its first run (a graph holding a loop, a first evaluation and a
      new input shape of a graph that has a plan too);
    * ``max_plans`` (32): plans kept per set of roots (one per input signature and flags), the
      least recently used dropped past it;
    * ``max_trials`` (64): new signatures per set of roots whose eager runs are counted
      towards a build, the oldest count forgotten past it.

    Example:
        >>> import numpy as np, torch, stadyn as sd, stadyn.functions as F
        >>> previous = sd.set_static_options(build_runs=0)
        >>> y = F.tanh(sd.Variable.from_numpy_array(np.ones(3, np.float32)))
        >>> with torch.no_grad():
        ...     y.forward()                # a first evaluation, lowered at once
        >>> type(y._plan).__name__, previous["build_runs"]
        ('StaticPlan', 50)
        >>> _ = sd.set_static_options(**previous)
    """
    given = {"build_runs": build_runs, "max_plans": max_plans, "max_trials": max_trials}
    for name, value in given.items():
        least = _OPTIONS[name][1]
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < least):
            raise ValueError(f"set_static_options: {name} must be an integer >= {least}, "
                             f"got {value!r}")
    previous = get_static_options()
    for name, value in given.items():
        if value is not None:
            setattr(_runner, _OPTIONS[name][0], int(value))
    return previous


@contextlib.contextmanager
def static_options(build_runs: int | None = None, max_plans: int | None = None,
                   max_trials: int | None = None) -> Iterator[dict[str, int]]:
    """:func:`set_static_options` inside a ``with`` block (the settings before are put back
    after it); gives the settings in force.

    Example:
        >>> import numpy as np, torch, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.ones((2, 3), np.float32))
        >>> with sd.static_options(build_runs=0) as now:
        ...     z = F.sigmoid(x) * 3.0
        ...     with torch.no_grad():
        ...         z.forward()
        >>> now["build_runs"], type(z._plan).__name__, sd.get_static_options()["build_runs"]
        (0, 'StaticPlan', 50)
    """
    previous = set_static_options(build_runs, max_plans, max_trials)
    try:
        yield get_static_options()
    finally:
        set_static_options(**previous)
