"""Where a bad CTF line raises with worker processes, in data partitions and in frame mode:
at the minibatch that loads its chunk, as CNTK 2.7 (whole-chunk parsing,
``BlockRandomizer::LoadDataChunks``), with the file and line named.  The native
``io.MinibatchSource`` is held to the CNTK 2.7 references of cases ``io40__ctf_chunk_errors``
(one partition) and ``io41__ctf_chunk_errors_partitions_frames`` (partitions, frame mode), the
files and readings of those cases."""

import json
import os

import numpy as np
import pytest

from stadyn.io import CTFDeserializer, MinibatchSource, StreamDef, StreamDefs

REFS = os.path.join(os.path.dirname(__file__), os.pardir, "compat", "refs", "cntk")
RUNS = {"file_order": dict(randomize=False), "randomized": dict(randomize=True),
        "window1_seed3": dict(randomize=True, randomization_window_in_chunks=1,
                              randomization_seed=3)}


def _cntk(case: str, key: str):
    with np.load(os.path.join(REFS, case + ".npz"), allow_pickle=True) as refs:
        return json.loads(str(refs["json." + key]))


def _file(tmp_path, bad):
    lines = ["|x %d\n" % i for i in range(12)]
    lines[bad] = "|x a\n"
    path = tmp_path / f"b{bad}.ctf"
    path.write_text("".join(lines))
    return path


def _source(path, run, **kw):
    d = CTFDeserializer(str(path), StreamDefs(x=StreamDef(field="x", shape=1)))
    d["chunkSizeInBytes"] = 30          # (chunks: lines 1-6, 7-11, 12)
    return MinibatchSource(d, max_sweeps=1, **RUNS[run], **kw)


def _read(src, bad, partition=None, counted=False):
    """As the cases read: each minibatch of 2 until one raises (checked to name the file and
    line, a RuntimeError as CNTK's) or the data ends."""
    out = []
    for _ in range(12):
        try:
            mb = src.next_minibatch(2) if partition is None else \
                src.next_minibatch(2, num_data_partitions=2, partition_index=partition)
        except RuntimeError as err:
            assert f"b{bad}.ctf:{bad + 1}: input 'x': value 'a'" in str(err)
            return out + ["RuntimeError"]
        if not mb:
            return out + ["empty"]
        values = [float(v) for v in mb["x"].data.ravel()]
        out.append([values, mb["x"].num_samples] if counted else values)
    return out


@pytest.mark.parametrize("bad, run", [(7, "randomized"), (7, "window1_seed3"),
                                      (11, "file_order"), (2, "window1_seed3")])
def test_workers_raise_at_the_minibatch_that_loads_the_chunk(tmp_path, bad, run):
    # a job's worker reads its chunks whole first; a chunk a job read ahead for a later
    # minibatch raises from that one (before: when the bad sequence itself was read, e.g.
    # window1_seed3 with line 8 bad: at the 6th minibatch, CNTK 2.7 at the 4th)
    with _source(_file(tmp_path, bad), run, num_workers=1) as src:
        assert _read(src, bad) == _cntk("io40__ctf_chunk_errors", f"bad{bad}_{run}")


@pytest.mark.parametrize("workers", [0, 1])
@pytest.mark.parametrize("bad, run, mode", [(7, "window1_seed3", "p0"),
                                            (2, "file_order", "p1"),
                                            (7, "randomized", "p1"),
                                            (11, "randomized", "one_frames"),
                                            (2, "file_order", "p1_frames")])
def test_partitions_and_frame_mode_raise_at_the_minibatch_that_loads_the_chunk(
        tmp_path, workers, bad, run, mode):
    # partitions load their own chunks only (file order: those of their sequences;
    # randomized: their own shuffled chunks in the windows of all they walked); frame mode
    # loads as reading whole sequences does.  Before, each raised when it read line bad + 1
    # (window1_seed3, p0, line 8: at the 6th minibatch; CNTK 2.7 at the 2nd)
    frames = mode.endswith("_frames")
    partition = None if mode.startswith("one") else int(mode[1])
    with _source(_file(tmp_path, bad), run, frame_mode=frames, num_workers=workers) as src:
        got = _read(src, bad, partition, counted=True)
    assert got == _cntk("io41__ctf_chunk_errors_partitions_frames", f"bad{bad}_{run}_{mode}")
