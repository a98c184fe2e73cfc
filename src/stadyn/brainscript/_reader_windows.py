"""The randomization window cntk.exe's readers take from a BrainScript ``reader`` block.

cntk.exe shuffles with CNTK's block randomizer (``stadyn.io.MinibatchSource``'s order); the
block only sets its window, each reader its own way:

- ``deserializers = (...)`` (CompositeDataReader.cpp:134-165): ``randomizationWindow`` in
  samples (``sampleBasedRandomizationWindow`` defaults to true; false: in chunks), by default
  the whole data set -- one ``ImageDeserializer`` alone: 1 sample (a chunk is an image); a list
  with a ``CNTKTextFormatDeserializer`` and no ``randomizationWindow``: 4 GB of chunks
  (``4 GB / chunkSizeInBytes``, 128 chunks of 32 MB), and with ``sampleBasedRandomizationWindow
  = true`` cntk.exe's error; 0 shuffles as 1 does (ChunkRandomizer.cpp:82-124);
- ``readerType = "CNTKTextFormatReader"`` (TextConfigHelper.cpp:132-137, ReaderUtil.cpp:12-36):
  ``randomizationWindow`` in chunks (``sampleBasedRandomizationWindow`` defaults to false), 4 GB
  of chunks by default (in samples: the whole data set); 0: file order;
- ``readerType = "ImageReader"``: 1 sample, whatever the block says (ImageReader.cpp:52-55).

Each setting is the block's, else an enclosing block's (cntk.exe's ``config(key)`` looks in the
blocks around, Config.h:911-929, 1003), but for a deserializers list only the block's own
``randomizationWindow``/``sampleBasedRandomizationWindow`` decide whether the text default
applies (``config.ExistsCurrent``, CompositeDataReader.cpp:149-150), and its 4 GB default counts
the reader's ``chunkSizeInBytes``, not a deserializer block's (CompositeDataReader.cpp:155).

The older speech and text readers (``HTKMLFReader``, ``LMSequenceReader``) keep their own
orders (``_legacy_readers``).
"""

from __future__ import annotations

from typing import Any

from ._ast import config_error
from ._blocks import ReaderConfig
from ._legacy_readers import LEGACY_READERS

__all__ = ["randomization_window", "reader_setting", "whole_number"]

# cntk.exe's randomizeAuto (DataReader.h:108): a window past any data set, in samples
_WHOLE_DATA = ((1 << 64) - 1) >> 2
_4GB = 1 << 32
_32MB = 32 << 20
_TEXT = "cntktextformatdeserializer"


def reader_setting(reader: ReaderConfig, key: str, *, inherited: bool = True) -> Any:
    """The block's ``key``, else (``inherited``) an enclosing block's, as cntk.exe's
    ``config(key)``; ``inherited = False``: its ``config.ExistsCurrent(key)``.  None where
    neither gives it.

    >>> from stadyn.brainscript import parse_config, reader_config
    >>> r = reader_config(parse_config('t = [ maxErrors = 2 ; reader = [ readerType = '
    ...     '"CNTKTextFormatReader" ; file = "t" ; input = [ x = [ dim = 1 ] ] ] ]')["t"]["reader"])
    >>> reader_setting(r, "maxErrors"), reader_setting(r, "maxErrors", inherited=False)
    ('2', None)
    """
    kept = (reader.extra, reader.outer) if inherited else (reader.extra,)
    return next((v for source in kept for k, v in source.items() if k.lower() == key.lower()),
                None)


def whole_number(key: str, value: Any, loc: Any) -> int:
    """A reader setting's whole number (>= 0), else a ConfigError at ``loc`` (the block's).

    >>> whole_number("maxErrors", "3", None)
    3
    """
    try:
        number = int(str(value))
    except ValueError:
        number = -1
    if number < 0:
        raise config_error(f"{key} must be a whole number >= 0, got '{value}'", loc)
    return number


def _flag(reader: ReaderConfig, key: str, default: bool) -> tuple[bool, bool]:
    """The boolean setting (the block's or an enclosing block's) and whether the block itself
    gives it."""
    value = reader_setting(reader, key)
    said = reader_setting(reader, key, inherited=False) is not None
    if value is None:
        return default, said
    if str(value).lower() not in ("true", "false"):
        raise config_error(f"{key} must be true or false, got '{value}'", reader.loc)
    return str(value).lower() == "true", said


def chunk_bytes(reader: ReaderConfig, params: dict | None = None) -> int | None:
    """A text deserializer's ``chunkSizeInBytes`` (its block ``params``, else the reader's, else
    an enclosing block's), if given; without ``params``: the reader's (or an enclosing
    block's), the one cntk.exe's deserializers list sizes its default window by."""
    value = next((v for k, v in (params or {}).items() if k.lower() == "chunksizeinbytes"),
                 None)
    if value is None:
        value = reader_setting(reader, "chunkSizeInBytes")
    if value is None:
        return None
    size = whole_number("chunkSizeInBytes", value, reader.loc)
    if size == 0:
        raise config_error("chunkSizeInBytes must be > 0, got '0'", reader.loc)
    return size


def randomization_window(reader: ReaderConfig) -> dict[str, int]:
    """The window of the block's randomized order as :class:`stadyn.io.MinibatchSource`'s
    ``randomization_window_in_samples`` or ``randomization_window_in_chunks`` (see the module);
    ``{}`` for the older speech and text readers.

    >>> from stadyn.brainscript import parse_config, reader_config
    >>> def window(text):
    ...     return randomization_window(reader_config(parse_config(text)["reader"]))
    >>> window('reader = { deserializers = ({ type = "ImageDeserializer" ; file = "m" '
    ...        '; input = { f = { transforms = () } ; l = { labelDim = 2 } } }) }')
    {'randomization_window_in_samples': 1}
    >>> window('reader = { readerType = "CNTKTextFormatReader" ; file = "t" ; '
    ...        'randomizationWindow = 3 ; input = { x = { dim = 1 } } }')
    {'randomization_window_in_chunks': 3}
    """
    kind = str(reader.reader_type or "").lower()
    if kind == "imagereader":
        return {"randomization_window_in_samples": 1}
    if kind in LEGACY_READERS and all(str(d.module).lower() == kind
                                      for d in reader.deserializers):
        return {}          # HTKMLFReader, LMSequenceReader blocks: their own (_legacy_readers)
    given = reader_setting(reader, "randomizationWindow")
    window = None if given is None else whole_number("randomizationWindow", given, reader.loc)
    texts = [d for d in reader.deserializers if d.type.lower() == _TEXT]
    # (the reader's chunkSizeInBytes, not a deserializer block's: CompositeDataReader.cpp:155
    # and TextConfigHelper.cpp:127 read the reader's config)
    four_gb = max(1, _4GB // (chunk_bytes(reader) or _32MB)) if texts else None
    if kind == "cntktextformatreader":
        in_samples, _ = _flag(reader, "sampleBasedRandomizationWindow", False)
        if window is None:
            window = _WHOLE_DATA if in_samples else four_gb
    else:
        in_samples, said = _flag(reader, "sampleBasedRandomizationWindow", True)
        # (an enclosing block's randomizationWindow does not count here: ExistsCurrent)
        if texts and reader_setting(reader, "randomizationWindow", inherited=False) is None:
            if said and in_samples:
                raise config_error("'sampleBasedRandomizationWindow' (== 'true') requires that "
                                   "the 'randomizationWindow' is explicitly specified.",
                                   reader.loc)
            window, in_samples = four_gb, False
        elif window is None:
            images = [d for d in reader.deserializers if d.type.lower() == "imagedeserializer"]
            window = 1 if len(images) == len(reader.deserializers) == 1 else _WHOLE_DATA
    if window == 0:
        if kind == "cntktextformatreader":   # no randomizer: file order (CNTKTextFormatReader.cpp:
            return {"randomization_window_in_chunks": 0}                     # 40-54)
        # cntk.exe's block randomizer takes it (CompositeDataReader.cpp:167-168) and gives each
        # chunk the window a window of 1 gives it: half a window is 0 either way in samples
        # (ChunkRandomizer.cpp:82, 100-116), and 0 chunks are made 1 (:123-124)
        window = 1
    return {"randomization_window_in_samples" if in_samples else
            "randomization_window_in_chunks": int(window)}
