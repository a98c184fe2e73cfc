"""The ``reader`` and ``cvReader`` blocks of a ``.cntk`` command as dataclasses
(:func:`reader_config`): deserializers, their streams and image transforms, and CNTK's legacy
``readerType`` readers given as the deserializers they stand for."""

from __future__ import annotations

from collections.abc import Mapping
import dataclasses
from dataclasses import dataclass, field
from typing import Any

from .._errors import ConfigError
from ._ast import SourceLocation
from ._block_values import _auto, _err, _extra
from ._config import ConfigList, ConfigRecord, to_bool
from ._legacy_readers import LEGACY_READERS, legacy_reader

__all__ = ["TransformConfig", "StreamConfig", "DeserializerConfig", "ReaderConfig",
           "reader_config", "written_reader", "shim_parallel_sequences"]


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
    # a legacy reader's settings Stadyn does not do: (short label, the error opening it raises)
    refused: tuple[tuple[str, ConfigError], ...] = field(default=(), compare=False, repr=False)
    #: the reader settings (:data:`OUTER_KEYS`; a legacy reader's: :data:`WINDOW_KEYS`) an
    #: enclosing block gives and this one does not: cntk.exe's reader looks them up there too
    #: (Config.h:911-929, 971-989, 1003)
    outer: Mapping[str, Any] = field(default_factory=dict)


_STREAM_KEYS = {"dim", "format", "labeldim", "alias", "transforms"}
_DESERIALIZER_KEYS = {"type", "file", "input", "module"}
_READER_KEYS = {"deserializers", "readertype", "randomize", "keepdatainmemory", "verbosity",
                "file", "input"}
_TEXT_READERS = {"cntktextformatreader", "cntktextformatdeserializer"}
#: the reader settings of the randomized order (``_reader_windows``)
WINDOW_KEYS = ("randomizationWindow", "sampleBasedRandomizationWindow", "chunkSizeInBytes")
#: the settings a deserializers list or a ``CNTKTextFormatReader`` block takes from the blocks
#: around it where it has none (cntk.exe reads each with ``config(key, default)``, which looks
#: in the parent blocks, Config.h:971-989): the window's, ``frameMode``
#: (CompositeDataReader.cpp:58, TextConfigHelper.cpp:129), ``maxErrors``
#: (CompositeDataReader.cpp:112, TextConfigHelper.cpp:125), ``randomizationSeed``
#: (ReaderUtil.h:17-19), ``keepDataInMemory`` (TextConfigHelper.cpp:128,
#: BinaryConfigHelper.cpp:68), ``truncated`` and ``truncationLength``
#: (CompositeDataReader.cpp:59, 76); ``randomize`` too (:func:`_randomize`)
OUTER_KEYS = WINDOW_KEYS + ("frameMode", "maxErrors", "randomizationSeed", "keepDataInMemory",
                            "truncated", "truncationLength")
_FILELESS = {"htkfeaturedeserializer", "htkmlfdeserializer"}


def _transform(value: Any, owner: ConfigRecord) -> TransformConfig:
    if not isinstance(value, ConfigRecord):
        raise _err(f"'{owner.path}.transforms' must list blocks {{ type = ... }}",
                   getattr(value, "loc", owner.loc))
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
    # (the block's, else a block's around it: cntk.exe reads config(L"file"), which looks in the
    # parent blocks, TextConfigHelper.cpp:123, Config.h:1003)
    file = rec.get_str("file", None) if str(dtype).lower() in _FILELESS else \
        rec.get_str("file", inherited=True)
    return DeserializerConfig(
        type=str(dtype),
        file="" if file is None else str(file),
        streams=_streams(rec),
        module=None if module is None else str(module),
        params={k: _auto(rec[k]) for k in rec if k.lower() not in _DESERIALIZER_KEYS},
        loc=rec.loc,
    )


def _randomize(rec: ConfigRecord) -> bool:
    # the block's, else a block's around it: cntk.exe's config(L"randomize", true) looks there
    # too (CompositeDataReader.cpp:109, ReaderUtil.cpp:14-23, ImageConfigHelper.cpp:84;
    # Config.h:911-929, 1003)
    value = rec.get_str("randomize", None, inherited=True)
    if value is None:
        return True
    low = value.lower()
    if low in ("auto", "none"):
        return low == "auto"
    try:
        return to_bool(value)
    except ValueError:
        name = rec.key_path("randomize") if "randomize" in rec else "randomize"  # (around it)
        raise _err(f"'{name}' must be true, false, auto or none, got '{value}'",
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
    # the map file: the block's, else a block's around it (ImageConfigHelper.cpp:81 reads
    # config(L"file"), which looks in the parent blocks, Config.h:992-1005)
    path = rec.get_str("file", inherited=True)
    return DeserializerConfig("ImageDeserializer", str(path), (image, label),
                              module="ImageReader", loc=rec.loc), {features[0], labels[0]}


def reader_config(rec: ConfigRecord) -> ReaderConfig:
    """Read a ``reader`` (or ``cvReader``) block.

    >>> from stadyn.brainscript import parse_config
    >>> r = reader_config(parse_config('''reader = { readerType = "CNTKTextFormatReader"
    ...     file = "t.txt" ; input = { features = { dim = 784 ; format = "dense" } } }
    ...     ''')["reader"])
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
        deserializers.append(DeserializerConfig("CNTKTextFormatDeserializer",
                                                str(rec.get_str("file", inherited=True)),
                                                _streams(rec),
                                                loc=rec.loc))
    consumed: set[str] = set()
    legacy = None
    if not deserializers and reader_type is not None and reader_type.lower() == "imagereader":
        image, consumed = _legacy_image_reader(rec)
        deserializers.append(image)
    elif not deserializers and reader_type is not None and reader_type.lower() in LEGACY_READERS:
        legacy = legacy_reader(rec, str(reader_type))       # HTKMLFReader, LMSequenceReader
        deserializers += [DeserializerConfig(d.type, d.file, tuple(_stream(s, n) for n, s in
                                                                   d.streams),
                                             module=str(reader_type), params=d.params, loc=rec.loc)
                          for d in legacy.deserializers]
        consumed = {k.lower() for k in legacy.consumed}
    return ReaderConfig(
        deserializers=tuple(deserializers),
        reader_type=None if reader_type is None else str(reader_type),
        randomize=_randomize(rec) if legacy is None else legacy.randomize,
        keep_data_in_memory=rec.get_bool("keepDataInMemory", False, inherited=legacy is None),
        verbosity=rec.get_int("verbosity", 0),
        extra={**{k: v for k, v in _extra(rec, _READER_KEYS).items()
                  if k not in consumed and k.lower() not in consumed},
               **({} if legacy is None else legacy.extra)},
        loc=rec.loc,
        refused=() if legacy is None else tuple(legacy.refused),
        outer=_outer_settings(rec, WINDOW_KEYS if legacy is not None else OUTER_KEYS),
    )


def _outer_settings(rec: ConfigRecord, keys: tuple[str, ...]) -> dict[str, str]:
    """The ``keys``' values of the blocks around ``rec`` (where ``rec`` has none).  (The older
    HTKMLFReader and LMSequenceReader blocks read their own settings: ``_legacy_readers``.)"""
    found = {key: rec.lookup(key, None) for key in keys if key not in rec}
    return {key: str(v) for key, v in found.items()
            if v is not None and not isinstance(v, (ConfigRecord, ConfigList))}


#: the readers whose packing mode a write command does not change: they read ``frameMode``
#: whatever the action (HTKDeserializers/HTKMLFReader.cpp:72-89, TextConfigHelper.cpp:129 and
#: CNTKTextFormatReader.cpp:57-67), so with ``frameMode = true`` each sample is a sequence of
#: one step, packed ``minibatchSize`` a minibatch (FramePacker.cpp:18-30): an HTK frame
#: (HTKDeserializer.cpp:285-311), and a CTF sequence of more steps is cntk.exe's RuntimeError
#: "Detected a non-frame sequence of size N in frame mode."
_FRAMED_WRITES = frozenset({"htkdeserializers", "cntktextformatreader"})


def written_reader(reader: ReaderConfig | None) -> ReaderConfig | None:
    """A ``write`` command's reader block as cntk.exe reads it: in file order, one sequence
    after another whatever ``frameMode`` says.  A deserializer reader packs whole sequences
    when the command's action is ``write`` (CompositeDataReader.cpp:41, 65-68); the older
    ``HTKMLFReader`` reads one whole utterance a minibatch (HTKMLFReader.cpp:90-93, its
    ``PrepareForWriting``; 1630-1631: one parallel sequence of the utterance's frames).  But
    ``readerType = "HTKDeserializers"`` and ``"CNTKTextFormatReader"`` read no action
    (:data:`_FRAMED_WRITES`): their ``frameMode`` stays.

    >>> r = written_reader(ReaderConfig(extra={"frameMode": "true"}))
    >>> r.randomize, dict(r.extra)
    (False, {})
    >>> dict(written_reader(ReaderConfig(reader_type="HTKDeserializers",
    ...                                  extra={"frameMode": "true"})).extra)
    {'frameMode': 'true'}
    """
    if reader is None:
        return None
    refused = tuple(reader.refused)
    if reader.reader_type is None or str(reader.reader_type).lower() in (
            "compositedatareader", "cntk.composite"):
        # cntk.exe's CompositeDataReader checks the two before it sees the write action:
        # LogicError (CompositeDataReader.cpp:57-63, when DoWriteOutput makes its reader,
        # EvalActions.cpp:227); the HTKMLFReader refuses them when its block is read
        both = [next((v for d in (reader.extra, reader.outer) for k, v in d.items()
                      if k.lower() == key), "false") for key in ("framemode", "truncated")]
        if all(str(v).lower() == "true" for v in both):
            refused += (("truncated", ConfigError(
                "frameMode and truncated BPTT are mutually exclusive (frameMode = true with "
                "truncated = true; cntk.exe's reader refuses them for a write command too)",
                *_where(reader))),)
    dropped = ("truncated",) if str(reader.reader_type or "").lower() in _FRAMED_WRITES else \
        ("framemode", "truncated")
    extra = {k: v for k, v in reader.extra.items() if k.lower() not in dropped}
    outer = {k: v for k, v in reader.outer.items() if k.lower() not in dropped}
    if str(reader.reader_type or "").lower() == "htkmlfreader":
        extra.update(frameMode="false", parallelSequences=1, randomizationRange=None,
                     maxUtteranceLength=1 << 62, oneUtteranceAMinibatch=True)
    return dataclasses.replace(reader, randomize=False, extra=extra, outer=outer,
                               refused=refused)


def _where(reader: ReaderConfig) -> tuple:
    loc = reader.loc
    return () if loc is None else (loc.path, loc.line, loc.column)


def shim_parallel_sequences(rec: ConfigRecord) -> int:
    """The parallel sequences cntk.exe's reader shim (a ``CNTKTextFormatReader``,
    ``ImageReader``, ``CNTKBinaryReader``) reports before it reads a minibatch: the first value
    of ``nbruttsineachrecurrentiter`` as the reader block or a block around it gives it, 1
    where none does (ReaderShim.cpp:71-79, an ``intargvector``: ``4:8`` and ``4*2:8`` start
    with 4).  SGD's ``truncated = true`` spreads a rate or momentum per minibatch over that
    many sequences at the first epoch (SGD.cpp:549, 630), where no pass read before.

    >>> from stadyn.brainscript._config import parse_config
    >>> [shim_parallel_sequences(parse_config(f"r = [ {t} ]")["r"])
    ...  for t in ("", "nbruttsineachrecurrentiter = 4", "nbruttsineachrecurrentiter = 3*2:8")]
    [1, 4, 3]
    """
    value = rec.lookup("nbruttsineachrecurrentiter", None)
    if value is None:
        return 1
    first = value[0] if isinstance(value, ConfigList) and len(value) else value
    first = str(first).strip().split(":")[0].split("*")[0].strip()
    try:
        rows = int(first)
    except ValueError:
        rows = -1
    if rows < 0:
        raise _err(f"'nbruttsineachrecurrentiter' must be whole numbers >= 0, got '{value}'",
                   rec.location("nbruttsineachrecurrentiter") if
                   "nbruttsineachrecurrentiter" in rec else rec.loc)
    return rows
