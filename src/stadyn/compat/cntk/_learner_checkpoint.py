"""A compat learner's CNTK 2.7 checkpoint Dictionary, both ways: what the Trainer writes into
its ``.ckp`` file and reads back from one, and what ``Learner.create_checkpoint()`` /
``Learner.restore_from_checkpoint(d)`` give and take (:mod:`stadyn.serialize`'s
``_cntk_checkpoint`` has the layout).

CNTK 2.7's restore (``LearnerBase::RestoreFromCheckpoint``, ``Learner.cpp:363-420``) sets the
counts, the noise-injection seed, the smoothed gradients (each of the shape it allocated: one
of another shape is its error) and the whole learning-rate schedule from the checkpoint (a
learner made with another rate continues with the checkpoint's); it keeps the program's
momentum and the other options (no checkpoint holds them).

Example:
    >>> import stadyn.compat.cntk as C
    >>> z = C.layers.Dense(2)(C.input_variable(3))
    >>> learner = C.sgd(z.parameters, C.learning_parameter_schedule([0.1, 0.05], epoch_size=8))
    >>> state = learner.create_checkpoint()
    >>> state["learnig_rate_schedule"]["schedule"], state["sample_count"]
    ({'8': 0.1, '16': 0.05}, 0)
"""

from __future__ import annotations

import numpy as np
import torch

from ..._errors import ModelFileError, StadynError

__all__ = ["learner_entry", "learner_state", "restore_learner", "wrapped_learner"]


def wrapped_learner(learner):
    """The learner a distributed learner wraps (``learner`` itself for any other)."""
    from .train.distributed import DistributedLearner
    return learner._learner if isinstance(learner, DistributedLearner) else learner


def _schedule(learner, state: dict):
    """The learner's rate schedule in CNTK's form, or None where it has none (a cosine or
    warm-up schedule of :mod:`stadyn.schedules`: a restore would take the schedule, so no
    constant stands in for it)."""
    from ...serialize import cntk_schedule
    schedule = learner._schedules["lr"]       # (CntkLearner's own: the mixin's learner class)
    return cntk_schedule(schedule.config(), int(state.get("lr_offset", 0)),
                         int(state.get("lr_sweep_offset", 0)))


def learner_entry(learner):
    """``learner``'s CNTK checkpoint Dictionary (a distributed learner's around the one it
    wraps), or why it has none (a str)."""
    from ...learners import Learner
    from ...serialize import (CNTK_CHECKPOINT_LEARNERS, cntk_block_momentum_entry,
                              cntk_distributed_entry, cntk_learner_entry)
    inner = wrapped_learner(learner)
    name = getattr(inner, "name", None)
    if not isinstance(inner, Learner):
        return f"the {type(inner).__name__} of {name or 'a learner'} has no CNTK 2.7 " \
               "checkpoint form here"
    if name not in CNTK_CHECKPOINT_LEARNERS:
        return f"the {name or type(inner).__name__} learner has no CNTK 2.7 checkpoint form here"
    state = inner.state_dict()
    params = list(inner.named_parameters().values())
    groups = _per_parameter(state["tensors"], len(params), CNTK_CHECKPOINT_LEARNERS[name][0])
    if groups is None:
        return f"the {name} learner's state does not match CNTK's"
    dtype = np.dtype(params[0].dtype) if params else np.float32
    counts = {"samples": state["samples_seen"], "minibatches": state["minibatches_seen"],
              "sweeps": state["sweeps_seen"]}
    seed = getattr(inner, "_noise_injection_seed", None)
    schedule = _schedule(inner, state)
    if schedule is None:
        return f"the {name} learner's learning-rate schedule ({inner._schedules['lr']!r}) has " \
               "no CNTK 2.7 form (values per epoch or per sweep)"
    entry = cntk_learner_entry(name, counts, groups, [p.shape for p in params], dtype,
                               schedule, int(seed) if seed is not None else 0,
                               _smoothed_count(state),
                               master_updated=name != "universal" and counts["minibatches"] > 0)
    if inner is not learner and hasattr(learner, "_block_state"):
        # (a block momentum learner's: the merge before it is the Trainer's, on every worker)
        total, local, smoothed = learner._block_state()
        return cntk_block_momentum_entry(cntk_distributed_entry(entry, total), local, smoothed)
    if inner is not learner:
        entry = cntk_distributed_entry(entry, state["samples_seen"])
    return entry


def _smoothed_count(state: dict) -> float:
    """CNTK's ``smoothed_count`` of a learner whose state_dict is ``state``: fsadagrad's own
    average; adam's and rmsprop's the updates begun, the minibatches and those refused after
    they began (``LearnerAdam::UpdateOnMinibatch`` counts before the gradients' data types
    are checked: run on CNTK 2.7, an adam refusing a float64 gradient, then 2 updates,
    writes smoothed_count 3.0, minibatchCount 2)."""
    scalars = state["scalars"]
    if "smoothed_count" in scalars:
        return float(scalars["smoothed_count"])
    return float(state["minibatches_seen"] + int(scalars.get("update_count_offset", 0)))


def _per_parameter(tensors, count: int, slots) -> "list[dict] | None":
    """A learner's state tensors (``"<parameter>/<state>"``) grouped by parameter, in order;
    None where they are not ``slots`` for each of ``count`` parameters."""
    if not slots:
        return [{} for _ in range(count)]
    groups: dict[str, dict] = {}
    for key, value in tensors.items():
        n, _, k = key.rpartition("/")
        groups.setdefault(n, {})[k] = value.detach().cpu().numpy()
    out = list(groups.values())
    if len(out) != count or any(set(g) != set(slots) for g in out):
        return None
    return out


def learner_state(learner, entry: dict, where: str) -> dict:
    """``learner``'s state_dict holding CNTK 2.7's learner checkpoint ``entry`` (counts,
    smoothed gradients, the rate schedule); checked, nothing set."""
    from ...serialize import cntk_learner_states, schedule_from_cntk
    inner = wrapped_learner(learner)
    name = getattr(inner, "name", None)
    if not hasattr(inner, "state_dict"):
        raise ModelFileError(f"{where}: the trainer's {type(inner).__name__} learner has no "
                             "CNTK 2.7 checkpoint form here; nothing was restored")
    params = list(inner.named_parameters().values())
    per = cntk_learner_states(name, entry, [p.shape for p in params], where)
    state = inner.state_dict()
    keys = list(dict.fromkeys(key.rpartition("/")[0] for key in state["tensors"]))
    tensors = {}
    for j, slots in enumerate(per):
        for s, part in slots.items():
            mine = state["tensors"][f"{keys[j]}/{s}"]
            tensors[f"{keys[j]}/{s}"] = torch.as_tensor(np.ascontiguousarray(part)).to(
                mine.dtype)
    scalars = dict(state["scalars"])
    if "smoothed_count" in entry:
        if "smoothed_count" in scalars:                 # fsadagrad's average
            scalars["smoothed_count"] = float(entry["smoothed_count"])
        elif name in ("adam", "rmsprop"):               # the updates begun (_smoothed_count)
            # (below the minibatches after a reset_smoothed_gradients, which zeroes it)
            scalars["update_count_offset"] = float(entry["smoothed_count"]) \
                - int(entry["minibatchCount"])
    schedule = state["lr_schedule"]
    if "learnig_rate_schedule" in entry:
        schedule = schedule_from_cntk(entry["learnig_rate_schedule"], where).config()
    state = dict(state, tensors=tensors, samples_seen=int(entry["sample_count"]),
                 minibatches_seen=int(entry["minibatchCount"]),
                 sweeps_seen=int(entry.get("sweepCount", 0)), scalars=scalars,
                 lr_schedule=schedule, lr_offset=0, lr_sweep_offset=0)
    try:
        inner.check_state_dict(state)
    except (StadynError, ValueError) as exc:
        raise ModelFileError(f"{where}: {exc}; nothing was restored") from exc
    return state


def restore_learner(learner, state: dict, entry: dict) -> None:
    """Set :func:`learner_state`'s ``state`` (and the noise-injection seed of ``entry``)."""
    inner = wrapped_learner(learner)
    inner.load_state_dict(state)
    if "noise_injection_seed" in entry:           # (CNTK restores it too)
        inner._noise_injection_seed = int(entry["noise_injection_seed"])
