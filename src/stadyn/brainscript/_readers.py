"""A BrainScript ``reader`` block as a :class:`stadyn.io.MinibatchSource`.

Deserializers: ``ImageDeserializer`` (a map file; the stream with ``labelDim`` is the one-hot
label, the other the image with its ``transforms`` list: ``Crop``, ``Scale``, ``Mean``, ``Color``
and ``Transpose`` — a no-op, Stadyn delivers C, H, W) and ``CNTKTextFormatDeserializer`` (also
written ``readerType = "CNTKTextFormatReader"`` with ``file`` and ``input``; streams with ``dim``,
``format = "dense" | "sparse"`` and an optional ``alias``, the name in the file).  Several
deserializers are joined by sequence key.  ``randomize`` (CNTK's default: true) shuffles every
sweep.

Keys this module does not use are reported (as warnings through ``warn``), since CNTK accepted
many reader keys that only tune its own engine.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import io
from .._errors import ConfigError, DataError
from ..io import transforms as xforms
from ._ast import SourceLocation
from ._blocks import DeserializerConfig, ReaderConfig, StreamConfig, TransformConfig

__all__ = ["make_source", "stream_names"]

# Reader keys that only tune CNTK's engine (no effect here).
_READER_NO_EFFECT = {"randomizationwindow", "samplebasedrandomizationwindow", "prefetch",
                     "multithreadeddeserialization", "framemode", "truncated",
                     "maxerrors", "tracelevel", "cachedir", "randomizationseed",
                     "numcputhreads"}
_IMAGE_TYPES = {"imagedeserializer"}
_TEXT_TYPES = {"cntktextformatdeserializer", "cntktextformatreader"}


def _err(message: str, loc: SourceLocation | None) -> ConfigError:
    return ConfigError(message) if loc is None else ConfigError(message, loc.path, loc.line,
                                                                loc.column)


def stream_names(reader: ReaderConfig) -> list[str]:
    """The names of the streams the reader delivers, in order."""
    return [s.name for d in reader.deserializers for s in d.streams]


def _transform(t: TransformConfig) -> Any:
    try:
        return xforms.from_config({"type": t.type, **dict(t.params)})
    except (ValueError, TypeError, DataError) as exc:
        raise _err(f"transform '{t.type}': {exc}", t.loc) from None


def _image(d: DeserializerConfig) -> io.ImageDeserializer:
    labels = [s for s in d.streams if s.is_label]
    images = [s for s in d.streams if not s.is_label]
    if len(labels) > 1 or len(images) > 1 or not images:
        raise _err(f"ImageDeserializer '{d.file}': expected one image stream and at most one label "
                   f"stream (labelDim = ...), got {', '.join(s.name for s in d.streams) or 'none'}",
                   d.loc)
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
        raise _err(f"ImageDeserializer '{d.file}': {exc}", d.loc) from None


def _text_stream(s: StreamConfig, d: DeserializerConfig) -> io.StreamDef:
    if s.dim is None:
        raise _err(f"CNTKTextFormatDeserializer '{d.file}': stream '{s.name}' needs a 'dim'",
                   d.loc)
    fmt = (s.format or "dense").lower()
    if fmt not in ("dense", "sparse"):
        raise _err(f"CNTKTextFormatDeserializer '{d.file}': stream '{s.name}' has format "
                   f"'{s.format}'; use dense or sparse", d.loc)
    return io.StreamDef(field=s.alias or s.name, shape=s.dim, is_sparse=fmt == "sparse")


def _text(d: DeserializerConfig) -> io.CTFDeserializer:
    return io.CTFDeserializer(d.file, io.StreamDefs(**{s.name: _text_stream(s, d)
                                                      for s in d.streams}))


def _unused(reader: ReaderConfig, warn: Callable[[str], None]) -> None:
    for key in reader.extra:
        if key.lower() not in _READER_NO_EFFECT:
            warn(f"WARNING: reader key '{key}' is not used by Stadyn")
    for d in reader.deserializers:
        for key in d.params:
            if key.lower() not in _READER_NO_EFFECT:
                warn(f"WARNING: deserializer key '{key}' ({d.type}) is not used by Stadyn")
        for s in d.streams:
            for key in s.params:
                warn(f"WARNING: stream key '{s.name}.{key}' is not used by Stadyn")


def make_source(reader: ReaderConfig, *, max_sweeps: int = io.INFINITELY_REPEAT,
                warn: Callable[[str], None] | None = None) -> io.MinibatchSource:
    """The minibatch source a reader block describes (streams named as in the block).

    >>> import os, tempfile
    >>> from stadyn.brainscript import parse_config, reader_config
    >>> d = tempfile.mkdtemp(); path = os.path.join(d, "t.txt")
    >>> _ = open(path, "w").write("|x 1 2 |y 0 1\\n|x 3 4 |y 1 0\\n")
    >>> r = reader_config(parse_config(f'''reader = {{ readerType = "CNTKTextFormatReader"
    ...     file = "{path}" ; randomize = false
    ...     input = {{ x = {{ dim = 2 ; format = "dense" }} ; y = {{ dim = 2 }} }} }}''')["reader"])
    >>> mb = make_source(r).next_minibatch(2)
    >>> mb["x"].data.tolist(), mb["y"].data.tolist()
    ([[1.0, 2.0], [3.0, 4.0]], [[0.0, 1.0], [1.0, 0.0]])
    """
    if not reader.deserializers:
        kind = f" '{reader.reader_type}'" if reader.reader_type else ""
        raise _err(f"the reader block{kind} defines no deserializers (use deserializers = ({{ type "
                   "= \"ImageDeserializer\" ... }}) or readerType = \"CNTKTextFormatReader\")",
                   reader.loc)
    if warn is not None:
        _unused(reader, warn)
    made = []
    for d in reader.deserializers:
        kind = d.type.lower()
        if kind in _IMAGE_TYPES:
            made.append(_image(d))
        elif kind in _TEXT_TYPES:
            made.append(_text(d))
        else:
            raise _err(f"deserializer type '{d.type}' is not supported (use ImageDeserializer or "
                       "CNTKTextFormatDeserializer)", d.loc)
    seed = reader.extra.get("randomizationSeed", 0)
    try:
        seed = int(str(seed))
    except ValueError:
        raise _err(f"randomizationSeed must be an integer, got '{seed}'", reader.loc) from None
    return io.MinibatchSource(made, max_sweeps=max_sweeps, randomize=reader.randomize,
                              randomization_seed=seed)
