"""Session 38's reader fixes that no compat case shows."""

from __future__ import annotations

import numpy as np

import stadyn.compat.cntk as C
from stadyn import io


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
