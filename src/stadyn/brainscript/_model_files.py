"""CNTK's model files of a training run (make mode): their names (``modelPath.<n>`` after epoch
``n - 1``, ``modelPath`` after the last), which epoch a restart continues after, whether they can
be written at all (checked before training starts), and writing and reading them: a Stadyn model
file beside the Trainer's checkpoint ``<model>.ckp`` after each epoch, and resuming from both."""

from __future__ import annotations

import errno
import json
import os
import re
import tempfile
from collections.abc import Callable, Collection, Iterable, Mapping

import numpy as np

from .._errors import ConfigError, ModelFileError
from ..graph import Variable, no_grad, topological_nodes
from ..parametric import ParameterRegistry, current_registry
from ..serialize import is_model_file, load, load_parameters, save, save_parameters
from ..train import feed, read_checkpoint_state
from ._older_model_names import match_parameters, renamed, renamed_untagged

__all__ = ["multiplier_tags", "tagged_multipliers", "without_multipliers", "operation_tag",
           "tagged_operation", "model_name", "start_epoch", "check_writable", "save_model",
           "load_model_parameters", "save_epoch", "resume", "roll_back", "epoch_model",
           "inputs_tag", "tagged_inputs", "NAMES_VERSION"]

_INPUTS = "inputs:"
_NAMES = "names:"
#: the version of the names a model file gives BrainScript's parameters and constants, saved
#: as its first output's tag ``names:<version>``.  2: several at one path are ordered by
#: cntk.exe's walk of its own nodes (a2b35f54); a file without the tag was written before and
#: is read through the names it gave them then (``untagged_names`` of
#: :func:`load_model_parameters`).
NAMES_VERSION = 2
_MULTIPLIER = "learningRateMultiplier:"
_OPERATION = "operation:"


def operation_tag(operation: str) -> str:
    """The model-file tag that keeps a node's CNTK operation (``SquareError``; cntk.exe's file
    keeps each node's operation name), which a network loaded from the file logs.

    >>> operation_tag("SquareError"), tagged_operation(["criterion", "operation:SquareError"])
    ('operation:SquareError', 'SquareError')
    """
    return _OPERATION + operation


def tagged_operation(tags: Iterable[str]) -> str | None:
    """The operation a node's tags name (:func:`operation_tag`), or None."""
    return next((t[len(_OPERATION):] for t in tags if t.startswith(_OPERATION)), None)


def multiplier_tags(tags: dict[str, list[str]], outputs: Iterable[str],
                    multipliers: Mapping[str, float]) -> None:
    """Add to ``tags`` the ``learningRateMultiplier`` of each parameter in ``multipliers``
    (parameter name -> a multiplier other than 0 and 1, which cntk.exe's model file keeps with
    the parameter: ``LearnableParameter::Save``), on the first of ``outputs`` (a model file tags
    only its inputs and outputs); :func:`tagged_multipliers` reads them back.

    >>> tags = {}
    >>> multiplier_tags(tags, ["z"], {"W": 0.5})
    >>> tags, tagged_multipliers(tags)
    ({'z': ['learningRateMultiplier:W:0.5']}, {'W': 0.5})
    """
    holder = next(iter(outputs), None)
    if holder is None or not multipliers:
        return
    tags.setdefault(holder, []).extend(f"{_MULTIPLIER}{name}:{float(m)!r}"
                                       for name, m in multipliers.items())


def tagged_multipliers(tags: Mapping[str, Iterable[str]]) -> dict[str, float]:
    """The parameters' ``learningRateMultiplier`` a model file's tags hold
    (:func:`multiplier_tags`), by parameter name."""
    found = {}
    for tag in (t for items in tags.values() for t in items):
        if tag.startswith(_MULTIPLIER):
            name, _, value = tag[len(_MULTIPLIER):].rpartition(":")
            found[name] = float(value)
    return found


def without_multipliers(tags: Mapping[str, Iterable[str]]) -> dict[str, list[str]]:
    """``tags`` less the ``learningRateMultiplier`` ones (:func:`multiplier_tags`), and less
    a node left with none."""
    kept = {name: [t for t in items if not t.startswith(_MULTIPLIER)]
            for name, items in tags.items()}
    return {name: items for name, items in kept.items() if items}


def inputs_tag(names: Iterable[str]) -> str:
    """The model-file tag that lists a node's inputs in cntk.exe's order, by name (what MEL's
    ``SetInput (node, k, x)`` counts ``k`` in).

    >>> inputs_tag(["CE.BFF.W", "L1.S"])
    'inputs:["CE.BFF.W", "L1.S"]'
    >>> tagged_inputs(["criterion", inputs_tag(["W", "x"])])
    ['W', 'x']
    """
    return _INPUTS + json.dumps(list(names))


def tagged_inputs(tags: Iterable[str]) -> list[str] | None:
    """A node's inputs in cntk.exe's order from its model-file tags (:func:`inputs_tag`), or
    None where the file does not say (a network not built from NDL or MEL)."""
    for tag in tags:
        if tag.startswith(_INPUTS):
            return list(json.loads(tag[len(_INPUTS):]))
    return None


def model_name(model_path: str, epoch: int, max_epochs: int) -> str:
    """CNTK's model file after 0-based ``epoch``: ``modelPath`` after the last epoch, else
    ``modelPath.<epoch + 1>`` (so the untrained model is ``modelPath.0``).

    >>> model_name("m/net", 0, 3), model_name("m/net", 2, 3), model_name("m/net", -1, 3)
    ('m/net.1', 'm/net', 'm/net.0')
    """
    if epoch + 1 == max_epochs:
        return model_path
    return f"{model_path}.{epoch + 1}"


def _up_to_date(target: str, source: str) -> bool:
    """CNTK's ``fuptodate(target, input, inputRequired=false)``."""
    if not os.path.exists(target):
        return False
    if not os.path.exists(source):
        return True
    return os.path.getmtime(target) >= os.path.getmtime(source)


def _checkpoint_state(path: str) -> dict | None:
    """The runner's state stored in a checkpoint, or None if there is none.  A damaged one is a
    :class:`ModelFileError` naming it: it is never taken for a missing one."""
    if not os.path.exists(path):
        return None
    return read_checkpoint_state(path)


def start_epoch(model_path: str, max_epochs: int, make_mode: bool,
                log: Callable[[str], None]) -> tuple[int, str | None]:
    """(0-based epoch to start at, model file to load) — CNTK's ``DetermineStartEpoch``.

    The latest model file that is up to date with the one before it decides; none means a fresh
    start (-1 as in CNTK, returned as 0 with no file).  Only ``modelPath.0`` (the untrained
    model, written after the pre-compute pass: a run stopped in its first epoch) starts epoch 0
    from it, as CNTK (its pre-computed values are not computed again).  Stadyn extension: when
    the final model exists but its checkpoint says it finished fewer than ``max_epochs`` epochs
    (``maxEpochs`` was raised since), training continues from it instead of stopping.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "net")
    >>> start_epoch(path, 10 ** 23, True, print)        # nothing saved yet: a fresh start
    (0, None)
    >>> open(path + ".0", "w").close()
    >>> start_epoch(path, 10 ** 23, True, print)        # epoch 1 from the untrained model
    (0, '...net.0')
    >>> open(path + ".1", "w").close()
    >>> start_epoch(path, 10 ** 23, True, print)        # continues after epoch 1
    (1, '...net.1')
    """
    if not make_mode:
        return 0, None
    first = -1
    # CNTK walks every epoch from the last one down; only epochs whose model file exists can
    # stop the walk, so those are found in the folder (a maxEpochs of 1e23 costs nothing).
    for e in _saved_epochs(model_path, max_epochs):
        if _up_to_date(model_name(model_path, e, max_epochs),
                       model_name(model_path, e - 1, max_epochs)):
            first = e + 1
            break
    if first == max_epochs:
        state = _checkpoint_state(model_path + ".ckp") or {}
        finished = state.get("epochs_finished")
        if isinstance(finished, int) and 0 < finished < max_epochs:
            return finished, model_path
        log(f"Final model exists: {model_path}")
        return max_epochs, None
    if first < 0:
        return 0, None
    return first, model_name(model_path, first - 1, max_epochs)


def check_writable(path: str, what: str, where: tuple) -> None:
    """A :class:`ConfigError` at ``where`` unless a file can be written at ``path``: the nearest
    existing folder above it must be a folder that takes a new file (tried with a probe file,
    removed at once: permissions, a read-only disk and a full one all show).  Nothing is left
    behind; folders still missing are made when the file is first written.

    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> check_writable(os.path.join(folder, "Models", "net"), "model file", ())
    >>> open(os.path.join(folder, "a_file"), "w").close()
    >>> check_writable(os.path.join(folder, "a_file", "net"), "model file",
    ...                ("run.cntk", 3, 1))  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    stadyn._errors.ConfigError: run.cntk:3:1: cannot write the model file '...': '...a_file' is
    a file, not a folder
    """
    target = os.path.abspath(path)
    try:
        if os.path.isdir(target):
            raise IsADirectoryError(errno.EISDIR, "it is a folder")
        folder = os.path.dirname(target)
        while not os.path.lexists(folder):
            folder = os.path.dirname(folder)
        if not os.path.isdir(folder):
            raise NotADirectoryError(errno.ENOTDIR, f"'{folder}' is a file, not a folder")
        fd, probe = tempfile.mkstemp(prefix=".stadyn-probe-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ConfigError(f"cannot write the {what} '{path}': {exc.strerror or exc}",
                          *where) from None


def _saved_epochs(model_path: str, max_epochs: int) -> list[int]:
    """The 0-based epochs in ``-1 .. max_epochs - 1`` whose model file exists, last first."""
    folder = os.path.dirname(os.path.abspath(model_path))
    base = os.path.basename(model_path)
    epochs = [max_epochs - 1] if os.path.exists(model_path) else []
    try:
        names = os.listdir(folder)
    except OSError:
        names = []
    for name in names:
        suffix = name[len(base) + 1:] if name.startswith(base + ".") else ""
        if suffix.isascii() and suffix.isdigit() and suffix == str(int(suffix)) \
                and int(suffix) < max_epochs:
            epochs.append(int(suffix) - 1)       # modelPath.<n> is saved after epoch n - 1
    return sorted(set(epochs), reverse=True)


def save_model(path: str, outputs: dict[str, Variable], inputs: dict[str, Variable],
               tags: dict[str, list[str]] | None = None) -> None:
    """Write the model file: a Stadyn model file (:func:`stadyn.save`: the graph of every named
    node, its inputs and the parameters, and ``tags``, the criterion, evaluation and output
    nodes by name, for ``BS.Network.Load``, and :data:`NAMES_VERSION` on the first output;
    recurrent networks too).  A graph that model files
    cannot hold (a node declared ``unstorable``) is written as a parameter file;
    ``test``/``eval`` rebuild the network from the config either way."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    if any(node.spec.unstorable for node in topological_nodes(list(outputs.values()))):
        save_parameters(path + ".tmp.safetensors")
        os.replace(path + ".tmp.safetensors", path)
        return
    for v in inputs.values():  # the graph was built for a batch of 1; the trainer resized inputs
        if v.shape[0] != 1:
            feed(v, np.zeros((1,) + tuple(v.shape[1:]), dtype=np.float32))
    tags = {k: [t for t in items if not t.startswith(_NAMES)] for k, items in (tags or {}).items()}
    holder = next(iter(outputs), None)
    if holder is not None:
        tags.setdefault(holder, []).append(f"{_NAMES}{NAMES_VERSION}")
    save(path, outputs, inputs, tags=tags)


def load_model_parameters(path: str, required: Iterable[Variable] | None = None,
                          aliases: Mapping[str, str | tuple[str, ...]] | None = None,
                          reshaped: Collection[str] = (),
                          untagged_names: Mapping[str, str] | None = None) -> dict[str, bool]:
    """Load the parameters of a model file (or of a parameter file) into the current registry,
    each into the parameter of the same name (a BrainScript parameter's name is its node's,
    ``model.arrayOfFunctions[1].W``, so the order the network makes them in does not matter).
    A damaged model file gets the model loader's own error
    (:func:`~stadyn.serialize.is_model_file`); nothing is assigned unless every parameter
    fits (:func:`._older_model_names.match_parameters`) and every parameter of the network
    has its value in the file (cntk.exe reads the whole network from the file; a parameter
    left as made would be evaluated or trained on silently): of ``required`` (those the
    network computes with: a declared parameter nothing uses is not saved), else of every
    trained one.

    ``aliases`` (name -> older name, or a tuple of them, the first the file holds taken) read
    a file an older Stadyn wrote (a pre-computed value saved as ``mean/value`` or ``z.mean``,
    an NDL node made inside an argument numbered otherwise: CommandNetwork's
    ``precompute_aliases``): a file that holds all the network's names is read by name, any
    other through all the aliases at once, one renaming of its names
    (:func:`._older_model_names.renamed`).  ``reshaped`` names the weights NDL's ``Times``
    rule gave their input's dimensions (``Network.reshaped_weights``): only those may be read
    from a flat ``[m x n]`` value, the shape an older Stadyn saved them in
    (:func:`._older_model_names.flat_times_weight`).  ``untagged_names`` (name -> the name it
    had then: ``StadynLibrary.untagged_file_names``) renames, all at once, the values of a
    model file written before its names were tagged (:data:`NAMES_VERSION`), where parameters
    and constants at one path were ordered otherwise; a tagged file, and a parameter file
    (which holds no tags), is read by its names.

    Returns the ``hasComputed`` flags the file saved with its pre-computed values (parameter
    name -> flag; ``hasComputed:<name>:true`` tags): none from a parameter file or a model file
    written before the flags were saved."""
    found = ParameterRegistry()
    flags: dict[str, bool] = {}
    untagged = False    # (a parameter file, of a graph model files cannot hold, has no tags)
    if is_model_file(path):
        tags = getattr(load(path, registry=found), "tags", None) or {}
        untagged = True
        for tag in (t for items in tags.values() for t in items):
            kind, _, rest = tag.partition(":")
            name, _, value = rest.rpartition(":")
            if kind == "hasComputed" and value in ("true", "false"):
                flags[name] = value == "true"
            elif tag.startswith(_NAMES):
                untagged = False
    else:
        load_parameters(path, registry=found)
    registry = current_registry()
    wanted = None if required is None else {id(v) for v in required}
    needed = [name for name, have in registry.items()
              if have.need_grad and not _FROM_ELSEWHERE.match(name)
              and (wanted is None or id(have) in wanted)]
    values = dict(found.items())
    if untagged and untagged_names:
        values = renamed_untagged(values, flags, untagged_names)
    values = renamed(values, flags, aliases or {}, needed)
    pairs = match_parameters(path, values, dict(registry.items()), reshaped)
    matched = {id(have) for have, _ in pairs}
    missing = [name for name in needed if id(registry.get(name)) not in matched]
    # (a Constant keeps its description's value; a pre-computed value not in the file stays
    # not-a-number, which check_computed reports)
    if missing:         # it would run with those parameters as made, silently
        shown = ", ".join(missing[:6]) + (", ..." if len(missing) > 6 else "")
        raise ModelFileError(
            f"{path}: holds no value for {len(missing)} of the network's "
            f"{len(registry)} parameters ({shown}): it was written for another network "
            "(another description, or an older Stadyn's names); "
            "train the model again")
    with no_grad():
        for have, value in pairs:
            have.d = value.d
    taken = {id(value) for _, value in pairs}
    for name, value in values.items():     # the file's others are added, as a load does
        if id(value) not in taken and name not in registry:
            registry.set(name, value)
    return flags


# the scope of parameters whose values a network took from elsewhere: CloneFunction's copies
# (``clone_1/...``; BS.Network.Load's keep their file's names, so a model file holds them)
_FROM_ELSEWHERE = re.compile(r"clone(_[0-9]+)?/")
def save_epoch(log: Callable[[str], None], model_path: str, epoch: int, max_epochs: int, trainer,
               source, model: tuple[dict, dict], keep: bool, trace_level: int,
               extra: dict | None = None, drop: tuple[int, ...] | None = None) -> None:
    """After 0-based ``epoch``: the checkpoint ``<model>.ckp`` (the Trainer's, with the epochs
    finished, the reader's position and ``extra``), then the model file.  Unless ``keep``
    (``keepCheckPointFiles``) the checkpoints of the epochs in ``drop`` are removed (default:
    the previous epoch's; AutoAdjust's rollback keeps the ones it may need)."""
    name = model_name(model_path, epoch, max_epochs)
    os.makedirs(os.path.dirname(os.path.abspath(name)), exist_ok=True)
    state = {"epochs_finished": epoch + 1, "max_epochs": max_epochs,
             "reader": source.get_checkpoint_state(), **(extra or {})}
    trainer.save_checkpoint(name + ".ckp", external_state=state)
    if trace_level > 0:
        log(f"SGD: Saving checkpoint model '{name}'")
    save_model(name, *model)
    if keep:
        return
    for e in (epoch - 1,) if drop is None else drop:
        previous = model_name(model_path, e, max_epochs) + ".ckp"
        if e >= 0 and previous != name + ".ckp" and os.path.exists(previous):
            os.remove(previous)


def _read_parameters(model_file: str, what: str, trainer,
                     aliases: Mapping[str, str | tuple[str, ...]] | None = None,
                     reshaped: Collection[str] = (),
                     untagged_names: Mapping[str, str] | None = None) -> dict[str, bool]:
    """:func:`load_model_parameters` (of the parameters ``trainer`` trains), a damaged file a
    ConfigError: cannot ``what`` it."""
    try:
        return load_model_parameters(model_file, trainer.parameters, aliases, reshaped,
                                     untagged_names)
    except ModelFileError as exc:
        raise ConfigError(f"cannot {what} '{model_file}': {exc}") from None


def _restore(model_file: str, trainer, source, what: str,
             aliases: Mapping[str, str | tuple[str, ...]] | None = None,
             reshaped: Collection[str] = (),
             untagged_names: Mapping[str, str] | None = None) -> tuple[dict, dict[str, bool]]:
    """The parameters of ``model_file``, then the trainer and the reader from its checkpoint;
    the checkpoint's external state and the file's ``hasComputed`` flags."""
    flags = _read_parameters(model_file, what, trainer, aliases, reshaped, untagged_names)
    ckp = model_file + ".ckp"
    state = trainer.restore_from_checkpoint(ckp)
    readers, rank = state.get("readers"), getattr(trainer.data_parallel, "rank", 0)
    size = getattr(trainer.data_parallel, "size", 1)
    try:
        if isinstance(readers, list) and len(readers) == size > 1:
            source.restore_from_checkpoint(readers[rank])     # (this worker's own position)
        else:
            source.restore_from_checkpoint(state["reader"])
    except (KeyError, ValueError) as exc:
        raise ConfigError(f"'{ckp}' does not fit this reader ({exc}); delete it to "
                          "start the reader afresh") from None
    return state, flags


def epoch_model(model_path: str, epoch: int, max_epochs: int) -> str:
    """The model file of 0-based ``epoch`` in this run: :func:`model_name`, or ``modelPath``
    itself when that is the final model of a run whose ``maxEpochs`` was raised since (its
    checkpoint finished ``epoch + 1`` epochs; :func:`start_epoch` continues from it)."""
    name = model_name(model_path, epoch, max_epochs)
    if not os.path.exists(name + ".ckp") and os.path.exists(model_path + ".ckp"):
        state = _checkpoint_state(model_path + ".ckp") or {}
        if state.get("epochs_finished") == epoch + 1:
            return model_path
    return name


def roll_back(model_path: str, target: int, max_epochs: int, trainer, source,
              removed: tuple[int, ...], extra: dict | None, write: bool) -> None:
    """AutoAdjust's rollback (CNTK's ``loadBestModel``): the model and the checkpoint of 0-based
    epoch ``target`` (parameters, learner state, counters, the reader's position, so the next
    epoch reads the data the failed one read); with ``write`` (the job's main process) the
    model and checkpoint files of the epochs in ``removed`` are deleted and the target's
    checkpoint is written again with ``extra`` (the new learning rate)."""
    name = epoch_model(model_path, target, max_epochs)
    if not os.path.exists(name + ".ckp"):
        raise ConfigError(f"AutoAdjust: cannot roll back to '{name}': its checkpoint "
                          f"'{name}.ckp' is missing")
    state, _ = _restore(name, trainer, source, "roll back to")
    if not write:
        return
    for e in removed:
        for path in (model_name(model_path, e, max_epochs),
                     model_name(model_path, e, max_epochs) + ".ckp"):
            if os.path.exists(path):
                os.remove(path)
    if extra is not None:
        trainer.save_checkpoint(name + ".ckp", external_state={**state, **extra})


def resume(log: Callable[[str], None], model_file: str, trainer, learners, source, start: int,
           epoch_size: Callable[[], int], per_sweep: bool = False,
           aliases: Mapping[str, str | tuple[str, ...]] | None = None,
           reshaped: Collection[str] = (),
           untagged_names: Mapping[str, str] | None = None
           ) -> tuple[dict | None, dict[str, bool]]:
    """Continue from ``model_file`` (CNTK's restart): its parameters, then its checkpoint (the
    learners' state, counters, the reader's position), whose external state is returned with
    the file's ``hasComputed`` flags (:func:`load_model_parameters`);
    without a checkpoint (``None``) the learners start afresh at the samples of ``start``
    epochs of ``epoch_size()`` samples, as CNTK warned (and, ``per_sweep``: an epoch is one
    sweep, after ``start`` sweeps).  At ``start`` 0 (``modelPath.0``, which has no checkpoint)
    only the parameters are read: everything else starts afresh, and CNTK warned nothing.
    ``aliases``, ``reshaped``, ``untagged_names``: :func:`load_model_parameters`'s."""
    if start > 0 and os.path.exists(model_file + ".ckp"):
        return _restore(model_file, trainer, source, "continue from", aliases, reshaped,
                        untagged_names)
    flags = _read_parameters(model_file, "continue from", trainer, aliases, reshaped,
                             untagged_names)
    if start == 0:
        return None, flags
    log("Warning: Checkpoint file is missing. Parameter-learning state (such as "
        "momentum) will be reset.")
    epoch_size = epoch_size()
    position = source.get_checkpoint_state()
    position.update(position=start * epoch_size, samples=start * epoch_size)
    source.restore_from_checkpoint(position)
    for learner in learners:
        learner.samples_seen = start * epoch_size
        learner.sweeps_seen = start if per_sweep else 0    # (a schedule per sweep: by epochs)
    trainer.total_number_of_samples_seen = start * epoch_size
    return None, flags
