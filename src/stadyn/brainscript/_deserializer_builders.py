"""The deserializers a BrainScript reader block names, opened as :mod:`stadyn.io` deserializers.

One builder a deserializer type: ``ImageDeserializer`` (a map file; the stream with ``labelDim``
is the one-hot label, the other the image with its ``transforms``), ``CNTKTextFormatDeserializer``
(also ``readerType = "CNTKTextFormatReader"``), ``CNTKBinaryFormatDeserializer``, the speech pair
``HTKFeatureDeserializer`` and ``HTKMLFDeserializer``, and ``LMSequenceReader``'s sentences.
:func:`open_deserializers` opens those of a block, in its order; ``_readers`` makes the
:class:`stadyn.io.MinibatchSource` over them (its ``reader_deserializers`` has the example:
a text reader block opens one ``CTFDeserializer``).
"""

from __future__ import annotations

import os
from typing import Any

from .. import io
from .._errors import DataError
from ..io import transforms as xforms
from ._ast import config_error
from ._blocks import DeserializerConfig, ReaderConfig, StreamConfig, TransformConfig
from ._reader_windows import chunk_bytes, reader_setting, whole_number

__all__ = ["HTK_LABEL_TYPES", "LM_TYPES", "lm_text", "open_deserializer", "open_deserializers"]

_IMAGE_TYPES = {"imagedeserializer"}
_TEXT_TYPES = {"cntktextformatdeserializer", "cntktextformatreader"}
_BINARY_TYPES = {"cntkbinaryformatdeserializer"}
_HTK_FEATURE_TYPES = {"htkfeaturedeserializer"}
HTK_LABEL_TYPES = {"htkmlfdeserializer"}
LM_TYPES = {"lmsequencereader"}


def _transform(t: TransformConfig) -> Any:
    try:
        return xforms.from_config({"type": t.type, **dict(t.params)})
    except (ValueError, TypeError, DataError) as exc:
        raise config_error(f"transform '{t.type}': {exc}", t.loc) from None


def _image(d: DeserializerConfig) -> io.ImageDeserializer:
    labels = [s for s in d.streams if s.is_label]
    images = [s for s in d.streams if not s.is_label]
    if len(labels) > 1 or len(images) > 1 or not images:
        raise config_error(f"ImageDeserializer '{d.file}': expected one image stream and at most "
                           "one label stream (labelDim = ...), got "
                           f"{', '.join(s.name for s in d.streams) or 'none'}", d.loc)
    image = images[0]
    defs = {image.name: io.StreamDef(field="image",
                                     transforms=[t for t in map(_transform, image.transforms)
                                                 if t is not None])}
    if labels:
        defs[labels[0].name] = io.StreamDef(field="label", shape=labels[0].label_dim)
    try:
        return io.ImageDeserializer(d.file, io.StreamDefs(**defs))
    except DataError:
        raise
    except (ValueError, TypeError) as exc:
        raise config_error(f"ImageDeserializer '{d.file}': {exc}", d.loc) from None


def _text_stream(s: StreamConfig, d: DeserializerConfig) -> io.StreamDef:
    if s.dim is None:
        raise config_error(f"CNTKTextFormatDeserializer '{d.file}': stream '{s.name}' needs a "
                           "'dim'", d.loc)
    if s.format is None:       # (the input's own block: ExistsCurrent, TextConfigHelper.cpp:63-66)
        raise config_error(f"CNTKTextFormatDeserializer '{d.file}': stream '{s.name}' needs a "
                           "'format' (\"dense\" or \"sparse\"), as cntk.exe: 'Input section "
                           f"for input '{s.name}' does not specify all the required "
                           "parameters, \"dim\" and \"format\".'", d.loc)
    fmt = s.format.lower()
    if fmt not in ("dense", "sparse"):
        raise config_error(f"CNTKTextFormatDeserializer '{d.file}': stream '{s.name}' has format "
                   f"'{s.format}'; use dense or sparse", d.loc)
    return io.StreamDef(field=s.alias or s.name, shape=s.dim, is_sparse=fmt == "sparse")


def _max_errors(d: DeserializerConfig, reader: ReaderConfig) -> int:
    """CNTK's ``maxErrors`` of a text deserializer: its block's, else the reader's, else a
    block's around the reader (TextConfigHelper.cpp:125 reads it with ``config(key, 0)``, which
    looks in the parent blocks, Config.h:971-989); 0."""
    value = next((v for k, v in d.params.items() if k.lower() == "maxerrors"), None)
    if value is None:
        value = reader_setting(reader, "maxErrors")
    return whole_number("maxErrors", 0 if value is None else value, d.loc)


def _text(d: DeserializerConfig, reader: ReaderConfig) -> io.CTFDeserializer:
    defs = io.StreamDefs(**{s.name: _text_stream(s, d) for s in d.streams})
    chunk = chunk_bytes(reader, dict(d.params))
    try:
        made = io.CTFDeserializer(d.file, defs, max_errors=_max_errors(d, reader))
    except DataError as exc:    # the file's first sequence is read now: say whose streams
        if d.loc is None:
            raise
        block = f"{d.loc.path or '<string>'}:{d.loc.line}"
        raise DataError(f"{exc.reason} (the streams of the reader block at {block}: "
                        f"{', '.join(_tag(s) for s in d.streams)})", exc.path, exc.line,
                        exc.record) from None
    if chunk is not None:       # (the chunks the randomized order moves: CNTK's setting)
        made.chunk_bytes = chunk
    return made


def _tag(s: StreamConfig) -> str:
    return f"{s.name} = |{s.alias}" if s.alias and s.alias != s.name else f"|{s.name}"


def _param(s: StreamConfig, key: str, default: Any = None) -> Any:
    for k, v in s.params.items():
        if k.lower() == key.lower():
            return v
    return default


def _flag(s: StreamConfig, key: str, d: DeserializerConfig) -> bool:
    value = _param(s, key, False)
    if isinstance(value, bool):
        return value
    text = str(value).lower()
    if text not in ("true", "false"):
        raise config_error(f"{d.type}: stream '{s.name}': {key} must be true or false, got "
                           f"'{value}'", d.loc)
    return text == "true"


def _context(s: StreamConfig, d: DeserializerConfig) -> tuple[int, int] | None:
    """``contextWindow``: one odd frame count (symmetric) or ``left:right``."""
    value = _param(s, "contextWindow")
    if value is None:
        return None
    parts = value if isinstance(value, list) else [value]
    try:
        counts = [int(str(p)) for p in parts]
    except ValueError:
        counts = []
    if len(counts) == 1 and counts[0] % 2 == 1 and counts[0] > 0:
        return (counts[0] // 2, counts[0] // 2)
    if len(counts) == 2 and min(counts) >= 0:
        return (counts[0], counts[1])
    raise config_error(f"HTKFeatureDeserializer: stream '{s.name}': contextWindow must be an odd "
                       f"frame count or left:right, got '{value}'", d.loc)


def _htk_features(d: DeserializerConfig, reader: ReaderConfig) -> io.HTKFeatureDeserializer:
    """The feature streams of an HTK reader; those of ``readerType = "HTKMLFReader"`` paired
    line by line of their script files, as cntk.exe's reader did (HTKMLFReader.cpp:371,
    utterancesourcemulti.h:943), the others' by utterance key (CNTK 2's deserializers)."""
    legacy = str(reader.reader_type or "").lower() == "htkmlfreader"
    legacy_list = str(reader.reader_type or "").lower() == "htkdeserializers"
    defs, limits = {}, []
    for s in d.streams:
        scp = _param(s, "scpFile")
        if scp is None or s.dim is None:
            raise config_error(f"HTKFeatureDeserializer: stream '{s.name}' needs 'dim' and "
                               "'scpFile'", d.loc)
        context = _context(s, d)
        if context == (0, 0):
            context = None
        if legacy_list:
            limits.append(_param(s, "maxSequenceSize"))
        defs[s.name] = io.StreamDef(shape=s.dim, scp=str(scp), context=context,
                                    broadcast=_flag(s, "expandToUtterance", d))
    if not defs:
        raise config_error("HTKFeatureDeserializer defines no input streams", d.loc)
    return io.HTKFeatureDeserializer(io.StreamDefs(**defs),
                                     pairing="position" if legacy else "key",
                                     max_sequence_size=None if legacy else
                                     _max_sequence_size(d, reader, limits))


def _max_sequence_size(d: DeserializerConfig, reader: ReaderConfig,
                       streams: list[Any]) -> int | None:
    """``maxSequenceSize``, the frame count above which cntk.exe's HTK deserializer skips an
    utterance; by default none is skipped (``SIZE_MAX``).  A ``deserializers`` list's
    HTKFeatureDeserializer reads it as ``input(L"maxSequenceSize", SIZE_MAX)``: from its
    ``input`` block or a block around it (the deserializer's, the reader's, ...), not from a
    stream's block, which CNTK 2.7 passes over (checked with its HTK library: a stream's
    ``maxSequenceSize = 10`` delivers a 20-frame utterance, the deserializer's skips it).
    ``readerType = "HTKDeserializers"`` reads it from each stream's block, else a block around
    it (``feature(L"maxSequenceSize", SIZE_MAX)``; ``streams``, a value a stream, None where it
    has none); the older ``readerType = "HTKMLFReader"`` has no such key."""
    given = [v for v in streams if v is not None]
    if given:
        return min(whole_number("maxSequenceSize", v, d.loc) for v in given)
    value = next((v for k, v in d.params.items() if k.lower() == "maxsequencesize"), None)
    if value is None:
        value = reader_setting(reader, "maxSequenceSize")
    return None if value is None else whole_number("maxSequenceSize", value, d.loc)


def _htk_labels(d: DeserializerConfig) -> io.HTKMLFDeserializer:
    if len(d.streams) != 1:
        raise config_error(f"HTKMLFDeserializer: expected one input stream, got "
                   f"{', '.join(s.name for s in d.streams) or 'none'}", d.loc)
    s = d.streams[0]
    dim = s.label_dim if s.label_dim is not None else s.dim
    mlf = _param(s, "mlfFile")
    listing = _param(s, "mlfFileList")
    mapping = _param(s, "labelMappingFile")
    if dim is None or (mlf is None and listing is None):
        raise config_error(f"HTKMLFDeserializer: stream '{s.name}' needs 'labelDim' and "
                           f"'mlfFile' (or 'mlfFileList')", d.loc)
    files = [str(mlf)] if mlf is not None else _file_list(str(listing))
    streams = io.StreamDefs(**{s.name: io.StreamDef(shape=dim, mlf=files)})
    if mapping is None or not str(mapping):
        # (no state list: cntk.exe reads each line's class id from its 4th column,
        # HTKMLFReader.cpp:222 with htkfeatio.h:876-884, MLFDeserializer.cpp:377 with
        # MLFUtils.cpp:86-93)
        return io.HTKMLFDeserializer.from_class_ids(streams, _flag(s, "phoneBoundaries", d))
    return io.HTKMLFDeserializer(str(mapping), streams, _flag(s, "phoneBoundaries", d))


def _file_list(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as f:
            files = [line.strip() for line in f if line.strip()]
    except OSError as exc:
        raise DataError(f"cannot read the MLF list: {exc.strerror or exc}", path) from None
    if not files:
        raise DataError("the MLF list names no files", path)
    return files


def _binary(d: DeserializerConfig) -> io.CBFDeserializer:
    defs = {s.name: io.StreamDef(field=s.alias or s.name, shape=s.dim) for s in d.streams}
    return io.CBFDeserializer(d.file, io.StreamDefs(**defs))


def lm_text(d: DeserializerConfig) -> io.LMSequenceDeserializer:
    """``readerType = "LMSequenceReader"``: words numbered by the label mapping file when it
    exists, else by ``wordclass`` (as CNTK; it wrote the mapping file when it was missing)."""
    p = {k.lower(): v for k, v in d.params.items()}
    classes = io.read_word_classes(str(p["wordclass"])) if p.get("wordclass") else None
    mapping = p.get("labelmappingfile")
    if mapping and os.path.exists(str(mapping)):
        vocabulary = io.read_state_list(str(mapping))
    elif classes is not None:
        vocabulary = dict(classes.ids)
    else:
        raise config_error("LMSequenceReader: the words need numbers: give wordclass = \"...\" "
                           "(lines 'id count word class') or an existing labelMappingFile", d.loc)
    if p["mode"] == "class" and classes is None:
        raise config_error("LMSequenceReader: mode = \"class\" (the default) needs wordclass = "
                           "\"...\"", d.loc)
    dim = max(int(p.get("labeldim") or 0), max(vocabulary.values()) + 1)
    return io.LMSequenceDeserializer(d.file, vocabulary, d.streams[0].name, dim, p["output"],
                                     output=p["mode"], classes=classes, unk=str(p["unk"]))

def open_deserializers(reader: ReaderConfig) -> list[io.Deserializer]:
    """The deserializers of a reader block, in its order."""
    made: list[io.Deserializer] = []
    try:
        for d in reader.deserializers:
            made.append(open_deserializer(d, reader))
    except BaseException:       # (a later one failed: the files of those made are closed)
        for m in made:
            m.close()
        raise
    return made


def open_deserializer(d: DeserializerConfig, reader: ReaderConfig) -> io.Deserializer:
    kind = d.type.lower()
    if kind in _IMAGE_TYPES:
        return _image(d)
    if kind in _TEXT_TYPES:
        return _text(d, reader)
    if kind in _BINARY_TYPES:
        return _binary(d)
    if kind in _HTK_FEATURE_TYPES:
        return _htk_features(d, reader)
    if kind in HTK_LABEL_TYPES:
        return _htk_labels(d)
    if kind in LM_TYPES:
        return lm_text(d)
    raise config_error(f"deserializer type '{d.type}' is not supported (use "
                       "ImageDeserializer, CNTKTextFormatDeserializer, "
                       "CNTKBinaryFormatDeserializer, HTKFeatureDeserializer or "
                       "HTKMLFDeserializer, or readerType = \"HTKMLFReader\" or "
                       "\"LMSequenceReader\")", d.loc)
