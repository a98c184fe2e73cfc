"""Layers of ``stadyn.compat.cntk`` on an input with no dynamic axes (``dynamic_axes=[]``)
that CNTK 2.7 cannot write a reference for: its Convolution over such an input computes (run
by hand: ``(1, 4, 4)`` with a ``(3, 3)`` filter gives ``(2, 2, 2)``, W ``(2, 1, 3, 3)``) and
then corrupts its heap.  Checked against a NumPy cross-correlation of the sample."""

import numpy as np

import stadyn.compat.cntk as C


def _correlate(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """A valid cross-correlation of one sample ``x`` (channels, h, w) with filters ``w``
    (out, channels, kh, kw)."""
    n, _, kh, kw = w.shape
    oh, ow = x.shape[1] - kh + 1, x.shape[2] - kw + 1
    out = np.zeros((n, oh, ow), np.float64)
    for i in range(oh):
        for j in range(ow):
            out[:, i, j] = np.tensordot(w, x[:, i:i + kh, j:j + kw], axes=3)
    return out


def test_convolution_over_an_input_without_dynamic_axes_is_one_sample():
    img = C.input_variable((1, 4, 4), dynamic_axes=[])
    c = C.layers.Convolution((3, 3), 2, init=C.glorot_uniform(seed=3))(img)
    iv = (np.arange(16, dtype=np.float32).reshape(1, 4, 4) - 8) / 8
    assert c.shape == (2, 2, 2) and c.W.shape == (2, 1, 3, 3)
    got = c.eval({img: iv})
    want = _correlate(iv, np.asarray(c.W.value)) + np.asarray(c.b.value)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_layer_over_a_placeholder_without_dynamic_axes_keeps_its_parameters_when_bound():
    p = C.placeholder((3,), dynamic_axes=[])
    f = C.layers.Dense(4, init=C.glorot_uniform(seed=8))(p)
    w, b = np.asarray(f.W.value), np.asarray(f.b.value)
    x = C.input_variable(3, dynamic_axes=[])
    z = f.replace_placeholders({p: x})
    xv = np.array([0.5, -1.0, 2.0], np.float32)
    np.testing.assert_allclose(z.eval({x: xv}), xv @ w + b, rtol=1e-5, atol=1e-6)
