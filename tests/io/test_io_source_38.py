"""Session 38's reader fixes that no compat case shows."""

from __future__ import annotations

import numpy as np
import pytest

import stadyn.compat.cntk as C
from stadyn import DataError, io


def _order(path, **kw):
    d = io.CTFDeserializer(path, io.StreamDefs(x=io.StreamDef(shape=1)))
    d.chunk_bytes = 40
    src = io.MinibatchSource(d, max_sweeps=1, randomization_seed=1, **kw)
    return np.concatenate([mb["x"].data[:, 0] for mb in iter(lambda: src.next_minibatch(7), {})])


def test_the_default_window_constant_is_cntks_and_the_default_window(tmp_path):
    # CNTK 2.7: cntk.io.DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS is 128 (the compat constant,
    # held to CNTK by the names case); stadyn.io's was 4, a window of 4 chunks where the
    # default (None) is 128
    assert io.DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS == C.io.DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS
    path = tmp_path / "c.ctf"
    path.write_text("".join(f"|x {k}.{'0' * (7 * k % 10)}\n" for k in range(60)))
    default = _order(path)
    assert sorted(default.tolist()) == list(range(60))
    np.testing.assert_array_equal(
        _order(path, randomization_window_in_chunks=io.DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS),
        default)


def _frames_read_on(path, size, **kw):
    d = io.CTFDeserializer(path, io.StreamDefs(x=io.StreamDef(shape=1)))
    src = io.MinibatchSource(d, max_sweeps=1, randomize=False, frame_mode=True, **kw)
    out = []
    for _ in range(6):
        try:
            mb = src.next_minibatch(size)
        except RuntimeError as err:
            assert isinstance(err, DataError) and err.line == 2
            out.append("refused")
            continue
        if not mb:
            break
        out.append(mb["x"].data[:, 0].tolist())
    src.close()
    return out


def test_frame_mode_reads_on_after_a_refused_minibatch_with_workers_too(tmp_path):
    # CNTK 2.7 (case cntk_io_38 frame_mode__refused_then_on): the two-line sequence counts 2
    # samples, so a minibatch of 2 holds [1] alone; the refused minibatch is taken and the next
    # gives [4, 5].  Stadyn's worker pipeline, which plans minibatches ahead, the same.
    path = tmp_path / "r.ctf"
    path.write_text("0 |x 1\n1 |x 2\n1 |x 3\n2 |x 4\n3 |x 5\n")
    expected = [[1.0], "refused", [4.0, 5.0]]
    assert _frames_read_on(path, 2) == expected
    assert _frames_read_on(path, 2, num_workers=1) == expected


def test_a_text_files_error_read_by_a_worker_keeps_cntks_type(tmp_path):
    # CNTK 2.7 raises RuntimeError for too many values on a line (case cntk_io_38
    # loops__streamdef_edges, too_many); read in a worker process the error came back as a
    # plain DataError (a ValueError), which `except RuntimeError` let through
    path = tmp_path / "m.ctf"
    path.write_text("|x 1 2 3\n|x 1 2 3 4\n")
    d = io.CTFDeserializer(path, io.StreamDefs(x=io.StreamDef(shape=3)))
    with io.MinibatchSource(d, randomize=False, num_workers=1) as src:
        with pytest.raises(RuntimeError, match="m.ctf:2") as info:
            src.next_minibatch(2)
    assert isinstance(info.value, DataError) and info.value.line == 2
