"""Stadyn's error types as a user reaches them: ``stadyn.<Name>Error``."""

from __future__ import annotations

import pytest

import stadyn as sd
import stadyn.cntk_semantics as S


def test_an_unrunnable_graph_raises_stadyn_unrunnable_error():
    # CNTK 2.7's random_sample of weights with the batch axis builds, and fails when run
    y = S.cannot_run(sd.Variable((2, 5)), (3, 5), "Node 'w' (InputValue operation)")
    with pytest.raises(sd.UnrunnableError, match="cannot be interpreted as a single 2D tensor"):
        y.forward()
    assert issubclass(sd.UnrunnableError, RuntimeError)
    assert issubclass(sd.UnrunnableError, sd.ShapeError)
    assert "UnrunnableError" in sd.__all__
