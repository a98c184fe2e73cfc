"""How many minibatches a :class:`~stadyn.io.MinibatchSource` gives a data partition from its
position to the end of its data, counted from the sequences' lengths without reading them
(``count_minibatches``): the walk ``next_minibatch`` takes for a partition (``_partitions.py``)
and the position it leaves, with no chunk loaded and no row decoded."""

from __future__ import annotations

from ._partitions import partition_walk
from ._source import MinibatchSource

__all__ = ["count_minibatches"]


def count_minibatches(source, minibatch_size: int, num_data_partitions: int = 1,
                      partition_index: int = 0) -> int:
    """The minibatches holding a sequence that ``source.next_minibatch(minibatch_size,
    num_data_partitions=..., partition_index=...)`` would give from the source's position
    until it gives ``{}``; the source is left where that reading leaves it.

    A partition of several of a block-randomized (or file-order) source is counted from the
    sequences' lengths alone, as ``next_minibatch`` plans it (the positions it walks, the
    samples it steps, CNTK 2.7's reader state it follows); any other reading (one partition,
    a local-timeline deserializer, a source of another kind) reads the minibatches.  What
    only reading finds (a bad line, a sequence frame mode refuses) is not found here.

    >>> import os, tempfile
    >>> from stadyn.io import CTFDeserializer, MinibatchSource, StreamDef, StreamDefs
    >>> path = os.path.join(tempfile.mkdtemp(), "t.txt")
    >>> _ = open(path, "w").write("".join(f"{k} |x {k}\\n" * (1 + k % 3) for k in range(9)))
    >>> def source():
    ...     d = CTFDeserializer(path, StreamDefs(x=StreamDef(field="x", shape=1)))
    ...     return MinibatchSource(d, randomize=False, max_sweeps=1)
    >>> read = source()
    >>> sum(1 for _ in iter(lambda: read.next_minibatch(4, num_data_partitions=2,
    ...                                                 partition_index=1), {}))
    4
    >>> count_minibatches(source(), 4, 2, 1)
    4
    """
    n, count, index = int(minibatch_size), int(num_data_partitions), int(partition_index)
    if not (isinstance(source, MinibatchSource) and count > 1 and source._cntk_partitions
            and source._composite.randomizer != "tumbling"):
        return sum(1 for _ in iter(lambda: source.next_minibatch(
            n, num_data_partitions=count, partition_index=index), {}))
    source._check_partition(count, index)
    if n < 1:
        raise ValueError(f"minibatch_size_in_samples must be >= 1, got {n}")
    if source._reader_config != (n, count, index):
        source._reconfigure((n, count, index))
    counted = 0
    while True:
        ahead, source._walk_ahead = source._walk_ahead, None
        positions, end, walked = ahead[1] \
            if ahead is not None and ahead[0] == source._walk_key(n, count, index) else \
            partition_walk(source, n, count, index)
        source._position, source._samples = end, source._samples + walked
        if not len(positions):
            return counted
        counted += 1
        # (as a delivered minibatch leaves it: ``_deliver`` and ``_partition_minibatch``)
        source._position = source._counted_start(end, source._samples)
        source._refused = None
        if source._follows_cntk():
            source._shim_at = source._position
            key, walk = source._walk_key(n, count, index), partition_walk(source, n, count,
                                                                           index)
            source._cursor.read_to(walk[1])
            source._walk_ahead = (key, walk) \
                if key == source._walk_key(n, count, index) else None
