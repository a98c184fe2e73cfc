"""CNTK 2.7's trainer checkpoints: the ``.ckp`` file ``Trainer.save_checkpoint(f)`` writes next
to the model file ``f``, and the pair written atomically.

The ``.ckp`` file is a CNTK ``Dictionary`` (the protobuf of :mod:`._cntk_write_proto`), with the
keys CNTK 2.7 writes (``Source/CNTKv2LibraryDll/Trainer.cpp:416-438``, ``Learner.cpp:336-360``,
read off checkpoints CNTK 2.7 wrote, ``tests/fixtures/cntk_checkpoints/``)::

    Version 1 (size_t), Learners [one Dictionary per learner], ExternalState {the caller's},
    DistributedState {} (a distributed learner's, one worker: {"0": {external_worker_state
    {the caller's}, internal_worker_state {}}})

    a learner: version 3, type "Learner", sample_count, minibatchCount, sweepCount,
    noise_injection_seed (size_t), learnig_rate_schedule {version 2, type
    "TrainingParameterSchedule", schedule {"<count>": value}, epoch_size, ref_mb_size} (see
    :mod:`._cntk_schedule`), master_parameter_updated (False before the first update and
    for a universal learner), smoothed_gradients [one array per parameter, in the learner's
    order], and for adam, rmsprop and fsadagrad smoothed_count (double)

    a distributed learner: localLearners {a learner}, totalNumberOfSamplesSeen (size_t)

    a block momentum learner: base {a distributed learner's}, localTotalNumSamplesSeen
    (size_t, this worker's samples), blockLevelSmoothedGradient [one array per parameter]
    (BlockMomentumDistributedLearner::CreateCheckpoint; the main worker's is the file's)

A learner's per-parameter state is one array (``smoothed_gradients``): sgd's and universal's a
scalar 0; momentum_sgd's and nesterov's the momentum buffer and adagrad's the accumulated
squares, in the parameter's shape at every rank; adam's (and adamax's) ``[v, m]``,
fsadagrad's ``[squares, momentum]``, adadelta's ``[squares, squared steps]`` and rmsprop's
``[mean squares, signs, steps]`` stacked along CNTK's column axis of the parameter seen as a
matrix (CNTK's rows: the parameter's last NumPy axis; columns: the rest: a (4, 2, 3, 3)
kernel's adam state is (48, 3)), :func:`split_state` and :func:`stacked_state` convert.

Example:
    >>> import numpy as np
    >>> s = stacked_state([np.zeros((3, 2)), np.ones((3, 2))], (3, 2))
    >>> s.shape, [float(p[0, 0]) for p in split_state(s, (3, 2), 2, "f.ckp")]
    ((6, 2), [0.0, 1.0])
"""

from __future__ import annotations

import hashlib
import math
import os
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .._errors import ModelFileError
from .._fileutil import check_writable, fsync_path, make_temp, publish
from . import _cntk_write_proto as P

__all__ = ["CKP_SUFFIX", "LEARNER_SLOTS", "learner_entry", "distributed_entry",
           "block_momentum_entry", "checkpoint_bytes",
           "checkpoint_dictionary",
           "read_checkpoint_file", "split_state", "stacked_state", "write_pair", "model_digest",
           "training_function_bytes", "is_cntk_checkpoint", "write_cntk_checkpoint",
           "read_cntk_checkpoint", "learner_states"]

CKP_SUFFIX = ".ckp"
_TRAINER_VERSION, _LEARNER_VERSION, _SCHEDULE_VERSION = 1, 3, 2
#: Stadyn's learner name -> the per-parameter state names stacked in CNTK's smoothed gradient
#: (in CNTK's order), and whether CNTK keeps them in the parameter's own shape (True) or as
#: the parameter's matrix with the states side by side (False).  sgd keeps a scalar 0.
LEARNER_SLOTS: dict[str, tuple[tuple[str, ...], bool]] = {
    "sgd": ((), True), "universal": ((), True),
    "momentum_sgd": (("v",), True), "nesterov": (("v",), True), "adagrad": (("v",), True),
    "adam": (("v", "m"), False), "fsadagrad": (("v", "m"), False),
    "adadelta": (("sq_grad", "sq_delta"), False),
    "rmsprop": (("v", "signs", "steps"), False)}
_COUNTED = {"adam", "rmsprop", "fsadagrad"}     # learners that write smoothed_count
DIGEST_KEY = "StadynModelDigest"            # not CNTK's: CNTK 2.7 ignores keys it does not read


def _matrix(shape: Sequence[int]) -> tuple[int, int]:
    """``(columns, rows)`` of a parameter of NumPy ``shape`` as CNTK's matrix."""
    shape = tuple(shape)
    rows = shape[-1] if shape else 1
    return (math.prod(shape[:-1]) if shape else 1), rows


def stacked_state(parts: Sequence[np.ndarray], shape: Sequence[int]) -> np.ndarray:
    """CNTK's smoothed gradient of the states ``parts`` (each in the parameter's ``shape``)
    stacked side by side along the matrix's columns, in NumPy order ``(k * columns, rows)``."""
    cols, rows = _matrix(shape)
    return np.concatenate([np.asarray(p).reshape(cols, rows) for p in parts], axis=0)


def split_state(value: np.ndarray, shape: Sequence[int], k: int, where: str) -> list[np.ndarray]:
    """The ``k`` states (each in the parameter's ``shape``) of CNTK's smoothed gradient
    ``value``; a size that is not ``k`` times the parameter's is a ModelFileError."""
    cols, rows = _matrix(shape)
    value = np.asarray(value)
    if value.size != k * cols * rows:
        raise ModelFileError(f"{where}: a smoothed gradient of shape {value.shape} for a "
                             f"parameter of shape {tuple(shape)} (expected {k} x its size)")
    flat = value.reshape(k * cols, rows)
    return [flat[j * cols:(j + 1) * cols].reshape(tuple(shape)) for j in range(k)]


def learner_entry(name: str, counts: Mapping[str, int], states: Sequence[Mapping[str, Any]],
                  shapes: Sequence[Sequence[int]], dtype, schedule: Mapping[str, Any],
                  seed: int = 0, smoothed_count: float | None = None,
                  master_updated: bool = True) -> P.Value:
    """One learner's checkpoint Dictionary, as CNTK 2.7 writes it: ``counts`` (``samples``,
    ``minibatches``, ``sweeps``), ``states`` (per parameter, state name -> array), ``shapes``
    (the parameters'), ``schedule`` (the rate schedule in CNTK's form, :func:`cntk_schedule`),
    ``seed`` (the learner's noise-injection seed, drawn as CNTK's learner was made),
    ``smoothed_count`` (adam's, rmsprop's and fsadagrad's; None: the minibatches),
    ``master_updated`` (CNTK 2.7's ``master_parameter_updated``: False before the first
    update, and for a universal learner, whose update CNTK's C++ never runs)."""
    slots, own_shape = LEARNER_SLOTS[name]
    grads = []
    for state, shape in zip(states, shapes):
        if not slots:
            value = np.zeros((), dtype)
        elif own_shape:
            value = np.asarray(state[slots[0]], dtype).reshape(tuple(shape))
        else:
            value = stacked_state([np.asarray(state[s], dtype) for s in slots], shape)
        grads.append(P.array(value.astype(dtype)))
    entries = {
        "learnig_rate_schedule": P.dictionary({      # (sic: CNTK 2.7's key)
            "epoch_size": P.size_t(schedule["epoch_size"]),
            "ref_mb_size": P.size_t(schedule["ref_mb_size"]),
            "schedule": P.dictionary({k: P.double(v) for k, v in schedule["schedule"].items()}),
            "type": P.text("TrainingParameterSchedule"),
            "version": P.size_t(_SCHEDULE_VERSION)}),
        "master_parameter_updated": P.boolean(master_updated),
        "minibatchCount": P.size_t(counts["minibatches"]),
        "noise_injection_seed": P.size_t(seed),
        "sample_count": P.size_t(counts["samples"]),
        "smoothed_gradients": P.vector(grads),
        "sweepCount": P.size_t(counts["sweeps"]),
        "type": P.text("Learner"), "version": P.size_t(_LEARNER_VERSION)}
    if name in _COUNTED:
        entries["smoothed_count"] = P.double(float(counts["minibatches"]) if smoothed_count
                                             is None else float(smoothed_count))
    return P.dictionary(dict(sorted(entries.items())))


def distributed_entry(local: P.Value, samples: int) -> P.Value:
    """The checkpoint Dictionary of CNTK 2.7's ``data_parallel_distributed_learner`` around
    the learner Dictionary ``local``: ``{localLearners: local, totalNumberOfSamplesSeen}``."""
    return P.dictionary({"localLearners": local, "totalNumberOfSamplesSeen": P.size_t(samples)})


def block_momentum_entry(distributed: P.Value, local_samples: int,
                         smoothed: Sequence[np.ndarray]) -> P.Value:
    """The checkpoint Dictionary of CNTK 2.7's ``block_momentum_distributed_learner``: its
    :func:`distributed_entry` as ``base``, this worker's samples and the block-level smoothed
    gradients (one array per parameter)."""
    return P.dictionary({"base": distributed, "localTotalNumSamplesSeen": P.size_t(local_samples),
                         "blockLevelSmoothedGradient": P.vector(
                             [P.array(np.asarray(g)) for g in smoothed])})


def _external(value: Any, where: str) -> P.Value:
    """The caller's external state (a dict) as CNTK 2.7's Python writes it
    (:func:`._cntk_write_proto.python_value`: the training session's reader positions hold
    None, ints of every size and floats); a value without a CNTK form is a ValueError naming
    ``where``."""
    def refuse(v):
        raise ValueError(f"{where}: the external state's value {v!r} has no CNTK Dictionary "
                         "form (None, numbers, strings, lists, dicts, float arrays)")
    return P.python_value(dict(value or {}), refuse)


def checkpoint_bytes(learners: Sequence[P.Value], external_state: Mapping | None,
                     digest: str | None = None, where: str = "save_checkpoint",
                     distributed: bool = False,
                     worker_states: Sequence[Mapping | None] | None = None) -> bytes:
    """The bytes of a ``.ckp`` file: CNTK 2.7's trainer state Dictionary.  ``distributed``:
    the learners are CNTK's distributed learners (:func:`distributed_entry`), whose
    ``DistributedState`` CNTK 2.7 keys by each worker's rank (``"0"``, ``"1"``, ...), each
    holding that worker's external state (``worker_states``, in rank order; by default one
    worker's, ``external_state`` once more), the main worker's being ``ExternalState`` too
    (``Trainer.cpp:383-438``, read off files CNTK 2.7 wrote on one and two workers)."""
    entries = {"DistributedState": P.dictionary({}),
               "ExternalState": _external(external_state, where),
               "Learners": P.vector(learners), "Version": P.size_t(_TRAINER_VERSION)}
    workers = list(worker_states) if worker_states is not None else [external_state]
    if distributed:
        entries["DistributedState"] = P.dictionary({str(rank): P.dictionary({
            "external_worker_state": _external(state, where),
            "internal_worker_state": P.dictionary({})}) for rank, state in enumerate(workers)})
    if digest is not None:
        entries[DIGEST_KEY] = P.text(digest)
    return P.encode(entries)


def checkpoint_dictionary(entry: P.Value, where: str = "create_checkpoint") -> dict:
    """The Python form (``{key: value}``, arrays as NumPy arrays, dictionaries as dicts) of
    the checkpoint Dictionary ``entry``, as :func:`read_checkpoint_file` decodes a file's."""
    from ._cntk_format import _decode_file
    return _decode_file(where, P.encode(dict(entry.value)))


def model_digest(data: bytes) -> str:
    """The digest a Stadyn-written ``.ckp`` keeps of the model file written with it."""
    return hashlib.sha256(data).hexdigest()


class CheckpointLearnerKindError(ModelFileError, RuntimeError):
    """A ``.ckp`` of a distributed learner restored into a trainer of a plain one, or the
    other way round: a RuntimeError, as CNTK 2.7 raises (``Required key 'version' is not
    found in the dictionary.`` for the first, ``_Map_base::at`` for the second)."""


def _check_kinds(path: str, saved: Sequence[bool], distributed: Sequence[bool]) -> None:
    """Refuse a file whose learners were saved distributed where the trainer's are plain,
    or plain where they are distributed (one flag per learner; counts are checked later)."""
    if len(saved) != len(distributed):
        return
    for k, (was, want) in enumerate(zip(saved, distributed)):
        if bool(was) != bool(want):
            kinds = ("a distributed learner", "a plain one") if was else \
                ("a plain learner", "a distributed one")
            raise CheckpointLearnerKindError(
                f"{path}: learner {k} was saved by {kinds[0]}, the trainer's is {kinds[1]} "
                "(CNTK 2.7 refuses this too); nothing was restored")


def read_checkpoint_file(path: str | os.PathLike,
                         distributed: Sequence[bool] | None = None) -> dict:
    """The decoded ``.ckp`` file at ``path`` (checked: a Dictionary with ``Learners`` a list of
    learner Dictionaries and ``ExternalState`` a Dictionary); else a ModelFileError naming it.
    A distributed learner's entry is replaced by the learner it wraps.  ``distributed`` (one
    flag per learner of the trainer restoring it): a file saved by distributed learners where
    the trainer's are plain, or the other way round, is a :class:`CheckpointLearnerKindError`
    (a RuntimeError, as CNTK 2.7's ``restore_from_checkpoint`` raises)."""
    from ._cntk_format import _decode_file
    from ._legacy_ir import read_limited
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ModelFileError(f"{path}: no such checkpoint file (CNTK's Trainer.save_checkpoint "
                             "writes the model file and this .ckp file beside it)")
    top = _decode_file(path, read_limited(path))
    learners = top.get("Learners")
    if not isinstance(learners, list) or not all(isinstance(x, dict) for x in learners):
        raise ModelFileError(f"{path}: not a CNTK trainer checkpoint (no 'Learners' list)")
    if not isinstance(top.get("ExternalState", {}), dict):
        raise ModelFileError(f"{path}: 'ExternalState' is not a Dictionary")
    saved = ["localLearners" in learner or "base" in learner for learner in learners]
    if distributed is not None:
        _check_kinds(path, saved, distributed)
    for k, learner in enumerate(learners):
        if "base" in learner:       # a block momentum learner's: its block state kept aside
            learner = learners[k] = _block_state(path, k, learner, top)
        if "localLearners" in learner:     # a distributed learner's: the learner it wraps
            learner = learners[k] = learner["localLearners"]
            if not isinstance(learner, dict):
                raise ModelFileError(f"{path}: learner {k}'s 'localLearners' is not a "
                                     "Dictionary")
        for key in ("sample_count", "minibatchCount", "smoothed_gradients"):
            if key not in learner:
                raise ModelFileError(f"{path}: learner {k} has no {key!r}")
        if not isinstance(learner["smoothed_gradients"], list):
            raise ModelFileError(f"{path}: learner {k}'s 'smoothed_gradients' is not a list")
    return top


def _block_state(path: str, k: int, learner: dict, top: dict) -> dict:
    """A block momentum learner's entry (learner ``k``) as a distributed learner's; its block
    state goes to ``top["BlockMomentum"][k]``: ``(all workers' samples, the main worker's,
    the block-level smoothed gradients)``."""
    base = learner["base"]
    try:
        state = (int(base["totalNumberOfSamplesSeen"]), int(learner["localTotalNumSamplesSeen"]),
                 list(learner["blockLevelSmoothedGradient"]))
    except (KeyError, TypeError, ValueError):
        raise ModelFileError(f"{path}: learner {k} is not a block momentum learner's entry "
                             "(base, localTotalNumSamplesSeen, blockLevelSmoothedGradient)") \
            from None
    if not isinstance(base, dict):
        raise ModelFileError(f"{path}: learner {k}'s 'base' is not a Dictionary")
    top.setdefault("BlockMomentum", {})[k] = state
    return base


def write_pair(path: str | os.PathLike, write_model: Callable[[str], None],
               ckp: Callable[[bytes], bytes]) -> None:
    """Write the model file at ``path`` (``write_model(tmp)``) and the ``.ckp`` beside it
    (``ckp(model bytes)``: its bytes), both to temporary files first, then move them into
    place: a failure before the moves leaves the previous pair; the ``.ckp`` keeps the model's
    digest, so a crash between the two moves leaves a pair the reader refuses."""
    path = os.fspath(path)
    folder = check_writable(path)
    temps = []
    try:
        for ext in (os.path.splitext(path)[1], CKP_SUFFIX):
            fd, tmp = make_temp(folder, ext)
            os.close(fd)
            temps.append(tmp)
        write_model(temps[0])
        with open(temps[0], "rb") as f:
            data = f.read()
        with open(temps[1], "wb") as f:
            f.write(ckp(data))
        for tmp in temps:
            fsync_path(tmp)
        publish(temps[0], path)
        publish(temps[1], path + CKP_SUFFIX)
    except BaseException:
        for tmp in temps:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise


_ALL_AXES = P.axis(2147483643, "AllAxes", False)     # CNTK's Axis::AllAxes() as stored


def training_function_bytes(model: bytes, outputs: int, metric: bool) -> bytes:
    """The CNTK v2 model file CNTK 2.7's ``Trainer`` saves, from ``model``: the file of a
    Combine of the model's ``outputs`` outputs, the loss and (``metric``) the metric.  CNTK's
    Trainer trains ``Combine(model outputs, loss, aggregateLoss, metric, aggregateEvalMetric)``
    (``Trainer.cpp:49-112``), the aggregates a ``ReduceElements`` Sum over all axes of the
    loss and the metric, and ``restore_from_checkpoint`` refuses a model file that is not that
    graph: the aggregates are added after the loss and the metric."""
    from .._proto_schemas import cntk_messages
    msg = cntk_messages()["Dictionary"].FromString(model)
    top = {e.key: e.value for e in msg.data}
    functions = top["primitive_functions"].vector_value.value
    root = top["root"].string_value
    uids = [{e.key: e.value for e in f.dictionary_value.data}["uid"].string_value
            for f in functions]
    if root not in uids:
        raise ValueError(f"the root {root!r} is no function of the file")
    position = uids.index(root)
    combine = functions[position].dictionary_value
    inputs = {e.key: e.value for e in combine.data}["inputs"].vector_value.value
    if len(inputs) != outputs + 1 + int(metric):
        raise ValueError(f"a Combine of {len(inputs)} outputs, expected {outputs + 1 + metric}")
    count = 1 + max((int("".join(c for c in s.rpartition("_Output_")[0] if c.isdigit()) or 0)
                     for f in functions for e in f.dictionary_value.data if e.key == "uid"
                     for s in [e.value.string_value]), default=0)
    seen = [i.string_value for i in inputs]
    new_inputs = list(seen[:outputs])
    added = []
    for k, name in ((outputs, "aggregateLoss"), (outputs + 1, "aggregateEvalMetric")):
        if k >= len(seen):
            continue
        uid = f"ReduceElements{count}"
        count += 1
        entry = {"version": P.size_t(24), "type": P.text("PrimitiveFunction"),
                 "uid": P.text(uid), "op": P.size_t(39),
                 "inputs": P.vector([P.text(seen[k])]),
                 "attributes": P.dictionary({"axis": _ALL_AXES,
                                             "reductionOpName": P.text("Sum"),
                                             "reductionKeepDimensions": P.boolean(False)}),
                 "name": P.text(name)}
        added.append(cntk_messages()["Dictionary"].FromString(P.encode(entry)))
        new_inputs += [seen[k], uid + "_Output_0"]
    del inputs[:]
    for uid in new_inputs:
        v = inputs.add()
        v.version, v.value_type, v.string_value = 2, 6, uid
    kept = [f.__deepcopy__() for f in functions]
    del functions[:]
    for j, f in enumerate(kept):
        if j == position:
            for a in added:
                v = functions.add()
                v.version, v.value_type = 2, 10
                v.dictionary_value.CopyFrom(a)
        functions.add().CopyFrom(f)
    return msg.SerializeToString()


# ---------------------------------------------------------------------------------------------
# What the compat Trainer calls
# ---------------------------------------------------------------------------------------------
def is_cntk_checkpoint(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a CNTK v2 model file with a ``.ckp`` beside it (CNTK's pair), not
    Stadyn's own checkpoint file."""
    from ._cntk_format import is_cntk_v2_file
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            head = f.read(64)
    except OSError:
        return False
    stadyn_container = len(head) > 8 and head[8:9] == b"{"     # safetensors: size, JSON
    return (bool(head) and not stadyn_container and is_cntk_v2_file(head)
            and os.path.isfile(path + CKP_SUFFIX))


def write_cntk_checkpoint(path: str | os.PathLike, write_model: Callable[[str], None],
                          learners: Sequence[P.Value], external_state: Mapping | None,
                          distributed: bool = False,
                          worker_states: Sequence[Mapping | None] | None = None) -> None:
    """Write CNTK's pair: the model file (``write_model(tmp)``) and the ``.ckp`` of the
    ``learners`` (:func:`learner_entry`, :func:`distributed_entry` where ``distributed``) and
    ``external_state`` (and each worker's, ``worker_states``: see :func:`checkpoint_bytes`);
    an external state without a Dictionary form is refused before anything is written."""
    for state in [external_state] + list(worker_states or ()):
        _external(state, os.fspath(path))
    write_pair(path, write_model, lambda data: checkpoint_bytes(
        learners, external_state, model_digest(data), os.fspath(path), distributed,
        worker_states))


def read_cntk_checkpoint(path: str | os.PathLike,
                         distributed: Sequence[bool] | None = None,
                         order: "Callable[[Any], Sequence[str]] | None" = None
                         ) -> tuple[list, list, dict]:
    """CNTK's pair at ``path``: ``(parameters, constants, state)``, the model file's
    parameters and constants (batch normalisation's running statistics among them) as
    ``(uid, name, value)`` in the file's order (its serializer's walk, not the graph's
    ``Inputs()`` order by which CNTK's ``RestoreFromCheckpoint`` matches them) and the decoded
    ``.ckp``.  ``order``: a function of the decoded model file (a ``LegacyModel``) giving
    uids, the parameters then sorted by it (those it leaves out after, in the file's order):
    the caller's order of the graph, from the file as read here.  A damaged file, or a
    ``.ckp`` written with another model file, is a ModelFileError naming the file;
    ``distributed``: as :func:`read_checkpoint_file`'s."""
    from .._errors import StadynError
    from ._cntk_format import read_cntk
    path = os.fspath(path)
    try:
        model = read_cntk(path)
    except ModelFileError:
        raise
    except (StadynError, ValueError) as exc:
        raise ModelFileError(f"{path}: {exc}") from exc
    state = read_checkpoint_file(path + CKP_SUFFIX, distributed)
    if DIGEST_KEY in state:
        with open(path, "rb") as f:
            if model_digest(f.read()) != state[DIGEST_KEY]:
                raise ModelFileError(f"{path}{CKP_SUFFIX}: written with another model file "
                                     f"than {path} (a save was interrupted)")
    leaves = {kind: [(uid, p.name, np.asarray(p.value)) for uid, p in model.parameters.items()
                     if p.kind == kind] for kind in ("parameter", "constant")}
    if order is not None:
        place = {uid: k for k, uid in enumerate(order(model))}
        leaves["parameter"].sort(key=lambda entry: place.get(entry[0], len(place)))
    return leaves["parameter"], leaves["constant"], state


def learner_states(name: str, entry: Mapping, shapes: Sequence[Sequence[int]],
                   where: str) -> list[dict]:
    """The per-parameter states (state name -> array in the parameter's shape) of the Stadyn
    learner ``name`` whose parameters have ``shapes``, from CNTK 2.7's learner checkpoint
    ``entry``; a learner of another kind or of other parameters is a ModelFileError."""
    if name not in LEARNER_SLOTS:
        raise ModelFileError(f"{where}: the trainer's {name} learner has no CNTK 2.7 "
                             "checkpoint form here; nothing was restored")
    slots, own_shape = LEARNER_SLOTS[name]
    grads = entry["smoothed_gradients"]
    if len(grads) != len(shapes):
        raise ModelFileError(f"{where}: {len(grads)} smoothed gradients for the learner's "
                             f"{len(shapes)} parameters (another network); nothing was "
                             "restored")
    if ("smoothed_count" in entry) != (name in _COUNTED):
        raise ModelFileError(f"{where}: the state of a learner of another kind than the "
                             f"trainer's {name} (smoothed_count "
                             f"{'present' if 'smoothed_count' in entry else 'absent'}); "
                             "nothing was restored")
    out = []
    for g, shape in zip(grads, shapes):
        g, shape = np.asarray(g), tuple(shape)
        if not slots:
            if g.size != 1:
                raise ModelFileError(f"{where}: a smoothed gradient of shape {g.shape} for "
                                     f"an {name} learner (another kind); nothing was restored")
            out.append({})
            continue
        if own_shape and g.size != math.prod(shape):
            raise ModelFileError(f"{where}: a smoothed gradient of shape {g.shape} for a "
                                 f"parameter of shape {shape} (another learner or network); "
                                 "nothing was restored")
        parts = [g.reshape(shape)] if own_shape else split_state(g, shape, len(slots), where)
        out.append(dict(zip(slots, parts)))
    return out
