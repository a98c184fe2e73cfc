"""Stadyn's native schedules: ``constant``, ``piecewise``, ``step_decay``, ``cosine`` and
``warmup``, each a :class:`~._schedule.Schedule` whose positions are samples seen."""

from __future__ import annotations

from typing import Sequence

from .._errors import StadynError
from ._schedule import Schedule, _as_piece, _count, _Cosine, _number, _Ramp, _StepDecay

__all__ = ["constant", "piecewise", "step_decay", "cosine", "warmup"]


def constant(value: float, minibatch_size: int | None = None) -> Schedule:
    """The same value for every sample.

    Example:
        >>> from stadyn.schedules import constant
        >>> constant(0.1)[12345]
        0.1
    """
    return Schedule(_number(value, "constant: value"), minibatch_size=minibatch_size)


def piecewise(boundaries: Sequence[int], values: Sequence[float],
              minibatch_size: int | None = None) -> Schedule:
    """``values[i]`` from sample ``boundaries[i-1]`` (0 for ``i = 0``) up to, not including,
    ``boundaries[i]``; the last value after the last boundary.

    Example:
        >>> from stadyn.schedules import piecewise
        >>> s = piecewise([100, 300], [1.0, 0.1, 0.01])
        >>> s[99], s[100], s[299], s[300]
        (1.0, 0.1, 0.1, 0.01)
    """
    bounds = [_count(b, f"piecewise: boundaries[{i}]", 1) for i, b in enumerate(boundaries)]
    vals = [_number(v, f"piecewise: values[{i}]") for i, v in enumerate(values)]
    if len(vals) != len(bounds) + 1:
        raise StadynError(f"piecewise: needs one more value than boundaries, got {len(bounds)} "
                          f"boundaries and {len(vals)} values")
    if any(b <= a for a, b in zip(bounds, bounds[1:])):
        raise StadynError(f"piecewise: boundaries must increase, got {bounds}")
    lengths = [b - a for a, b in zip([0] + bounds, bounds)] + [0]
    segments = [(n, "samples", v) for n, v in zip(lengths, vals)]
    return Schedule._from_segments(segments, f"piecewise({bounds}, {vals}", minibatch_size)


def step_decay(initial: float, factor: float, step_samples: int,
               minibatch_size: int | None = None) -> Schedule:
    """``initial * factor ** (samples_seen // step_samples)``.

    Example:
        >>> from stadyn.schedules import step_decay
        >>> s = step_decay(0.1, 0.5, 1000)
        >>> s[999], s[1000], s[2500]
        (0.1, 0.05, 0.025)
    """
    piece = _StepDecay(_number(initial, "step_decay: initial"),
                       _number(factor, "step_decay: factor"),
                       _count(step_samples, "step_decay: step_samples", 1))
    return Schedule._from_segments([(0, "samples", piece)],
                                   f"step_decay({initial}, {factor}, {step_samples}",
                                   minibatch_size)


def cosine(initial: float, total_samples: int, final: float = 0.0,
           minibatch_size: int | None = None) -> Schedule:
    """Cosine annealing from ``initial`` to ``final`` over ``total_samples``, then ``final``:
    ``final + (initial - final) (1 + cos(pi min(s, T) / T)) / 2``.

    Example:
        >>> from stadyn.schedules import cosine
        >>> s = cosine(1.0, 100)
        >>> s[0], s[50], s[100], s[1000]
        (1.0, 0.5, 0.0, 0.0)
    """
    piece = _Cosine(_number(initial, "cosine: initial"), _number(final, "cosine: final"),
                    _count(total_samples, "cosine: total_samples", 1))
    return Schedule._from_segments([(0, "samples", piece)],
                                   f"cosine({initial}, {total_samples}, final={final}",
                                   minibatch_size)


def warmup(after: "float | Schedule", warmup_samples: int, start: float = 0.0,
           minibatch_size: int | None = None) -> Schedule:
    """Linear warm-up for ``warmup_samples`` samples, then ``after``.

    The ramp goes from ``start`` towards ``after``'s first value; ``after`` (a number or a
    schedule) then runs on its own clock, starting at 0 when the warm-up ends — so
    ``warmup(cosine(0.1, T), W)`` anneals over the ``T`` samples that follow the warm-up.  The
    reference minibatch size is ``minibatch_size`` if given, else ``after``'s.

    Example:
        >>> from stadyn.schedules import cosine, warmup
        >>> s = warmup(cosine(1.0, 100), 10)
        >>> s[0], s[5], s[10], s[60], s[110]
        (0.0, 0.5, 1.0, 0.5, 0.0)
    """
    length = _count(warmup_samples, "warmup: warmup_samples", 1)
    target = _as_piece(after, "warmup: after")
    if minibatch_size is None and isinstance(target, Schedule) \
            and target.is_minibatch_size_explicitly_specified:
        minibatch_size = target.minibatch_size
    ramp = _Ramp(_number(start, "warmup: start"), target, length)
    return Schedule._from_segments([(length, "samples", ramp), (0, "samples", target)],
                                   f"warmup({after!r}, {warmup_samples}, start={start}",
                                   minibatch_size)
