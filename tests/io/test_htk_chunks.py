"""HTK features in CNTK 2.7's chunks (``HTKDeserializer.cpp:174-200``: utterances counted off
in script order, a chunk closed once it holds more than 90,000 frames), which randomization
shuffles and which a source loads whole (a frame range past a file's end raising then).  The
orders and the minibatch that raises are held to CNTK 2.7 by case ``io40__htk_chunks``."""

import struct

import numpy as np
import pytest

from stadyn._errors import DataError
from stadyn.io import HTKFeatureDeserializer, MinibatchSource, StreamDef, StreamDefs


def _features(tmp_path, ranges, frames=180002):
    head = struct.pack(">iihh", frames, 100000, 4, 9)
    (tmp_path / "f.htk").write_bytes(head + np.arange(frames, dtype=">f4").tobytes())
    scp = tmp_path / "f.scp"
    scp.write_text("".join(f"u{k}.mfc={tmp_path / 'f.htk'}[{a},{b}]\n"
                           for k, (a, b) in enumerate(ranges)))
    return HTKFeatureDeserializer(StreamDefs(x=StreamDef(shape=1, scp=str(scp))))


def test_a_chunk_takes_utterances_until_it_holds_more_than_90000_frames(tmp_path):
    # by hand: 60,000 + 30,000 frames are not more than 90,000, so the next utterance joins
    # (90,001) and the one after starts a chunk: the same again, closed by 10 frames
    ranges = [(0, 59999), (0, 29999), (0, 0), (0, 59999), (0, 29999), (0, 9)]
    assert _features(tmp_path, ranges).chunk_sizes().tolist() == [3, 3]


def test_a_bad_range_raises_from_the_first_minibatch_that_loads_its_chunk(tmp_path):
    # chunks [u0, u1], [u2, u3]; u3 reads past the end: file order gives u0 and u1, then raises
    d = _features(tmp_path, [(0, 59999), (0, 59999), (0, 9), (180000, 180009)])
    assert d.chunk_sizes().tolist() == [2, 2]
    src = MinibatchSource(d, randomize=False, max_sweeps=1)
    assert src.next_minibatch(60000)["x"].num_samples == 60000
    assert src.next_minibatch(60000)["x"].num_samples == 60000
    with pytest.raises(DataError, match=r"f\.scp:4: utterance 'u3' reads frames "
                                        r"\[180000,180009\]"):
        src.next_minibatch(1)


def _two_streams(tmp_path, ranges, lacking, **kw):
    head = struct.pack(">iihh", 180002, 100000, 4, 9)
    (tmp_path / "f.htk").write_bytes(head + np.arange(180002, dtype=">f4").tobytes())
    lines = [f"u{k}.mfc={tmp_path / 'f.htk'}[{a},{b}]\n" for k, (a, b) in enumerate(ranges)]
    (tmp_path / "x.scp").write_text("".join(lines))
    (tmp_path / "y.scp").write_text("".join(x for k, x in enumerate(lines) if k not in lacking))
    return HTKFeatureDeserializer(StreamDefs(x=StreamDef(shape=1, scp=str(tmp_path / "x.scp")),
                                             y=StreamDef(shape=1, scp=str(tmp_path / "y.scp"))),
                                  **kw)


def test_utterances_another_stream_lacks_still_count_in_the_first_scripts_chunks(tmp_path):
    # by hand: chunks [u0, u1, u2] (90,001 frames) and [u3, u4, u5]; the second script lacks
    # u1 and u3, which leave their chunks (CNTK 2.7's composite drops them after chunking):
    # [2, 2], where chunking what is left would give [u0, u2, u4] (90,001 frames) and [u5]
    ranges = [(0, 59999), (0, 29999), (0, 0), (0, 59999), (0, 29999), (0, 9)]
    with pytest.warns(UserWarning, match="2 utterance"):
        d = _two_streams(tmp_path, ranges, lacking={1, 3})
    assert d.keys() == ["u0", "u2", "u4", "u5"]
    assert d.chunk_sizes().tolist() == [2, 2]


def test_max_sequence_size_skips_longer_utterances_before_chunking(tmp_path):
    # StreamDef's max_sequence_length reaches nothing (CNTK 2.7); maxSequenceSize = 50,000
    # skips u0 and u3 of any stream before chunking: one chunk of the rest (60,011 frames)
    ranges = [(0, 59999), (0, 29999), (0, 0), (0, 59999), (0, 29999), (0, 9)]
    d = _features(tmp_path, ranges)
    assert len(d) == 6 and d.chunk_sizes().tolist() == [3, 3]
    d["maxSequenceSize"] = 50000
    assert d.keys() == ["u1", "u2", "u4", "u5"] and d.chunk_sizes().tolist() == [4]
    assert d["maxSequenceSize"] == 50000
    d = _two_streams(tmp_path, ranges, lacking=(), max_sequence_size=29999)
    assert d.keys() == ["u2", "u5"] and d.chunk_sizes().tolist() == [2]
    with pytest.raises(TypeError, match="maxSequenceSize takes a frame count"):
        d["maxSequenceSize"] = "long"
