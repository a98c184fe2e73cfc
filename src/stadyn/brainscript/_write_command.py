"""CNTK's ``write`` action (``DoWriteOutput``, EvalActions.cpp:221-265) as cntk.exe runs it: its
reader made first (``DataReader testDataReader(readerConfig)``, :227: the reader's own errors,
such as ``frameMode`` with ``truncated``, come before any about the model), then the model and
its ``outputNodeNames`` (``GetModelFromConfig``, :239), then ``outputPath`` (:257-263); the
outputs written by :mod:`._write`."""

from __future__ import annotations

import functools
from typing import Any, Callable

from .. import io
from .._errors import ConfigError
from ._blocks import CommandConfig
from ._cntk_log import CNTKLog
from ._command_network import CommandNetwork, record_loc
from ._readers import OpenedReaders, command_sequence_streams, make_source
from ._write import MINIBATCH_SUMS, write_format, write_outputs

__all__ = ["write_command"]


def write_command(cmd: CommandConfig, network_of: Callable[[CommandConfig], CommandNetwork],
                  log: CNTKLog, opened: OpenedReaders) -> dict[str, Any]:
    """Run the write command ``cmd``: its reader opened (once: kept in ``opened``, where the
    network ``network_of(cmd)`` finds what the data's sequences are), the network loaded, the
    nodes' values written; the result :func:`~._write.write_outputs` gives."""
    rec = cmd.record
    if cmd.reader is None:      # (cntk.exe: config(L"reader"), :226)
        raise ConfigError(f"command '{cmd.name}' (action write) needs a 'reader'",
                          *record_loc(rec, "action"))
    # (the command's reader reads in file order, in sequences: _blocks.py, written_reader)
    command_sequence_streams(cmd, (), opened)
    source = make_source(cmd.reader, max_sweeps=1, warn=log.raw, writing=True,
                         opened=opened.take(cmd.reader, remember=True))
    try:
        network = network_of(cmd)
        if cmd.output_node_names:
            nodes = [network.node(n, record_loc(rec, "outputNodeNames"))
                     for n in cmd.output_node_names]
        else:
            nodes = list(network.output_nodes)
            if not nodes:
                raise ConfigError("the network declares no output node (outputNodes = (z)); "
                                  "name them with outputNodeNames", *record_loc(rec, "action"))
        if cmd.output_path is None:
            raise ConfigError(f"command '{cmd.name}' (action write) needs 'outputPath' (CNTK's "
                              "'writer' block is not supported)", *record_loc(rec, "action"))
        names = [network.name(n) for n in nodes]
        fmt = write_format(rec, cmd.reader)
        if not network.inputs_of(nodes):
            # cntk.exe's loop is its reader's, asked for the streams of the Inputs the nodes
            # read (SimpleOutputWriter.h:155, 195, 215, 233): of none, ReaderShim::GetMinibatch
            # reads the first of no inputs (ReaderShim.cpp:260), undefined.  cntk.exe has by
            # then opened the output files (SimpleOutputWriter.h:210) and written their
            # prologue (:224): Stadyn refuses before writing any (before bs28 it wrote empty
            # files and 'Total Samples Evaluated = 0')
            raise ConfigError(
                f"command '{cmd.name}' (action write): the nodes written ({', '.join(names)}) "
                "read no Input, so the reader gives them no minibatch (cntk.exe asks its reader "
                "for no stream and reads the first of none, undefined: ReaderShim.cpp:260, "
                "after opening the output files and writing their prologue); no file is "
                "written; write a node computed from the data beside them (each is then "
                "written once a minibatch)",
                *record_loc(rec, "outputNodeNames" if cmd.output_node_names else "action"))
        inputs = network.input_source(nodes, source, record_loc(rec, "reader"), cmd.name)
        return write_outputs(nodes, names, inputs, (cmd.minibatch_size or (2048,))[0],
                             cmd.epoch_size, cmd.output_path, fmt, log,
                             batched=network.library.has_batch_axis,
                             summed=lambda n: network.library.operation_of(n) in MINIBATCH_SUMS,
                             check=functools.partial(_no_piece_goes_on, source, cmd))
    finally:
        source.close()


def _no_piece_goes_on(source: io.MinibatchSource, cmd: CommandConfig) -> None:
    """cntk.exe's LogicError where the minibatch just read holds a truncated piece that goes on
    from the one before (``readerType = "HTKDeserializers"`` with ``truncated = true``: its
    layout's ``tBegin < 0``, TruncatedBpttPacker.cpp:290-293): the writer asks for the piece's
    first column at ``tBegin`` (ComputationNode.cpp:841-870, ``GetColumnIndex(seqInfo, 0)``),
    outside the minibatch (Sequences.h:522-524), after the minibatches before were written."""
    layout = getattr(source, "layout", None)
    if isinstance(layout, io.TruncatedLayout) and not all(layout.begins):
        raise ConfigError(
            f"command '{cmd.name}' (action write): GetColumnIndex: Attempted to access a time "
            "step that is accessing a portion of a sequence that is not included in current "
            "minibatch (cntk.exe's LogicError: the reader's truncated = true packs an "
            "utterance in pieces, and a piece that goes on from the minibatch before cannot "
            "be written; write with truncated = false)", *record_loc(cmd.record, "reader"))
