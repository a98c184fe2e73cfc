"""A CNTK 2.7 user's own programs (round 43, follow-up): what CNTK 2.7's own tests of its
losses and ops (``cntk/losses/tests/losses_test.py``, ``cntk/ops/tests``) still ran into, each
run unchanged on CNTK 2.7 and on ``stadyn.compat.cntk``."""

import functools

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome

_returned = functools.partial(outcome, convert=as_returned, raised=as_raised)

@cntk_case(names=["cntk.losses.nce_loss", "cntk.nce_loss", "cntk.InferredDimension",
                  "cntk.parameter", "cntk.glorot_uniform"])
def user43b_nce_loss_infers_the_input_axis_of_its_weights(C, r):
    """``nce_loss`` of weights ``(classes, InferredDimension)`` (``losses_test.py``'s
    ``test_nce_loss``): CNTK 2.7's ``NCELoss`` infers their input axis from the vector
    ``inputs`` (``Function.cpp``'s NCELoss builds an unused ``Times`` for it), draws the
    initializer then, and the loss runs (its values CNTK's: one eval, then after ``grad``
    the next); a second nce_loss on the same weights finds them inferred."""
    res = {}
    x, y = C.input_variable(3), C.input_variable(6)
    W = C.parameter((6, C.InferredDimension), init=C.glorot_uniform(seed=98052))
    b = C.parameter((6, 1), init=-np.log(6))
    q = np.arange(6, dtype=np.float32) + 1
    res["shape before"] = W.shape
    loss = C.nce_loss(W, b, x, y, q, num_samples=4, seed=98052)
    res["shape after"] = W.shape
    res["value"] = np.asarray(W.value)
    x0 = np.arange(6, dtype=np.float32).reshape(2, 3) / 6
    y0 = np.eye(6, dtype=np.float32)[[1, 4]]
    res["loss"] = _returned(lambda: np.asarray(loss.eval({x: x0, y: y0})))
    res["grad"] = _returned(lambda: np.asarray(loss.grad({x: x0, y: y0}, wrt=[W])))
    again = C.nce_loss(W, b, x, y, q, num_samples=4, seed=98052)
    res["eval after grad"] = _returned(lambda: np.asarray(loss.eval({x: x0, y: y0})))
    res["again"] = _returned(lambda: np.asarray(again.eval({x: x0, y: y0})))
    return res


@cntk_case(names=["cntk.hardmax", "cntk.FreeDimension"])
def user43b_hardmax_of_a_free_dimension_keeps_its_dtype(C, r):
    """``hardmax`` of a float64 or float16 input with a free dimension: CNTK 2.7's output
    keeps the input's dtype (one 1 at the first maximum of the whole sample), as it does
    without a free dimension; a 1 past position 2048 of a float16 sample included."""
    res = {}
    for dt in (np.float64, np.float16):
        z = C.input_variable((C.FreeDimension, 3), dtype=dt)
        h = C.hardmax(z)
        a = np.array([[[1, 2, 3], [3, 1, 0]]], dt)
        res[dt.__name__] = _returned(lambda h=h, z=z, a=a: np.asarray(h.eval({z: a})))
        res[dt.__name__ + " dtype"] = np.dtype(h.dtype).name
    z = C.input_variable((C.FreeDimension, 3), dtype=np.float16)
    a = np.zeros((1, 1000, 3), np.float16)
    a[0, 900, 2] = 1
    res["float16 far"] = _returned(
        lambda: np.argwhere(np.asarray(C.hardmax(z).eval({z: a}))).astype(np.int64))
    return res


@cntk_case(names=["cntk.pooling", "cntk.FreeDimension", "cntk.sequence.unpack"])
def user43b_pooling_keeps_a_free_channel_axis(C, r):
    """``pooling`` keeps each channel, so a free channel axis stays free in ``.shape``:
    CNTK 2.7 shows ``(-3, -3, -3)`` for max and average pooling of a ``(F, F, F)`` input and
    ``(-3, 2, 2)`` for an unpacked sequence of ``(4, 4)`` images; the values of a run are
    the run's lengths."""
    res = {}
    F = C.FreeDimension
    z = C.input_variable((F, F, F))
    res["max"] = C.pooling(z, C.MAX_POOLING, (2, 2)).shape
    avg = C.pooling(z, C.AVG_POOLING, (2, 2), strides=(2, 2))
    res["average"] = avg.shape
    data = np.arange(2 * 4 * 6, dtype=np.float32).reshape(1, 2, 4, 6)
    res["average run"] = _returned(lambda: np.asarray(avg.eval({z: data})))
    zc = C.input_variable((F, 4, F))
    res["channel and width"] = C.pooling(zc, C.AVG_POOLING, (2, 2), strides=(2, 2)).shape
    s = C.sequence.input_variable((4, 4))
    u = C.sequence.unpack(s, 0, no_mask_output=True)
    res["unpacked"] = C.pooling(u, C.MAX_POOLING, (2, 2), strides=(2, 2)).shape
    return res
