"""A reader as the source of a BrainScript network's inputs, by stream name:
:class:`InputSource` checks each input against its stream (shape, sequence layout) when made and
in each minibatch, reads minibatches keyed by the network's input Variables, cuts sequences into
frames where the network takes samples, and reports what cntk.exe's reader shim reports (the
epoch's parallel-sequence rows, a label stream's sweep size).  Made by
``CommandNetwork.input_source`` (:mod:`._command_network`); read by the runner and the ``write``
action."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import io
from .._errors import ConfigError, StadynError
from ..graph import Variable
from ._cntk_log import cntk_shape_text
from ._readers import make_source

__all__ = ["InputSource", "sample_shape"]


def sample_shape(var: Variable) -> tuple[int, ...]:
    """One sample's (one step's, for a sequence input) shape."""
    return tuple(var.shape[2:] if var.sequence_lengths is not None else var.shape[1:])


class InputSource:
    """The reader as a source of the network's inputs, for :meth:`Trainer.fit`: maps the inputs
    to reader streams (by name, as CNTK did) and reshapes the data to each input's per-sample
    shape when only the layout differs (784 values -> 1x28x28).  Its minibatches are keyed by
    the input Variables; checkpoints and sizes are the reader's."""

    def __init__(self, inputs: list[tuple[str, Variable]], source: io.MinibatchSource,
                 reader_loc: tuple, shared: Sequence[Variable] = (), command: str = "",
                 framed: Sequence[Variable] = ()):
        self.source = source
        self.reader_loc, self.command = reader_loc, command
        # the sequence Inputs of cntk.exe's one default layout: by name, sorted as cntk.exe's
        # map of inputs is (ReaderShim.cpp:318-335 compares them in that order)
        on_default = {id(v) for v in shared}
        self.shared = sorted((name, var) for name, var in inputs if id(var) in on_default)
        # a loaded model's Inputs of one sample, on the default layout (the library's
        # framed_inputs, recorded by fed_as_sequences): fed each step of the reader's sequences
        # as a sample
        self.framed = {id(var) for var in framed}
        #: the lengths of the sequences whose steps the last :meth:`read` fed those Inputs as
        #: samples, in order (None where it fed none): the write action writes each sequence
        #: of their values with its steps, as cntk.exe
        self.framed_lengths: list[int] | None = None
        # the sequence lengths of the first input by name in the last minibatch read (a
        # sample count for data of no sequences): :attr:`parallel_rows`
        self._last_lengths: Any = None
        # what parallel_rows says before any read (continue_reader)
        self._rows_before = 1
        self._first_by_name = min(inputs, key=lambda pair: pair[0])[1] if inputs else None
        streams = list(source.streams)
        self.pairs: list[tuple[Variable, str]] = []
        for name, var in inputs:
            match = next((s for s in streams if s == name), None) or \
                next((s for s in streams if s.lower() == name.lower()), None)
            if match is None:
                raise ConfigError(f"the reader has no stream for the network input '{name}' "
                                  f"(its streams: {', '.join(streams)})", *reader_loc)
            info = source.streams[match]
            sample = sample_shape(var)
            if info.shape is not None and int(np.prod(info.shape)) != int(np.prod(sample)):
                raise ConfigError(
                    f"reader stream '{match}' delivers samples of shape {info.shape} "
                    f"({int(np.prod(info.shape))} values) but the network input '{name}' has "
                    f"{cntk_shape_text(sample)} ({int(np.prod(sample))} values)",
                    *reader_loc)
            self.pairs.append((var, match))
        self.input_map = {var: stream for var, stream in self.pairs}

    @property
    def sweep_size(self) -> int:
        return self.source.sweep_size

    def label_sweep_size(self, reader: Any, opened: list | None = None) -> int:
        """One sweep counted as the trainer counts samples (CNTK's rule: the labels' samples,
        i.e. sequences where some input is per sequence, steps where all are sequences); the
        reader's own count when no input is a sequence.  Reads the sweep once (only to resume
        without a checkpoint: training reads sweeps as it goes), through the deserializers
        ``opened`` where given (the training source's: its files are not indexed again)."""
        if all(var.sequence_lengths is None for var, _ in self.pairs):
            return self.source.sweep_size
        per_sequence = any(var.sequence_lengths is None and id(var) not in self.framed
                           for var, _ in self.pairs)
        once = make_source(reader, max_sweeps=1, opened=opened)
        total = 0
        try:
            while True:
                mb = once.next_minibatch(1 << 16, {var: s for var, s in self.pairs})
                if not mb:
                    return total
                parts = [mb[var] for var, _ in self.pairs]
                total += parts[0].num_sequences if per_sequence else \
                    max(p.num_samples for p in parts)
        finally:
            once.close()

    #: set by the runner for epochs of ``epochSize`` samples: each epoch starts at ``epoch x
    #: epochSize`` and ends at the next, on every worker, as cntk.exe's reader
    #: (:func:`stadyn.io.start_epoch_at`)
    epochs_from_start = False

    @property
    def start_epoch(self):
        """The reader's own start of an epoch where it ends its epochs itself (an utterance-mode
        HTKMLFReader's, :class:`~stadyn.io.UtteranceSource`; a minibatch source's epochs of
        ``epochSize`` samples, :attr:`epochs_from_start`), else None
        (``Trainer.fit``)."""
        own = getattr(self.source, "start_epoch", None)
        if own is None and self.epochs_from_start and \
                isinstance(self.source, io.MinibatchSource):
            return functools.partial(io.start_epoch_at, self.source)
        return own

    def get_checkpoint_state(self) -> dict:
        return self.source.get_checkpoint_state()

    def restore_from_checkpoint(self, state: dict) -> None:
        self.source.restore_from_checkpoint(state)

    def next_minibatch(self, size: int, input_map=None, **partition) -> dict:
        """``{input: array}`` of the next ``size`` samples (``{}`` when the data is done); the
        inputs are this object's own, so ``input_map`` (fit passes :attr:`input_map`) is not
        read."""
        return self.read(size, **partition)[0]

    def read(self, size: int, **partition) -> tuple[dict, int]:
        """The next minibatch and its sample count.  Each input's data stays the reader's
        :class:`~stadyn.io.MinibatchData` (reshaped where needed), so the trainer sees the end
        of a sweep, where learning rates given per epoch of one sweep (``epochSize = 0``) move
        on."""
        minibatch = self.source.next_minibatch(size, self.input_map, **partition)
        data: dict[Variable, np.ndarray] = {}
        count = 0
        self.framed_lengths = None
        if not minibatch:
            return data, count
        self._check_layouts(minibatch)
        if self._first_by_name is not None:       # (packed when asked: parallel_rows)
            first = minibatch[self._first_by_name]
            self._last_lengths = (
                int(first.num_samples) if self._first_by_name.sequence_lengths is None else
                first.lengths if first.lengths is not None else
                [int(first.data.shape[1])] * int(first.data.shape[0]))
            layout = getattr(self.source, "layout", None)
            if isinstance(layout, io.TruncatedLayout):   # its slots, gaps too
                self._last_lengths = int(layout.parallel)
        for var, stream in self.pairs:
            mb = minibatch[var]
            count = mb.num_samples
            sequence = var.sequence_lengths is not None
            lead, shape = (2 if sequence else 1), sample_shape(var)
            if sequence and (mb.lengths is None or tuple(mb.data.shape[2:]) == shape):
                data[var] = mb      # a padded (N, T, ...) sequence as read (the trainer unpads)
                continue
            if id(var) in self.framed and mb.lengths is not None:
                self.framed_lengths = [int(n) for n in mb.lengths]
                steps = np.concatenate([mb.data[i, :int(n)] for i, n in enumerate(mb.lengths)])
                mb = io.MinibatchData(steps, len(steps), len(steps), mb.end_of_sweep, None,
                                      mb.is_sparse)
            # each sample (each step of a sequence) reshaped where only its layout differs
            arr = mb.data
            if tuple(arr.shape[lead:]) != shape:
                if int(np.prod(arr.shape[lead:])) != int(np.prod(shape)):
                    unit = "steps" if sequence else "samples"
                    raise StadynError(f"stream '{stream}' delivered {unit} of shape "
                                      f"{tuple(arr.shape[lead:])}; the input needs {shape}")
                arr = arr.reshape(arr.shape[:lead] + shape)
            data[var] = io.MinibatchData(arr, mb.num_samples, mb.num_sequences, mb.end_of_sweep,
                                         mb.lengths if sequence else None, mb.is_sparse)
        return data, count

    @property
    def parallel_rows(self) -> int:
        """The rows (parallel sequences) of the last minibatch :meth:`read` gave, of the first
        input by name, as cntk.exe's reader shim reports them (ReaderShim.cpp:350-352: the
        first-fit packing of MBLayout::InitAsPackedSequences; a sample a row for data of no
        sequences; a truncated source's slots, gaps too, TruncatedBpttPacker.cpp:230); before
        any, what :meth:`continue_reader` gave (1 where nothing did: the shim's
        ``nbruttsineachrecurrentiter`` default, :79)."""
        last = self._last_lengths
        if last is None:
            return self._rows_before
        return last if isinstance(last, int) else _packed_rows([int(n) for n in last])

    def continue_reader(self, rows: int) -> None:
        """Report ``rows`` as :attr:`parallel_rows` until this source reads a minibatch: cntk.exe
        has one reader shim for a command's training reader, which says its
        ``nbruttsineachrecurrentiter`` (the first value) before any read (ReaderShim.cpp:71-79)
        and then the rows of the last minibatch any pass read, the pre-computing pass's too
        (SGD.cpp:1769-1779, ReaderShim.cpp:352).

        >>> import numpy as np
        >>> from stadyn import io
        >>> src = InputSource([], io.MinibatchSourceFromData({"x": np.zeros((4, 2))}), ())
        >>> src.parallel_rows, src.continue_reader(3), src.parallel_rows
        (1, None, 3)
        """
        self._rows_before = int(rows)

    def _check_layouts(self, minibatch: dict) -> None:
        """cntk.exe's check that the Inputs sharing the default layout got data of one layout
        (ReaderShim.cpp:318-335): the same sequences of the same lengths."""
        first: tuple[str, tuple[int, ...]] | None = None
        for name, var in self.shared:
            mb = minibatch[var]
            # data of no lengths: (N, T, sample...) padded steps, or (N, sample...) one step a
            # sequence (CTF sequences of one line each)
            steps = mb.data.shape[1] if mb.data.ndim >= len(sample_shape(var)) + 2 else 1
            lengths = tuple(int(n) for n in (mb.lengths if mb.lengths is not None else
                                             [steps] * mb.data.shape[0]))
            if first is None:
                first = (name, lengths)
            elif lengths != first[1]:
                command = f" (command '{self.command}')" if self.command else ""
                raise ConfigError(
                    f"Dynamic axis layout '*' is shared between inputs '{first[0]}' and "
                    f"'{name}', but layouts generated from the input data are incompatible on "
                    "this axis. Are you using different sequence lengths? Did you consider "
                    f"adding a DynamicAxis() to the Input nodes?{command}", *self.reader_loc)


def _packed_rows(lengths: list[int]) -> int:
    """The rows cntk.exe's MBLayout packs sequences of ``lengths`` into (Sequences.h:202-250:
    as wide as the longest; each sequence, in order, in the first row with room left, else a
    new row).

    >>> _packed_rows([3, 2, 1]), _packed_rows([4, 4, 1])
    (2, 3)
    """
    width, used = max(lengths, default=0), []
    for n in lengths:
        row = next((k for k, u in enumerate(used) if u + n <= width), None)
        if row is None:
            used.append(n)
        else:
            used[row] += n
    return len(used)
