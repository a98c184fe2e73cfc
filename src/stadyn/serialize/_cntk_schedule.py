"""A learning-rate schedule as CNTK 2.7 keeps it in a learner's checkpoint
(``TrainingParameterSchedule::Serialize``, ``Source/CNTKv2LibraryDll/Utils.cpp:345-360``)::

    {"schedule": {"<count>": value, ...}, "epoch_size": E, "ref_mb_size": R}

``count`` is where a value ends: the value at position ``c`` is that of the first count
greater than ``c``, the last one's past all counts (``operator[]``, ``Utils.cpp:316-326``).
Positions are samples, or data sweeps where ``E`` is 0 (CNTK's ``FullDataSweep``).  A list
``[v1, v2, ...]`` of epoch size ``E`` is ``{E: v1, 2E: v2, ...}``, a constant ``{0: v}``; and
after ``reset_learning_rate`` at position ``p`` each count is moved on by ``p``
(``Learner.cpp:46-57``).  CNTK 2.7's restore takes the whole schedule from the checkpoint,
the rate's reference minibatch size too (``Learner.cpp:393-395``): run there, a trainer made
with another rate continues with the checkpoint's.

Example:
    >>> from stadyn.schedules import Schedule
    >>> form = cntk_schedule(Schedule([0.1, 0.05], epoch_size=8, minibatch_size=0).config())
    >>> form["schedule"], form["epoch_size"]
    ({'8': 0.1, '16': 0.05}, 8)
    >>> s = schedule_from_cntk(form, "f.ckp")
    >>> [s.value_at(n) for n in (0, 7, 8, 100)]
    [0.1, 0.1, 0.05, 0.05]
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Mapping

from .._errors import ModelFileError
from ..schedules import Schedule

__all__ = ["cntk_schedule", "schedule_from_cntk"]


def cntk_schedule(config: Mapping[str, Any], samples_offset: int = 0,
                  sweeps_offset: int = 0) -> dict | None:
    """CNTK's form of the schedule whose :meth:`~stadyn.schedules.Schedule.config` is
    ``config``, begun (``reset_learning_rate``) after ``samples_offset`` samples and
    ``sweeps_offset`` sweeps; None where it has none (a piece that is no constant: cosine,
    warm-up...; an epoch of one sweep mixed with counts of samples)."""
    segments = config["segments"]
    epoch = config.get("epoch_size")
    # (a schedule made without one holds the minibatch size a learner wrote into it, as CNTK
    # 2.7's TrainingParameterSchedule does: its ref_mb_size)
    reference = config.get("minibatch_size")
    if reference is None:
        reference = config.get("learner_minibatch_size")
    reference = int(reference or 0)
    if not all(isinstance(p, numbers.Real) for _, _, p in segments):
        return None
    values = [float(p) for _, _, p in segments]
    if len(segments) == 1:            # a constant: CNTK's epoch of one sweep, counted by sweeps
        return {"schedule": {str(sweeps_offset): values[0]}, "epoch_size": 0,
                "ref_mb_size": reference}
    units = {u for _, u, _ in segments[:-1]}
    if epoch is None:
        if units != {"epochs"}:
            return None
        per_sweep, size, cntk_epoch = True, 1, 0         # counts of sweeps
    else:
        per_sweep, size = False, int(epoch)
        cntk_epoch = int(epoch) if units == {"epochs"} else 1
    offset = sweeps_offset if per_sweep else samples_offset
    keys, end = [], 0
    for count, unit, _ in segments:
        # (the last value's count may be 0: CNTK counts it as 1)
        end += (int(count) or 1) * (size if unit == "epochs" else 1)
        keys.append(str(offset + end))
    return {"schedule": dict(zip(keys, values)), "epoch_size": cntk_epoch,
            "ref_mb_size": reference}


def schedule_from_cntk(entry: Mapping[str, Any], where: str) -> Schedule:
    """The Stadyn schedule of CNTK's form ``entry`` (a learner checkpoint's
    ``learnig_rate_schedule``), in absolute positions (samples, or sweeps where its
    ``epoch_size`` is 0); a damaged one is a ModelFileError naming ``where``."""
    try:
        epoch = int(entry["epoch_size"])
        reference = int(entry.get("ref_mb_size", 0))
        items = sorted((int(k), float(v)) for k, v in dict(entry["schedule"]).items())
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelFileError(f"{where}: the learning-rate schedule is damaged ({exc!r}); "
                             "nothing was restored") from None
    if not items or any(k < 0 for k, _ in items) or \
            any(not math.isfinite(v) or v < 0 for _, v in items):
        raise ModelFileError(f"{where}: the learning-rate schedule {dict(entry['schedule'])} "
                             "has no values, or a negative or infinite one; nothing was "
                             "restored")
    pairs, start = [], 0
    for key, value in items[:-1]:
        if key > start:              # (a value whose range is empty is never used)
            pairs.append((key - start, value))
            start = key
    pairs.append(items[-1][1])
    return Schedule(pairs if len(pairs) > 1 else pairs[0],
                    None if epoch == 0 else 1, reference)
