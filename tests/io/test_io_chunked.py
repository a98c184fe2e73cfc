"""ChunkedDeserializer (CNTK's UserDeserializer model): chunks scanned once, samples and
sequences read by id across chunks, the chunk cache, frame mode, joining with another
deserializer, worker processes, checkpoints and the errors a bad chunk gives. Expectations
are the chunks' own values (every sample holds its global id)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from _io_helpers import ListChunks

from stadyn import DataError
from stadyn.io import MinibatchSource, NumpyDeserializer


def counting(sizes, dim=2):
    """Chunks of ``sizes`` samples; sample k is (k, k + 0.5, ...)."""
    chunks, k = [], 0
    for n in sizes:
        ids = np.arange(k, k + n, dtype=np.float32)
        chunks.append({"x": (ids[:, None] + 0.5 * np.arange(dim)).astype(np.float32)})
        k += n
    return chunks


def ids_of(mb, name="x"):
    return mb[name].data.reshape(mb[name].num_sequences, -1)[:, 0].astype(int).tolist()


def test_order_without_randomization_runs_through_the_chunks_and_wraps_at_the_sweep():
    d = ListChunks(counting([3, 2, 4]), {"x": (2,)})
    src = MinibatchSource(d, randomize=False, max_sweeps=2)
    got = []
    while True:
        mb = src.next_minibatch(4)
        if not mb:
            break
        got.append((ids_of(mb), mb["x"].end_of_sweep))
    assert got == [([0, 1, 2, 3], False), ([4, 5, 6, 7], False), ([8, 0, 1, 2], True),
                   ([3, 4, 5, 6], False), ([7, 8], True)]
    assert d.reads == [0, 1, 2]           # scanned once, then served from memory
    assert mb == {}


def test_randomized_sweeps_hold_every_sample_once_and_a_small_cache_rereads_chunks():
    d = ListChunks(counting([3, 2, 4, 5]), {"x": (2,)})
    d.chunks_in_memory = 1
    src = MinibatchSource(d, randomize=True, max_sweeps=3, randomization_seed=4)
    ids = []
    while mb := src.next_minibatch(5):
        ids += ids_of(mb)
        assert np.array_equal(mb["x"].data[:, 1], mb["x"].data[:, 0] + 0.5)  # rows intact
    sweeps = [ids[k:k + 14] for k in range(0, 42, 14)]
    assert [sorted(s) for s in sweeps] == [list(range(14))] * 3
    assert all(s != sorted(s) for s in sweeps)
    assert len(d.reads) > 4                  # one chunk in memory: read again on demand


def test_sequences_beside_one_row_per_sequence_and_a_stream_mixing_both_forms():
    chunks = [{"x": [np.full((2, 1), 0, np.float32), np.full((3, 1), 1, np.float32)],
               "y": np.array([[0], [1]], np.float32)},
              {"x": np.array([[2]], np.float32),           # one step each, as an array
               "y": np.array([[2]], np.float32)}]
    d = ListChunks(chunks, {"x": (1,), "y": (1,)})
    specs = d.stream_specs()
    assert specs["x"].is_sequence and not specs["y"].is_sequence
    assert d.sequence_lengths().tolist() == [2, 3, 1]
    src = MinibatchSource(d, randomize=False, max_sweeps=1)
    mb = src.next_minibatch(4)             # 2 + 3 > 4: the first sequence alone
    assert mb["x"].lengths.tolist() == [2] and mb["x"].num_samples == 2
    mb = src.next_minibatch(4)
    assert mb["x"].lengths.tolist() == [3, 1] and mb["x"].end_of_sweep
    assert mb["x"].data[:, :, 0].tolist() == [[1, 1, 1], [2, 0, 0]]
    assert mb["y"].data[:, 0].tolist() == [1, 2]


def test_size_stream_makes_the_minibatch_size_count_that_stream():
    class ByLabel(ListChunks):
        def size_stream(self):
            return "y"
    chunks = [{"x": [np.zeros((3, 1), np.float32)] * 3,
               "y": np.arange(3.0, dtype=np.float32)[:, None]}]
    src = MinibatchSource(ByLabel(chunks, {"x": (1,), "y": (1,)}), randomize=False, max_sweeps=1)
    mb = src.next_minibatch(2)              # two labels, six steps of x
    assert mb["y"].num_samples == 2 and mb["x"].num_samples == 6
    plain = MinibatchSource(ListChunks(chunks, {"x": (1,), "y": (1,)}), randomize=False)
    assert plain.next_minibatch(2)["y"].num_samples == 1     # 3 steps already exceed 2


def test_frame_mode_refuses_sequences_and_reads_on():
    # CNTK 2.7 cuts no Python deserializer's sequences into frames: its frame packer refuses
    # each minibatch holding one of several steps, and the next minibatch reads on (case
    # cntk_io_38 frame_mode__user_deserializer, two_chunks: RuntimeError twice, then [5])
    chunks = [{"x": [np.array([[0], [1]], np.float32), np.array([[2], [3], [4]], np.float32)]},
              {"x": [np.array([[5]], np.float32)]}]
    src = MinibatchSource(ListChunks(chunks, {"x": (1,)}), randomize=False, max_sweeps=1,
                          frame_mode=True)
    for steps in (2, 3):
        with pytest.raises(RuntimeError, match=f"sequence of {steps} samples"):
            src.next_minibatch(1)
    assert src.next_minibatch(1)["x"].data[:, 0].tolist() == [5]
    assert src.next_minibatch(1) == {}


def test_joined_by_position_with_another_deserializer():
    labels = NumpyDeserializer({"label": np.arange(9, dtype=np.int64) * 10})
    src = MinibatchSource([ListChunks(counting([3, 2, 4]), {"x": (2,)}), labels],
                          randomize=True, max_sweeps=1)
    mb = src.next_minibatch(9)
    assert (mb["label"].data == np.array(ids_of(mb)) * 10).all()


def test_sparse_stream_from_csr_chunks_and_sequences_of_csr():
    m = np.array([[0, 1, 0], [2, 0, 3]], np.float32)
    d = ListChunks([{"s": sp.csr_matrix(m)}, {"s": [sp.csr_matrix(m[:1])]}], {"s": (3,)},
                   sparse=("s",))
    src = MinibatchSource(d, randomize=False, max_sweeps=1)
    mb = src.next_minibatch(10)
    assert src.streams.s.is_sparse
    assert mb["s"].data[:, 0].tolist() == [m[0].tolist(), m[1].tolist(), m[0].tolist()]


def test_worker_processes_give_the_same_minibatches():
    def read(workers):
        with MinibatchSource(ListChunks(counting([3, 2, 4]), {"x": (2,)}), randomize=True,
                             max_sweeps=2, num_workers=workers, start_method="fork") as src:
            return [ids_of(mb) for mb in iter(lambda: src.next_minibatch(4), {})]
    assert read(1) == read(0)


def test_pickled_copy_leaves_the_chunks_in_memory_behind_and_reads_them_again():
    d = ListChunks(counting([3, 2]), {"x": (2,)})
    assert len(d) == 5 and d.reads == [0, 1]
    copy = pickle.loads(pickle.dumps(d))
    assert "_chunk_cache" not in vars(copy) and len(copy) == 5   # the scan's counts travel
    assert copy.read(4)["x"].tolist() == [4.0, 4.5] and copy.reads == [0, 1, 1]


def test_checkpoint_restored_into_a_new_source_continues_the_same():
    def source():
        return MinibatchSource(ListChunks(counting([3, 2, 4]), {"x": (2,)}), randomize=True)
    src = source()
    src.next_minibatch(5)
    state = src.get_checkpoint_state()
    expected = [ids_of(src.next_minibatch(4)) for _ in range(4)]
    other = source()
    other.restore_from_checkpoint(state)
    assert [ids_of(other.next_minibatch(4)) for _ in range(4)] == expected


@pytest.mark.parametrize("chunk, words", [
    ({"x": np.zeros((2, 2), np.float32), "y": np.zeros((3, 1), np.float32)},
     "chunk 0: the streams have different numbers of sequences {'x': 2, 'y': 3}"),
    ({"x": np.zeros((2, 2), np.float32)}, "chunk 0 has no data for stream(s) ['y']"),
    ({"x": np.zeros((2, 2)), "y": np.zeros((2, 1), np.float32)},
     "chunk 0, stream 'x': data of dtype float64, the stream is declared float32"),
    ({"x": [np.zeros((2, 3), np.float32)], "y": np.zeros((1, 1), np.float32)},
     "chunk 0, stream 'x', sequence 0: an array of shape (2, 3); give (rows, 2)"),
    ({"x": sp.csr_matrix(np.eye(2, dtype=np.float32)), "y": np.zeros((2, 1), np.float32)},
     "chunk 0, stream 'x': a sparse matrix for a dense stream"),
    ({"x": np.zeros((0, 2), np.float32), "y": np.zeros((0, 1), np.float32)},
     "chunk 0 has no sequences"),
    ([np.zeros((2, 2), np.float32)], "chunk 0 is a list; get_chunk returns a dict"),
    # rows of the wrong rank (CNTK 2.7 refuses them too, but its error path corrupts its heap,
    # so the CNTK case cannot hold them)
    ({"x": np.zeros((2, 1, 2), np.float32), "y": np.zeros((2, 1), np.float32)},
     "chunk 0, stream 'x': an array of shape (2, 1, 2); give (rows, 2)"),
    ({"x": np.zeros((4,), np.float32), "y": np.zeros((2, 1), np.float32)},
     "chunk 0, stream 'x': an array of shape (4,); give (rows, 2)"),
])
def test_a_bad_chunk_is_a_data_error_naming_the_chunk_and_stream(chunk, words):
    with pytest.raises(DataError) as info:
        MinibatchSource(ListChunks([chunk], {"x": (2,), "y": (1,)}))
    assert words in str(info.value) and "<ListChunks>" in str(info.value)


def test_no_chunks_or_no_streams_is_a_value_error():
    with pytest.raises(ValueError, match="at least one chunk"):
        MinibatchSource(ListChunks([], {"x": (2,)}))
    with pytest.raises(ValueError, match="at least one stream"):
        MinibatchSource(ListChunks(counting([2]), {}))
