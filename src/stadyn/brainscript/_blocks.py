"""The well-known blocks of a ``.cntk`` file as plain dataclasses the engine consumes.

:func:`run_config` reads the top level (``command``, ``modelPath``, ``deviceId``, ...) and, for
each command, its ``action``, ``BrainScriptNetworkBuilder`` source, ``SGD`` block and readers.
Values keep CNTK's units and conventions (per-sample vs per-minibatch rates, ``epochSize = 0``
as a full sweep, per-epoch vectors whose last value repeats); mapping them to Stadyn's trainer
is the engine's job.  Keys this module does not know stay available in ``extra``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from stadyn._errors import ConfigError

from ._ast import SourceLocation
from ._config import BrainScriptSource, ConfigList, ConfigRecord, ConfigString, to_bool, to_float, to_int

__all__ = [
    "SGDConfig", "TransformConfig", "StreamConfig", "DeserializerConfig", "ReaderConfig",
    "CommandConfig", "RunConfig", "sgd_config", "reader_config", "command_config", "run_config",
    "command_names", "per_epoch",
]


def _err(message: str, loc: SourceLocation | None) -> ConfigError:
    if loc is None:
        return ConfigError(message)
    return ConfigError(message, loc.path, loc.line, loc.column)


def per_epoch(values: Sequence[Any], epoch: int) -> Any:
    """The value for 0-based ``epoch`` of a CNTK per-epoch vector (the last value repeats).

    >>> per_epoch([0.1, 0.1, 0.05], 0), per_epoch([0.1, 0.1, 0.05], 7)
    (0.1, 0.05)
    """
    return values[min(epoch, len(values) - 1)]


def _check(rec: ConfigRecord, key: str, ok: Callable[[float], bool], what: str, *,
           convert: Callable[[str], float] = to_float, finite: bool = False,
           inherited: bool = False) -> None:
    """Check each number of ``key`` (a scalar or a per-epoch vector such as ``64*2:0``) as it
    was written, and report the first that fails ``ok`` where it stands
    (``file:line:col: Train.SGD.minibatchSize must be >= 1, got 0``).  Run it after the typed
    getter, which reports values that are not numbers at all.

    >>> from stadyn.brainscript import parse_config
    >>> _check(parse_config("S = { m = 64*2:-1 }", "c.cntk")["S"], "m", _at_least_1, "be >= 1")
    Traceback (most recent call last):
    stadyn._errors.ConfigError: c.cntk:1:16: S.m must be >= 1, got -1
    """
    owner: ConfigRecord | None = rec
    while inherited and owner is not None and key not in owner:
        owner = owner.parent
    if owner is None or key not in owner:
        return
    value = owner[key]
    for item in value if isinstance(value, ConfigList) else [value]:
        for piece in str(item).split(":"):
            text = piece.partition("*")[0].strip()
            number = convert(text)
            if finite and not math.isfinite(number):
                problem = "be a finite number"
            elif not ok(number):
                problem = what
            else:
                continue
            loc = getattr(item, "loc", None) or owner.location(key)
            raise _err(f"{owner.key_path(key)} must {problem}, got {text}", loc)


def _at_least_1(x: float) -> bool:
    return x >= 1


def _non_negative(x: float) -> bool:
    return x >= 0


def _positive(x: float) -> bool:
    return x > 0


def _fraction(x: float) -> bool:
    return 0 <= x < 1


def _extra(rec: ConfigRecord, known: set[str], *, consumed: bool = True) -> dict[str, Any]:
    """The values of ``rec`` outside ``known``; ``consumed=False`` where nothing uses them
    (they do not count as read: an override of one is reported as unused)."""
    return {k: (rec[k] if consumed else rec.peek(k)) for k in rec if k.lower() not in known}


def _auto(v: Any) -> Any:
    """A config value with numbers and booleans converted (for transform parameters)."""
    if isinstance(v, ConfigList):
        return [_auto(x) for x in v]
    if isinstance(v, ConfigRecord):
        return {k: _auto(v[k]) for k in v}
    if isinstance(v, ConfigString) and not v.quoted:
        for convert in (to_int, to_float):
            try:
                return convert(v)
            except ValueError:
                pass
        if v.lower() in ("true", "false"):
            return v.lower() == "true"
    return str(v) if isinstance(v, str) else v


# ---------------------------------------------------------------------------------------------
# SGD
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SGDConfig:
    """A CNTK ``SGD`` block.  Vectors are per epoch and their last value repeats.

    ``epoch_size`` is ``None`` for ``epochSize = 0`` (one full sweep of the data).  Exactly one
    of the learning-rate vectors is set; at most one of the momentum vectors (none means CNTK's
    default, ``momentumPerMB = 0.9``).
    """

    max_epochs: int
    epoch_size: int | None = None
    minibatch_size: tuple[int, ...] = (256,)
    learning_rates_per_sample: tuple[float, ...] | None = None
    learning_rates_per_mb: tuple[float, ...] | None = None
    momentum_as_time_constant: tuple[float, ...] | None = None
    momentum_per_mb: tuple[float, ...] | None = None
    momentum_per_sample: tuple[float, ...] | None = None
    l2_reg_weight: float = 0.0
    l1_reg_weight: float = 0.0
    dropout_rate: tuple[float, ...] = (0.0,)
    num_mbs_to_show_result: int = 10
    first_mbs_to_show_result: int = 0
    gradient_clipping_with_truncation: bool = True
    clipping_threshold_per_sample: float = math.inf
    extra: Mapping[str, Any] = field(default_factory=dict)
    loc: SourceLocation | None = field(default=None, compare=False, repr=False)


_SGD_KEYS = {"maxepochs", "epochsize", "minibatchsize", "learningratespersample",
             "learningratespermb", "momentumastimeconstant", "momentumpermb", "momentumpersample",
             "l2regweight", "l1regweight", "dropoutrate", "nummbstoshowresult",
             "firstmbstoshowresult", "gradientclippingwithtruncation", "clippingthresholdpersample"}


#: The ranges of the SGD block's numbers: key, test, what it must be, integer, finite.
_SGD_RANGES = (
    ("maxEpochs", _at_least_1, "be >= 1", True, False),
    ("epochSize", _non_negative, "be >= 0 (0: one sweep of the data)", True, False),
    ("minibatchSize", _at_least_1, "be >= 1", True, False),
    ("learningRatesPerSample", _non_negative, "be >= 0", False, True),
    ("learningRatesPerMB", _non_negative, "be >= 0", False, True),
    ("momentumAsTimeConstant", _non_negative, "be >= 0", False, False),
    ("momentumPerMB", _fraction, "lie in [0, 1)", False, False),
    ("momentumPerSample", _fraction, "lie in [0, 1)", False, False),
    ("L2RegWeight", _non_negative, "be >= 0", False, True),
    ("L1RegWeight", _non_negative, "be >= 0", False, True),
    ("dropoutRate", _fraction, "lie in [0, 1)", False, False),
    ("numMBsToShowResult", _non_negative, "be >= 0", True, False),
    ("firstMBsToShowResult", _non_negative, "be >= 0", True, False),
    ("clippingThresholdPerSample", _positive, "be > 0 (infinity: no clipping)", False, False),
)


def _opt_floats(rec: ConfigRecord, key: str) -> tuple[float, ...] | None:
    values = rec.get_floats(key, None)
    return None if values is None else tuple(values)


def sgd_config(rec: ConfigRecord) -> SGDConfig:
    """Read an ``SGD`` block, with CNTK's defaults and checks.

    >>> from stadyn.brainscript import parse_config
    >>> sgd = sgd_config(parse_config("SGD = { maxEpochs = 3 ; learningRatesPerMB = 0.1*2:0.05 }")["SGD"])
    >>> sgd.learning_rates_per_mb, sgd.minibatch_size, sgd.epoch_size
    ((0.1, 0.1, 0.05), (256,), None)
    """
    lr_sample = _opt_floats(rec, "learningRatesPerSample")
    lr_mb = _opt_floats(rec, "learningRatesPerMB")
    if lr_sample is not None and lr_mb is not None:
        raise _err(f"'{rec.path}' sets both learningRatesPerSample and learningRatesPerMB; keep one",
                   rec.location("learningRatesPerMB"))
    if lr_sample is None and lr_mb is None:
        raise _err(f"'{rec.path or 'SGD'}' needs learningRatesPerSample or learningRatesPerMB", rec.loc)
    momenta = {k: _opt_floats(rec, k) for k in ("momentumAsTimeConstant", "momentumPerMB", "momentumPerSample")}
    given = [k for k, v in momenta.items() if v is not None]
    if len(given) > 1:
        raise _err(f"'{rec.path}' sets both {given[0]} and {given[1]}; keep one", rec.location(given[1]))
    epoch_size = rec.get_int("epochSize", 0)
    sgd = SGDConfig(
        max_epochs=rec.get_int("maxEpochs"),
        epoch_size=epoch_size or None,
        minibatch_size=tuple(rec.get_ints("minibatchSize", [256])),
        learning_rates_per_sample=lr_sample,
        learning_rates_per_mb=lr_mb,
        momentum_as_time_constant=momenta["momentumAsTimeConstant"],
        momentum_per_mb=momenta["momentumPerMB"],
        momentum_per_sample=momenta["momentumPerSample"],
        l2_reg_weight=rec.get_float("L2RegWeight", 0.0),
        l1_reg_weight=rec.get_float("L1RegWeight", 0.0),
        dropout_rate=tuple(rec.get_floats("dropoutRate", [0.0])),
        num_mbs_to_show_result=rec.get_int("numMBsToShowResult", 10),
        first_mbs_to_show_result=rec.get_int("firstMBsToShowResult", 0),
        gradient_clipping_with_truncation=rec.get_bool("gradientClippingWithTruncation", True),
        clipping_threshold_per_sample=rec.get_float("clippingThresholdPerSample", math.inf),
        extra=_extra(rec, _SGD_KEYS),
        loc=rec.loc,
    )
    for key, ok, what, integer, finite in _SGD_RANGES:
        _check(rec, key, ok, what, convert=to_int if integer else to_float, finite=finite)
    return sgd


# ---------------------------------------------------------------------------------------------
# readers
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TransformConfig:
    """One image transform: ``type`` (``Crop``, ``Scale``, ``Mean``, ``Transpose``, ``Color``,
    ...) and its other keys with numbers and booleans converted (``sideRatio = 0.8`` -> 0.8,
    ``sideRatio = 0.5:0.9`` -> [0.5, 0.9], ``cropType = "RandomSide"`` -> "RandomSide")."""

    type: str
    params: Mapping[str, Any] = field(default_factory=dict)
    loc: SourceLocation | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class StreamConfig:
    """One input stream of a deserializer (``features = { dim = 784 ; format = "dense" }``)."""

    name: str
    dim: int | None = None
    format: str | None = None
    label_dim: int | None = None
    alias: str | None = None
    transforms: tuple[TransformConfig, ...] = ()
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def is_label(self) -> bool:
        """An image deserializer's label stream (it has ``labelDim``)."""
        return self.label_dim is not None


@dataclass(frozen=True)
class DeserializerConfig:
    """A deserializer: ``type`` (``ImageDeserializer``, ``CNTKTextFormatDeserializer``), the data
    ``file`` (map file or CTF file) and its streams in file order."""

    type: str
    file: str
    streams: tuple[StreamConfig, ...] = ()
    module: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    loc: SourceLocation | None = field(default=None, compare=False, repr=False)

    def stream(self, name: str) -> StreamConfig:
        for s in self.streams:
            if s.name.lower() == name.lower():
                return s
        raise _err(f"deserializer '{self.type}' has no stream '{name}'", self.loc)


@dataclass(frozen=True)
class ReaderConfig:
    """A ``reader`` block.  ``readerType = "CNTKTextFormatReader"`` with ``file``/``input`` is
    given as one ``CNTKTextFormatDeserializer``; ``reader_type`` keeps what the file said."""

    deserializers: tuple[DeserializerConfig, ...] = ()
    reader_type: str | None = None
    randomize: bool = True
    keep_data_in_memory: bool = False
    verbosity: int = 0
    extra: Mapping[str, Any] = field(default_factory=dict)
    loc: SourceLocation | None = field(default=None, compare=False, repr=False)


_STREAM_KEYS = {"dim", "format", "labeldim", "alias", "transforms"}
_DESERIALIZER_KEYS = {"type", "file", "input", "module"}
_READER_KEYS = {"deserializers", "readertype", "randomize", "keepdatainmemory", "verbosity",
                "file", "input"}
_TEXT_READERS = {"cntktextformatreader", "cntktextformatdeserializer"}
_FILELESS = {"htkfeaturedeserializer", "htkmlfdeserializer"}


def _transform(value: Any, owner: ConfigRecord) -> TransformConfig:
    if not isinstance(value, ConfigRecord):
        raise _err(f"'{owner.path}.transforms' must list blocks {{ type = ... }}", getattr(value, "loc", owner.loc))
    params = {k: _auto(value[k]) for k in value if k.lower() != "type"}
    return TransformConfig(str(value.get_str("type")), params, value.loc)


def _stream(rec: ConfigRecord, name: str) -> StreamConfig:
    transforms = rec.get("transforms")
    if transforms is None:
        items: list = []
    elif isinstance(transforms, ConfigList):
        items = list(transforms)
    else:
        items = [transforms]
    fmt = rec.get_str("format", None)
    alias = rec.get_str("alias", None)
    return StreamConfig(
        name=name,
        dim=rec.get_int("dim", None),
        format=None if fmt is None else str(fmt),
        label_dim=rec.get_int("labelDim", None),
        alias=None if alias is None else str(alias),
        transforms=tuple(_transform(t, rec) for t in items),
        params={k: _auto(rec[k]) for k in rec if k.lower() not in _STREAM_KEYS},
    )


def _streams(rec: ConfigRecord) -> tuple[StreamConfig, ...]:
    inputs = rec.get_record("input")
    return tuple(_stream(inputs.get_record(name), str(name)) for name in inputs)


def _deserializer(rec: ConfigRecord, default_type: str | None = None) -> DeserializerConfig:
    dtype = rec.get_str("type", default_type)
    if dtype is None:
        raise _err(f"deserializer '{rec.path}' needs a 'type'", rec.loc)
    module = rec.get_str("module", None)
    # HTK deserializers name their files in their streams (scpFile, mlfFile)
    file = rec.get_str("file", None) if str(dtype).lower() in _FILELESS else rec.get_str("file")
    return DeserializerConfig(
        type=str(dtype),
        file="" if file is None else str(file),
        streams=_streams(rec),
        module=None if module is None else str(module),
        params={k: _auto(rec[k]) for k in rec if k.lower() not in _DESERIALIZER_KEYS},
        loc=rec.loc,
    )


def _randomize(rec: ConfigRecord) -> bool:
    value = rec.get_str("randomize", None)
    if value is None:
        return True
    low = value.lower()
    if low in ("auto", "none"):
        return low == "auto"
    try:
        return to_bool(value)
    except ValueError:
        raise _err(f"'{rec.key_path('randomize')}' must be true, false, auto or none, got '{value}'",
                   value.loc) from None


# CNTK's legacy ImageReader passed the feature stream's block to each of its transformers in
# this order (ImageReader.cpp); each read its own keys.
_LEGACY_IMAGE_TRANSFORMS = (
    ("Crop", {"croptype", "cropsize", "sideratio", "arearatio", "aspectratio", "jittertype",
              "cropratio", "hflip"}),
    ("Scale", {"width", "height", "channels", "interpolations", "scalemode", "padvalue"}),
    ("Color", {"brightnessradius", "contrastradius", "saturationradius"}),
    ("Mean", {"meanfile"}),
)
_LEGACY_IMAGE_UNSUPPORTED = {"intensityfile", "intensitystddev"}


def _legacy_image_reader(rec: ConfigRecord) -> tuple[DeserializerConfig, set[str]]:
    """``readerType = "ImageReader"`` with ``file``, a feature block (``width``, ``height``,
    ``channels``, ``cropType``, ..., ``meanFile``) and a label block (``labelDim``): the
    ``ImageDeserializer`` with CNTK's transforms Crop, Scale, Color (when a radius is given) and
    Mean (when a ``meanFile`` is), in that order; and the names of the two blocks."""
    blocks = [k for k in rec if isinstance(rec.peek(k), ConfigRecord)]
    labels = [k for k in blocks if "labelDim" in rec.get_record(k)]
    features = [k for k in blocks if k not in labels]
    if len(labels) != 1 or len(features) != 1:
        raise _err(f"'{rec.path}': an ImageReader needs one feature block (width = ...) and one "
                   f"label block (labelDim = ...), got {', '.join(blocks) or 'none'}", rec.loc)
    feat = rec.get_record(features[0])
    keys = {k.lower(): k for k in feat}
    for key in sorted(set(keys) & _LEGACY_IMAGE_UNSUPPORTED):
        raise _err(f"ImageReader: '{keys[key]}' (the intensity transform) is not supported yet",
                   feat.location(keys[key]))
    transforms, used = [], set()
    for kind, names in _LEGACY_IMAGE_TRANSFORMS:
        mine = {keys[k]: _auto(feat[keys[k]]) for k in sorted(set(keys) & names)}
        used |= set(mine)
        if mine or kind in ("Crop", "Scale"):
            transforms.append(TransformConfig(kind, mine, feat.loc))
    image = StreamConfig(name=str(features[0]), transforms=tuple(transforms),
                         params={k: _auto(feat[k]) for k in feat if k not in used})
    label = _stream(rec.get_record(labels[0]), str(labels[0]))
    return DeserializerConfig("ImageDeserializer", str(rec.get_str("file")), (image, label),
                              module="ImageReader", loc=rec.loc), {features[0], labels[0]}


def reader_config(rec: ConfigRecord) -> ReaderConfig:
    """Read a ``reader`` (or ``cvReader``) block.

    >>> from stadyn.brainscript import parse_config
    >>> r = reader_config(parse_config('''reader = { readerType = "CNTKTextFormatReader"
    ...     file = "t.txt" ; input = { features = { dim = 784 ; format = "dense" } } }''')["reader"])
    >>> r.deserializers[0].type, r.deserializers[0].streams[0].dim
    ('CNTKTextFormatDeserializer', 784)
    """
    reader_type = rec.get_str("readerType", None)
    deserializers: list[DeserializerConfig] = []
    if "deserializers" in rec:
        value = rec["deserializers"]
        items = list(value) if isinstance(value, ConfigList) else [value]
        for item in items:
            if not isinstance(item, ConfigRecord):
                raise _err(f"'{rec.key_path('deserializers')}' must list blocks {{ type = ... }}",
                           getattr(item, "loc", rec.loc))
            deserializers.append(_deserializer(item))
    elif reader_type is not None and reader_type.lower() in _TEXT_READERS:
        deserializers.append(DeserializerConfig("CNTKTextFormatDeserializer", str(rec.get_str("file")),
                                                _streams(rec), loc=rec.loc))
    consumed: set[str] = set()
    if not deserializers and reader_type is not None and reader_type.lower() == "imagereader":
        image, consumed = _legacy_image_reader(rec)
        deserializers.append(image)
    return ReaderConfig(
        deserializers=tuple(deserializers),
        reader_type=None if reader_type is None else str(reader_type),
        randomize=_randomize(rec),
        keep_data_in_memory=rec.get_bool("keepDataInMemory", False),
        verbosity=rec.get_int("verbosity", 0),
        extra={k: v for k, v in _extra(rec, _READER_KEYS).items() if k not in consumed},
        loc=rec.loc,
    )


# ---------------------------------------------------------------------------------------------
# commands and the top level
# ---------------------------------------------------------------------------------------------

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


_COMMAND_KEYS = {"action", "brainscriptnetworkbuilder", "experimentalnetworkbuilder", "sgd", "reader",
                 "cvreader", "modelpath", "minibatchsize", "epochsize", "evalnodenames", "outputnodenames", "outputpath",
                 "deviceid", "precision", "tracelevel", "checknumerics"}
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
        raise _err(f"precision must be 'float' or 'double', got '{value}'", getattr(value, "loc", None))
    return str(value).lower()


def _network(rec: ConfigRecord) -> Any:
    """The command's ``BrainScriptNetworkBuilder`` (or its old name), from the command's block
    or the nearest block around it, as CNTK's ``config.Exists`` looks outwards
    (NetworkFactory.cpp: ``createNetwork``, ``SimpleNetworkBuilder`` and
    ``NDLNetworkBuilder`` come first; G2P.cntk's ``train`` uses the top level's)."""
    if any(rec.lookup(k, None) is not None for k in ("SimpleNetworkBuilder", "NDLNetworkBuilder")):
        return None
    network = rec.lookup("BrainScriptNetworkBuilder", None)
    return network if network is not None else rec.lookup("ExperimentalNetworkBuilder", None)


def command_config(root: ConfigRecord, name: str) -> CommandConfig:
    """Read the command block ``name`` of ``root``.

    >>> from stadyn.brainscript import parse_config
    >>> c = command_config(parse_config("deviceId = -1\\nT = { action = Test }"), "T")
    >>> c.action, c.device_id
    ('test', -1)
    """
    if name not in root:
        names = ", ".join(k for k in root if isinstance(root[k], ConfigRecord))
        loc = getattr(root.get("command"), "loc", root.loc)
        raise _err(f"command '{name}' names no block of the config (blocks: {names})", loc)
    rec = root.get_record(name)
    if "action" not in rec:
        raise _err(f"command block '{name}' has no 'action' (train, test or eval)", rec.loc)
    network = _network(rec)
    if network is not None and not isinstance(network, BrainScriptSource):  # pragma: no cover
        raise _err(f"'{name}.BrainScriptNetworkBuilder' must be BrainScript", rec.loc)
    sgd_rec = rec.get_record("SGD") if "SGD" in rec else None
    model_path = (sgd_rec or rec).get_str("modelPath", None, inherited=True)
    mb = rec.get_ints("minibatchSize", None, inherited=True)
    epoch = rec.get_int("epochSize", None)
    _check(rec, "minibatchSize", _at_least_1, "be >= 1", convert=to_int, inherited=True)
    _check(rec, "epochSize", _non_negative, "be >= 0 (0: one sweep of the data)", convert=to_int)
    for key in ("numMBsToShowResult", "firstMBsToShowResult"):   # read by test/eval
        rec.get_int(key, None)   # not an integer: the getter's error
        _check(rec, key, _non_negative, "be >= 0", convert=to_int)
    output_path = rec.get_str("outputPath", None)
    return CommandConfig(
        name=str(name),
        action=str(rec.get_str("action")).lower(),
        record=rec,
        network=network,
        sgd=None if sgd_rec is None else sgd_config(sgd_rec),
        reader=reader_config(rec.get_record("reader")) if "reader" in rec else None,
        cv_reader=reader_config(rec.get_record("cvReader")) if "cvReader" in rec else None,
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


def run_config(root: ConfigRecord) -> RunConfig:
    """Read ``command`` and every block it names, plus the top-level settings.

    >>> from stadyn.brainscript import parse_config
    >>> run = run_config(parse_config('command = T ; modelPath = "m.dnn"\\nT = { action = "test" }'))
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
        extra={k: v for k, v in _extra(root, _TOP_KEYS, consumed=False).items() if not isinstance(v, ConfigRecord)},
        root=root,
    )
