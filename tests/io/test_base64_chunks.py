"""The chunks of a base64 image file, which CNTK 2.7's randomizer shuffles: its text index adds
each line (its bytes, end of line included: IndexBuilder.cpp ``PopulateFromLines``) to the
current chunk unless the chunk would then pass 32 MiB (Index.cpp:53-56, ``currentChunkSize +
sequence.size > m_maxChunkSize``).  The order this gives is compared with CNTK 2.7 by the case
``ioerr39__base64_order`` (one chunk); a 72 MB file of 70 lines (three chunks, 32 + 32 + 6
lines) read with seeds 0 and 5, windows of 1 and 2 chunks, gave CNTK 2.7's order (by hand)."""

import base64

import numpy as np
import pytest

from stadyn.io import Base64ImageDeserializer, StreamDef, StreamDefs, encode_image


def _deserializer(tmp_path, heights):
    lines = []
    for i, h in enumerate(heights):
        png = base64.b64encode(encode_image(np.full((h, 2, 3), i, np.uint8))).decode()
        lines.append(f"{i % 2}\t{png}\n")
    path = tmp_path / "images.txt"
    path.write_text("".join(lines))
    d = Base64ImageDeserializer(str(path), StreamDefs(f=StreamDef(field="image", transforms=[]),
                                                      l=StreamDef(field="label", shape=2)))
    return d, [len(line) for line in lines]


def test_a_chunk_takes_lines_while_it_stays_within_its_bytes(tmp_path):
    d, sizes = _deserializer(tmp_path, [1, 2, 3, 4, 5, 6])
    assert d.chunk_sizes().tolist() == [6]      # (32 MiB: the whole file)
    # by hand, the rule of Index.cpp: a line that would pass the limit starts a chunk; one
    # exactly at it stays
    d.chunk_bytes = sizes[0] + sizes[1]
    expected, current, count = [], 0, 0
    for size in sizes:
        if current and current + size > d.chunk_bytes:
            expected.append(count)
            current, count = 0, 0
        current, count = current + size, count + 1
    expected.append(count)
    assert d.chunk_sizes().tolist() == expected
    assert expected[0] == 2
    d.chunk_bytes = 1       # (a line longer than the chunk: a chunk of its own)
    assert d.chunk_sizes().tolist() == [1] * 6


def test_a_label_outside_the_classes_raises_when_its_chunk_is_first_read(tmp_path):
    # CNTK 2.7 checks a label when it reads the line's chunk (Base64ImageDeserializer.cpp:
    # 87-89; case ioerr39__declared b64_label: the MinibatchSource is made, the first
    # next_minibatch raises).  Chunks of 2 lines here: line 4's label 7 is refused by a read
    # of line 3, not by one of lines 1-2 nor when the deserializer is made.
    lines = []
    for i, label in enumerate([0, 1, 1, 7, 0]):
        png = base64.b64encode(encode_image(np.full((2, 2, 3), i, np.uint8))).decode()
        lines.append(f"{label}\t{png}\n")
    path = tmp_path / "labels.txt"
    path.write_text("".join(lines))
    d = Base64ImageDeserializer(str(path), StreamDefs(f=StreamDef(field="image", transforms=[]),
                                                      l=StreamDef(field="label", shape=2)))
    d.chunk_bytes = 2 * max(len(line) for line in lines)
    assert d.chunk_sizes().tolist() == [2, 2, 1]
    assert d.read(1)["l"].tolist() == [0.0, 1.0]
    with pytest.raises(RuntimeError, match=r"labels\.txt:4: label 7 is outside the 2 classes"):
        d.read(2)
    assert d.read(4)["l"].tolist() == [1.0, 0.0]


@pytest.mark.parametrize("randomize", [False, True])
def test_counted_sequences_read_the_same_through_worker_processes(tmp_path, randomize):
    """Sequences of several lines (a file with ids: the lines of one id, blank lines after
    a line) count their lines as samples while a sweep holds one a sequence, as CNTK 2.7's
    do (cases io42__base64_counted_sweeps, io42__base64_sequence_ids): the sweep ends early.
    The worker processes' plan is the source's own: the same minibatches as without them.
    By hand, in file order: counts 2, 1, 3, 1, 1 (6 lines, 5 sequences), minibatches of 2
    give [0] [1] [2] (6 counted samples: the sweep of 5 ends after sequence 2) and then, the
    cursor going on, [3, 4] [0] (10 counted: the second sweep ends, and the data)."""
    from stadyn.io import MinibatchSource
    png = base64.b64encode(encode_image(np.zeros((2, 2, 3), np.uint8))).decode()
    text = "".join(f"{k}\t{label}\t{png}\n" for k, label in
                   [(0, 0), (0, 9), (1, 1), (2, 2), (2, 9), (2, 9), (3, 3), (4, 4)])
    path = tmp_path / "ids.txt"
    path.write_text(text)

    def labels(workers):
        d = Base64ImageDeserializer(str(path), StreamDefs(
            f=StreamDef(field="image", transforms=[]), l=StreamDef(field="label", shape=10)))
        assert d.counted_lengths().tolist() == [2, 1, 3, 1, 1]
        with MinibatchSource(d, max_sweeps=2, randomize=randomize, randomization_seed=1,
                             num_workers=workers) as src:
            out = []
            while True:
                mb = src.next_minibatch(2)
                if not mb:
                    return out
                out.append((mb["l"].data.argmax(1).tolist(), mb["l"].end_of_sweep))
    here = labels(0)
    if not randomize:
        assert here == [([0], False), ([1], False), ([2], True), ([3, 4], False),
                        ([0], True)]
    assert sum(len(b) for b, _ in here) < 10        # (two sweeps of 5 ended early)
    assert labels(2) == here
