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
