"""CNTK's older reader blocks, read as deserializers: ``readerType = "HTKMLFReader"`` (also
``"HTKDeserializers"``, which took the same block) and ``readerType = "LMSequenceReader"``.

These readers had no ``deserializers`` list: their block names each input in a sub-block.

* HTK: a sub-block with ``scpFile`` is a feature stream (``dim``, ``contextWindow``,
  ``type = "real"``), one with ``mlfFile`` or ``mlfFileList`` a label stream (``labelDim``,
  ``labelMappingFile``, ``labelType = "category"``).  Reader keys are looked up in the
  enclosing blocks too, as CNTK did (``frameMode = false ; truncated = true`` are often set at
  the top of a config): ``frameMode`` (default **true** for these readers), ``truncated``,
  ``readMethod`` (``blockRandomize`` or ``none``) and ``randomize`` (``auto``, ``none`` or a
  window size).  HTKMLFReader's ``frameMode = false`` (whole utterances,
  ``nbruttsineachrecurrentiter`` of them in parallel) is read by ``io.UtteranceSource``, which
  makes cntk.exe's minibatches and epochs (``make_source`` opens it with the settings put in
  ``extra`` here: ``parallelSequences``, ``randomizationRange``, ``maxUtteranceLength``);
  with ``truncated = true`` by ``io.TruncatedUtteranceSource`` (``extra["truncated"]``):
  minibatches of ``minibatchSize`` frames of each parallel utterance, whose recurrent state
  the train command carries from minibatch to minibatch (``_state_carry``).
  ``readerType = "HTKDeserializers"`` (CNTK 2's deserializers behind the same block) with
  ``frameMode = false ; truncated = true`` packs CNTK 2's way instead (:func:`_bptt_mode`,
  ``extra["bpttParallel"]`` and ``extra["truncationLength"]``).
* LMSequenceReader: ``file`` (one sentence a line), ``wordclass`` (the vocabulary, lines
  ``id count word class``), ``unk``; a features sub-block (``dim``; ``mode = "class"`` or
  ``"softmax"``) names the input stream, the one-hot of each word; of the two label sub-blocks
  (those with ``labelType``, ``labelDim`` or ``labelMappingFile``), CNTK took the first by name
  as the input's labels and the second (``labelType = "nextWord"``) as the output stream.
  ``nbruttsineachrecurrentiter = N`` (default 1, cntk.exe's) puts ``{"lmParallel": N}`` in
  ``extra`` (and ``cacheBlockSize`` as ``lmBlockWords``, default 50000, the words cntk.exe read,
  shuffled and grouped at a time): ``make_source`` opens an ``io.LMSentenceSource`` (N
  sentences of one length in minibatch-size pieces, the state carried by ``_state_carry``);
  ``0`` (fill by word count) gives whole sentences of one length, fewer words together than
  the minibatch size, from the same source (cntk.exe's grouping).

What Stadyn does not do is refused with a ConfigError naming the key when the reader is opened
(the block itself is still read, so a survey of configs sees every other gap):
``nbruttsineachrecurrentiter`` changing from epoch to epoch, lattices (``denlatTocFile``),
``prefixPathInSCP``, ``mode = "nce"``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .._errors import ConfigError
from ._config import ConfigRecord, to_int

__all__ = ["LEGACY_READERS", "LegacyDeserializer", "LegacyReader", "legacy_reader"]

LEGACY_READERS = {"htkmlfreader", "htkdeserializers", "lmsequencereader"}
_LABEL_KEYS = ("labelMappingFile", "labelDim", "labelType")


@dataclass
class LegacyDeserializer:
    """One deserializer of a legacy block: its type, data file, stream sub-blocks (name,
    block) and parameters."""

    type: str
    file: str = ""
    streams: list[tuple[str, ConfigRecord]] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class LegacyReader:
    deserializers: list[LegacyDeserializer]
    consumed: set[str]          # reader keys read here (not reported as unused)
    randomize: bool
    extra: dict[str, Any]       # settings for make_source (frameMode)
    # what Stadyn does not do: (short label, the error to raise when the reader is opened)
    refused: list[tuple[str, ConfigError]] = field(default_factory=list)


def _owner(rec: ConfigRecord, key: str) -> ConfigRecord | None:
    """The block that sets ``key``: ``rec`` or the nearest block around it (CNTK's lookup)."""
    while rec is not None and key not in rec:
        rec = rec.parent
    return rec


def _err(message: str, rec: ConfigRecord, key: str | None = None) -> ConfigError:
    loc = rec.loc
    owner = None if key is None else _owner(rec, key)
    if owner is not None:
        loc = owner.location(key)
    return ConfigError(message, loc.path, loc.line, loc.column) if loc else ConfigError(message)


def _flag(rec: ConfigRecord, key: str, default: bool) -> bool:
    """A boolean set in ``rec`` or a block around it, read (and refused) by the block that
    sets it (``'frameMode' must be a boolean``, not ``'reader.frameMode'``)."""
    owner = _owner(rec, key)
    return default if owner is None else owner.get_bool(key)


def _subblocks(rec: ConfigRecord) -> list[tuple[str, ConfigRecord]]:
    return [(str(k), rec.peek(k)) for k in rec if isinstance(rec.peek(k), ConfigRecord)]


def _str(rec: ConfigRecord, key: str, default: str) -> str:
    return str(rec.get_str(key, default))


def _randomize(rec: ConfigRecord, reader: str) -> bool:
    """CNTK's ``randomize`` (``auto``, ``none`` or a window in samples) with ``readMethod``."""
    value = rec.lookup("randomize", None)
    window = True
    if value is not None:
        text = str(value).lower()
        if text in ("none", "false"):
            window = False
        elif text not in ("auto", "true"):
            try:
                window = to_int(str(value)) > 0
            except ValueError:
                raise _err(f"{reader}: 'randomize' must be auto, none or a window size, got "
                           f"'{value}'", rec, "randomize") from None
    method = str(rec.lookup("readMethod", "blockRandomize")).lower()
    if method == "none":
        return False
    if method == "rollingwindow":          # CNTK's other randomizer; Stadyn shuffles its own way
        return window
    if method != "blockrandomize":
        raise _err(f"{reader}: 'readMethod' must be blockRandomize, rollingWindow or none, got "
                   f"'{method}'", rec, "readMethod")
    if not window:
        raise _err(f"{reader}: 'randomize' cannot be none when 'readMethod' is blockRandomize "
                   "(CNTK's rule; use readMethod = \"none\")", rec, "randomize")
    return True


def _htk(rec: ConfigRecord, reader: str) -> LegacyReader:
    features, labels = [], []
    refused: list[tuple[str, ConfigError]] = []
    for name, sub in _subblocks(rec):
        if "scpFile" in sub:
            kind = _str(sub, "type", "real")
            if kind.lower() != "real":
                raise _err(f"{reader}: feature '{name}' has type '{kind}'; features are "
                           "type = \"real\"", sub, "type")
            features.append((name, sub))
        elif "mlfFile" in sub or "mlfFileList" in sub:
            kind = _str(sub, "labelType", _str(sub, "type", "category"))
            if kind.lower() != "category":
                raise _err(f"{reader}: label '{name}' has labelType '{kind}'; labels are "
                           "labelType = \"category\"", sub, "labelType" if "labelType" in sub
                           else "type")
            labels.append((name, sub))
        else:
            for key in ("phoneFile", "denlatTocFile"):
                if key in sub:
                    refused.append((key, _err(f"{reader}: '{name}.{key}' (HMM and lattice inputs "
                                              "for sequence training) is not supported", sub,
                                              key)))
    for name, sub in features:
        if "prefixPathInSCP" in sub:
            refused.append(("prefixPathInSCP", _err(
                f"{reader}: '{name}.prefixPathInSCP' is not supported; write the paths into the "
                "script file (a path that starts with ... is relative to it)", sub,
                "prefixPathInSCP")))
    if not features:
        raise _err(f"{reader}: the reader block has no feature block (one with scpFile = ...)",
                   rec)
    frame_mode = _flag(rec, "frameMode", True)
    truncated = _flag(rec, "truncated", False)
    parallel = rec.lookup("nbruttsineachrecurrentiter", None)
    counts = [] if parallel is None else str(parallel).replace(":", " ").split()
    if frame_mode and reader.lower() == "htkmlfreader" and any(c != "1" for c in counts):
        raise _err(f"{reader}: 'nbruttsineachrecurrentiter' cannot be more than 1 in frame mode "
                   "(CNTK's rule; frameMode = true is the default of this reader)", rec,
                   "nbruttsineachrecurrentiter")
    if frame_mode and truncated:
        raise _err(f"{reader}: 'truncated' cannot be true in frame mode (frameMode = true is "
                   "the default of this reader)", rec, "truncated")
    extra: dict[str, Any] = {"frameMode": "true" if frame_mode else "false"}
    if not frame_mode and reader.lower() == "htkmlfreader":
        extra.update(_utterance_mode(rec, reader, counts))
        if truncated:
            extra["truncated"] = True
    elif truncated:                 # HTKDeserializers, frameMode = false
        extra.update(_bptt_mode(rec, reader, counts))
    made = [LegacyDeserializer("HTKFeatureDeserializer", streams=features)]
    made += [LegacyDeserializer("HTKMLFDeserializer", streams=[s]) for s in labels]
    consumed = {n for n, _ in features + labels} | {"readMethod", "frameMode", "truncated",
                                                    "nbruttsineachrecurrentiter",
                                                    "maxUtteranceLength", "truncationLength"}
    if reader.lower() == "htkdeserializers" and str(rec.lookup("action", "")) == "write" and \
            str(rec.lookup("readMethod", "blockRandomize")) != "none":
        # (its ConfigHelper::GetRandomizer, HTKDeserializers/ConfigHelper.cpp:210-219, compares
        # both as written; the older HTKMLFReader reads a write command's data in order)
        refused.append(("readMethod", _err(
            f"{reader}: 'readMethod' must be 'none' for write action (cntk.exe's "
            "InvalidArgument; its default is blockRandomize)", rec,
            "readMethod" if rec.lookup("readMethod", None) is not None else None)))
    return LegacyReader(made, consumed, _randomize(rec, reader), extra, refused)


def _utterance_mode(rec: ConfigRecord, reader: str, counts: list[str]) -> dict[str, Any]:
    """HTKMLFReader's whole-utterance minibatches: the settings of its
    :class:`~stadyn.io.UtteranceSource` (parallel sequences; the randomization window in
    frames, None for ``auto``)."""
    parallel = _parallel(rec, reader, counts)
    method = str(rec.lookup("readMethod", "blockRandomize")).lower()
    if method == "rollingwindow":
        raise _err(f"{reader}: readMethod = \"rollingWindow\" reads frames; frameMode = false "
                   "needs readMethod = \"blockRandomize\"", rec, "readMethod")
    _randomize(rec, reader)                    # checks randomize and readMethod first
    window = str(rec.lookup("randomize", "auto")).lower()
    longest = _positive(rec, reader, "maxUtteranceLength", 10000)
    return {"parallelSequences": parallel, "maxUtteranceLength": longest,
            "randomizationRange": None if window in ("auto", "true", "none", "false")
            else to_int(window)}


def _parallel(rec: ConfigRecord, reader: str, counts: list[str]) -> int:
    """``nbruttsineachrecurrentiter``: one whole number >= 1 (1 where it is not set)."""
    if len(set(counts)) > 1:
        raise _err(f"{reader}: 'nbruttsineachrecurrentiter' changing from epoch to epoch "
                   f"('{':'.join(counts)}') is not supported; give one number", rec,
                   "nbruttsineachrecurrentiter")
    try:
        parallel = to_int(counts[0]) if counts else 1
    except ValueError:
        parallel = 0
    if parallel < 1:
        raise _err(f"{reader}: 'nbruttsineachrecurrentiter' must be a whole number >= 1, got "
                   f"'{counts[0]}'", rec, "nbruttsineachrecurrentiter")
    return parallel


def _bptt_mode(rec: ConfigRecord, reader: str, counts: list[str]) -> dict[str, Any]:
    """``readerType = "HTKDeserializers"``'s ``truncated = true`` (frameMode = false): CNTK 2's
    truncated BPTT packer (Source/Readers/HTKDeserializers/HTKMLFReader.cpp:72-99, 179-199),
    read by :class:`~._bptt_source.TruncatedSequenceSource`: ``truncationLength`` steps a slot
    in ``max(1, minibatchSize / truncationLength)`` slots, or where it is not set (0, "legacy
    configuration"), ``minibatchSize`` steps in ``nbruttsineachrecurrentiter`` slots."""
    length = rec.lookup("truncationLength", 0)
    try:
        length = to_int(str(length))
    except ValueError:
        length = -1
    if length < 0:
        raise _err(f"{reader}: 'truncationLength' must be a whole number >= 0, got "
                   f"'{rec.lookup('truncationLength', 0)}'", rec, "truncationLength")
    return {"truncated": True, "bpttParallel": _parallel(rec, reader, counts),
            "truncationLength": length}


def _is_label(sub: ConfigRecord) -> bool:
    return any(k in sub for k in _LABEL_KEYS) or \
        str(sub.get_str("sectionType", "")).lower() == "labels"


def _lm(rec: ConfigRecord, reader: str) -> LegacyReader:
    blocks = sorted(_subblocks(rec), key=lambda b: b[0].lower())
    labels = [(n, s) for n, s in blocks if _is_label(s)]
    features = [(n, s) for n, s in blocks if not _is_label(s) and "dim" in s]
    if len(labels) != 2:
        raise _err(f"{reader}: expected two label blocks (labelType = ...: the input words and "
                   f"the output, labelType = \"nextWord\"), got "
                   f"{', '.join(n for n, _ in labels) or 'none'}", rec)
    if not features:
        raise _err(f"{reader}: no features block (features = [ dim = 0 ]): it names the input "
                   "stream", rec)
    (in_name, label_in), (out_name, label_out) = labels
    kind_in = _str(label_in, "labelType", "category").lower()
    if kind_in != "category":
        raise _err(f"{reader}: the input labels '{in_name}' must have labelType = \"category\", "
                   f"got '{kind_in}'", label_in, "labelType")
    refused: list[tuple[str, ConfigError]] = []
    kind_out = _str(label_out, "labelType", "category").lower()
    if kind_out not in ("nextword", "none"):
        refused.append((f"labelType {kind_out}", _err(
            f"{reader}: output labels '{out_name}' with labelType = '{kind_out}' (pairs of "
            "words in the file) are not supported; use labelType = \"nextWord\"", label_out,
            "labelType")))
    feature_name, feature = features[0]
    mode = _str(feature, "mode", "class").lower()
    if mode not in ("class", "softmax"):
        refused.append((f"mode {mode}", _err(
            f"{reader}: mode = '{mode}' is not supported (use class or softmax)", feature,
            "mode")))
    extra = _lm_parallel(rec, reader)
    if extra:
        extra["lmBlockWords"] = _block_words(rec, reader)
    params: dict[str, Any] = {
        "wordclass": rec.get_str("wordclass", None), "unk": _str(rec, "unk", "<unk>"),
        "mode": "none" if kind_out == "none" else mode,
        "labelDim": label_in.get_int("labelDim", 0),
        "labelMappingFile": label_in.get_str("labelMappingFile", None),
        "output": None if kind_out == "none" else out_name,
    }
    file = rec.get_str("file", None)
    if file is None:
        raise _err(f"{reader}: the reader block needs file = \"...\" (the text)", rec)
    made = [LegacyDeserializer("LMSequenceReader", str(file), [(feature_name, feature)], params)]
    consumed = {n for n, _ in blocks} | {"file", "wordclass", "unk", "nbruttsineachrecurrentiter"}
    # CNTK's reader shuffled the sentences whatever 'randomize' said
    return LegacyReader(made, consumed, True, extra, refused)


def _lm_parallel(rec: ConfigRecord, reader: str) -> dict[str, Any]:
    """LMSequenceReader's ``nbruttsineachrecurrentiter`` (default 1, as cntk.exe's): N >= 1
    sentences of one length a minibatch, cut into minibatch-size pieces
    (:class:`~stadyn.io.LMSentenceSource`); 0 fills each minibatch with whole sentences of one
    length, fewer words together than the minibatch size (the same source, as cntk.exe's
    reader: its shuffled blocks, its grouping)."""
    value = rec.lookup("nbruttsineachrecurrentiter", None)
    counts = ["1"] if value is None else str(value).replace(":", " ").split()
    if len(set(counts)) > 1:
        raise _err(f"{reader}: 'nbruttsineachrecurrentiter' changing from epoch to epoch "
                   f"('{':'.join(counts)}') is not supported; give one number", rec,
                   "nbruttsineachrecurrentiter")
    try:
        parallel = to_int(counts[0]) if counts else -1
    except ValueError:
        parallel = -1
    if parallel < 0:
        raise _err(f"{reader}: 'nbruttsineachrecurrentiter' must be a whole number >= 0, got "
                   f"'{value}'", rec, "nbruttsineachrecurrentiter")
    return {"lmParallel": parallel}


def _block_words(rec: ConfigRecord, reader: str) -> int:
    """LMSequenceReader's ``cacheBlockSize``: the words of a block of lines it reads, shuffles
    and groups at a time (cntk.exe's default 50000)."""
    return _positive(rec, reader, "cacheBlockSize", 50000)


def _positive(rec: ConfigRecord, reader: str, key: str, default: int) -> int:
    """A whole number >= 1 set in ``rec`` or a block around it (``default`` when unset)."""
    value = rec.lookup(key, default)
    try:
        number = to_int(str(value))
    except ValueError:
        number = 0
    if number < 1:
        raise _err(f"{reader}: '{key}' must be a whole number >= 1, got '{value}'", rec, key)
    return number


def legacy_reader(rec: ConfigRecord, reader_type: str) -> LegacyReader:
    """The deserializers of a legacy reader block (``reader_type`` in ``LEGACY_READERS``)."""
    if reader_type.lower() == "lmsequencereader":
        return _lm(rec, reader_type)
    return _htk(rec, reader_type)

