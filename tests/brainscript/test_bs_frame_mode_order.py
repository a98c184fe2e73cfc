"""A ``deserializers`` list's HTK reader with ``frameMode = true`` and ``randomize = true``:
CNTK 2.7's HTKDeserializer makes every frame its own sequence (HTKDeserializer.cpp,
``SequenceInfosForChunk``), so the randomizer shuffles frames, not utterances, within its
window, each sweep anew, and a worker's share of a one-chunk set is the whole chunk.

The expected frames are CNTK 2.7's: its Python reader (``HTKFeatureDeserializer`` +
``HTKMLFDeserializer``, ``randomize=True, frame_mode=True, max_sweeps=2``, minibatches of 4;
``num_data_partitions=2`` for the shares) over four utterances of 5, 7, 3, 6 frames whose frame
t (counted over the file) holds the value t, utterance u labelled ``s{u % 2}``;
tests/fixtures/bs_frame_mode_order/make_refs.py prints them."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from stadyn.brainscript import parse_config, reader_config
from stadyn.brainscript._readers import make_source

LENGTHS = [5, 7, 3, 6]
# (frames, then their labels) per minibatch, from CNTK 2.7
ALL = [[3, 17, 11, 8], [14, 10, 19, 12], [2, 20, 4, 18], [0, 1, 7, 5], [6, 13, 15, 9],
       [16, 5, 9, 3], [13, 1, 7, 15], [16, 6, 0, 2], [18, 8, 17, 14], [20, 4, 19, 10],
       [12, 11]]
SHARE_0 = [[3, 17], [11, 8], [14, 10], [19, 12], [2, 20], [4, 18], [0, 1], [7, 5], [6, 13],
           [15, 9], [16, 5], [9, 3], [13, 1], [7, 15], [16, 6], [0, 2], [18, 8], [17, 14],
           [20, 4], [19, 10], [12, 11]]


def _label(frame: int) -> int:
    ends = np.cumsum(LENGTHS)
    return int(np.searchsorted(ends, frame, side="right")) % 2


def _reader(tmp_path):
    total = sum(LENGTHS)
    (tmp_path / "f.htk").write_bytes(struct.pack(">iihh", total, 100000, 4, 9)
                                     + np.arange(total, dtype=">f4").tobytes())
    scp, mlf, a = [], ["#!MLF!#\n"], 0
    for u, n in enumerate(LENGTHS):
        scp.append(f"u{u}={tmp_path / 'f.htk'}[{a},{a + n - 1}]\n")
        mlf.append(f'"u{u}.lab"\n0 {n * 100000} s{u % 2}\n.\n')
        a += n
    (tmp_path / "s.scp").write_text("".join(scp))
    (tmp_path / "l.mlf").write_text("".join(mlf))
    (tmp_path / "states").write_text("s0\ns1\n")
    return reader_config(parse_config(f"""reader = {{
        randomize = true ; frameMode = true
        deserializers = ({{ type = "HTKFeatureDeserializer" ; module = "HTKDeserializers"
            input = {{ x = {{ dim = 1 ; scpFile = "{tmp_path / 's.scp'}" }} }}
        }} : {{ type = "HTKMLFDeserializer" ; module = "HTKDeserializers"
            input = {{ y = {{ labelDim = 2 ; mlfFile = "{tmp_path / 'l.mlf'}"
                             labelMappingFile = "{tmp_path / 'states'}" }} }} }})
    }}""", "frames.cntk")["reader"])


@pytest.mark.parametrize("share, expected", [(None, ALL), (0, SHARE_0), (1, [])])
def test_frame_mode_shuffles_frames_as_cntk(tmp_path, share, expected):
    source = make_source(_reader(tmp_path), max_sweeps=2)
    got = []
    try:
        while True:
            mb = (source.next_minibatch(4) if share is None else
                  source.next_minibatch(4, num_data_partitions=2, partition_index=share))
            if not mb:
                break
            x = np.asarray(mb[source.streams.x].asarray()).reshape(-1)
            y = np.asarray(mb[source.streams.y].asarray()).reshape(-1, 2).argmax(axis=1)
            got.append(([int(v) for v in x], [int(v) for v in y]))
    finally:
        source.close()
    assert got == [(m, [_label(f) for f in m]) for m in expected]
