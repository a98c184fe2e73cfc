"""compat.cntk's waiting Functions (``_deferred.Deferred``) walk a graph whose parts are read
more than once (a diamond: ``plus(relu(h), h)`` level after level) once per part: its
placeholders and arguments were found by walking each part again wherever it was read, 2**n
walks for n levels."""

from __future__ import annotations

import stadyn.compat.cntk as C
from stadyn.compat.cntk._deferred import Deferred


def _diamond(levels: int):
    p = C.placeholder(name="p")
    h = p
    for _ in range(levels):
        h = C.plus(C.relu(h), h)
    return p, h


def test_a_diamond_is_walked_once_per_part(monkeypatch):
    p, h = _diamond(12)
    walks = []
    leaves = Deferred._leaves

    def counted(self, *args, **kwargs):
        walks.append(self)
        return leaves(self, *args, **kwargs)
    monkeypatch.setattr(Deferred, "_leaves", counted)
    assert [q.name for q in h.placeholders] == ["p"]
    assert len(walks) == 2 * 12             # each plus and each relu once
    walks.clear()
    assert [a.name for a in h.arguments] == ["p"]
    assert len(walks) == 2 * 12


def test_a_chain_on_a_shaped_placeholder_probes_each_op_once(monkeypatch):
    # a placeholder of a shape waits for its binding; the shape of a times op on it is found
    # by building it on stand-ins, which for an op over a chain built the whole chain again
    # (n**2 op builds for n shapes read: 30 of them 4 -> 52 ms,
    # benchmarks/cntk_shaped_placeholder.py); an operand already probed is a stand-in
    replays = []
    replay = Deferred._replay

    def counted(self, *args, **kwargs):
        replays.append(self)
        return replay(self, *args, **kwargs)
    monkeypatch.setattr(Deferred, "_replay", counted)
    h = C.placeholder((3,))
    for _ in range(12):
        h = C.times(h, C.parameter((3, 3), init=0.5))
        assert h.shape == (3,)
    # each op built once on stand-ins, and met once more as the next one's operand (its
    # stand-in looked up): 12 + 11 (the whole chain each time: 12 * 13 / 2 = 78)
    assert len(replays) == 23, len(replays)
    x = C.input_variable(3)
    assert h.replace_placeholders({h.placeholders[0]: x}).output.shape == (3,)
