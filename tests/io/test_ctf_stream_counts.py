"""CTF streams' samples per sequence (``CTFDeserializer.stream_lengths``, ``_ctf_streams``):
the '|' positions are scanned once, in chunks, shared with the index's check of repeated
inputs; an input named at the very end of the file (no line end after it) still counts, and a
longer name sharing a prefix does not.  Hand-counted."""

from __future__ import annotations

import numpy as np

from stadyn.io import CTFDeserializer, StreamDef, StreamDefs
from stadyn.io._ctf_streams import bar_positions


def test_bar_positions_are_every_bar_of_the_file():
    text = b"0 |x 1 |y 2\n1 |x 3 |# |y\n"
    np.testing.assert_array_equal(bar_positions(text),
                                  [i for i, c in enumerate(text) if c == ord("|")])
    assert bar_positions(b"").tolist() == []


def test_an_input_named_at_the_end_of_the_file_counts(tmp_path):
    path = tmp_path / "d.ctf"
    # sequence 0: x twice, y once; sequence 1: x once, 'xy' (not x) once, y named last with no
    # value and no line end (an empty sample, as a sparse label with no entries)
    path.write_bytes(b"0 |x 1 |y 1\n0 |x 2\n1 |x 3 |xy 4\n1 |y")
    d = CTFDeserializer(str(path), StreamDefs(a=StreamDef(field="x", shape=1),
                                              b=StreamDef(field="y", shape=1)))
    got = {k: v.tolist() for k, v in d.stream_lengths().items()}
    assert got == {"a": [2, 1], "b": [1, 1]}
