"""The pieces of CNTK 2.7's randomized order (``stadyn/io/_cntk_order.py``) that its sample-for-
sample comparison with CNTK (``tests/compat/compat_cases/cntk_randomization.py``) does not pin
down alone: the generator against the C++ standard's check value, the text-format chunking
rule on hand-counted bytes, frame-mode chunks and the window arguments."""

import numpy as np
import pytest

from stadyn.io import CTFDeserializer, MinibatchSource, StreamDef, StreamDefs
from stadyn._mt19937 import MT19937_64
from stadyn.io._cntk_order import block_order, tumbling_order


def test_the_generator_is_the_standards_mt19937_64():
    # C++11 [rand.predef]: the 10000th invocation of a default-constructed mt19937_64 (seed
    # 5489) produces 9981545732273789042
    rng = MT19937_64(5489)
    for _ in range(9999):
        rng()
    assert rng() == 9981545732273789042


def test_taking_many_numbers_is_calling_one_at_a_time():
    one, many = MT19937_64(3), MT19937_64(3)
    first = [one() for _ in range(5)]
    assert first == many.take(5).tolist()
    assert [one() for _ in range(700)] == many.take(700).tolist()


def test_orders_are_permutations_of_the_sweep():
    sizes = [3, 1, 4, 1, 5, 9, 2, 6]
    for order in (block_order(sizes, 4, window=3), tumbling_order(sizes, 4, sweep=2, window=3),
                  block_order(sizes, 1, window=5, window_in_samples=True)):
        assert sorted(order.tolist()) == list(range(sum(sizes)))


def _ctf(tmp_path, lines):
    path = tmp_path / "data.ctf"
    path.write_text("".join(lines))
    return CTFDeserializer(str(path), StreamDefs(x=StreamDef(field="x", shape=1)))


def test_text_format_chunks_grow_while_the_next_sequence_still_fits(tmp_path):
    # every line "|x k\n" is 5 bytes; a chunk of 12 bytes holds two lines (10 + 5 > 12)
    d = _ctf(tmp_path, ["|x %d\n" % k for k in range(7)])
    d.chunk_bytes = 12
    assert d.chunk_sizes().tolist() == [2, 2, 2, 1]
    # four such lines fill 20 bytes exactly: one chunk
    d = _ctf(tmp_path, ["|x %d\n" % k for k in range(4)])
    d.chunk_bytes = 20
    assert d.chunk_sizes().tolist() == [4]
    # a comment-only line is a sequence of its own for CNTK's indexer (reading it is an error,
    # tests/io/test_ctf_edges.py): lines 0, 1, the comment and line 2 end at byte 19 (<= 20),
    # and line 3 would make 24 > 20
    d = _ctf(tmp_path, ["|x 0\n", "|x 1\n", "|#c\n", "|x 2\n", "|x 3\n"])
    d.chunk_bytes = 20
    assert d.chunk_sizes().tolist() == [4, 1]
    d.chunk_bytes = 32 * 1024 * 1024          # CNTK's default: a small file is one chunk
    assert d.chunk_sizes().tolist() == [5]


class _FramedCTF(CTFDeserializer):
    """A text file read as frame mode reads HTK features: its sequences cut into frames."""

    frames_in_frame_mode = True


def test_frame_mode_counts_a_chunks_frames(tmp_path):
    lines = ["%d |x %d\n" % (s, k) for s, k in [(0, 0), (0, 1), (0, 2), (1, 3), (2, 4), (2, 5)]]
    (tmp_path / "d.ctf").write_text("".join(lines))
    d = _FramedCTF(tmp_path / "d.ctf", StreamDefs(x=StreamDef(shape=1)))
    d.chunk_bytes = 25       # sequence 0 (21 bytes; with 1, 28), then 1 and 2 (7 + 14 bytes)
    assert d.chunk_sizes().tolist() == [1, 2]
    src = MinibatchSource(d, frame_mode=True, max_sweeps=1)
    assert src._composite.chunk_sizes().tolist() == [3, 3]
    seen = src.next_minibatch(6)["x"].data.ravel().tolist()
    assert sorted(seen) == [0, 1, 2, 3, 4, 5]


def test_frame_mode_keeps_a_text_files_chunks_of_sequences(tmp_path):
    # CNTK 2.7 cuts no text file's sequences in frame mode (cases cntk_io_38
    # frame_mode__refused_then_*): its chunks stay chunks of sequences, a minibatch counts a
    # sequence by its lines, and one of 3 lines is refused; a minibatch of another size then
    # reads it again (CNTK 2.7 on this file: RuntimeError, RuntimeError, [3])
    lines = ["%d |x %d\n" % (s, k) for s, k in [(0, 0), (0, 1), (0, 2), (1, 3), (2, 4), (2, 5)]]
    d = _ctf(tmp_path, lines)
    d.chunk_bytes = 25
    src = MinibatchSource(d, frame_mode=True, max_sweeps=1, randomize=False)
    assert src._composite.chunk_sizes().tolist() == [1, 2]
    with pytest.raises(RuntimeError, match="sequence of 3 samples"):
        src.next_minibatch(3)
    with pytest.raises(RuntimeError, match="sequence of 3 samples"):
        src.next_minibatch(1)
    assert src.next_minibatch(1)["x"].data.ravel().tolist() == [3]


def test_the_two_windows_are_exclusive(tmp_path):
    d = _ctf(tmp_path, ["|x %d\n" % k for k in range(3)])
    with pytest.raises(ValueError, match="mutually exclusive"):
        MinibatchSource(d, randomization_window_in_chunks=4, randomization_window_in_samples=8)
    with pytest.raises(ValueError, match=">= 0"):
        MinibatchSource(d, randomization_window_in_chunks=-1)


def test_a_window_of_one_chunk_keeps_every_sample_in_its_chunk():
    sizes = [4] * 6
    order = block_order(sizes, 11, window=1)
    chunks = (order // 4).reshape(6, 4)
    assert (chunks == chunks[:, :1]).all()           # each run of four comes from one chunk
    assert sorted(chunks[:, 0].tolist()) == list(range(6))
    assert not np.array_equal(order, np.arange(24))
