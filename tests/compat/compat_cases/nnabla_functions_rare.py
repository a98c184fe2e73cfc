"""NNabla 1.39's rarer functions: ``vat_noise`` (its forward, and its backward, which writes
``eps * dy`` into ``w``'s values), ``adaptive_separable_convolution``, ``onnx_resize`` (forward
only: NNabla 1.39 has no backward for it) and ``onnx_non_max_suppression``.
"""

import numpy as np

from compat_harness import nnabla_case
from compat_cases.nnabla_functions import fn_case


@nnabla_case(names=["nnabla.functions.vat_noise"])
def vat_noise(nn, F, r):
    """Static graph: forward, then backward (``w`` takes ``eps * dy``, gradients stay), twice."""
    x = nn.Variable.from_numpy_array(r.randn(2, 3, 2), need_grad=True)
    w = nn.Variable.from_numpy_array(r.randn(2, 3, 2), need_grad=True)
    y = F.vat_noise(x, w, eps=2.0)
    res = {"need_grad": bool(y.need_grad)}
    for k in range(2):
        y.forward()
        res["out %d" % k] = y.d.copy()
        x.g = 3.0
        w.g = 4.0
        y.backward(r.weights_like(y.d))
        res.update({"w %d" % k: w.d.copy(), "grad x %d" % k: x.g.copy(),
                    "grad w %d" % k: w.g.copy()})
        x.d = w.d                     # VAT feeds the written gradient back as the noise
    return res


@nnabla_case(names=["nnabla.functions.vat_noise"])
def vat_noise__base_axis(nn, F, r):
    """``base_axis=2``, a ``w`` that needs no gradient, dynamic mode, and an all-zero ``x``."""
    x = nn.Variable.from_numpy_array(r.randn(2, 2, 3), need_grad=True)
    w = nn.Variable.from_numpy_array(np.zeros((2, 2, 3), np.float32))
    with nn.auto_forward():
        y = F.vat_noise(x, w, base_axis=2, eps=0.5)
        z = F.vat_noise(nn.Variable.from_numpy_array(np.zeros((2, 3), np.float32)),
                        nn.Variable.from_numpy_array(np.zeros((2, 3), np.float32)))
    res = {"out": y.d.copy(), "zero": z.d.copy()}
    y.backward(r.weights_like(y.d))
    res["w"] = w.d.copy()
    return res


fn_case("adaptive_separable_convolution",
        lambda F, x, kv, kh: F.adaptive_separable_convolution(x, kv, kh),
        [(2, 3, 6, 7), (2, 3, 4, 6), (2, 2, 4, 6)],
        data=[None, lambda r, s: r.rand(*s), lambda r, s: r.rand(*s)])
@nnabla_case(names=["nnabla.functions.adaptive_separable_convolution"])
def adaptive_separable_convolution__full_kernels(nn, F, r):
    """Kernels of the input's height and width (NNabla's documented shape): the forward reads
    the output's pixels of them, and their gradients there are compared.  At the other pixels
    NNabla 1.39's backward leaves values that change from run to run (Stadyn's gradient there
    is 0), so they are not compared."""
    x = nn.Variable.from_numpy_array(r.randn(1, 2, 5, 6), need_grad=True)
    kv = nn.Variable.from_numpy_array(r.randn(1, 3, 5, 6), need_grad=True)
    kh = nn.Variable.from_numpy_array(r.randn(1, 2, 5, 6), need_grad=True)
    y = F.adaptive_separable_convolution(x, kv, kh)
    y.forward()
    for v in (x, kv, kh):
        v.g = 0
    y.backward(r.weights_like(y.d))
    ho, wo = y.shape[2:]
    res = {"out": y.d.copy(), "grad x": x.g.copy()}
    for name, v in (("kv", kv), ("kh", kh)):
        inside = np.zeros(v.shape, bool)
        inside[:, :, :ho, :wo] = True
        res["grad %s inside" % name] = v.g[inside]
    return res


# -- onnx_resize (forward only: NNabla 1.39 has no backward) --------------------------------
def _resize_case(name, shape, **kw):
    def fn(nn, F, r):
        x = nn.Variable.from_numpy_array(r.randn(*shape))
        y = F.onnx_resize(x, **kw)
        y.forward()
        return {"out": y.d.copy(), "shape": list(y.shape)}
    fn.__name__ = name
    nnabla_case(name=name, names=["nnabla.functions.onnx_resize"])(fn)


_resize_case("onnx_resize", (1, 2, 3, 4), scales=(1.0, 1.0, 2.0, 2.0))
_resize_case("onnx_resize__nearest_modes", (2, 5, 7), scales=(1.0, 1.6, 0.7),
             nearest_mode="round_prefer_ceil", coordinate_transformation_mode="asymmetric")
_resize_case("onnx_resize__nearest_floor", (1, 1, 4, 6), sizes=(1, 1, 7, 4),
             nearest_mode="floor", coordinate_transformation_mode="tf_half_pixel_for_nn")
_resize_case("onnx_resize__nearest_ceil", (1, 3, 5), scales=(1.0, 1.0, 2.5),
             nearest_mode="ceil", coordinate_transformation_mode="align_corners")
_resize_case("onnx_resize__linear", (1, 2, 5, 7), sizes=(1, 2, 8, 3), mode="linear")
_resize_case("onnx_resize__linear_3d", (1, 3, 4, 5), scales=(1.0, 2.0, 0.5, 1.5),
             mode="linear", coordinate_transformation_mode="pytorch_half_pixel")
_resize_case("onnx_resize__linear_align", (2, 4, 6), sizes=(2, 7, 1), mode="linear",
             coordinate_transformation_mode="align_corners")
_resize_case("onnx_resize__cubic", (1, 1, 5, 6), scales=(1.0, 1.0, 1.5, 0.5), mode="cubic")
_resize_case("onnx_resize__cubic_exclude", (1, 2, 4, 5), sizes=(1, 2, 9, 7), mode="cubic",
             cubic_coeff_a=-0.5, exclude_outside=1,
             coordinate_transformation_mode="asymmetric")
_resize_case("onnx_resize__crop", (1, 1, 6, 8), sizes=(1, 1, 5, 4), mode="linear",
             coordinate_transformation_mode="tf_crop_and_resize",
             roi=(0.0, 0.0, 0.2, -0.1, 1.0, 1.0, 0.9, 1.2), extrapolation_value=-7.0)
_resize_case("onnx_resize__crop_nearest", (2, 5, 5), sizes=(2, 3, 1),
             coordinate_transformation_mode="tf_crop_and_resize",
             roi=(0.0, 0.1, 0.3, 1.0, 0.8, 0.6))


@nnabla_case(names=["nnabla.functions.onnx_resize"])
def onnx_resize__dynamic(nn, F, r):
    x = nn.Variable.from_numpy_array(r.randn(2, 3, 4))
    with nn.auto_forward():
        y = F.onnx_resize(x, scales=(1.0, 0.5, 2.0), mode="linear")
    return {"out": y.d.copy()}


# -- onnx_non_max_suppression ------------------------------------------------------------------
def _boxes(r, b, n, center):
    """Clustered boxes (so that IoUs cross the thresholds) with distinct scores."""
    centres = r.rand(b, n, 2, low=0.0, high=3.0)
    sizes = r.rand(b, n, 2, low=0.5, high=1.5)
    if center:
        return np.concatenate([centres, sizes], 2).astype(np.float32)
    flip = r.randint(0, 2, (b, n, 1)).astype(bool)
    lo, hi = centres - sizes / 2, centres + sizes / 2
    first = np.where(flip, hi, lo)            # corners in either order
    second = np.where(flip, lo, hi)
    return np.concatenate([first[..., ::-1], second[..., ::-1]], 2).astype(np.float32)


def _nms_case(name, b, c, n, **kw):
    def fn(nn, F, r):
        boxes = nn.Variable.from_numpy_array(_boxes(r, b, n, kw.get("center_point_box", 0)))
        scores = nn.Variable.from_numpy_array(
            (r.rng.permutation(b * c * n).reshape(b, c, n) / float(b * c * n)).astype(
                np.float32))
        y = F.onnx_non_max_suppression(boxes, scores, **kw)
        y.forward()
        res = {"indices": y.d.astype(np.int64), "shape": list(y.shape)}
        with nn.auto_forward():
            z = F.onnx_non_max_suppression(boxes, scores, **kw)
        res["dynamic"] = z.d.astype(np.int64)
        return res
    fn.__name__ = name
    nnabla_case(name=name, names=["nnabla.functions.onnx_non_max_suppression"])(fn)


_nms_case("onnx_non_max_suppression", 2, 3, 12, max_output_boxes_per_class=4,
          iou_threshold=0.3, score_threshold=0.2)
_nms_case("onnx_non_max_suppression__center", 1, 2, 15, center_point_box=1,
          max_output_boxes_per_class=20, iou_threshold=0.1)
_nms_case("onnx_non_max_suppression__defaults", 1, 2, 5)


@nnabla_case(names=["nnabla.functions.onnx_non_max_suppression"])
def onnx_non_max_suppression__dtype(nn, F, r):
    boxes = nn.Variable.from_numpy_array(_boxes(r, 1, 4, 0))
    scores = nn.Variable.from_numpy_array(r.rand(1, 1, 4))
    y = F.onnx_non_max_suppression(boxes, scores, max_output_boxes_per_class=2)
    y.forward()
    return {"dtype": str(y.d.dtype)}


@nnabla_case(names=["nnabla.functions.slice"],
             note="NNabla 1.39's wrapper fills a None stop with the size of axis i, i the "
                  "entry's index (of axis 0 here, not the axis sliced); so does Stadyn's")
def slice__none_stop_fewer_entries(nn, F, r):
    x = nn.Variable.from_numpy_array(np.arange(10, dtype=np.float32).reshape(2, 5))
    res = {}
    for key, args in [("one entry, None stop, step 1", ((0,), (None,), (1,))),
                      ("one entry, None stop, step -1", ((-1,), (None,), (-1,))),
                      ("every axis, None stop, step -1", ((0, -1), (None, None), (1, -1))),
                      ("every axis, None start, step -1", ((None, None), (2, 1), (1, -1)))]:
        y = F.slice(x, *args)
        y.forward()
        res[key] = y.d.copy()
    return res
