"""The ``AutoAdjust`` block of a BrainScript ``SGD`` block: CNTK's learning-rate control.

With ``autoAdjustLR = "adjustAfterEpoch"`` CNTK's SGD loop (``SGD::TrainOrAdaptModel``) looks at
each epoch's loss once the explicit learning rates (``learningRatesPerSample``/``PerMB``) are
used up, and every ``learnRateAdjustInterval`` epochs compares the loss averaged over the
interval (the ``cvReader`` set's criterion when there is one, else the training criterion;
``UseEvalCriterionControlLR``: the first evaluation node's) with the previous interval's:

1. worse (or not a number): with ``loadBestModel`` (default true) roll back to the model and the
   learner state of the epoch before the interval, and train that interval again;
2. improved by at most ``reduceLearnRateIfImproveLessThan`` (relative, default 0) — which
   includes worse: multiply the rate by ``learnRateDecreaseFactor`` (0.618);
   improved by more than ``increaseLearnRateIfImproveMoreThan`` (default never): multiply it by
   ``learnRateIncreaseFactor`` (1.382).  With ``continueReduce``, once the rate was reduced it is
   reduced after every interval, and the next time the loss fails to improve enough training
   ends with the current model saved as the final one.

Training also ends when an epoch would start with a rate below ``minLearningRatePerSample``
(SGD block, default 1e-9).  This module holds the settings and the policy as a pure function of
the loss history (:func:`after_epoch`); the train command does what it decides
(:mod:`._train_progress`, :mod:`._model_files`).  ``"searchBeforeEpoch"`` is refused, naming
the key, and so is ``autoAdjustMinibatch`` unless ``minibatchSize`` has a value for every epoch
(cntk.exe searches only in the epochs past them).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from .._errors import ConfigError, StadynError
from ._config import ConfigRecord
from ._sgd import _where

__all__ = ["AutoAdjust", "LRState", "Step", "auto_adjust", "after_epoch", "initial_state",
           "min_learning_rate"]

INF = math.inf

#: Keys of the block that drive adjustAfterEpoch (CNTK's names).
_POLICY = ("autoAdjustLR", "reduceLearnRateIfImproveLessThan", "continueReduce",
           "learnRateAdjustInterval", "learnRateDecreaseFactor",
           "increaseLearnRateIfImproveMoreThan", "learnRateIncreaseFactor", "loadBestModel",
           "UseCVSetControlLRIfCVExists", "UseEvalCriterionControlLR")
#: Keys CNTK read only for searchBeforeEpoch or autoAdjustMinibatch: accepted, no effect here.
_OTHER = ("numPrevLearnRates", "numBestSearchEpoch", "numMiniBatch4LRSearch", "numSamples4Search",
          "autoAdjustMinibatch", "minibatchSizeTuningFrequency", "minibatchSizeTuningMax",
          "minibatchSearchCriterionErrorMargin")


@dataclass(frozen=True)
class AutoAdjust:
    """The settings of an ``AutoAdjust`` block (CNTK's defaults)."""

    reduce_if_improve_less_than: float = 0.0
    continue_reduce: bool = False
    interval: int = 1                           # learnRateAdjustInterval
    decrease_factor: float = 0.618
    increase_if_improve_more_than: float = INF
    increase_factor: float = 1.382
    load_best_model: bool = True
    use_cv_set: bool = True                     # UseCVSetControlLRIfCVExists
    use_eval_criterion: bool = False            # UseEvalCriterionControlLR


@dataclass(frozen=True)
class LRState:
    """What CNTK's loop carries from epoch to epoch for the adjustment.

    ``lr``: the rate per sample after the last adjustment (the next epoch's once the explicit
    rates are used up); ``saved``: what each epoch's checkpoint recorded, ``{epoch: (lr,
    prev_criterion)}`` (a rollback reads it back)."""

    lr: float
    prev_criterion: float = INF
    avg_criterion: float = INF
    not_counted: int = 0                        # epochsNotCountedInAvgCriterion
    reduced: bool = False                       # learnRateReduced (continueReduce)
    saved: Mapping[int, tuple[float, float]] = field(default_factory=dict)


@dataclass(frozen=True)
class Step:
    """What :func:`after_epoch` decided for one trained epoch."""

    state: LRState
    lines: tuple[str, ...]          # CNTK's log lines, in its order
    rollback_to: int | None = None  # reload this epoch's model and checkpoint, train on after it
    removed: tuple[int, ...] = ()   # epochs whose model and checkpoint files a rollback removes
    stop: bool = False              # continueReduce: save the model as the final one and stop
    drop_checkpoints: tuple[int, ...] = ()  # checkpoints no rollback can need any more
    late_lines: tuple[str, ...] = ()  # CNTK's lines after the model files are written

    @property
    def next_epoch(self) -> int | None:
        """The 0-based epoch to train next relative to a rollback (``None``: the following)."""
        return None if self.rollback_to is None else self.rollback_to + 1


# ---------------------------------------------------------------------------------------------
# Settings
# ---------------------------------------------------------------------------------------------
def auto_adjust(block, record: ConfigRecord | None = None,
                minibatch_epochs: tuple[int, int] | None = None) -> AutoAdjust | None:
    """The settings of ``SGD.AutoAdjust`` (a :class:`ConfigRecord`; ``record`` is the SGD block,
    for messages), or ``None`` when it does not adjust (``autoAdjustLR`` none or false).

    ``minibatch_epochs`` is (the number of ``minibatchSize`` values, ``maxEpochs``):
    cntk.exe searches for a minibatch size (``autoAdjustMinibatch = true``) only in the epochs
    past the given sizes (SGD.cpp: ``m_autoAdjustMinibatch && i >= m_mbSize.size()``), so a
    search no epoch makes is accepted; any other is refused, naming the key.

    >>> from stadyn.brainscript import parse_config
    >>> cfg = parse_config('AutoAdjust = [ autoAdjustLR = "adjustAfterEpoch"\\n'
    ...                    '  learnRateDecreaseFactor = 0.5 ]')
    >>> auto_adjust(cfg["AutoAdjust"]).decrease_factor
    0.5
    """
    if block is None:
        return None
    if not isinstance(block, ConfigRecord):
        raise ConfigError("SGD.AutoAdjust must be a block [ autoAdjustLR = ... ]",
                          *_where(record, "AutoAdjust"))
    known = {k.lower() for k in _POLICY + _OTHER}
    for key in block:
        if key.lower() not in known:
            close = difflib.get_close_matches(key, _POLICY + _OTHER, n=2, cutoff=0.7)
            hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else \
                f" (supported: {', '.join(_POLICY)})"
            raise ConfigError(f"unknown or unsupported AutoAdjust key '{key}'{hint}",
                              *_where(block, key))
    searched = minibatch_epochs is None or minibatch_epochs[0] < minibatch_epochs[1]
    if block.get_bool("autoAdjustMinibatch", False) and searched:
        first = "" if minibatch_epochs is None else \
            f" (from epoch {minibatch_epochs[0] + 1}, past the minibatchSize values)"
        raise ConfigError("AutoAdjust: autoAdjustMinibatch = true (CNTK's search for a minibatch "
                          f"size before each epoch{first}) is not supported; give a "
                          "minibatchSize value for every epoch (it then searches in none)",
                          *_where(block, "autoAdjustMinibatch"))
    kind = str(block.get_str("autoAdjustLR", "None")).strip().lower()
    if kind in ("false", "none", ""):
        return None
    if kind in ("searchbeforeepoch", "beforeepoch", "before"):
        raise ConfigError(f"AutoAdjust: autoAdjustLR = {block.get_str('autoAdjustLR')} (CNTK's "
                          "search for a learning rate on part of the data before each epoch) is "
                          "not supported; use adjustAfterEpoch or explicit learning rates",
                          *_where(block, "autoAdjustLR"))
    if kind not in ("adjustafterepoch", "afterepoch", "after"):
        raise ConfigError(f"AutoAdjust: autoAdjustLR = {block.get_str('autoAdjustLR')} is not "
                          "known (none, searchBeforeEpoch or adjustAfterEpoch)",
                          *_where(block, "autoAdjustLR"))
    settings = AutoAdjust(
        reduce_if_improve_less_than=block.get_float("reduceLearnRateIfImproveLessThan", 0.0),
        continue_reduce=block.get_bool("continueReduce", False),
        interval=max(1, block.get_int("learnRateAdjustInterval", 1)),
        decrease_factor=block.get_float("learnRateDecreaseFactor", 0.618),
        increase_if_improve_more_than=block.get_float("increaseLearnRateIfImproveMoreThan", INF),
        increase_factor=block.get_float("learnRateIncreaseFactor", 1.382),
        load_best_model=block.get_bool("loadBestModel", True),
        use_cv_set=block.get_bool("UseCVSetControlLRIfCVExists", True),
        use_eval_criterion=block.get_bool("UseEvalCriterionControlLR", False))
    if settings.decrease_factor > 1 or settings.increase_factor < 1:
        key = "learnRateDecreaseFactor" if settings.decrease_factor > 1 else \
            "learnRateIncreaseFactor"
        raise ConfigError("AutoAdjust: learnRateIncreaseFactor must be >= 1 and "
                          "learnRateDecreaseFactor must be <= 1", *_where(block, key))
    if settings.decrease_factor < 0:
        raise ConfigError("AutoAdjust: learnRateDecreaseFactor must be >= 0",
                          *_where(block, "learnRateDecreaseFactor"))
    return settings


def min_learning_rate(record: ConfigRecord | None) -> float:
    """``minLearningRatePerSample`` of the SGD block (CNTK's default, the float ``1e-9``)."""
    value = 1e-9 if record is None else record.get_float("minLearningRatePerSample", 1e-9)
    return float(np.float32(value))


# ---------------------------------------------------------------------------------------------
# The policy
# ---------------------------------------------------------------------------------------------
def initial_state(settings: AutoAdjust, start: int, fixed: int,
                  checkpoint: tuple[float, float] | None) -> LRState:
    """The state at 0-based epoch ``start``: ``checkpoint`` is ``(lr, prev_criterion)`` of
    epoch ``start - 1``'s checkpoint, if there is one (CNTK: a missing one counts as a previous
    criterion of 0).  ``fixed`` is how many epochs have explicit rates; a restart past them
    needs the checkpoint's rate."""
    if checkpoint is None and fixed <= start:
        raise StadynError('When using "AdjustAfterEpoch", there must either exist a checkpoint '
                          "file, or an explicit learning rate must be specified in config for "
                          f"the starting epoch (epoch {start + 1}).")
    if start == 0:
        return LRState(lr=math.nan)
    lr, prev = checkpoint if checkpoint is not None else (math.nan, 0.0)
    saved = {start - 1: (lr, prev)} if checkpoint is not None else {}
    return LRState(lr=lr, prev_criterion=prev, not_counted=start % settings.interval,
                   saved=saved)


def _model(epoch: int) -> str:
    return f"model.{epoch + 1}"


def after_epoch(settings: AutoAdjust, state: LRState, epoch: int, lr: float, criterion: float,
                fixed: int, model_name: Callable[[int], str] = _model) -> Step:
    """CNTK's learning-rate control after 0-based ``epoch``, trained with rate ``lr`` per sample,
    whose controlling loss was ``criterion``; ``fixed`` epochs have explicit rates (no
    adjustment in those); ``model_name(e)`` names the model file of epoch ``e``.

    The order is SGD.cpp's: average the loss over the interval; at the interval's end (past the
    explicit rates) roll back if it got worse (``loadBestModel``), then reduce or increase the
    rate; record the checkpoint's ``(lr, previous criterion)``.

    >>> s = AutoAdjust(decrease_factor=0.5)
    >>> state = LRState(lr=0.1)
    >>> for epoch, loss in enumerate([2.0, 1.5, 1.7]):
    ...     step = after_epoch(s, state, epoch, state.lr if epoch else 0.1, loss, fixed=1)
    ...     state = step.state
    >>> step.lines
    ('Loading (rolling back to) previous model with best training-criterion value: model.2.', \
'learnRatePerSample reduced to 0.05', 'SGD: revoke back to and update checkpoint file for epoch 2')
    >>> step.rollback_to, state.lr, state.prev_criterion
    (1, 0.05, 1.5)
    """
    lines: list[str] = []
    k = epoch % settings.interval + 1                  # epochsSinceLastLearnRateAdjust
    nc = state.not_counted
    if state.avg_criterion == INF:
        avg = criterion
    else:
        avg = ((k - 1 - nc) * state.avg_criterion + criterion) / (k - nc)
    prev, reduced, rollback = state.prev_criterion, state.reduced, None
    at_end = k == settings.interval
    if fixed <= epoch and at_end:
        if math.isnan(avg) or (prev - avg < 0 and prev != INF):
            if settings.load_best_model:
                target = epoch - settings.interval
                if target not in state.saved:
                    raise StadynError(f"AutoAdjust: the loss got worse in epoch {epoch + 1}, and "
                                      f"there is no checkpoint of epoch {target + 1} to roll "
                                      "back to (loadBestModel)")
                lines.append("Loading (rolling back to) previous model with best "
                             f"training-criterion value: {model_name(target)}.")
                lr, prev = state.saved[target]
                rollback = target
        small = math.isnan(avg) or (
            prev - avg <= settings.reduce_if_improve_less_than * prev and prev != INF)
        if settings.continue_reduce:
            if small:
                if reduced:
                    lines += ["Finished training and saved final model", ""]
                    return Step(dataclasses.replace(state, avg_criterion=avg), tuple(lines),
                                rollback, stop=True)
                reduced = True
            if reduced:
                lr *= settings.decrease_factor
                lines.append(f"learnRatePerSample reduced to {lr:.8g}")
        elif small:
            lr *= settings.decrease_factor
            lines.append(f"learnRatePerSample reduced to {lr:.8g}")
        elif prev - avg > settings.increase_if_improve_more_than * prev and prev != INF:
            lr *= settings.increase_factor
            lines.append(f"learnRatePerSample increased to {lr:.8g}")
    elif math.isnan(avg):
        raise StadynError("The training criterion is not a number (NAN).")
    if rollback is None and at_end:
        prev, nc = avg, 0
    saved = dict(state.saved)
    removed: tuple[int, ...] = ()
    drop: tuple[int, ...] = ()
    if rollback is not None:
        removed = tuple(epoch - j for j in range(1, settings.interval))
        lines += [f"SGD: removing model and checkpoint files for epoch {e + 1} after rollback "
                  f"to epoch {rollback + 1}" for e in removed]
        lines.append(f"SGD: revoke back to and update checkpoint file for epoch {rollback + 1}")
        saved[rollback] = (lr, prev)
    else:
        saved[epoch] = (lr, prev)
        # the checkpoints CNTK removes when it keeps the ones a rollback needs
        drop = tuple(e for e in ((epoch - 1) if k != 1 else None,
                                 (epoch - settings.interval) if at_end else None)
                     if e is not None and e >= 0)
    # (CNTK prints this and trains on: minLearningRatePerSample ends the training)
    late = (f"learnRate per sample is reduced to {lr:.8g} which is below 1e-12. stop "
            "training.",) if lr < 1e-12 else ()
    new = LRState(lr=lr, prev_criterion=prev, avg_criterion=avg, not_counted=nc,
                  reduced=reduced, saved=saved)
    return Step(new, tuple(lines), rollback, removed, drop_checkpoints=drop, late_lines=late)
