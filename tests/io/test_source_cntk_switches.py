"""The native ``io.MinibatchSource``'s public switches for CNTK 2.7's behaviours that
``compat.cntk``'s source turns on (it set io's private attributes before)."""

import json
import os

import numpy as np
import pytest

from stadyn.io import MinibatchSource

from _io_helpers import ListChunks

REFS = os.path.join(os.path.dirname(__file__), os.pardir, "compat", "refs", "cntk")


def _cntk_reference(case: str, key: str):
    """What CNTK 2.7 gave for ``key`` of harness case ``case`` (its committed reference)."""
    with np.load(os.path.join(REFS, case + ".npz"), allow_pickle=True) as refs:
        return json.loads(str(refs["json." + key]))


def _read_on(src, size):
    out = []
    while True:
        mb = src.next_minibatch(size)
        if not mb:
            return out
        d = mb["x"]
        out.append([[int(v) for v in d.data.reshape(-1)], bool(d.end_of_sweep)])


@pytest.mark.parametrize("sweeps, size", [(1, 2), (1, 3), (2, 3), (2, 1)])
def test_cntk_sweep_markers_say_sweep_ends_where_cntk_does(sweeps, size):
    # one chunk of three one-step sequences (0, 10, 20), read by CNTK 2.7's local-timeline
    # randomizer: a minibatch ending with the sweep's last sequence, its size read, does not
    # say end_of_sweep, the next one does (case sweep_ends__user_deserializer_one_partition)
    def source(**kw):
        chunks = [{"x": np.array([[0.0], [10.0], [20.0]], np.float32)}]
        return MinibatchSource(ListChunks(chunks, {"x": (1,)}), randomize=False,
                               max_sweeps=sweeps, **kw)
    cntk = _cntk_reference("sweep_ends__user_deserializer_one_partition",
                           f"one_False_{sweeps}_{size}")
    assert _read_on(source(cntk_sweep_markers=True), size) == cntk
    plain = _read_on(source(), size)     # (the default: the minibatch holding the last sample)
    assert [v for v, _ in plain] == [v for v, _ in cntk]
    if size == 3:
        assert plain != cntk
