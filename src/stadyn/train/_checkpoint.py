"""The Trainer's checkpoint file: parameters, learner states, counters, random generators and the
caller's state (the reader's position, the epoch) in one safetensors file.

Writing is atomic (a temporary file in the same folder, then a rename), so a crash leaves the
previous checkpoint.  Reading checks every part — the file, the metadata, each parameter's shape,
each learner's state (``check_state_dict``), the generators' states — before it changes anything,
and any problem is one :class:`~stadyn.ModelFileError` naming the file.

The file is Stadyn's container (:mod:`stadyn._tensorfile`, format ``stadyn-checkpoint``).

Parameters are stored by name, with their order.  A network built again in the same process
(the same script run twice in a notebook) gets new generated names (``dense_3/W`` for
``dense/W``); as CNTK 2.7 restores such a network by each parameter's place in the graph
(``Function::RestoreFromCheckpoint``, Function.cpp), a checkpoint whose names are not the
trainer's is restored by position when every parameter's shape agrees and the names agree but
for the generated counters (``_<n>`` after a layer's name); the learners' states follow their
parameters.  Anything else is one :class:`~stadyn.ModelFileError` naming the first mismatch.

The random generators are those a run draws from: torch's (dropout masks and other random ops;
CUDA's too once CUDA is in use), Stadyn's initialiser generator (:data:`stadyn._random.prng`),
NumPy's and Python's global ones.  Restoring them makes a resumed run draw what the uninterrupted
run would have drawn.  (In data-parallel training rank 0 writes the checkpoint and every worker
restores rank 0's generators: exact when the workers were seeded alike.)

Example:
    >>> import os, tempfile, numpy as np, torch, stadyn as sd, stadyn.functions as F
    >>> import stadyn.layers as L, stadyn.solvers as S
    >>> from stadyn.train import Trainer
    >>> with sd.parameter_registry(sd.ParameterRegistry()):
    ...     x, y = sd.Variable((4, 3)), sd.Variable((4, 2))
    ...     z = L.Dense(2)(x)
    ...     solver = S.Sgd(lr=0.1); solver.set_parameters(sd.get_parameters())
    ...     trainer = Trainer(z, (F.cross_entropy_with_softmax(z, y),), [solver])
    ...     path = os.path.join(tempfile.mkdtemp(), "run.ckpt")
    ...     trainer.save_checkpoint(path, {"epoch": 0})
    ...     drawn = torch.rand(2)
    ...     trainer.restore_from_checkpoint(path)
    ...     bool(torch.equal(torch.rand(2), drawn))         # the same draw again
    {'epoch': 0}
    True
"""

from __future__ import annotations

import os
import random
import re
import tempfile
from typing import Any, Iterable, Mapping

import numpy as np
import torch

from .._errors import ModelFileError, StadynError
from .. import _random
from .._tensorfile import TensorFile, read_tensor_file, write_tensor_file
from ..graph import data_of

__all__ = ["write_checkpoint", "read_checkpoint", "read_checkpoint_state",
           "check_checkpoint_folder", "random_state", "set_random_state"]

_FORMAT = "stadyn-checkpoint"
_SEP = "::"   # parameter names contain "/", so nested state keys are joined with "::"


# ---------------------------------------------------------------------------------------------
# Random generators
# ---------------------------------------------------------------------------------------------
def random_state() -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """Every generator's state now: ``(JSON-able metadata, tensors)``."""
    meta: dict[str, Any] = {}
    tensors = {"rng/torch": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        for k, state in enumerate(torch.cuda.get_rng_state_all()):
            tensors[f"rng/cuda{k}"] = state
    for name, state in (("stadyn", _random.prng.get_state()), ("numpy", np.random.get_state())):
        kind, keys, pos, has_gauss, cached = state
        tensors[f"rng/{name}"] = torch.from_numpy(keys.astype(np.int64))
        meta[name] = [kind, int(pos), int(has_gauss), float(cached)]
    version, internal, gauss = random.getstate()
    meta["python"] = [version, list(internal), gauss]
    return meta, tensors


def _numpy_state(meta: Any, keys: torch.Tensor | None, name: str) -> tuple:
    if keys is None or not (isinstance(meta, list) and len(meta) == 4):
        raise StadynError(f"the state of the {name} generator is incomplete")
    kind, pos, has_gauss, cached = meta
    return (str(kind), keys.numpy().astype(np.uint32), int(pos), int(has_gauss), float(cached))


def _checked_random_state(meta: Any, tensors: Mapping[str, torch.Tensor]) -> list:
    """The setters that restore ``meta``/``tensors`` (each state already tried on a spare
    generator, so setting them cannot fail)."""
    if not isinstance(meta, Mapping):
        raise StadynError("the random generators' state is not a mapping")
    setters = []
    cpu = tensors.get("rng/torch")
    if cpu is None:
        raise StadynError("the random generators' state has no torch state")
    cuda = []
    while f"rng/cuda{len(cuda)}" in tensors:
        cuda.append(tensors[f"rng/cuda{len(cuda)}"])
    try:
        torch.Generator().set_state(cpu)
        setters.append(lambda: torch.set_rng_state(cpu))
        if cuda and torch.cuda.is_available():
            setters.append(lambda: torch.cuda.set_rng_state_all(
                cuda[:torch.cuda.device_count()]))
        for name, target in (("stadyn", _random.prng), ("numpy", np.random)):
            state = _numpy_state(meta.get(name), tensors.get(f"rng/{name}"), name)
            np.random.RandomState().set_state(state)
            setters.append(lambda target=target, state=state: target.set_state(state))
        py = meta.get("python")
        if not (isinstance(py, list) and len(py) == 3 and isinstance(py[1], list)):
            raise StadynError("the state of Python's generator is incomplete")
        py_state = (py[0], tuple(py[1]), py[2])
        random.Random().setstate(py_state)
        setters.append(lambda: random.setstate(py_state))
    except (RuntimeError, TypeError, ValueError) as exc:
        raise StadynError(f"a random generator's state is damaged ({exc})") from None
    return setters


def set_random_state(meta: Any, tensors: Mapping[str, torch.Tensor]) -> None:
    """Restore what :func:`random_state` returned (checked first: all or nothing)."""
    for setter in _checked_random_state(meta, tensors):
        setter()


# ---------------------------------------------------------------------------------------------
# The file
# ---------------------------------------------------------------------------------------------
def check_checkpoint_folder(path: str | os.PathLike) -> None:
    """Make the checkpoint's folder and prove it writable by creating and removing a file in it,
    so that a read-only disk fails before any training rather than after the first epoch."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".stadyn-probe-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ModelFileError(f"{path}: cannot write a checkpoint in {folder} "
                             f"({exc.strerror or exc})") from exc


def write_checkpoint(trainer, filename: str | os.PathLike,
                     external_state: Mapping | None = None) -> None:
    """Write ``trainer``'s checkpoint (see :meth:`stadyn.train.Trainer.save_checkpoint`)."""
    tensors: dict[str, torch.Tensor] = {}
    learner_meta = []
    for k, learner in enumerate(trainer.parameter_learners):
        plain = {}
        for key, value in _flatten_state(learner.state_dict()):
            if isinstance(value, torch.Tensor):
                tensors[f"learner{k}/{key}"] = value
            else:
                plain[key] = value
        learner_meta.append(plain)
    order = []
    for name, var in trainer._named_parameters().items():
        tensors[f"param/{name}"] = data_of(var)
        order.append(name)
    # a block momentum hook's block (cntk.exe's BMACKP section of its .ckp)
    kept = getattr(trainer.data_parallel, "checkpoint_tensors", None)
    for key, value in (kept() if kept is not None else {}).items():
        tensors[f"{_BLOCK}{key}"] = value
    rng_meta, rng_tensors = random_state()
    tensors.update(rng_tensors)
    write_tensor_file(filename, tensors, format=_FORMAT, fields={
        "trainer": {"total_number_of_samples_seen": trainer.total_number_of_samples_seen,
                    "minibatches_seen": trainer.minibatches_seen},
        "learners": learner_meta, "rng": rng_meta, "parameters": order,
        "external_state": dict(external_state or {})})


def read_checkpoint(trainer, filename: str | os.PathLike) -> dict:
    """Restore ``trainer`` from a checkpoint, all or nothing; returns the external state."""
    f = read_tensor_file(filename, format=_FORMAT, what="checkpoint")
    try:
        restore = _checked_restore(trainer, f)
    except (StadynError, KeyError, TypeError, ValueError) as exc:
        what = f"{type(exc).__name__}: {exc}" if not isinstance(exc, StadynError) else str(exc)
        raise ModelFileError(f"{f.where}: {what}; nothing was restored") from exc
    return restore()


def read_checkpoint_state(filename: str | os.PathLike) -> dict:
    """The external state a checkpoint holds (what :meth:`~stadyn.train.Trainer.save_checkpoint`
    was given: the epoch, the reader's position, ...), read without a trainer; a damaged file
    is a :class:`~stadyn.ModelFileError` naming it.

    >>> import os, tempfile
    >>> read_checkpoint_state(os.path.join(tempfile.mkdtemp(), "none.ckpt"))
    Traceback (most recent call last):
    stadyn._errors.ModelFileError: ...none.ckpt: not a readable checkpoint (...)
    """
    f = read_tensor_file(filename, format=_FORMAT, what="checkpoint", metadata_only=True)
    try:
        return f.field("external_state", dict)
    except StadynError as exc:
        raise ModelFileError(f"{f.where}: not a readable checkpoint ({exc})") from None


_BLOCK = "block_momentum/"


def _checked_block(trainer, tensors: Mapping[str, torch.Tensor]):
    """The setter of a block momentum hook's block kept in the checkpoint (checked against
    the parameters now by the hook), or None: no such hook (the block kept is not read, as
    cntk.exe reads ``BMACKP`` only with BlockMomentumSGD), or none kept (the next block
    starts afresh)."""
    hook = trainer.data_parallel
    restore = getattr(hook, "restore_checkpoint_tensors", None)
    kept = {key[len(_BLOCK):]: t for key, t in tensors.items() if key.startswith(_BLOCK)}
    if restore is None or not kept:
        return None
    try:
        hook.check_checkpoint_tensors(kept)
    except ValueError as exc:
        raise StadynError(str(exc)) from None
    return lambda: restore(kept)


def _count(counters: Mapping, key: str) -> int:
    value = counters.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise StadynError(f"the trainer's '{key}' must be an integer >= 0, got {value!r}")
    return value


def _checked_restore(trainer, f: TensorFile):
    """Check every part of the checkpoint against ``trainer``; returns the function that then
    restores it (which cannot fail on what was checked)."""
    tensors = f.tensors
    learner_meta = f.field("learners", list)
    counters = f.field("trainer", dict)
    external = f.field("external_state", dict)
    rng = f.field("rng", dict, optional=True)
    samples, minibatches = (_count(counters, "total_number_of_samples_seen"),
                            _count(counters, "minibatches_seen"))
    params = trainer._named_parameters()
    saved = _saved_names(params, tensors, f.field("parameters", list, optional=True))
    for name, var in params.items():
        t = tensors[f"param/{saved[name]}"]
        if tuple(t.shape) != var.shape:
            raise StadynError(f"parameter '{name}' has shape {tuple(t.shape)}, the model "
                              f"{var.shape}")
    renamed = {old: new for new, old in saved.items() if old != new}
    learners = trainer.parameter_learners
    if len(learner_meta) != len(learners):
        raise StadynError(f"the checkpoint holds {len(learner_meta)} learner states, the "
                          f"trainer has {len(learners)} learners")
    states = []
    for k, learner in enumerate(learners):
        prefix = f"learner{k}/"
        if not isinstance(learner_meta[k], dict):
            raise StadynError(f"learner {k}'s state is not a mapping")
        flat = dict(learner_meta[k])
        flat.update({_renamed(key[len(prefix):], renamed): t for key, t in tensors.items()
                     if key.startswith(prefix)})
        state = _unflatten_state(flat)
        check = getattr(learner, "check_state_dict", None)
        if check is not None:
            try:
                check(state)
            except StadynError as exc:
                raise StadynError(f"learner {k}: {exc}") from exc
        states.append(state)
    setters = [] if rng is None else _checked_random_state(rng, tensors)
    block = _checked_block(trainer, tensors)
    if block is not None:
        setters.append(block)

    def restore() -> dict:
        with torch.no_grad():
            for name, var in params.items():
                data_of(var).copy_(tensors[f"param/{saved[name]}"])
        for learner, state in zip(learners, states):
            learner.load_state_dict(state)
        trainer.total_number_of_samples_seen = samples
        trainer.minibatches_seen = minibatches
        for setter in setters:
            setter()
        return external
    return restore


# a repeated layer name's counter (dense_20), and a constant's generated one (compat.cntk's
# Constant and the constants its layers make are constant<N>, or constant<N>/<name>)
_COUNTER = re.compile(r"_\d+(?=/|$)|(?:^|(?<=/))(constant)\d+(?=/|$)")


def _generic(name: str) -> str:
    """A parameter name without the counters Stadyn adds to repeated layer names and to
    constants (``dense_20/W`` -> ``dense/W``, ``recurrence_1/constant7`` ->
    ``recurrence/constant``)."""
    return _COUNTER.sub(lambda m: m.group(1) or "", name)


def _saved_names(params: Mapping[str, Any], tensors: Mapping[str, torch.Tensor],
                 order: list | None) -> dict[str, str]:
    """For each of the trainer's parameter names, the name it is stored under: the same name
    when the checkpoint holds them all, else the parameter at the same position (the network
    built again: new generated names), which must have the same shape and the same name but for
    the generated counters."""
    names = list(params)
    if all(f"param/{n}" in tensors for n in names):
        return {n: n for n in names}
    missing = next(n for n in names if f"param/{n}" not in tensors)
    if order is None or not all(isinstance(n, str) for n in order):
        raise StadynError(f"the checkpoint has no parameter '{missing}' (it records no "
                          "parameter order to match a rebuilt network by position)")
    if missing in order:            # the name is the checkpoint's own: the file is damaged
        raise StadynError(f"the checkpoint has no parameter '{missing}' (its list of "
                          "parameters names it)")
    if len(order) != len(names):
        raise StadynError(f"the checkpoint has no parameter '{missing}', and it holds "
                          f"{len(order)} parameters where the model has {len(names)}, so they "
                          "cannot be matched by position")
    for k, (new, old) in enumerate(zip(names, order)):
        t = tensors.get(f"param/{old}")
        if t is None:
            raise StadynError(f"the checkpoint has no parameter '{old}' (its list of "
                              "parameters names it)")
        shape, want = tuple(t.shape), tuple(params[new].shape)
        if _generic(new) != _generic(old) or shape != want:
            raise StadynError(
                f"the checkpoint has no parameter '{missing}', and matching by position fails "
                f"at parameter {k}: the checkpoint's '{old}' {shape}, the model's '{new}' "
                f"{want} (only names that differ in generated counters, with equal shapes, "
                "are matched)")
    return dict(zip(names, order))


def _renamed(key: str, renamed: Mapping[str, str]) -> str:
    """A learner state key (``tensors::<parameter>/<state>``) under the parameter's new name."""
    head, sep, rest = key.partition(_SEP)
    if head != "tensors" or not sep or "/" not in rest:
        return key
    name, state = rest.rsplit("/", 1)
    return f"{head}{sep}{renamed.get(name, name)}/{state}" if name in renamed else key


def _flatten_state(state: Mapping, prefix: str = "") -> Iterable[tuple[str, Any]]:
    for key, value in state.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from _flatten_state(value, path + _SEP)
        else:
            yield path, value


def _unflatten_state(flat: Mapping[str, Any]) -> dict:
    root: dict = {}
    for key, value in flat.items():
        node = root
        parts = key.split(_SEP)
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise StadynError(f"the learner state key '{key}' clashes with a value")
        node[parts[-1]] = value
    return root
