"""A BrainScript ``reader`` block as a :class:`stadyn.io.MinibatchSource`.

Deserializers (opened by ``_deserializer_builders``): ``ImageDeserializer`` (a map file; the
stream with ``labelDim`` is the one-hot label, the other the image with its ``transforms`` list:
``Crop``, ``Scale``, ``Mean``, ``Color`` and ``Transpose`` — a no-op, Stadyn delivers C, H, W)
and ``CNTKTextFormatDeserializer`` (also written ``readerType = "CNTKTextFormatReader"`` with
``file`` and ``input``; streams with ``dim``, ``format = "dense" | "sparse"`` and an optional
``alias``, the name in the file), ``CNTKBinaryFormatDeserializer`` (``file``; streams optionally
renaming the file's inputs with ``alias``), and the speech pair ``HTKFeatureDeserializer``
(streams with ``dim``, ``scpFile``, ``contextWindow = 11`` or ``= 5:5``, ``expandToUtterance``,
``maxSequenceSize``) and ``HTKMLFDeserializer`` (a stream with ``labelDim``, ``mlfFile`` or
``mlfFileList``, ``labelMappingFile``, ``phoneBoundaries``).
Several deserializers are joined by sequence key.
``randomize`` (CNTK's default: true) shuffles every sweep; ``frameMode = true`` makes every frame
a sample.  CNTK's older ``readerType = "HTKMLFReader"`` blocks come here as that speech pair
(with ``frameMode = false`` read by :class:`stadyn.io.UtteranceSource`, cntk.exe's whole-utterance
minibatches), and ``readerType = "LMSequenceReader"`` as an ``LMSequenceReader`` deserializer
(``_legacy_readers`` reads those blocks; ``_deserializer_builders`` opens the word-class and label
mapping files).

Keys this module does not use are reported (as warnings through ``warn``), since CNTK accepted
many reader keys that only tune its own engine.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import io
from .._errors import StadynError
from . import _deserializer_builders as _builders
from ._ast import config_error
from ._blocks import CommandConfig, ReaderConfig
from ._bptt_source import TruncatedSequenceSource, truncation_length
from ._deserializer_builders import HTK_LABEL_TYPES, LM_TYPES
from ._htk_screening import screen_utterances
from ._reader_windows import randomization_window, reader_setting
from ._legacy_readers import LEGACY_READERS

__all__ = ["LM_DATA_PARALLEL", "OpenedReaders", "command_sequence_streams", "make_source",
           "reader_deserializers", "sequence_streams",
           "stream_names", "utterance_mode"]

# Reader keys that only tune CNTK's engine (no effect here), and those read elsewhere.
_READER_NO_EFFECT = {"prefetch",
                     "multithreadeddeserialization", "truncated",
                     "maxerrors", "tracelevel", "cachedir", "randomizationseed",
                     "numcputhreads",
                     # the legacy readers' (HTKMLFReader, LMSequenceReader): their engine, their
                     # random generator, and LMSequenceReader's binary cache of the text
                     "minibatchmode", "usemersennetwisterrand", "cacheblocksize", "writertype",
                     "wfile", "wsize", "wrecords", "windowsize"}
# reader keys read by _reader_windows (the randomized order's window, a text file's chunks)
_READER_NO_EFFECT |= {"randomizationwindow", "samplebasedrandomizationwindow", "chunksizeinbytes"}
# and by _bptt_source (a deserializers list's truncated = true)
_READER_NO_EFFECT |= {"truncationlength"}
# and by _deserializer_builders (an HTK deserializer's limit on an utterance's frames)
_READER_NO_EFFECT |= {"maxsequencesize"}
# stream keys of the legacy readers' blocks that only described CNTK's own buffers or were
# checked when the block was read (type = "real", labelType = "category", ...)
_LEGACY_STREAM_KEYS = {"type", "labeltype", "sectiontype", "mode", "elementsize", "wrecords",
                       "mapping", "category", "beginsequence", "endsequence", "maxsequencesize"}
# what _legacy_readers passes on in ReaderConfig.extra (the utterance mode's settings)
_LEGACY_SETTINGS = {"framemode", "parallelsequences", "randomizationrange",
                    "maxutterancelength", "truncated", "lmparallel", "lmblockwords",
                    "oneutteranceaminibatch"}
# stream keys the HTK and binary deserializers read (beyond dim / labelDim / alias)
# (a stream's maxSequenceSize: read by readerType = "HTKDeserializers" only, _LEGACY_STREAM_KEYS;
# a deserializers list's HTK reader reads the deserializer block's, _deserializer_builders)
_USED_STREAM_KEYS = {"scpfile", "contextwindow", "expandtoutterance",
                     "mlffile", "mlffilelist", "labelmappingfile", "phoneboundaries"}


# cntk.exe's LMSequenceReader cannot read distributed (SupportsDistributedMBRead is false): each
# worker read every minibatch and kept its share of the parallel sentences
# (DataReaderHelpers.h, DecimateMinibatchInPlace); Stadyn's sentence source has no such split
LM_DATA_PARALLEL = ("an LMSequenceReader with nbruttsineachrecurrentiter >= 1 cannot be read by "
                    "the workers of a data-parallel job (stadyn train --nproc) yet: train it in "
                    "one process")


def stream_names(reader: ReaderConfig) -> list[str]:
    """The names of the streams the reader delivers, in order."""
    return [s.name for d in reader.deserializers for s in d.streams]


def utterance_mode(reader: ReaderConfig) -> bool:
    """Whether the reader is an ``HTKMLFReader`` with ``frameMode = false``: whole utterances,
    read by :class:`stadyn.io.UtteranceSource`."""
    return reader.extra.get("parallelSequences") is not None


def _unused(reader: ReaderConfig, warn: Callable[[str], None]) -> None:
    for key in reader.extra:
        if key.lower() not in _READER_NO_EFFECT | _LEGACY_SETTINGS:
            warn(f"WARNING: reader key '{key}' is not used by Stadyn")
    for d in reader.deserializers:
        for key in d.params:
            if key.lower() not in _READER_NO_EFFECT and d.type.lower() not in LM_TYPES:
                warn(f"WARNING: deserializer key '{key}' ({d.type}) is not used by Stadyn")
        legacy = d.module is not None and d.module.lower() in LEGACY_READERS
        for s in d.streams:
            for key in s.params:
                if key.lower() not in _USED_STREAM_KEYS and not (
                        legacy and key.lower() in _LEGACY_STREAM_KEYS):
                    warn(f"WARNING: stream key '{s.name}.{key}' is not used by Stadyn")


class OpenedReaders:
    """The deserializers :func:`sequence_streams` opened (indexed) to look at a reader block's
    data, kept for the block's source (:func:`make_source`), so that a command opens its reader
    once; with what it found.  :meth:`close` closes those no source took.

    >>> opened = OpenedReaders()
    >>> opened.take(None), opened.close()
    (None, None)
    """

    def __init__(self) -> None:
        self._kept: list[tuple[ReaderConfig, list[io.Deserializer], frozenset[str]]] = []

    def _find(self, reader: Any) -> int | None:
        return next((i for i, (r, _, _) in enumerate(self._kept) if r is reader), None)

    def found(self, reader: ReaderConfig) -> frozenset[str] | None:
        """What :func:`sequence_streams` found for this block, if it keeps its deserializers."""
        i = self._find(reader)
        return None if i is None else self._kept[i][2]

    def keep(self, reader: ReaderConfig, made: list[io.Deserializer],
             found: frozenset[str]) -> None:
        self._kept.append((reader, made, found))

    def take(self, reader: Any, *, remember: bool = False) -> list[io.Deserializer] | None:
        """The block's opened deserializers, handed over (None where none are kept); with
        ``remember``, what :func:`sequence_streams` found stays known for the block (a later
        look does not open it again)."""
        i = self._find(reader)
        if i is None:
            return None
        block, made, found = self._kept[i]
        if remember:
            self._kept[i] = (block, [], found)
        else:
            del self._kept[i]
        return made

    def close(self) -> None:
        for _, made, _ in self._kept:
            for d in made:
                d.close()
        self._kept = []


def make_source(reader: ReaderConfig, *, max_sweeps: int = io.INFINITELY_REPEAT,
                warn: Callable[[str], None] | None = None,
                pieces: bool = False, evaluating: bool = False, writing: bool = False,
                opened: list[io.Deserializer] | None = None,
                set_back: bool = False) -> io.MinibatchSource:
    """The minibatch source a reader block describes (streams named as in the block): of the
    deserializers ``opened`` (:meth:`OpenedReaders.take`) where given, else opened now.  Where
    it fails (a deserializer that cannot be made, a key of a bad value), the deserializers it
    was given or made are closed.

    An HTKMLFReader with ``truncated = true`` gives its utterances in minibatch-sized pieces
    (:class:`stadyn.io.TruncatedUtteranceSource`) only with ``pieces``: for a train command,
    which carries the recurrent state from piece to piece (``_state_carry``).  Any other
    reading (cvReader, test, eval, write, the pre-computing pass) gets whole utterances, whose
    values are the pieces' with the state carried, as cntk.exe's evaluation carried it (one
    utterance a sequence: short ones are not joined as utterance mode joins them).

    A deserializers list's ``truncated = true`` is read in truncated pieces
    (:class:`~._bptt_source.TruncatedSequenceSource`) with ``pieces`` and with ``evaluating``
    (a test, eval or cv command, a cvReader: cntk.exe's evaluator reads the reader it
    packs so, CompositeDataReader.cpp:57-85, carrying the recurrent state from one piece to
    the next); a pre-computing pass over the whole sweep reads whole sequences (the same
    sums), one that stops inside the first sweep reads the training source's truncated
    minibatches itself (``_precompute``: cntk.exe's epoch 1 then reshuffles with seed 0).
    ``readerType = "HTKDeserializers"`` with ``truncated = true`` packs truncated pieces for
    those and with ``writing`` (a write command: HTKMLFReader.cpp:72-86 reads no action).

    With ``set_back`` (a cvReader, read from its start again at each validation) a block
    randomizer's source is set back as cntk.exe's (:class:`stadyn.io.MinibatchSource`'s
    ``cntk_seeks``): a pass after one that read the whole sweep starts before the chunks its
    randomizer still holds, which shuffles the sweep's sequences anew with the seed 0
    (SequenceRandomizer.cpp:281-288, ``Reset(sweep)``), the chunks in the same order.

    >>> import os, tempfile
    >>> from stadyn.brainscript import parse_config, reader_config
    >>> d = tempfile.mkdtemp(); path = os.path.join(d, "t.txt")
    >>> _ = open(path, "w").write("|x 1 2 |y 0 1\\n|x 3 4 |y 1 0\\n")
    >>> r = reader_config(parse_config(f'''reader = {{ readerType = "CNTKTextFormatReader"
    ...     file = "{path}" ; randomize = false
    ...     input = {{ x = {{ dim = 2 ; format = "dense" }}
    ...                y = {{ dim = 2 ; format = "dense" }} }} }}''')["reader"])
    >>> mb = make_source(r).next_minibatch(2)
    >>> mb["x"].data.tolist(), mb["y"].data.tolist()
    ([[1.0, 2.0], [3.0, 4.0]], [[0.0, 1.0], [1.0, 0.0]])
    """
    made = opened
    try:
        _check_block(reader)
        if warn is not None:
            _unused(reader, warn)
        made = reader_deserializers(reader, opened=opened)
        return _source(reader, made, max_sweeps, warn, pieces, evaluating, writing, set_back)
    except BaseException:      # (the deserializers handed over or made here: none left open)
        for d in made or ():
            d.close()
        raise


def reader_deserializers(reader: ReaderConfig, *,
                         opened: list[io.Deserializer] | None = None) -> list[io.Deserializer]:
    """The deserializers of a reader block, in its order, for :func:`make_source`: ``opened``
    (:meth:`OpenedReaders.take`) where given, else opened (indexed) now.  A command that reads
    its reader twice (the pre-computing pass, then training) gives both sources these, as
    cntk.exe's one reader serves both (SGD.cpp:413, ``PreCompute (net, trainSetDataReader,
    ...)``): each file is indexed once.  A
    block of no deserializers, or one refused, is a ConfigError at its line; where a
    deserializer fails, those made before it are closed.

    >>> import os, tempfile
    >>> from stadyn.brainscript import parse_config, reader_config
    >>> path = os.path.join(tempfile.mkdtemp(), "t.txt")
    >>> _ = open(path, "w").write("|x 1 2\\n|x 3 4\\n")
    >>> r = reader_config(parse_config(f'''reader = {{ readerType = "CNTKTextFormatReader"
    ...     file = "{path}" ; input = {{ x = {{ dim = 2 ; format = "dense" }} }} }}''')["reader"])
    >>> made = reader_deserializers(r)
    >>> [type(d).__name__ for d in made]
    ['CTFDeserializer']
    >>> [len(d) for d in made], make_source(r, opened=made).sweep_size
    ([2], 2)
    """
    _check_block(reader)
    return opened if opened is not None else _builders.open_deserializers(reader)


def _check_block(reader: ReaderConfig) -> None:
    if not reader.deserializers:
        kind = f" '{reader.reader_type}'" if reader.reader_type else ""
        raise config_error(f"the reader block{kind} defines no deserializers (use deserializers = "
                           "({ type = \"ImageDeserializer\" ... }) or readerType = "
                           "\"CNTKTextFormatReader\")", reader.loc)
    if reader.refused:
        raise reader.refused[0][1]


def _source(reader: ReaderConfig, made: list[io.Deserializer], max_sweeps: int,
            warn: Callable[[str], None] | None, pieces: bool,
            evaluating: bool = False, writing: bool = False,
            set_back: bool = False) -> io.MinibatchSource:
    """:func:`make_source`'s source over the deserializers ``made``."""
    if str(reader.reader_type or "").lower() == "htkmlfreader":
        made = screen_utterances(reader, made, HTK_LABEL_TYPES, warn)
    # (the block's, else a block's around it: ReaderUtil.h:17-19, config(key, 0))
    seed = reader_setting(reader, "randomizationSeed") or 0
    try:
        seed = int(str(seed))
    except ValueError:
        raise config_error(f"randomizationSeed must be an integer, got '{seed}'",
                           reader.loc) from None
    frame_mode = _frame_mode(reader)
    truncation = truncation_length(reader, frame_mode)
    if reader.extra.get("lmParallel") is not None:   # LMSequenceReader
        return io.LMSentenceSource(made[0], int(reader.extra["lmParallel"]),
                                   randomize=reader.randomize,
                                   block_words=int(reader.extra.get("lmBlockWords", 50000)))
    if utterance_mode(reader):         # HTKMLFReader, frameMode = false: _legacy_readers
        parallel = reader.extra["parallelSequences"]
        window = reader.extra.get("randomizationRange")
        truncated = bool(reader.extra.get("truncated"))
        options = dict(randomize=reader.randomize,
                       randomization_range=io.AUTO_RANDOMIZATION_RANGE
                       if window is None else int(window),
                       max_utterance_length=int(reader.extra["maxUtteranceLength"]))
        if truncated and pieces:
            return io.TruncatedUtteranceSource(made, int(parallel), **options)
        # a truncated reader's utterances read whole: one a sequence (never joined), as the
        # carried state restarted at each
        # (a write command's: one utterance a minibatch, _reader_blocks.written_reader)
        whole = truncated or bool(reader.extra.get("oneUtteranceAMinibatch"))
        return io.UtteranceSource(made, int(parallel), join_short=not whole, **options)
    window = randomization_window(reader) if reader.randomize else {}
    # (a truncated cvReader replays its order: after a sweep its packer asked into the next,
    # so a pass from 0 re-randomizes with the seed, BlockRandomizer.cpp:254, 471-484)
    seeks = set_back and pieces
    if truncation and (pieces or evaluating):   # truncated BPTT (_bptt_source)
        return TruncatedSequenceSource(made, truncation, randomize=reader.randomize,
                                       randomization_seed=seed, max_sweeps=max_sweeps,
                                       cntk_seeks=seeks, **window)
    # HTKDeserializers' (truncated for every action, write too: HTKMLFReader.cpp:72-86; the
    # pre-computing pass reads whole utterances here, the same sums)
    if reader.extra.get("bpttParallel") is not None and (pieces or evaluating or writing):
        return TruncatedSequenceSource(made, int(reader.extra["truncationLength"]) or None,
                                       int(reader.extra["bpttParallel"]),
                                       randomize=reader.randomize, randomization_seed=seed,
                                       max_sweeps=max_sweeps, cntk_seeks=seeks, **window)
    return io.MinibatchSource(made, max_sweeps=max_sweeps, randomize=reader.randomize,
                              randomization_seed=seed,
                              frame_mode=frame_mode, cntk_seeks=set_back, **window)


def sequence_streams(reader: ReaderConfig | None,
                     opened: OpenedReaders | None = None) -> frozenset[str]:
    """The streams (their names in lower case) of a reader block that deliver sequences of more
    than one step: a CTF file whose sequences give the stream on several lines (a stream on a
    sequence's first line only gives one step), HTK utterances, CBF
    sequences, LMSequenceReader sentences -- not in frame mode.  cntk.exe's Inputs are all
    sequences (each gets the network's MBLayout, ``ComputationNetwork::ResetMBLayouts``,
    ComputationNetworkEvaluation.cpp:626-633, which the reader's layout is copied into,
    ReaderShim.cpp:318-327), so such a stream makes the Inputs sequences whatever the
    network description uses.  Empty for no reader, or one that cannot be opened (the command
    reading it says why, where cntk.exe opens it).  With ``opened``, the deserializers opened
    stay open there for the block's source (and a block looked at before is not opened again).

    >>> import os, tempfile
    >>> from stadyn.brainscript import parse_config, reader_config
    >>> path = os.path.join(tempfile.mkdtemp(), "t.txt")
    >>> _ = open(path, "w").write("0 |x 1 2 |y 0 1\\n0 |x 3 4\\n1 |x 5 6 |y 1 0\\n")
    >>> r = reader_config(parse_config(f'''reader = {{ readerType = "CNTKTextFormatReader"
    ...     file = "{path}" ; input = {{ x = {{ dim = 2 ; format = "dense" }}
    ...     y = {{ dim = 2 ; format = "dense" }} }} }}''')["reader"])
    >>> sorted(sequence_streams(r)), sorted(sequence_streams(None))   # (y: one step each)
    (['x'], [])
    """
    if reader is None or not reader.deserializers or reader.refused:
        return frozenset()
    known = opened.found(reader) if opened is not None else None
    if known is not None:
        return known
    made: list[io.Deserializer] = []
    kept = False
    try:
        if _frame_mode(reader):
            return frozenset()
        made = _builders.open_deserializers(reader)
        found: set[str] = set()
        for d in made:
            lengths = d.sequence_lengths()
            if lengths is not None and len(lengths) and int(np.max(lengths)) > 1:
                # each stream's own steps where the deserializer counts them (a CTF label on
                # a sequence's first line only is one step, as cntk.exe's reader lays it out)
                own = getattr(d, "stream_lengths", dict)()
                found.update(name.lower() for name, spec in d.stream_specs().items()
                             if spec.is_sequence and (
                                 name not in own or int(np.max(own[name], initial=0)) > 1))
        if opened is not None:
            opened.keep(reader, made, frozenset(found))
            kept = True
        return frozenset(found)
    except (StadynError, OSError, ValueError, TypeError):
        return frozenset()
    finally:
        if not kept:
            for d in made:
                d.close()


def command_sequence_streams(cmd: CommandConfig, commands: Sequence[CommandConfig],
                             opened: OpenedReaders | None = None) -> frozenset[str]:
    """:func:`sequence_streams` of the readers a command's network is fed from: its ``reader``
    and ``cvReader``; a command with no reader (an ``edit`` action, whose model a later
    command reads) those of every command of ``commands`` (the run's)."""
    if cmd.reader is None:      # (read by other commands: looked at, then closed)
        return frozenset().union(*(sequence_streams(r) for c in commands
                                   for r in (c.reader, c.cv_reader) if r is not None))
    # the command's reader and cvReader stay open in ``opened`` for their sources: each is
    # opened once a command
    return frozenset().union(*(sequence_streams(r, opened) for r in (cmd.reader, cmd.cv_reader)
                               if r is not None))


def _frame_mode(reader: ReaderConfig) -> bool:
    """``frameMode``: the block's, else a block's around it (CompositeDataReader.cpp:58 and
    TextConfigHelper.cpp:129 read ``config(L"frameMode", false)``, Config.h:971-989)."""
    frame_mode = reader_setting(reader, "frameMode")
    frame_mode = False if frame_mode is None else frame_mode
    if str(frame_mode).lower() not in ("true", "false"):
        raise config_error(f"frameMode must be true or false, got '{frame_mode}'", reader.loc)
    return str(frame_mode).lower() == "true"
