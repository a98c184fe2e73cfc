"""A deserializers list's ``truncated = true``: cntk.exe's truncated back-propagation through
time for CNTK 2's readers (``CompositeDataReader`` with ``PackingMode::truncated``,
CompositeDataReader.cpp:73-80, 207-219; ``TruncatedBPTTPacker``, TruncatedBpttPacker.cpp).

The minibatch size SGD asks for is the samples of the whole minibatch (the new readers are not
legacy readers: SGD.cpp:622-627 leaves it as it is), packed into ``max(1, minibatchSize //
truncationLength)`` parallel slots of ``truncationLength`` steps
(TruncatedBpttPacker.cpp:180), each slot going on with its sequences from minibatch to
minibatch: :class:`stadyn.io.TruncatedPacker`, the packing of CNTK 2.7's
``MinibatchSource(..., truncation_length=N)``, which is this packer.  Its ``layout`` says for
each piece its slot, whether it begins its sequence and whether its sequence goes on: what
``_state_carry`` reads to carry the recurrent state from one minibatch to the next in the same
slot and to start it afresh where a sequence begins.

``readerType = "HTKDeserializers"`` (CNTK 2's ``HTKMLFReader``) packs the same way
(Source/Readers/HTKDeserializers/HTKMLFReader.cpp:72-99, 179-199); where its
``truncationLength`` is not set (its "legacy configuration") each slot takes ``minibatchSize``
steps and there are ``nbruttsineachrecurrentiter`` slots (``truncation_length`` None,
``parallel``).  Its shim is a legacy reader's (IsLegacyReader, HTKDeserializers/Exports.cpp):
SGD spreads a per-minibatch rate over ``minibatchSize x`` the parallel sequences it reports,
``nbruttsineachrecurrentiter`` before the first minibatch (ReaderShim.cpp:79, 454-463):
:attr:`TruncatedSequenceSource.parallel`; then the rows of the last minibatch read, its slots
(ReaderShim.cpp:352: :meth:`TruncatedSequenceSource.slots`).

Each epoch starts as cntk.exe's reader starts it (``ReaderBase::StartEpoch``: the packer is
reset, its slots emptied, TruncatedBpttPacker.cpp:155-164, and the randomizer set at ``epoch x
epochSize`` samples, :func:`stadyn.io.start_epoch_at`); the epoch's sequences are given out
until every slot is empty, so an epoch ends when the source gives no more.
"""

from __future__ import annotations

from typing import Any, Hashable, Mapping

from .. import io
from ._ast import config_error
from ._blocks import ReaderConfig
from ._reader_windows import reader_setting, whole_number

__all__ = ["TruncatedSequenceSource", "is_composite", "truncation_length"]


class TruncatedSequenceSource(io.MinibatchSource):
    """A :class:`stadyn.io.MinibatchSource` read in truncated BPTT's minibatches of
    ``truncation_length`` steps a slot (see the module docstring); the other arguments are the
    source's.

    >>> import os, tempfile
    >>> from stadyn.io import CTFDeserializer, StreamDef, StreamDefs
    >>> path = os.path.join(tempfile.mkdtemp(), 's.ctf')     # sequences of 5 and 3 steps
    >>> with open(path, 'w') as f:
    ...     for s, n in enumerate((5, 3)):
    ...         _ = [print(s, '|x', t, file=f) for t in range(n)]
    >>> src = TruncatedSequenceSource(
    ...     CTFDeserializer(path, StreamDefs(x=StreamDef('x', shape=1))), 2, randomize=False)
    >>> src.start_epoch(0, 8, 4)
    >>> [(mb['x'].lengths.tolist(), src.layout.begins) for mb in iter(
    ...     lambda: src.next_minibatch(4), {})]
    [([2, 2], [True, True]), ([2, 1], [False, False]), ([1], [False])]
    """

    def __init__(self, deserializers: Any, truncation_length: int | None, parallel: int = 0,
                 **kwargs: Any):
        super().__init__(deserializers, **kwargs)
        self._steps_per_minibatch = truncation_length is None
        self._packer = io.TruncatedPacker(self, truncation_length or 1)
        self.parallel = int(parallel)
        """The parallel sequences the reader tells SGD: 0 for a ``CompositeDataReader``
        (CompositeDataReader/Exports.cpp:26-31), ``nbruttsineachrecurrentiter`` for
        ``HTKDeserializers`` (also its slots where ``truncation_length`` is None)."""

    @property
    def truncation_length(self) -> int:
        """The steps of each slot's piece (``truncationLength``; the last minibatch size where
        it was made with None)."""
        return self._packer.truncation_length

    @property
    def layout(self) -> io.TruncatedLayout | None:
        """The last minibatch's pieces: their slots, which begin their sequence, which go on."""
        return self._packer.layout

    def slots(self, minibatch_size: int) -> int:
        """The parallel slots of a minibatch asked for with ``minibatch_size``: the rows of
        its layout, a slot with no piece (a gap) too (TruncatedBpttPacker.cpp:180, 230):
        ``max(1, minibatch_size // truncationLength)``, :attr:`parallel` where made with none
        (HTKMLFReader.cpp:186-195).  What the reader shim of ``readerType = "HTKDeserializers"``
        tells SGD after it read such a minibatch (ReaderShim.cpp:352, 454-463).

        >>> import os, tempfile
        >>> from stadyn.io import CTFDeserializer, StreamDef, StreamDefs
        >>> path = os.path.join(tempfile.mkdtemp(), 't.ctf')
        >>> _ = open(path, 'w').write('0 |x 1\\n')
        >>> d = CTFDeserializer(path, StreamDefs(x=StreamDef('x', shape=1)))
        >>> TruncatedSequenceSource(d, 2, 3).slots(5), TruncatedSequenceSource(d, None, 3).slots(5)
        (2, 3)
        """
        if self._steps_per_minibatch:
            return self.parallel
        return max(1, int(minibatch_size) // self.truncation_length)

    def start_epoch(self, epoch: int, epoch_size: int, minibatch_size: int | None = None) -> None:
        """Start epoch ``epoch`` (from 0) of ``epoch_size`` samples: the slots emptied, the
        data at ``epoch x epoch_size`` samples (``minibatch_size`` is read at each
        minibatch)."""
        io.start_epoch_at(self, int(epoch), int(epoch_size))

    def restore_from_checkpoint(self, state: Mapping[str, Any]) -> None:
        """Go on from ``state`` with the slots empty (cntk.exe's reset packer)."""
        super().restore_from_checkpoint(state)
        self._packer.restore(None, state)

    def next_minibatch(self, minibatch_size_in_samples: int,
                       input_map: Mapping[Hashable, Any] | None = None, device: Any = None,
                       num_data_partitions: int | None = None,
                       partition_index: int | None = None) -> dict:
        """The next minibatch of the epoch (``{}`` once every slot is empty)."""
        if self._steps_per_minibatch:      # HTKMLFReader.cpp:186-195
            self._packer.truncation_length = int(minibatch_size_in_samples)
            minibatch_size_in_samples = int(minibatch_size_in_samples) * self.parallel
        return self._packer.next_minibatch(minibatch_size_in_samples, input_map,
                                           num_data_partitions, partition_index)


# the readers cntk.exe builds a CompositeDataReader for: a deserializers list (DataReader.cpp:
# 93-118), whose packing mode is read from its config (CompositeDataReader.cpp:57-85)
_COMPOSITE = {None, "compositedatareader", "cntk.composite"}


def is_composite(reader: ReaderConfig | None) -> bool:
    """Whether cntk.exe reads the block with its ``CompositeDataReader`` (a deserializers
    list, ``readerType = "CompositeDataReader"``), whose shim tells SGD 0 parallel sequences
    (CompositeDataReader/Exports.cpp:26-31).

    >>> is_composite(ReaderConfig()), is_composite(ReaderConfig(reader_type="HTKMLFReader"))
    (True, False)
    """
    return reader is not None and \
        (None if reader.reader_type is None else str(reader.reader_type).lower()) in _COMPOSITE


def truncation_length(reader: ReaderConfig, frame_mode: bool) -> int:
    """A deserializers list's ``truncated = true`` (the block's, else a block's around it,
    ``config(L"truncated", false)``): its ``truncationLength`` (0 where it is not truncated),
    with cntk.exe's errors for ``frameMode = true`` with it and for no ``truncationLength``
    (CompositeDataReader.cpp:57-81).  A train, test, eval or cv command and a cvReader read
    it in truncated BPTT's minibatches (:class:`~._bptt_source.TruncatedSequenceSource`); the
    pre-computing pass reads whole sequences (the same sums), or the training source itself
    where it stops inside sweep 0 (:mod:`._precompute`).  A write command's reader
    (:func:`~._reader_blocks.written_reader`) packs sequences, as cntk.exe's."""
    if not is_composite(reader):
        return 0        # (the legacy readers' own truncated: _legacy_readers; the
        # CNTKTextFormatReader's and ImageReader's packers do not read it)
    value = reader_setting(reader, "truncated")
    if value is None or str(value).lower() == "false":
        return 0
    if str(value).lower() != "true":
        raise config_error(f"truncated must be true or false, got '{value}'", reader.loc)
    if frame_mode:
        raise config_error("frameMode and truncated BPTT are mutually exclusive (frameMode = "
                           "true with truncated = true)", reader.loc)
    length = reader_setting(reader, "truncationLength")
    length = whole_number("truncationLength", 0 if length is None else length, reader.loc)
    if length == 0:
        raise config_error("Truncation length cannot be 0 (truncated = true needs a "
                           "truncationLength)", reader.loc)
    return length
