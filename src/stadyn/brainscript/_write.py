"""The ``write`` action: CNTK's ``DoWriteOutput`` (``SimpleOutputWriter::WriteOutput`` and
``ComputationNode::WriteMinibatchWithFormatting``) -- the values of ``outputNodeNames`` (default:
the network's output nodes) over one sweep of the reader, not randomised, written as text to
``outputPath.<node name>`` (``outputPath = "-"``: all to standard output).

Each sequence is written as ``sequencePrologue``, its steps (one row per step, separated by
``sampleSeparator``, the values of a row by ``elementSeparator``) and ``sequenceEpilogue``
(default ``"\\n"``), with ``sequenceSeparator`` between sequences; a value that is not a
sequence is a sequence of one step (a loaded model's node fed the steps of the reader's
sequences as samples: those sequences, as cntk.exe writes the reader's layout; a node with no
batch axis, no MBLayout in cntk.exe: one sequence of its CNTK columns); a criterion node of
CNTK's per-sample kind (:data:`MINIBATCH_SUMS`: ``CrossEntropyWithSoftmax``,
``ClassificationError``, ...) has no MBLayout in cntk.exe either and is written as one value a
minibatch, the sum over its samples (``1 1|<sum>``); so the default is one line per sample,
its values in CNTK's column-major order, each as ``%f`` (``precisionFormat = ".2"``:
``%.2f``).  The ``format``
block's ``type = "category"`` writes the index of each row's largest value (the last of equal
ones, as CNTK), as a label of ``labelMappingFile`` if given; ``transpose = false`` writes one
row per element (prefixed by its ``[w,h,c]`` index when the sample has several axes), the steps
across.  ``prologue`` and ``epilogue`` frame each file; in every separator ``\\n``, ``\\t``,
``\\r`` and ``\\s`` are a newline, tab, return and space, ``%s`` the node's name, ``%n`` the
minibatch's number, ``%x`` (in ``sequencePrologue`` and ``sampleSeparator``) the sample's
dimensions and the sequence's length and ``%d`` (there too) the sequence's index in its
minibatch (its reader's sequence id, SequencePacker.cpp:26; 0 for a node of no MBLayout,
ComputationNode.cpp:818-823; elsewhere written as is, as cntk.exe) and, where the command
says ``writeSequenceKey = true`` (EvalActions.cpp:259), ``%k`` (there too) the sequence's key
in its data (:func:`stadyn.io.sequence_keys`: a CTF sequence id, a line's number counted from
0, an utterance's name; a node of no MBLayout: its minibatch's first sequence's;
ComputationNode.cpp:839-840, 890-896, PackerBase.cpp:150-165); without it, or with an older
``HTKMLFReader``/``LMSequenceReader`` (their minibatches carry no keys), ``%k`` is written as is;
with ``readerType = "CNTKTextFormatReader"``, ``"ImageReader"`` or ``"HTKDeserializers"`` (a
key function that raises, PackerBase.cpp:140-147) it is cntk.exe's error: keys need a
``deserializers`` list.  ``readerType = "HTKDeserializers"`` reads its ``frameMode`` (default
true) for a write command too: each frame is then a sequence of one step
(:func:`~._reader_blocks.written_reader`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import numpy as np
import torch

from .. import io
from .._errors import ConfigError
from ..graph import Variable, forward_all, training
from ..train import feed
from ._command_network import loc_of
from ._input_source import InputSource
from ._config import ConfigRecord
from ._legacy_readers import LEGACY_READERS

__all__ = ["MINIBATCH_SUMS", "WriteFormat", "write_format", "write_outputs"]

#: the operations cntk.exe computes as one number a minibatch, of no MBLayout: the nodes that
#: validate with ``ValidateBinaryReduce`` (ComputationNode.cpp:470-491: ``m_pMBLayout =
#: nullptr``, a scalar; EvaluationNodes.h, TrainingNodes.h) which Stadyn computes per sample
#: (its ``EditDistanceError``, ``LambdaRank``, ``NDCG1Eval``, ``WeightedLogistic`` are one
#: number a minibatch already); ``write`` writes their sum over the minibatch's samples
MINIBATCH_SUMS = frozenset({"CrossEntropyWithSoftmax", "ClassificationError", "SquareError",
                            "CrossEntropy", "Logistic"})
#: the readers whose minibatches' key function raises (their packers have no corpus:
#: CNTKTextFormatReader.cpp:57-67, ImageReader.cpp:84, HTKDeserializers' HTKMLFReader.cpp:
#: 166-175, PackerBase.cpp:140-147): ``%k`` under ``writeSequenceKey`` is cntk.exe's error
_KEYLESS_READERS = frozenset({"cntktextformatreader", "imagereader", "htkdeserializers"})
#: the older readers that are no reader shim (HTKMLFReader, LMSequenceReader): their
#: minibatches carry no key function (``%k`` is written as is) and their sequence ids count
#: the process's sequences (``%d`` is refused); ``HTKDeserializers`` packs with the reader
#: library's packers (its Exports.cpp: a ``ReaderShim``)
_OWN_LAYOUT_READERS = frozenset(LEGACY_READERS - {"htkdeserializers"})


@dataclass(frozen=True)
class WriteFormat:
    """A ``write`` command's ``format`` block (CNTK's ``WriteFormattingOptions``)."""

    category: bool = False
    label_mapping: tuple[str, ...] = ()
    transpose: bool = True
    prologue: str = ""
    epilogue: str = ""
    sequence_separator: str = ""
    sequence_prologue: str = ""
    sequence_epilogue: str = "\n"
    element_separator: str = " "
    sample_separator: str = "\n"
    precision: str = ""
    #: the command's ``writeSequenceKey`` with a deserializer reader: ``%k`` is the key
    sequence_keys: bool = False

    @property
    def value_format(self) -> str:
        kind = "f" if not self.category else ("s" if self.label_mapping else "u")
        return "%" + self.precision + kind


def write_format(record: ConfigRecord, reader: Any = None) -> WriteFormat:
    """The ``format`` block of a write command (also from an enclosing block), as CNTK read it,
    and its ``writeSequenceKey``; ``reader``: the command's reader block (``%d`` of an older
    reader's is refused; its ``%k`` is written as is; a CNTKTextFormatReader's or ImageReader's
    ``%k`` under ``writeSequenceKey`` is refused, as cntk.exe refuses it).

    >>> from stadyn.brainscript import parse_config
    >>> f = write_format(parse_config('W = { format = { type = "category" ; '
    ...                               'sequenceEpilogue = "\\\\n--\\\\n" } }')["W"])
    >>> f.category, f.sequence_epilogue, f.value_format
    (True, '\\\\n--\\\\n', '%u')
    """
    # (cntk.exe: config(L"writeSequenceKey", false), the command's or a block's around it,
    # EvalActions.cpp:259; an older reader's minibatches carry no key function, so its %k
    # stays, SimpleOutputWriter.h:244, ComputationNode.cpp:890)
    older = str(getattr(reader, "reader_type", None) or "").lower() in _OWN_LAYOUT_READERS
    keys = bool(record.get_bool("writeSequenceKey", False, inherited=True)) and not older
    block = record.lookup("format", None)
    if block is None:
        return WriteFormat(sequence_keys=keys)
    if not isinstance(block, ConfigRecord):
        raise ConfigError("write: 'format' must be a block { type = ... }", *loc_of(block))
    kind = str(block.get_str("type", "real")).lower()
    if kind not in ("real", "category"):
        raise ConfigError(f"write: format type must be 'real' or 'category' ('sparse' is not "
                          f"supported yet), got '{kind}'", *loc_of(block.get("type")))
    labels: tuple[str, ...] = ()
    mapping = block.get_str("labelMappingFile", "")
    if kind == "category" and str(mapping):
        try:
            with open(str(mapping), encoding="utf-8") as f:
                labels = tuple(line.rstrip("\r\n") for line in f if line.strip())
        except OSError as exc:
            raise ConfigError(f"write: cannot read labelMappingFile '{mapping}': "
                              f"{exc.strerror or exc}", *loc_of(mapping)) from None
    defaults = WriteFormat()
    text = {key: str(block.get_str(key, getattr(defaults, attr))) for key, attr in (
        ("prologue", "prologue"), ("epilogue", "epilogue"),
        ("sequenceSeparator", "sequence_separator"), ("sequencePrologue", "sequence_prologue"),
        ("sequenceEpilogue", "sequence_epilogue"), ("elementSeparator", "element_separator"),
        ("sampleSeparator", "sample_separator"), ("precisionFormat", "precision"))}
    # (%d: an HTKMLFReader's or LMSequenceReader's sequence ids count the sequences of the
    # whole process, Sequences.h:356-361, NEW_SEQUENCE_ID: not followed)
    keyless = keys and str(getattr(reader, "reader_type", None) or "").lower() in _KEYLESS_READERS
    for key in ("sequencePrologue", "sampleSeparator") if keyless else ():
        if "%k" in text[key]:
            raise ConfigError(f"write: %k in format.{key} with writeSequenceKey = true needs a "
                              f"reader of deserializers (deserializers = (...)): a "
                              f"readerType = \"{reader.reader_type}\" gives no keys (cntk.exe: "
                              "'Sequence Id mapping is not available for old style "
                              "configurations. Please use deserializers.')",
                              *loc_of(block.get(key)))
    for key in ("sequencePrologue", "sampleSeparator") if older else ():
        if "%d" in text[key]:
            raise ConfigError(f"write: %d (the reader's sequence id) in format.{key} is not "
                              "supported yet with an older reader", *loc_of(block.get(key)))
    return WriteFormat(kind == "category", labels, bool(block.get_bool("transpose", True)),
                       text["prologue"], text["epilogue"], text["sequenceSeparator"],
                       text["sequencePrologue"], text["sequenceEpilogue"],
                       text["elementSeparator"], text["sampleSeparator"], text["precisionFormat"],
                       keys)


def _processed(fragment: str, name: str, minibatch: int) -> str:
    """CNTK's ``WriteFormattingOptions::Processed``."""
    for escape, char in (("\\n", "\n"), ("\\r", "\r"), ("\\t", "\t"), ("\\s", " ")):
        fragment = fragment.replace(escape, char)
    return fragment.replace("%s", name).replace("%n", str(minibatch))


def _value(fmt: WriteFormat, v: float) -> str:
    kind = fmt.value_format[-1]
    if kind == "f":
        return fmt.value_format % (abs(v) if v == 0 else v)   # no '-0.000000'
    index = int(v)
    if kind == "u":
        return fmt.value_format % index
    return fmt.value_format % fmt.label_mapping[index % len(fmt.label_mapping)]


def _cntk_dims(sample: tuple[int, ...]) -> list[int]:
    return list(reversed(sample)) or [1]


def _write_sequence(out: TextIO, steps: np.ndarray, fmt: WriteFormat, parts: dict[str, str],
                    sample: tuple[int, ...], layout: list[int] | None = None,
                    index: int = 0, key: str | None = None) -> None:
    """One sequence: ``steps`` is ``(T, values...)``, each step's values in Stadyn's order;
    ``layout``: the CNTK dimensions ``%x`` shows, where they are not the step's (a node of no
    MBLayout shows its whole shape); ``index``: its place in the minibatch (``%d``); ``key``:
    its key (``%k``; None: written as is)."""
    rows = steps.reshape(len(steps), -1).astype(np.float64)
    if fmt.category:             # the index of the largest value, the last of equal ones
        rows = (rows.shape[1] - 1 - np.argmax(rows[:, ::-1], axis=1)).astype(np.float64)[:, None]
    dims = _cntk_dims(sample) if layout is None else layout
    shape = "".join(f"{d} " for d in dims) + str(len(rows))
    # (%x, then %d: ComputationNode.cpp:872-887)
    prologue = parts["sequence_prologue"].replace("%x", shape).replace("%d", str(index))
    separator = parts["sample_separator"].replace("%x", shape).replace("%d", str(index))
    if key is not None:         # (then %k: ComputationNode.cpp:890-896)
        prologue, separator = prologue.replace("%k", key), separator.replace("%k", key)
    out.write(prologue)
    if fmt.transpose:
        table = rows
    else:
        table = rows.T
    # the [i,j] index of each row: of the sample's dimensions, of a node of no MBLayout those
    # of its whole value (its sample layout: ComputationNode.cpp:1027-1032, W [3 x 4]'s rows
    # are [0,0] [1,0] [2,0])
    dims = _cntk_dims(sample) if layout is None else layout
    strides = np.cumprod([1] + dims[:-1])
    for j, row in enumerate(table):
        if j > 0:
            out.write(separator)
        if not fmt.transpose and len(dims) > 1 and not fmt.category:
            index = ",".join(str((j // int(s)) % d) for s, d in zip(strides, dims))
            out.write(f"[{index}]\t")
        out.write(parts["element_separator"].join(_value(fmt, float(v)) for v in row))
    out.write(parts["sequence_epilogue"])


def _write_minibatch(out: TextIO, node: Variable, name: str, fmt: WriteFormat,
                     minibatch: int, *, batched: bool, summed: bool = False,
                     framed: list[int] | None = None,
                     key: Callable[[int], str | None] = lambda k: None) -> None:
    """One minibatch of ``node``; ``framed``: the lengths of the reader's sequences whose steps
    were fed as samples (:attr:`InputSource.framed_lengths`), a node of one row a step of them
    written as those sequences; ``key``: the key of the minibatch's sequence ``k`` (``%k``)."""
    parts = {key: _processed(getattr(fmt, key), name, minibatch) for key in (
        "sequence_separator", "sequence_prologue", "sequence_epilogue", "element_separator",
        "sample_separator")}
    values = np.asarray(node.d)
    if summed and batched:
        # a criterion of no MBLayout in cntk.exe: one value, the sum over the minibatch's
        # samples (the real steps of its sequences), written as one sequence of one step
        if node.sequence_lengths is not None:
            lengths = [int(n) for n in np.asarray(node.sequence_lengths.d).reshape(-1)]
            total = sum(float(values[s, :n].astype(np.float64).sum())
                        for s, n in enumerate(lengths))
        else:
            total = float(values.astype(np.float64).sum())
        # (one sequence of id 0: the key of the minibatch's sequence 0, PackerBase.cpp:165)
        _write_sequence(out, np.array([[total]]), fmt, parts, (1,), [1], key=key(0))
        return
    if node.sequence_lengths is not None:
        lengths = [int(n) for n in np.asarray(node.sequence_lengths.d).reshape(-1)]
        sample = tuple(values.shape[2:])
        sequences = [values[s, :n] for s, n in enumerate(lengths)]
    elif not batched:
        # no batch axis (a parameter, a criterion summed over the minibatch): cntk.exe's node
        # has no MBLayout and is written as one sequence of its columns (ComputationNode.cpp:
        # 818-823), its first dimension the rows, the others the columns (ComputationNode.h:
        # 1704-1711); Stadyn's last axis is CNTK's first
        rows = values.reshape(-1, values.shape[-1] if values.ndim else 1)
        _write_sequence(out, rows, fmt, parts, tuple(values.shape[-1:]), _cntk_dims(
            tuple(values.shape)), key=key(0))
        return
    elif framed is not None and sum(framed) == values.shape[0]:
        # a loaded model's Inputs fed each step of the reader's sequences as a sample: in
        # cntk.exe they are on the reader's layout (ComputationNetworkEvaluation.cpp:628-632),
        # and the node's values are written a sequence of that layout at a time, each with its
        # steps (ComputationNode.cpp:842-846, 901, 921: one sequencePrologue a sequence)
        sample = tuple(values.shape[1:])
        ends = np.cumsum(framed)
        sequences = [values[end - n:end] for n, end in zip(framed, ends)]
    else:
        sample = tuple(values.shape[1:])
        sequences = [values[s:s + 1] for s in range(values.shape[0])]
    for k, steps in enumerate(sequences):
        if k > 0:              # within a minibatch, as CNTK
            out.write(parts["sequence_separator"])
        _write_sequence(out, np.asarray(steps), fmt, parts, sample, index=k, key=key(k))


def _keys_from(keys: list[str] | None, start: int) -> Callable[[int], str | None]:
    """The key of a minibatch's sequence ``k`` where the minibatch starts at ``start``."""
    if not keys:
        return lambda k: None
    return lambda k: keys[(start + k) % len(keys)]


def write_outputs(nodes: Sequence[Variable], names: Sequence[str], inputs: InputSource,
                  minibatch_size: int, max_samples: int | None, output_path: str,
                  fmt: WriteFormat, log: Any, *, batched: Callable[[Variable], bool],
                  summed: Callable[[Variable], bool],
                  check: Callable[[], None] | None = None) -> dict[str, Any]:
    """Evaluate ``nodes`` over ``inputs`` and write them as the module docstring says; logs
    CNTK's ``Minibatch[k]: ActualMBSize = n`` lines and ``Written to ...``; ``batched`` says
    whether a node that is no sequence has a batch axis (one with none, a parameter or a sum
    over the minibatch, is written as one sequence of its CNTK columns), ``summed`` whether a
    node is one cntk.exe computes as a sum over the minibatch (:data:`MINIBATCH_SUMS`: written
    as that sum).  ``check`` is called after each minibatch is read, before it is written (its
    error stops the writing there).  Returns ``{"samples", "minibatches", "files"}``."""
    has_batch = [batched(n) for n in nodes]
    sums = [summed(n) for n in nodes]
    files: dict[str, TextIO] = {}
    if output_path == "-":
        files = {name: sys.stdout for name in names}
    else:
        folder = os.path.dirname(output_path)
        if folder:
            os.makedirs(folder, exist_ok=True)
        for name in names:
            files[name] = open(f"{output_path}.{name}", "w", encoding="utf-8", newline="\n")
    total = minibatches = 0
    # the keys of the data's sequences, in file order (``%k``): a minibatch's sequence k is
    # the one at the reader's position before it, plus k
    keys = io.sequence_keys(inputs.source) if fmt.sequence_keys else None
    try:
        for name in names:
            files[name].write(fmt.prologue)
        with training(False), torch.no_grad():
            while max_samples is None or total < max_samples:
                want = minibatch_size if max_samples is None else \
                    min(minibatch_size, max_samples - total)
                start = inputs.source.get_checkpoint_state()["position"] if keys else 0
                data, count = inputs.read(want)
                if not data:
                    break
                if check is not None:
                    check()
                for var, value in data.items():
                    feed(var, value)
                forward_all(list(nodes))
                for node, name, b, whole in zip(nodes, names, has_batch, sums):
                    _write_minibatch(files[name], node, name, fmt, minibatches, batched=b,
                                     summed=whole, framed=inputs.framed_lengths,
                                     key=_keys_from(keys, start))
                log.raw(f"Minibatch[{minibatches}]: ActualMBSize = {count}")
                if output_path == "-":
                    sys.stdout.write("\n")
                total += count
                minibatches += 1
        for name in names:
            files[name].write(fmt.epilogue)
    finally:
        if output_path != "-":
            for f in files.values():
                f.close()
    log.raw(f"Written to {output_path}*\nTotal Samples Evaluated = {total}")
    return {"samples": total, "minibatches": minibatches,
            "files": [] if output_path == "-" else [f"{output_path}.{n}" for n in names]}
