"""The checks of a config's commands that run before the command does: a train command's
required blocks, SGD keys and what a data-parallel job (``stadyn train --nproc``) cannot read
yet; an edit command's variant; command-line overrides nothing reads (a warning).

Example:
    >>> from stadyn.brainscript._command_checks import check_train
    >>> callable(check_train)
    True
"""

from __future__ import annotations

import warnings
from typing import Callable

from .._errors import ConfigError
from ._blocks import CommandConfig, RunConfig, sgd_block
from ._mel_read import is_mel_edit, read_mel
from ._command_network import record_loc
from ._config import ConfigRecord, unused_overrides
from ._readers import LM_DATA_PARALLEL, utterance_mode
from ._sgd import check_sgd_keys, parallel_train

__all__ = ["ACTIONS", "check_train", "check_edit", "warn_unused_overrides"]

#: the cntk.exe actions ``stadyn train`` runs (any other is refused, naming the config line)
ACTIONS = ("train", "test", "eval", "write", "edit", "cv")


def check_train(cmd: CommandConfig, workers: int, log: Callable[[str], None]) -> None:
    """A ``train`` command Stadyn can run in a job of ``workers`` processes: the blocks it
    needs, the ``SGD`` block's keys, and no utterance-mode HTKMLFReader or LM reader split
    among data-parallel workers; ``log`` gets the note of a data-parallel SGD block."""
    rec = cmd.record
    where = record_loc(rec, "action")
    for key, value in (("BrainScriptNetworkBuilder", cmd.network), ("SGD", cmd.sgd),
                       ("reader", cmd.reader), ("modelPath", cmd.model_path)):
        if value is None:
            raise ConfigError(f"command '{cmd.name}' (action train) needs '{key}'", *where)
    sgd, sgd_rec = cmd.sgd, sgd_block(rec)
    check_sgd_keys(sgd, sgd_rec)   # sgd_config checked the ranges (maxEpochs >= 1, ...)
    note = parallel_train(sgd, sgd_rec, workers)
    if note is not None:
        log(note)
    if workers > 1 and utterance_mode(cmd.reader):
        # cntk.exe splits an utterance-mode HTKMLFReader's utterances among the workers
        # (HTKMLFReader::StartDistributedMinibatchLoop: subsetNum of numSubsets, each
        # nbruttsineachrecurrentiter / numSubsets sequences a minibatch); Stadyn's does not
        reader_rec = rec.get_record("reader", inherited=True)
        key = next((k for k in reader_rec if k.lower() == "framemode"), "readerType")
        raise ConfigError("an HTKMLFReader with frameMode = false (whole utterances) cannot "
                          "be read by the workers of a data-parallel job (stadyn train "
                          "--nproc) yet: train it in one process, or use frameMode = true",
                          *record_loc(reader_rec, key))
    if workers > 1 and cmd.reader.extra.get("lmParallel") is not None:
        reader_rec = rec.get_record("reader", inherited=True)
        key = next((k for k in reader_rec if k.lower() == "nbruttsineachrecurrentiter"),
                   "readerType")
        raise ConfigError(LM_DATA_PARALLEL, *record_loc(reader_rec, key))


def check_edit(cmd: CommandConfig) -> None:
    """An ``edit`` command Stadyn can run: CNTK's BrainScript variant (``BrainScriptNetworkBuilder``
    and ``outputModelPath``), or the MEL variant (``editPath``: a script whose commands Stadyn
    runs, read here so that a mistake in it stops the run before any command)."""
    rec = cmd.record
    if is_mel_edit(cmd):
        read_mel(str(rec.get_str("editPath")), rec)
        return
    if cmd.network is None:
        raise ConfigError(f"command '{cmd.name}' (action edit) needs BrainScriptNetworkBuilder "
                          "and outputModelPath (CNTK's BrainScript variant) or editPath (a MEL "
                          "script)", *record_loc(rec, "action"))
    if "outputModelPath" not in rec:
        raise ConfigError(f"command '{cmd.name}' (action edit) needs 'outputModelPath'",
                          *record_loc(rec, "action"))


def warn_unused_overrides(root: ConfigRecord, config: RunConfig) -> None:
    """Warn, before anything runs, about each command-line override nothing reads (``maxEpochs=1``
    at the top level, where CNTK's configs read ``Train.SGD.maxEpochs``)."""
    for cmd in config.commands:   # the settings a train command reads only when it starts
        if cmd.action == "train":
            cmd.record.get_bool("makeMode", True, inherited=True)
            cmd.record.get_int("randomSeedOffset", 0, inherited=True)
    for item, read_as in unused_overrides(root):
        hint = f"; it reads {' and '.join(read_as)}" if read_as else ""
        warnings.warn(f"override {item} is not used by any command of the config{hint}",
                      UserWarning, stacklevel=3)
