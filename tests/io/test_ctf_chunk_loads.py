"""CTF chunks parsed whole when a source loads them (``CTFDeserializer.load_chunks``, CNTK
2.7's ``TextParser`` loading a chunk): the minibatches are the ones parsing each sequence on
demand gives, kept results or not; a deserializer read directly stays lazy.  Where a bad line
raises through a source is held to CNTK 2.7 by case ``io40__ctf_chunk_errors``."""

import numpy as np
import pytest

from stadyn._errors import DataError
from stadyn.io import CTFDeserializer, MinibatchSource, StreamDef, StreamDefs

STREAMS = StreamDefs(x=StreamDef(shape=3), y=StreamDef(shape=4, is_sparse=True))


def _text(sequences, bad=None):
    rng = np.random.RandomState(5)
    lines = []
    for s in range(sequences):
        for t in range(1 + s % 3):
            values = " ".join("%g" % v for v in rng.randint(-3, 4, 3))
            label = " |y %d:1" % (s % 4) if t == 0 else ""
            lines.append("%d |x %s%s\n" % (s, "1 a 2" if s == bad else values, label))
    return "".join(lines).encode()


def _sweep(path, whole, kept=None, **kw):
    d = CTFDeserializer(path, STREAMS)
    d["chunkSizeInBytes"] = 200
    d._whole_chunks = whole
    if kept is not None:
        d._kept_values = kept
    src = MinibatchSource(d, max_sweeps=2, **kw)
    out = []
    while True:
        mb = src.next_minibatch(7)
        if not mb:
            return out
        out.append({name: (mb[name].data.copy(), mb[name].lengths) for name in ("x", "y")})


@pytest.mark.parametrize("kw", [dict(randomize=False), dict(randomize=True),
                                dict(randomize=True, randomization_window_in_chunks=2)])
@pytest.mark.parametrize("kept", [None, 10])
def test_whole_chunks_give_the_minibatches_of_parsing_on_demand(tmp_path, kw, kept):
    path = tmp_path / "a.ctf"
    path.write_bytes(_text(40))
    lazy, whole = _sweep(path, False, **kw), _sweep(path, True, kept, **kw)
    assert len(lazy) == len(whole) > 10
    for a, b in zip(lazy, whole):
        for name in a:
            np.testing.assert_array_equal(a[name][0], b[name][0])
            np.testing.assert_array_equal(a[name][1], b[name][1])


def test_a_deserializer_read_directly_parses_only_what_it_reads(tmp_path):
    path = tmp_path / "b.ctf"
    path.write_bytes(_text(6, bad=4))
    d = CTFDeserializer(path, STREAMS)
    assert d.read(0)["x"].shape == (1, 3)      # the bad sequence 4 is in the same chunk
    with pytest.raises(DataError, match=r"b\.ctf:\d+: input 'x': value 'a'"):
        d.load_chunks([0])
    with pytest.raises(DataError, match="value 'a'"):
        d.read(4)


def test_a_pickled_deserializer_leaves_the_parses_its_source_kept(tmp_path):
    # a source in this process parsed the chunks of its window whole and keeps the sequences
    # it has not delivered; a copy sent to worker processes goes without them (before: all of
    # them, up to 2**25 values, went with it) and reads the same values
    import pickle
    path = tmp_path / "c.ctf"
    path.write_bytes(_text(40))
    d = CTFDeserializer(path, STREAMS)
    src = MinibatchSource(d, max_sweeps=1, randomize=False)
    assert "_parsed" not in vars(d)      # (the source reads its own copy, as CNTK 2.7 its
    d = src._composite.deserializers[0]  # reader made from the configuration)
    src.next_minibatch(3)                # (sequences 0 and 1: 1 and 2 lines)
    assert sorted(d._parsed) == list(range(2, 40))
    copy = pickle.loads(pickle.dumps(d))
    assert not {"_parsed", "_kept", "_chunks_read"} & set(vars(copy))
    assert len(d._parsed) == 38          # (the original keeps them for its source)
    for i in (3, 39):
        for name in ("x", "y"):
            np.testing.assert_array_equal(copy.read(i)[name], d.read(i)[name])
    with MinibatchSource(copy, max_sweeps=1, randomize=False, num_workers=1) as workers:
        assert workers.next_minibatch(7)["x"].num_samples == 7


def _kept(src):
    """The parsed values the source's text deserializer keeps for sequences not read yet."""
    d = src._composite.deserializers[0]
    return len(vars(d).get("_parsed", {})), vars(d).get("_kept", 0)


@pytest.mark.parametrize("kw", [dict(randomize=False), dict(randomize=True)])
def test_parses_kept_are_dropped_when_the_source_stops(tmp_path, kw):
    # a source that stops mid-sweep held the parses of the rest of its window (up to 2**25
    # values) for as long as its deserializer lived: now close() drops them, and so does a
    # source whose data is done (max_samples) and a sweep's end
    path = tmp_path / "d.ctf"
    path.write_bytes(_text(40))
    src = MinibatchSource(CTFDeserializer(path, STREAMS), max_sweeps=2, **kw)
    src.next_minibatch(3)
    assert _kept(src)[0] > 30 and _kept(src)[1] > 0
    src.close()
    assert _kept(src) == (0, 0)
    np.testing.assert_array_equal(src.next_minibatch(3)["x"].data.shape[-1], 3)   # reads on

    done = MinibatchSource(CTFDeserializer(path, STREAMS), max_samples=5, **kw)
    while done.next_minibatch(3):
        pass
    assert _kept(done) == (0, 0)

    swept = MinibatchSource(CTFDeserializer(path, STREAMS), max_sweeps=2, **kw)
    total = 0
    while total < 40:       # (sequences counted: the sweep's 40 end within a minibatch)
        mb = swept.next_minibatch(4)
        total += len(mb["x"].lengths)
    assert mb["x"].end_of_sweep and _kept(swept) == (0, 0)


def test_the_parses_go_with_the_source(tmp_path):
    # the source reads its own copy of the deserializer, which holds the parses: a source
    # dropped mid-sweep (not closed) takes them with it; the user's deserializer holds none
    import gc
    import weakref
    path = tmp_path / "e.ctf"
    path.write_bytes(_text(40))
    d = CTFDeserializer(path, STREAMS)
    src = MinibatchSource(d, max_sweeps=1, randomize=False)
    src.next_minibatch(3)
    own = weakref.ref(src._composite.deserializers[0])
    assert own() is not d and len(own()._parsed) == 38
    del src
    gc.collect()
    assert own() is None and "_parsed" not in vars(d)


class _RecordingPool:
    """A worker pool that records the jobs submitted (nothing is read)."""

    def __init__(self):
        self.jobs = []

    def submit(self, job_id, ids, sweeps, positions, chunks=None, worker=None):
        self.jobs.append((worker, ids.copy(), () if chunks is None else chunks.tolist()))


def test_randomized_workers_read_each_chunk_where_it_was_parsed_whole(tmp_path):
    # 40 sequences in chunks of 200 bytes, randomized, 2 workers: each job goes to one worker;
    # every chunk is read whole by one job (the first minibatch's window holds them all) and
    # every row of it is read by that job's worker, which kept the parses (chunk % 2), so no
    # worker parses a sequence another one parsed
    path = tmp_path / "a.ctf"
    path.write_bytes(_text(40))
    d = CTFDeserializer(path, STREAMS)
    d["chunkSizeInBytes"] = 200
    src = MinibatchSource(d, max_sweeps=1, num_workers=2)
    src._pool = pool = _RecordingPool()
    src._plan_at = (0, 0)
    while src._queue_job(7, 1, 0):
        pass
    ends = np.cumsum(d.chunk_sizes())
    loaded = {c: worker for worker, _, chunks in pool.jobs for c in chunks}
    assert sorted(loaded) == list(range(len(ends))) and len(ends) > 4
    assert sum(len(chunks) for _, _, chunks in pool.jobs) == len(ends)   # (each once)
    rows = 0
    for worker, ids, _ in pool.jobs:
        assert worker in (0, 1)
        assert all(loaded[c] == worker for c in np.searchsorted(ends, ids, side="right"))
        rows += len(ids)
    assert rows == 40


def test_randomized_workers_give_the_minibatches_of_one_process(tmp_path):
    path = tmp_path / "a.ctf"
    path.write_bytes(_text(40))
    here = _sweep(path, False, randomize=True)
    # ('fork': no worker imports Stadyn again, and no OpenCV pool ran in this test's reads)
    with_workers = _sweep(path, True, randomize=True, num_workers=2, start_method="fork")
    assert len(here) == len(with_workers) > 10
    for a, b in zip(here, with_workers):
        for name in a:
            np.testing.assert_array_equal(a[name][0], b[name][0])
            np.testing.assert_array_equal(a[name][1], b[name][1])


def test_randomized_workers_follow_a_change_of_minibatch_size(tmp_path):
    # one job a worker: a job planned for minibatches of 7 is cut by the next one of 3, and
    # each worker's part of it must give its rows to that minibatch (before: only the first
    # worker's did, a minibatch of 3 sequences held 2 and the rows came later, silently)
    path = tmp_path / "a.ctf"
    path.write_bytes(_text(40))

    def read(**kw):
        d = CTFDeserializer(path, STREAMS)
        d["chunkSizeInBytes"] = 200
        src = MinibatchSource(d, max_sweeps=2, randomize=True, **kw)
        out = []
        for n in [7, 3] * 30:
            mb = src.next_minibatch(n)
            if not mb:
                return out
            out.append({name: (mb[name].data.copy(), mb[name].lengths) for name in ("x", "y")})
    here = read()
    with_workers = read(num_workers=2, start_method="fork")
    assert len(here) == len(with_workers) > 10
    for a, b in zip(here, with_workers):
        for name in a:
            np.testing.assert_array_equal(a[name][0], b[name][0])
            np.testing.assert_array_equal(a[name][1], b[name][1])


def test_file_order_workers_read_each_chunk_where_it_was_parsed_whole(tmp_path):
    # 40 sequences in chunks of 200 bytes, file order, 2 workers, minibatches of 7: the job
    # that has a chunk read whole reads every row of it (the rest of the chunk: any worker
    # takes it, and drops the parses after it), so no sequence is parsed twice (before: jobs
    # of 7 rows, a chunk's later rows read by other jobs, parsed again on demand)
    path = tmp_path / "a.ctf"
    path.write_bytes(_text(40))
    d = CTFDeserializer(path, STREAMS)
    d["chunkSizeInBytes"] = 200
    src = MinibatchSource(d, max_sweeps=1, randomize=False, num_workers=2)
    src._pool = pool = _RecordingPool()
    src._plan_at = (0, 0)
    while src._queue_job(7, 1, 0):
        pass
    ends = np.cumsum(d.chunk_sizes())
    assert len(ends) > 4 and [chunks for _, _, chunks in pool.jobs] == \
        [[c] for c in range(len(ends))]
    for (_, ids, _), c in zip(pool.jobs, range(len(ends))):
        assert ids.tolist() == list(range(ends[c - 1] if c else 0, ends[c]))


@pytest.mark.parametrize("sizes", [[7], [7, 3, 20]])
def test_file_order_workers_give_the_minibatches_of_one_process(tmp_path, sizes):
    # jobs of whole chunks cut into minibatches by position, over 2 sweeps, minibatch sizes
    # changing too
    path = tmp_path / "a.ctf"
    path.write_bytes(_text(40))

    def read(**kw):
        d = CTFDeserializer(path, STREAMS)
        d["chunkSizeInBytes"] = 200
        src = MinibatchSource(d, max_sweeps=2, randomize=False, **kw)
        out = []
        for k in range(60):
            mb = src.next_minibatch(sizes[k % len(sizes)])
            if not mb:
                return out
            out.append({name: (mb[name].data.copy(), mb[name].lengths,
                               mb[name].end_of_sweep) for name in ("x", "y")})
    here = read()
    with_workers = read(num_workers=2, start_method="fork")
    assert len(here) == len(with_workers) > 5
    for a, b in zip(here, with_workers):
        for name in a:
            np.testing.assert_array_equal(a[name][0], b[name][0])
            np.testing.assert_array_equal(a[name][1], b[name][1])
            assert a[name][2] == b[name][2]
