"""Which sequences data partition r of W reads from a deserializer CNTK 2.7 reads with its
local-timeline randomizer (a Python ``UserDeserializer``: ``Deserializer.randomizer ==
"tumbling"``), not randomized (``LTNoRandomizer``, LocalTimelineRandomizerBase.cpp):

- partition r keeps the sequences at sweep positions ``p % W == r`` (the position counted
  from each sweep's start), and a sweep-end marker after each sweep's last sequence;
- it reads up to its part of the minibatch size (``local_minibatch_size``), the first
  sequence always, a later one only if it fits; it stops as soon as the part is read, so a
  marker after its last sequence is met by the next minibatch, which then says
  ``end_of_sweep`` (and goes on into the next sweep); the marker of the last sweep
  (``max_sweeps``) ends the data instead, unflagged where the minibatch before took the
  part;
- with ``max_samples`` (and no ``max_sweeps``) each partition reads its own share,
  ``max_samples // W`` (one more when ``r < max_samples % W``), stopping within a minibatch
  when that is read.

A marker is met once: a walk that met it and stopped right after (at the next sweep's first
position) does not report it again from there.  A checkpoint records whether the marker at its
position was met (:func:`marker_met`), and a restore sets exactly that (:func:`restore_marker`):
going back before a marker met since reports it again, as CNTK 2.7 does.

Read as one partition (randomized or not), the same markers decide ``end_of_sweep``
(:func:`single_sweep_end`): a minibatch that ends with the sweep's last sequence, its size
read, does not say it; the next one does, or none where the data ends there.

Checked against CNTK 2.7 in ``tests/compat/compat_cases/cntk_workers_2.py``
(``user_deserializer_partitions``, ``user_deserializer_restored_sweep_end``); CNTK 2.7
crashes on a randomized one of several partitions, which Stadyn still shares out as before.
"""

from __future__ import annotations

import numpy as np

from ._partitions import local_minibatch_size

__all__ = ["local_timeline_walk", "marker_met", "restore_marker", "single_sweep_end"]

_MET = "_marker_met"       # the position of the last sweep-end marker met (on the source)


def marker_met(source) -> bool:
    """Whether the sweep-end marker at the source's position was met (by the walk that stopped
    there)."""
    return source.__dict__.get(_MET) == source._position


def restore_marker(source, met: bool) -> None:
    """After a restore to the source's position: the marker there was met (``met``), and no
    marker further on was (a later one is met again)."""
    if met:
        source.__dict__[_MET] = source._position
    else:
        source.__dict__.pop(_MET, None)


def _own_share(max_samples: int, count: int, index: int) -> int:
    return max_samples // count + (1 if max_samples % count > index else 0)


def local_timeline_walk(source, n: int, count: int, index: int, infinite: int
                        ) -> tuple[np.ndarray, int, int, bool]:
    """(this partition's positions, end position, its samples, end of sweep) of the next
    minibatch of ``n`` samples from the source's position (its own samples counted in
    ``source._samples``); ``infinite``: the value of an unset limit."""
    limit = local_minibatch_size(n, count, index)
    sweep = source._sweep_length
    share = _own_share(source._max_samples, count, index) \
        if source._max_sweeps == infinite and source._max_samples != infinite else None
    last = source._max_sweeps * sweep if source._max_sweeps != infinite else None
    p, samples = source._position, source._samples
    mine: list[int] = []
    taken = 0
    crossed = False
    while taken < limit and (share is None or samples + taken < share):
        if p and p % sweep == 0 and source.__dict__.get(_MET) != p:
            crossed = True                       # the marker after the sweep's last sequence
            source.__dict__[_MET] = p            # (met once, even if the walk stops here)
        if last is not None and p >= last:
            break
        if not mine and p - source._position >= 2 * sweep:
            break                                # a sweep and more without one of its own
        if (p % sweep) % count != index:
            p += 1                               # another partition's sequence
            continue
        ident = int(source._sample_ids(np.array([p]))[0])
        length = 1 if source._lengths is None else int(source._lengths[ident])
        if mine and taken + length > limit:
            break
        mine.append(p)
        taken += length
        p += 1
    return np.array(mine, np.int64), p, taken, crossed


def single_sweep_end(source, start: int, end: int, taken: int, n: int) -> bool:
    """Whether CNTK 2.7's local-timeline randomizer, read as one partition, meets a sweep-end
    marker in the minibatch from position ``start`` to ``end`` (``taken`` of the ``n`` samples
    asked): one it passes, one at ``start`` the minibatch before did not meet, or one at
    ``end`` when the minibatch goes on reading (fewer than ``n`` samples, ``max_samples`` not
    reached: the marker is met before the next sequence is found not to fit). Records the
    last one met (a refused minibatch meets its markers too: the next one does not say them).

    Example:
        >>> class Source:
        ...     _sweep_length, _samples, _max_samples, _epoch_end = 3, 3, 2 ** 64 - 1, 2 ** 64 - 1
        >>> s = Source()
        >>> single_sweep_end(s, 2, 3, 1, 1), single_sweep_end(s, 3, 4, 1, 1)
        (False, True)
        >>> single_sweep_end(s, 2, 3, 1, 2), single_sweep_end(s, 3, 4, 1, 1)
        (True, False)
    """
    sweep = source._sweep_length
    read_on = taken < n and source._samples < min(source._max_samples, source._epoch_end)
    met = False
    boundary = max(-(-start // sweep), 1) * sweep
    while boundary <= end:
        if boundary == start and source.__dict__.get(_MET) == start:
            pass                                    # (met by the minibatch before)
        elif boundary < end or read_on:
            met = True
            source.__dict__[_MET] = boundary
        boundary += sweep
    return met
