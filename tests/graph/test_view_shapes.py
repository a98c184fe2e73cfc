"""A view (:meth:`Variable.unlinked`) reads its source's shape as it is now: a source given
data of another shape (``w.data = tensor``) or reset (``reset_shape``) shows in the view's
``shape``/``ndim``/``size``/``len`` and in the ops built on it, and a view's ``reset_shape`` is
its source's (NNabla's view holds the source's one array: cases
``nnabla_view_43.unlinked__source_reset_shape``, ``unlinked__own_reset_shape``)."""

import numpy as np
import torch

import stadyn as sd
import stadyn.functions as F

_NEW = np.arange(12, dtype=np.float32).reshape(4, 3) / 4.0


def _grown(need_grad):
    w = sd.Variable((1, 3), need_grad=True)
    u = w.unlinked(need_grad=need_grad)
    w.data = torch.from_numpy(_NEW.copy())
    return w, u


def test_view_dims_follow_the_source_given_data_of_another_shape():
    w, u = _grown(False)
    assert (u.shape, u.ndim, u.size, len(u), u.size_from_axis(1)) == ((4, 3), 2, 12, 4, 3)
    y = F.tanh(u)
    assert y.shape == (4, 3)                    # the op built on it infers from (4, 3)
    y.forward()
    np.testing.assert_allclose(y.d, np.tanh(_NEW), rtol=1e-6)
    assert u.unlinked().shape == (4, 3)         # a view of the view


def test_mean_by_the_view_size_is_the_numpy_mean():
    # SILENT before: u.size stayed 3, the "mean" was the sum over 12 values / 3
    w, u = _grown(False)
    m = F.sum(u) / u.size
    m.forward()
    np.testing.assert_allclose(float(m.d), _NEW.mean(), rtol=1e-6)


def test_graph_built_before_a_reset_runs_and_reaches_the_source_gradient():
    w = sd.Variable((1, 3), need_grad=True)
    u = w.unlinked(need_grad=True)
    y = F.tanh(u)
    w.reset_shape((4, 3), force=True)
    w.d = _NEW
    assert u.shape == (4, 3)
    y.forward()
    assert y.shape == (4, 3)
    w.g = 0
    y.backward(np.ones((4, 3), np.float32))
    np.testing.assert_allclose(w.g, 1.0 - np.tanh(_NEW) ** 2, rtol=1e-5, atol=1e-6)


def test_reset_shape_of_a_view_resets_its_source():
    w = sd.Variable.from_numpy_array(np.arange(3, dtype=np.float32).reshape(1, 3))
    u = w.unlinked()
    u.reset_shape((2, 3), force=True)
    assert (w.shape, u.shape) == ((2, 3), (2, 3))
    assert w.d.tolist() == u.d.tolist() == [[0.0] * 3] * 2
