"""The chunks of a base64 image file, which CNTK 2.7's randomizer shuffles: its text index adds
each line (its bytes, end of line included: IndexBuilder.cpp ``PopulateFromLines``) to the
current chunk unless the chunk would then pass 32 MiB (Index.cpp:53-56, ``currentChunkSize +
sequence.size > m_maxChunkSize``).  The order this gives is compared with CNTK 2.7 by the case
``ioerr39__base64_order`` (one chunk); a 72 MB file of 70 lines (three chunks, 32 + 32 + 6
lines) read with seeds 0 and 5, windows of 1 and 2 chunks, gave CNTK 2.7's order (by hand)."""

import base64

import numpy as np

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
