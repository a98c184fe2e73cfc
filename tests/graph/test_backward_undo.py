"""A backward whose setting-up raises leaves the graph as it was: the hooks cutting a
``need_grad=False`` intermediate (set after the forward) are removed, so a later backward with
the mark set back takes every path (graph/_autograd_backward.py; review D's e12.py)."""

import contextlib

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F
import stadyn.graph._autograd_backward as AB

X = np.array([1.0, 2.0], np.float32)


def _graph():
    with sd.auto_forward():
        x = sd.Variable.from_numpy_array(X, need_grad=True)
        m = x * 3.0
        z = F.sum(m * x + F.exp(m))
    return x, m, z


def _full_gradient():
    # d/dx sum(3x^2 + exp(3x)) = 6x + 3 exp(3x)
    return 6 * X + 3 * np.exp(3 * X)


def test_a_raise_arranging_the_reader_order_removes_the_cut_hooks(monkeypatch):
    x, m, z = _graph()
    m.need_grad = False

    @contextlib.contextmanager
    def failing(*args, **kwargs):
        raise MemoryError("arranging failed")
        yield                                               # pragma: no cover

    with monkeypatch.context() as patch:
        patch.setattr(AB, "readers_before", failing)
        x.g = 0
        with pytest.raises(MemoryError, match="arranging failed"):
            z.backward()
    m.need_grad = True
    x.g = 0
    z.backward()
    np.testing.assert_allclose(x.g, _full_gradient(), rtol=1e-5)


def test_the_cut_alone_takes_only_the_direct_path():
    x, m, z = _graph()
    m.need_grad = False
    x.g = 0
    z.backward()
    np.testing.assert_allclose(x.g, 3 * X, rtol=1e-6)       # m * x's x side only
