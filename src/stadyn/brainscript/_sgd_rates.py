"""Each epoch's learning rate and momentum per sample of a BrainScript ``SGD`` block, or the
error cntk.exe gives for an epoch whose rate or momentum per minibatch it cannot spread.

:func:`per_sample_epochs` decides, once, for every caller: the runner reads each epoch's entry
at the epoch's start (:func:`cntk_learning_rate`, :func:`cntk_momentum`), the learners'
schedules (``_sgd.make_learner``) and ``tools/cntk_config_survey.py`` read the same entries.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._errors import ConfigError
from ._blocks import SGDConfig, per_epoch

__all__ = ["per_sample_epochs", "learning_rates_per_sample", "momenta_per_sample",
           "effective_minibatch_size", "cntk_learning_rate", "cntk_momentum"]


def _span(*vectors: Sequence[Any] | None) -> int:
    return max(len(v) for v in vectors if v is not None)


def _f32(value: float) -> float:
    """``value`` as CNTK's ``floatargvector`` held it (a float32), back in a Python float."""
    return float(np.float32(value))


def per_sample_epochs(sgd: SGDConfig, quantity: str) -> list[float | ConfigError]:
    """Each epoch's learning rate (``quantity`` ``"lr"``) or momentum (``"momentum"``) per
    sample, or, for an epoch whose rate or momentum per minibatch cannot be spread
    (:func:`effective_minibatch_size`), cntk.exe's error: it computes each epoch's values at
    that epoch's start (SGD.cpp:549, 630), so the epochs before it train.  The last entry
    stands for the epochs after it.  The one place that decides: :func:`cntk_learning_rate`,
    :func:`cntk_momentum` (the runner), the learners' schedules and the config survey read it.

    >>> from stadyn.brainscript import SGDConfig
    >>> sgd = SGDConfig(2, minibatch_size=(1, 64), learning_rates_per_mb=(0.5,),
    ...                 parallel_sequences=0)
    >>> [getattr(e, "reason", e)[:40] if not isinstance(e, float) else e
    ...  for e in per_sample_epochs(sgd, "lr")]
    [0.5, 'Learning rate and momentum are not suppo']
    """
    if quantity == "lr":
        if sgd.learning_rates_per_sample is not None:
            return [_f32(v) for v in sgd.learning_rates_per_sample]
        lr_mb = sgd.learning_rates_per_mb or (0.0,)
        # SGD.h:162-165: the float entry (floatargvector's operator[] gives a float,
        # Config.h:1514) over the size_t minibatch size: a float division, held in double
        # (0.2 / 25 logs 0.0080000004, Simple2d/OneHidden/baseline.cpu.txt)
        return [_spread(_f32(per_epoch(lr_mb, i)), sgd, i,
                        lambda v, n: float(np.float32(v) / np.float32(n)))
                for i in range(_span(lr_mb, sgd.minibatch_size))]
    if quantity != "momentum":
        raise ValueError(f"per_sample_epochs: quantity must be 'lr' or 'momentum', got "
                         f"{quantity!r}")
    if sgd.momentum_as_time_constant is not None:
        return [0.0 if tc == 0 else _f32(math.exp(-1.0 / _f32(tc)))
                for tc in sgd.momentum_as_time_constant]
    if sgd.momentum_per_sample is not None:
        return [_f32(m) for m in sgd.momentum_per_sample]
    per_mb = sgd.momentum_per_mb if sgd.momentum_per_mb is not None else (0.9,)
    return [_spread(_f32(per_epoch(per_mb, i)), sgd, i, lambda m, k: m ** (1.0 / k))
            for i in range(_span(per_mb, sgd.minibatch_size))]


def _spread(value: float, sgd: SGDConfig, epoch: int,
            per_sample: Callable[[float, int], float]) -> float | ConfigError:
    """``per_sample(value, effective_minibatch_size)``, or the ConfigError where that size is
    cntk.exe's RuntimeError (returned: the epoch's entry of :func:`per_sample_epochs`)."""
    try:
        return per_sample(value, effective_minibatch_size(sgd, epoch))
    except ConfigError as exc:
        return exc


def _entry(entries: list[float | ConfigError], epoch: int) -> float:
    """0-based ``epoch``'s entry of :func:`per_sample_epochs`: its value, or its error raised."""
    entry = per_epoch(entries, epoch)
    if isinstance(entry, ConfigError):
        raise ConfigError(entry.reason, entry.path, entry.line, entry.column)
    return entry


def _trained(entries: list[float | ConfigError]) -> list[float]:
    """The entries of :func:`per_sample_epochs` before the first error: the epochs that train
    (empty where the first epoch cannot)."""
    values: list[float] = []
    for entry in entries:
        if isinstance(entry, ConfigError):
            break
        values.append(entry)
    return values


def learning_rates_per_sample(sgd: SGDConfig) -> list[float]:
    """The per-epoch learning rates per sample, as CNTK's SGD held, applied and logged them
    (``GetLearningRatePerSample``): the config's value as a float32, divided (in double) by
    the epoch's ``minibatchSize`` for ``learningRatesPerMB``; the last value repeats.  Only the
    epochs before one whose rate cannot be spread (:func:`per_sample_epochs`).

    >>> from stadyn.brainscript import SGDConfig
    >>> learning_rates_per_sample(SGDConfig(1, learning_rates_per_sample=(0.01,)))
    [0.009999999776482582]
    >>> sgd = SGDConfig(2, minibatch_size=(64,), learning_rates_per_mb=(0.1, 0.32))
    >>> learning_rates_per_sample(sgd)
    [0.0015625000232830644, 0.004999999888241291]
    """
    return _trained(per_sample_epochs(sgd, "lr"))


def effective_minibatch_size(sgd: SGDConfig, epoch: int, *, rates: bool = True) -> int:
    """The samples a per-minibatch rate or momentum of 0-based ``epoch`` is spread over:
    ``minibatchSize``, times the parallel sequences with truncated BPTT where it is > 1
    (cntk.exe's ``FixUpEffectiveMBSize``, SGD.h: ``minibatchSize`` is then the truncation
    length; a 1 is left as it is).  With CNTK 2's readers (``parallel_sequences`` 0) a size
    > 1 is cntk.exe's RuntimeError for a rate or momentum per minibatch; ``rates=False``
    (the "effective momentum" of the log, SGD.cpp:626-641) gives ``minibatchSize`` then.

    >>> from stadyn.brainscript import SGDConfig
    >>> [effective_minibatch_size(SGDConfig(1, minibatch_size=(n,), parallel_sequences=32), 0)
    ...  for n in (20, 1)]
    [640, 1]
    """
    size = per_epoch(sgd.minibatch_size, epoch)
    if size > 1 and sgd.parallel_sequences == 0 and not rates:
        return size
    if size > 1 and sgd.parallel_sequences == 0:   # (CNTK 2's readers: _runner)
        raise ConfigError("Learning rate and momentum are not supported per minibatch, please "
                          "specify them per sample (SGD's truncated = true with a deserializers "
                          "reader: use learningRatesPerSample and momentumAsTimeConstant)",
                          *(() if sgd.loc is None else (sgd.loc.path, sgd.loc.line,
                                                         sgd.loc.column)))
    return size * sgd.parallel_sequences if size > 1 else size


def cntk_learning_rate(sgd: SGDConfig, epoch: int) -> float:
    """0-based ``epoch``'s rate per sample (:func:`learning_rates_per_sample`); a rate per
    minibatch that cannot be spread (:func:`effective_minibatch_size`) is its error here, at
    the epoch's start (SGD.cpp:549).

    >>> from stadyn.brainscript import SGDConfig
    >>> sgd = SGDConfig(2, minibatch_size=(1, 64), learning_rates_per_mb=(0.5,),
    ...                 parallel_sequences=0)
    >>> cntk_learning_rate(sgd, 0)
    0.5
    >>> cntk_learning_rate(sgd, 1)
    Traceback (most recent call last):
    ...
    stadyn._errors.ConfigError: Learning rate and momentum are not supported per minibatch, ...
    """
    return _entry(per_sample_epochs(sgd, "lr"), epoch)


def cntk_momentum(sgd: SGDConfig, epoch: int) -> float:
    """0-based ``epoch``'s momentum per sample (:func:`momenta_per_sample`); a momentum per
    minibatch (also the default 0.9) that cannot be spread is its error here, at the epoch's
    start (SGD.cpp:630).

    >>> from stadyn.brainscript import SGDConfig
    >>> round(cntk_momentum(SGDConfig(1, minibatch_size=(4,), momentum_per_mb=(0.5,)), 0), 6)
    0.840896
    """
    return _entry(per_sample_epochs(sgd, "momentum"), epoch)


def momenta_per_sample(sgd: SGDConfig) -> list[float]:
    """The per-epoch momenta per sample, as CNTK's SGD held them (``GetMomentumPerSample``,
    its float32 vectors kept): ``exp(-1/tc)`` rounded to float32 for time constants (0 for 0),
    ``m ** (1/minibatchSize)`` of the float32 ``momentumPerMB`` (CNTK's default is
    ``momentumPerMB = 0.9``), the float32 ``momentumPerSample``.

    >>> from stadyn.brainscript import SGDConfig
    >>> m = momenta_per_sample(SGDConfig(1, momentum_as_time_constant=(0.0, 2500.0)))
    >>> m[0], m[1], round(m[1] ** 128, 6)     # CNTK's log: effective momentum = 0.950085
    (0.0, 0.9996000528335571, 0.950085)
    """
    return _trained(per_sample_epochs(sgd, "momentum"))
