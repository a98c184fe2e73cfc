"""What the differential fuzzer (``tools/nnabla_fuzz.py``) found Stadyn computing differently
from NNabla 1.39, one small deterministic case per class (forward and gradients):

* ``slice`` with a negative step (Stadyn refused it: torch has no negative steps);
* ``pad`` in ``reflect``/``repeat`` mode over more than three axes, or by more than the axis
  is long (NNabla reflects again and again; torch refused both);
* ``interpolate``'s coordinates: ``half_pixel`` also moves ``nearest`` (Stadyn ignored it
  there), one output reads index 0 whatever the ratio, and ``align_corners`` with
  ``half_pixel`` is refused;
* ``sum_pooling`` with ``ignore_border=False``: ``(W + P - 1) // S + 1`` windows, as NNabla's
  other poolings (Stadyn padded to whole strides and gave one window more);
* ``softmax_cross_entropy`` and ``categorical_cross_entropy`` ignore a negative class id
  (loss and gradient 0; Stadyn raised), and ``categorical_cross_entropy`` clamps its log's
  argument at the smallest normal float (87.34 for a 0, not inf), its gradient ``-dy / tiny``;
* ``mean`` of integers: a float32 mean (Stadyn raised);
* ``global_average_pooling`` is ``(N, C, 1, 1)`` for any input rank, ``kl_multinomial``
  ``p.shape[:base_axis] + (1,)`` (Stadyn kept every axis);
* ``instance_normalization`` of an input with no axis left to normalise over (``(N, C)``):
  each value is its own mean (torch's ``var_mean`` over ``dim=[]`` took every axis).
"""

import numpy as np

from compat_harness import nnabla_case
from compat_cases.nnabla_functions import fn_case


def _grad_case(nn, x_array, make, r):
    """``make(x)``'s output and the gradient of ``sum(out * w)`` w.r.t. ``x``."""
    x = nn.Variable.from_numpy_array(x_array, need_grad=True)
    y = make(x)
    y.forward()
    x.g = 0
    y.backward(r.weights_like(y.d))
    return y.d.copy(), x.g.copy()


@nnabla_case(names=["nnabla.functions.slice"],
             note="negative steps on one axis and on several, mixed with positive ones, with "
                  "negative starts and stops")
def slice__negative_steps(nn, F, r):
    res = {}
    data = r.randn(4, 5, 3)
    for label, kw in (("last axis reversed", dict(start=(2,), stop=(0,), step=(-1,))),
                      ("two axes", dict(start=(4, 2), stop=(0, 0), step=(-2, -1))),
                      ("mixed", dict(start=(0, -1, 1), stop=(4, -5, 3), step=(2, -1, 1))),
                      ("negative start", dict(start=(-1, 2), stop=(-4, 0), step=(-1, -2)))):
        out, grad = _grad_case(nn, data, lambda x, kw=kw: F.slice(x, **kw), r)
        res[label] = out
        res[label + " grad"] = grad
    return res


@nnabla_case(names=["nnabla.functions.pad"],
             note="reflect and repeat over four axes, and pads longer than the axis")
def pad__reflect_any_length(nn, F, r):
    res = {}
    four = r.randn(2, 3, 2, 3)
    row = r.randn(2, 3)
    pair = r.randn(1, 2)
    for mode in ("reflect", "repeat"):
        for label, data, width in (("four axes", four, (1, 1, 0, 1, 1, 0, 1, 2)),
                                   ("long", row, (5, 6)),
                                   ("two long", row, (2, 0, 4, 3)),
                                   ("size 2", pair, (3, 3))):
            out, grad = _grad_case(
                nn, data, lambda x, width=width, mode=mode: F.pad(x, width, mode=mode), r)
            res["%s %s" % (mode, label)] = out
            res["%s %s grad" % (mode, label)] = grad
    return res


@nnabla_case(names=["nnabla.functions.interpolate"],
             note="half_pixel in linear and nearest mode, shrinking and growing, one output "
                  "with and without align_corners, half_pixel_for_nn with half_pixel, and the "
                  "refusal of align_corners with half_pixel")
def interpolate__coordinates(nn, F, r):
    res = {}
    image = r.randn(2, 2, 3, 5)
    line = r.randn(1, 2, 7)
    cases = (
        ("linear shrink", image, dict(scale=(0.5, 0.5), half_pixel=True)),
        ("linear sizes", image, dict(output_size=(4, 3), half_pixel=True)),
        ("nearest grow", image, dict(output_size=(5, 8), mode="nearest", half_pixel=True)),
        ("nearest shrink", line, dict(output_size=(3,), mode="nearest", half_pixel=True)),
        ("nearest both", line, dict(output_size=(4,), mode="nearest", half_pixel=True,
                                    half_pixel_for_nn=True)),
        ("one output", line, dict(output_size=(1,))),
        ("one output nearest", line, dict(output_size=(1,), mode="nearest")),
        ("one output aligned", line, dict(output_size=(1,), align_corners=True)),
    )
    for label, data, kw in cases:
        out, grad = _grad_case(nn, data, lambda x, kw=kw: F.interpolate(x, **kw), r)
        res[label] = out
        res[label + " grad"] = grad
    x = nn.Variable.from_numpy_array(line)
    try:
        y = F.interpolate(x, scale=(2,), align_corners=True, half_pixel=True)
        y.forward()
        res["align_corners with half_pixel refused"] = False
    except (RuntimeError, ValueError):
        res["align_corners with half_pixel refused"] = True
    return res


fn_case("instance_normalization__no_spatial_axis",
        lambda F, x, b, g: F.instance_normalization(x, b, g, channel_axis=1),
        [(3, 4), (1, 4), (1, 4)],
        tols={"grad0": (1e-5, 1e-4)},
        note="an (N, C) input: every value is its instance's mean, the output is beta and "
             "the gradient w.r.t. x is 0 (NNabla's is float32 rounding, about 1e-5: atol "
             "1e-4 there)")


fn_case("sum_pooling__partial_windows",
        lambda F, x: F.sum_pooling(x, (1, 2), stride=(2, 1), pad=(0, 1), ignore_border=False),
        [(2, 3, 6, 3)],
        note="a stride longer than the kernel without ignore_border: 3 windows on 6, not 4")
fn_case("sum_pooling__partial_windows_3d",
        lambda F, x: F.sum_pooling(x, (2, 3, 2), stride=(3, 2, 1), pad=(1, 0, 1),
                                   ignore_border=False),
        [(1, 2, 5, 4, 3)],
        note="three axes, pads, strides and kernels all different, without ignore_border")


@nnabla_case(names=["nnabla.functions.softmax_cross_entropy",
                    "nnabla.functions.categorical_cross_entropy"],
             note="class ids of -1 (ignored), probabilities of 0 and below (clamped)")
def cross_entropy__ignored_ids(nn, F, r):
    res = {}
    ids = np.array([[0], [-1], [2], [1]], np.int32)
    probs = np.array([[0.2, 0.5, 0.3], [0.0, 0.4, 0.6], [0.1, 0.9, 0.0], [0.3, -0.2, 0.9]],
                     np.float32)
    for name, data in (("softmax_cross_entropy", r.randn(4, 3)),
                       ("categorical_cross_entropy", probs)):
        x = nn.Variable.from_numpy_array(data, need_grad=True)
        y = getattr(F, name)(x, nn.Variable.from_numpy_array(ids))
        y.forward()
        x.g = 0
        y.backward(r.weights_like(y.d))
        res[name] = y.d.copy()
        res[name + " grad"] = x.g.copy()
    x = nn.Variable.from_numpy_array(np.moveaxis(r.randn(2, 3, 4), 1, 2).copy(), need_grad=True)
    t = nn.Variable.from_numpy_array(np.array([[[0, -1, 3]], [[-1, 2, 1]]], np.int32))
    y = F.softmax_cross_entropy(x, t, axis=1)
    y.forward()
    x.g = 0
    y.backward(r.weights_like(y.d))
    res["axis 1"] = y.d.copy()
    res["axis 1 grad"] = x.g.copy()
    return res


fn_case("mean__integers", lambda F, x: F.mean(x, axis=1), [(2, 3)], grads=False,
        data=[lambda r, s: r.randint(-5, 6, s).astype(np.int32)],
        note="int32 input: a float32 mean")
fn_case("global_average_pooling__any_rank", lambda F, x: F.global_average_pooling(x),
        [(3, 4)], note="an (N, C) input gives (N, C, 1, 1)")
fn_case("global_average_pooling__3d", lambda F, x: F.global_average_pooling(x),
        [(2, 3, 5)], note="an (N, C, L) input gives (N, C, 1, 1)")
fn_case("kl_multinomial__several_axes",
        lambda F, p, q: F.kl_multinomial(p, q, base_axis=1), [(2, 3, 4), (2, 3, 4)],
        data=[lambda r, s: r.rand(*s, low=0.1, high=1.0)] * 2,
        note="the axes from base_axis on sum into one: (2, 1)")
