"""The well-known blocks of a ``.cntk`` file as plain dataclasses the engine consumes.

:func:`run_config` reads the top level (``command``, ``modelPath``, ``deviceId``, ...) and, for
each command, its ``action``, ``BrainScriptNetworkBuilder`` source, ``SGD`` block and readers.
Values keep CNTK's units and conventions (per-sample vs per-minibatch rates, ``epochSize = 0``
as a full sweep, per-epoch vectors whose last value repeats); mapping them to Stadyn's trainer
is the engine's job.  Keys this module does not know stay available in ``extra``.  The
``SGD`` block is read by :mod:`._sgd_block`, the readers by :mod:`._reader_blocks` (both
re-exported here), what the blocks share is in :mod:`._block_values`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from stadyn._errors import ConfigError

from ._block_values import _at_least_1, _check, _err, _extra, _non_negative, per_epoch
from ._config import BrainScriptSource, ConfigRecord, ConfigString, to_int
from ._ndl import NDLSource, ndl_source
from ._reader_blocks import (DeserializerConfig, ReaderConfig, StreamConfig, TransformConfig,
                             reader_config, written_reader)
from ._sgd_block import SGDConfig, sgd_config
from ._simple_network import simple_network_source

__all__ = [
    "SGDConfig", "TransformConfig", "StreamConfig", "DeserializerConfig", "ReaderConfig",
    "CommandConfig", "RunConfig", "sgd_config", "reader_config", "command_config", "run_config",
    "command_names", "per_epoch", "network_of_block", "sgd_block",
]


@dataclass(frozen=True)
class CommandConfig:
    """One block named by ``command``, with its ``action`` (lower case: ``train``, ``test``,
    ``eval``, ``write``, ...).  Settings CNTK inherits from enclosing blocks (``modelPath``,
    ``deviceId``, ``precision``, ``traceLevel``, ``minibatchSize``, and Stadyn's
    ``checkNumerics``: :func:`stadyn.check_numerics` for training) are looked up outwards;
    ``extra`` holds the block's other keys."""

    name: str
    action: str
    record: ConfigRecord = field(compare=False, repr=False)
    network: BrainScriptSource | None = None
    sgd: SGDConfig | None = None
    reader: ReaderConfig | None = None
    cv_reader: ReaderConfig | None = None
    model_path: str | None = None
    minibatch_size: tuple[int, ...] | None = None
    epoch_size: int | None = None
    eval_node_names: tuple[str, ...] = ()
    output_node_names: tuple[str, ...] = ()
    output_path: str | None = None
    device_id: int | str = "auto"
    precision: str = "float"
    trace_level: int = 0
    check_numerics: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)


_COMMAND_KEYS = {"action", "brainscriptnetworkbuilder", "experimentalnetworkbuilder", "sgd",
                 "reader", "cvreader", "modelpath", "minibatchsize", "epochsize", "evalnodenames",
                 "outputnodenames", "outputpath", "deviceid", "precision", "tracelevel",
                 "checknumerics"}
_TOP_KEYS = {"command", "modelpath", "deviceid", "precision", "tracelevel", "stderr",
             "checknumerics"}


@dataclass(frozen=True)
class RunConfig:
    """A whole ``.cntk`` file: its commands in order and the top-level settings.

    ``extra`` holds the other top-level values (``rootDir``, ``dataDir``, ...), not the blocks.
    """

    commands: tuple[CommandConfig, ...]
    model_path: str | None = None
    device_id: int | str = "auto"
    precision: str = "float"
    trace_level: int = 0
    stderr: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    root: ConfigRecord | None = field(default=None, compare=False, repr=False)

    def command(self, name: str) -> CommandConfig:
        for c in self.commands:
            if c.name.lower() == name.lower():
                return c
        raise ConfigError(f"no command named '{name}'")


def command_names(root: ConfigRecord) -> list[ConfigString]:
    """The block names listed by ``command = A:B`` (in order).

    >>> from stadyn.brainscript import parse_config
    >>> command_names(parse_config("command = Train:Test"))
    ['Train', 'Test']
    """
    if "command" not in root:
        raise _err("the config has no 'command' (e.g. command = Train:Test)", root.loc)
    return [ConfigString(part.strip(), item.loc) for item in root.get_strs("command")
            for part in item.split(":") if part.strip()]


def _device_id(rec: ConfigRecord) -> int | str:
    value = rec.get_str("deviceId", "auto", inherited=True)
    if str(value).lower() == "auto":
        return "auto"
    try:
        return to_int(value)
    except ValueError:
        raise _err(f"deviceId must be 'auto' or a number (-1 = CPU), got '{value}'",
                   getattr(value, "loc", None)) from None


def _precision(rec: ConfigRecord) -> str:
    value = rec.get_str("precision", "float", inherited=True)
    if str(value).lower() not in ("float", "double"):
        raise _err(f"precision must be 'float' or 'double', got '{value}'",
                   getattr(value, "loc", None))
    return str(value).lower()


def _network(rec: ConfigRecord) -> Any:
    """The command's ``BrainScriptNetworkBuilder`` (or its old name), from the command's block
    or the nearest block around it, as CNTK's ``config.Exists`` looks outwards
    (NetworkFactory.cpp: ``createNetwork``, ``SimpleNetworkBuilder`` and
    ``NDLNetworkBuilder`` come first; G2P.cntk's ``train`` uses the top level's).  A
    ``SimpleNetworkBuilder`` gives its network's description (:mod:`._simple_network`), an
    ``NDLNetworkBuilder`` its :class:`._ndl.NDLSource`."""
    simple = rec.lookup("SimpleNetworkBuilder", None)
    if simple is not None:           # cntk.exe's standard networks (._simple_network)
        return simple_network_source(simple, rec.loc)
    if _found(rec, "NDLNetworkBuilder"):
        return ndl_source(rec)
    network = rec.lookup("BrainScriptNetworkBuilder", None)
    return network if network is not None else rec.lookup("ExperimentalNetworkBuilder", None)


def network_of_block(block: ConfigRecord) -> Any:
    """The network a command block builds itself (not looking outwards), in cntk.exe's order:
    its ``SimpleNetworkBuilder``, its ``NDLNetworkBuilder``, its ``BrainScriptNetworkBuilder``;
    None if it has none of them."""
    if "SimpleNetworkBuilder" in block:
        return simple_network_source(block["SimpleNetworkBuilder"], block.loc)
    if "NDLNetworkBuilder" in block:
        return ndl_source(block)
    return block.get("BrainScriptNetworkBuilder")


def _found(rec: ConfigRecord, key: str) -> bool:
    """Whether ``key`` is in ``rec`` or a block around it (its value is not read)."""
    block: ConfigRecord | None = rec
    while block is not None and key not in block:
        block = block.parent
    return block is not None


def command_config(root: ConfigRecord, name: str) -> CommandConfig:
    """Read the command block ``name`` of ``root``.

    >>> from stadyn.brainscript import parse_config
    >>> c = command_config(parse_config("deviceId = -1\\nT = { action = Test }"), "T")
    >>> c.action, c.device_id
    ('test', -1)
    >>> command_config(parse_config("T = { action = trainRNN }"), "T").action
    'train'
    """
    if name not in root:
        names = ", ".join(k for k in root if isinstance(root[k], ConfigRecord))
        loc = getattr(root.get("command"), "loc", root.loc)
        raise _err(f"command '{name}' names no block of the config (blocks: {names})", loc)
    rec = root.get_record(name)
    if "action" not in rec:
        raise _err(f"command block '{name}' has no 'action' (train, test or eval)", rec.loc)
    network = _network(rec)
    if network is not None and \
            not isinstance(network, (BrainScriptSource, NDLSource)):  # pragma: no cover
        raise _err(f"'{name}.BrainScriptNetworkBuilder' must be BrainScript", rec.loc)
    sgd_rec = sgd_block(rec)
    model_path = sgd_rec.get_str("modelPath", None) if sgd_rec is not None else None
    if model_path is None:
        model_path = rec.get_str("modelPath", None, inherited=True)
    mb = rec.get_ints("minibatchSize", None, inherited=True)
    epoch = rec.get_int("epochSize", None)
    _check(rec, "minibatchSize", _at_least_1, "be >= 1", convert=to_int, inherited=True)
    _check(rec, "epochSize", _non_negative, "be >= 0 (0: one sweep of the data)", convert=to_int)
    for key in ("numMBsToShowResult", "firstMBsToShowResult"):   # read by test/eval
        rec.get_int(key, None)   # not an integer: the getter's error
        _check(rec, key, _non_negative, "be >= 0", convert=to_int)
    output_path = rec.get_str("outputPath", None)
    action = str(rec.get_str("action")).lower()
    if action == "trainrnn":        # cntk.exe runs trainRNN as train (CNTK.cpp's DoCommands)
        action = "train"
    return CommandConfig(
        name=str(name),
        action=action,
        record=rec,
        network=network,
        # only training reads the SGD block's learning settings (cntk.exe's DoTrain builds its
        # SGD object; DoEval/DoWriteOutput read none of them, PTB's test=[SGD=[maxEpochs=3]])
        sgd=None if sgd_rec is None or action != "train" else sgd_config(sgd_rec),
        # cntk.exe's config(L"reader") / config(L"cvReader", L"") look in the enclosing blocks
        # too (ConfigParameters::TryFind, Config.h:992-1003): a top-level reader serves every
        # command without its own
        # (a write command reads its data in sequences, in file order: written_reader)
        reader=written_reader(_reader(rec, "reader")) if action == "write" else
        _reader(rec, "reader"),
        cv_reader=_reader(rec, "cvReader"),
        model_path=None if model_path is None else str(model_path),
        minibatch_size=None if mb is None else tuple(mb),
        epoch_size=epoch or None,
        eval_node_names=tuple(str(s) for s in rec.get_strs("evalNodeNames", [])),
        output_node_names=tuple(str(s) for s in rec.get_strs("outputNodeNames", [])),
        output_path=None if output_path is None else str(output_path),
        device_id=_device_id(rec),
        precision=_precision(rec),
        trace_level=rec.get_int("traceLevel", 0, inherited=True),
        check_numerics=bool(rec.get_bool("checkNumerics", False, inherited=True)),
        extra=_extra(rec, _COMMAND_KEYS, consumed=False),
    )


def sgd_block(rec: ConfigRecord) -> ConfigRecord | None:
    """A command's ``SGD`` block: its own, else an enclosing block's (cntk.exe's DoTrain reads
    ``config(L"SGD")``, which looks in the enclosing blocks too: TIMIT_TrainWithPreTrain's train
    commands share the top-level one).

    >>> from stadyn.brainscript import parse_config
    >>> root = parse_config("SGD = [ maxEpochs = 2 ]\\nT = [ action = train ]")
    >>> sgd_block(root.get_record("T")).get_int("maxEpochs")
    2
    """
    return rec.get_record("SGD", None, inherited=True)


def _reader(rec: ConfigRecord, key: str) -> ReaderConfig | None:
    block = rec.get_record(key, None, inherited=True)
    return None if block is None else reader_config(block)


def run_config(root: ConfigRecord) -> RunConfig:
    """Read ``command`` and every block it names, plus the top-level settings.

    >>> from stadyn.brainscript import parse_config
    >>> config = parse_config('command = T ; modelPath = "m.dnn"\\nT = { action = "test" }')
    >>> run = run_config(config)
    >>> [(c.name, c.action, c.model_path) for c in run.commands]
    [('T', 'test', 'm.dnn')]
    """
    commands = tuple(command_config(root, str(n)) for n in command_names(root))
    stderr = root.get_str("stderr", None)
    model_path = root.get_str("modelPath", None)
    return RunConfig(
        commands=commands,
        model_path=None if model_path is None else str(model_path),
        device_id=_device_id(root),
        precision=_precision(root),
        trace_level=root.get_int("traceLevel", 0),
        stderr=None if stderr is None else str(stderr),
        extra={k: v for k, v in _extra(root, _TOP_KEYS, consumed=False).items()
               if not isinstance(v, ConfigRecord)},
        root=root,
    )
