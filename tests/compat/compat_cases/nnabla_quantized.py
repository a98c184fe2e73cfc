"""The quantised layers nnabla-examples uses: ``PF.fixed_point_quantized_*`` and
``PF.pow2_quantized_*`` (scopes, the float ``W``/``b`` and quantised ``W_q``/``b_q`` with their
shapes, outputs, straight-through gradients, and the quantised values written on forward), and
``F.min_max_quantize`` with ``PF.min_max_quantize*`` (the range's updates and gradients).
"""

import numpy as np

from compat_harness import nnabla_case
from compat_cases.nnabla_parametric import P, forward_backward, pf_case

for _name, _build, _shape in (
        ("fixed_point_quantized_affine",
         lambda nn, PF, x: PF.fixed_point_quantized_affine(x, 4), (3, 5)),
        ("fixed_point_quantized_affine__options",
         lambda nn, PF, x: PF.fixed_point_quantized_affine(
             x, (2, 2), base_axis=2, n_w=4, delta_w=0.125, sign_b=False, n_b=3, delta_b=0.25,
             ste_fine_grained_w=False, name="q1"), (2, 3, 4)),
        ("fixed_point_quantized_affine__float_bias",
         lambda nn, PF, x: PF.fixed_point_quantized_affine(x, 3, quantize_b=False), (2, 4)),
        ("fixed_point_quantized_convolution",
         lambda nn, PF, x: PF.fixed_point_quantized_convolution(x, 4, (3, 3), pad=(1, 1)),
         (2, 3, 4, 4)),
        ("fixed_point_quantized_convolution__options",
         lambda nn, PF, x: PF.fixed_point_quantized_convolution(
             x, 4, (2, 3), stride=(2, 1), group=2, n_w=3, delta_w=0.25, with_bias=False),
         (1, 4, 5, 5)),
        ("pow2_quantized_affine",
         lambda nn, PF, x: PF.pow2_quantized_affine(x, 4), (3, 5)),
        ("pow2_quantized_affine__options",
         lambda nn, PF, x: PF.pow2_quantized_affine(
             x, 3, n_w=4, m_w=0, with_zero_w=True, sign_b=False, n_b=3, m_b=1,
             ste_fine_grained_w=False), (2, 4)),
        ("pow2_quantized_convolution",
         lambda nn, PF, x: PF.pow2_quantized_convolution(x, 4, (3, 3), pad=(1, 1)),
         (2, 3, 4, 4)),
        ("pow2_quantized_convolution__options",
         lambda nn, PF, x: PF.pow2_quantized_convolution(
             x, 2, (2, 2), dilation=(2, 1), n_w=4, m_w=1, quantize_w=False, n_b=5),
         (1, 3, 5, 5))):
    pf_case("PF_" + _name, _build, _shape, [P + _name.split("__")[0]], forward_twice=True)


# -- min-max quantisation ----------------------------------------------------------------------
def _min_max_case(name, x_min_max, ema, ste, qr=(-1.0, 1.5), ql=(0.0, 15.0), qr_shape=(1, 1),
                  **opts):
    def fn(nn, F, r):
        # values kept away from the levels' rounding ties and the nudged range's ends
        x = nn.Variable.from_numpy_array(r.rand(3, 4, low=-2.0, high=3.0), need_grad=True)

        def full(v, grad=False):
            return nn.Variable.from_numpy_array(np.full(qr_shape, v, np.float32),
                                                need_grad=grad)
        qr_min, qr_max = full(qr[0], True), full(qr[1], True)
        y = F.min_max_quantize(x, qr_min, qr_max, full(ql[0]), full(ql[1]), decay=0.9,
                               x_min_max=x_min_max, ema=ema, ste_fine_grained=ste, **opts)
        y.forward()
        res = {"out": y.d.copy(), "qr_min": qr_min.d.copy(), "qr_max": qr_max.d.copy()}
        for v in (x, qr_min, qr_max):
            v.g = 0
        y.backward(r.weights_like(y.d))
        res.update({"grad x": x.g.copy(), "grad qr_min": qr_min.g.copy(),
                    "grad qr_max": qr_max.g.copy()})
        return res
    fn.__name__ = name
    nnabla_case(name=name, names=["nnabla.functions.min_max_quantize"])(fn)


_min_max_case("min_max_quantize", False, False, True)
_min_max_case("min_max_quantize__ste", False, False, False, ql=(0.0, 255.0))
_min_max_case("min_max_quantize__x_min_max", True, False, True)
_min_max_case("min_max_quantize__ema", True, True, True, ql=(0.0, 7.0))
_min_max_case("min_max_quantize__stored_ema", False, True, True)
_min_max_case("min_max_quantize__eps", False, False, True, qr=(0.5, 0.5), eps=0.25)
_min_max_case("min_max_quantize__positive_range", False, False, True, qr=(0.3, 2.0))

def _min_max_pf_case(name, build, in_shape, names):
    """Like ``pf_case``, but only ``W`` and ``b`` get drawn values: the levels and ranges keep
    their initial values (drawn ones would make meaningless ranges), which are compared too."""
    def fn(nn, PF, r):
        x = nn.Variable.from_numpy_array(r.randn(*in_shape), need_grad=True)
        y = build(nn, PF, x)
        params = nn.get_parameters(grad_only=False)
        weights = dict((k, v) for k, v in params.items() if k.split("/")[-1] in ("W", "b"))
        res = {"weights": r.set_params(weights),
               "params": sorted([k, list(v.shape), bool(v.need_grad)]
                                for k, v in params.items())}
        for k, v in params.items():
            if k.split("/")[-1] in ("ql_min", "ql_max"):
                res["level dtype"] = str(v.d.dtype)
            if k.split("/")[-1] in ("ql_min", "ql_max", "qr_min", "qr_max"):
                res["initial " + k] = v.d.astype(np.float32)    # the dtype: "level dtype"
        forward_backward(x, y, params, r, res)
        for k, v in params.items():
            if k not in weights:
                res["after " + k] = v.d.astype(np.float32)
        return res
    fn.__name__ = name
    nnabla_case(name=name, names=names)(fn)


for _name, _build, _shape in (
        ("min_max_quantize", lambda nn, PF, x: PF.min_max_quantize(x, ql_max=15), (3, 4)),
        ("min_max_quantize__ema",
         lambda nn, PF, x: PF.min_max_quantize(x, x_min_max=True, ema=True, decay=0.5,
                                               name="act"), (2, 3, 2)),
        ("min_max_quantized_affine",
         lambda nn, PF, x: PF.min_max_quantized_affine(x, 4, ql_max_w=15, ql_max_b=31),
         (3, 5)),
        ("min_max_quantized_affine__min_max",
         lambda nn, PF, x: PF.min_max_quantized_affine(x, 3, w_min_max=True, b_min_max=True),
         (2, 4)),
        ("min_max_quantized_convolution",
         lambda nn, PF, x: PF.min_max_quantized_convolution(x, 4, (3, 3), pad=(1, 1),
                                                            ql_max_w=15), (2, 3, 4, 4)),
        ("min_max_quantized_convolution__no_bias",
         lambda nn, PF, x: PF.min_max_quantized_convolution(x, 2, (2, 2), with_bias=False,
                                                            w_min_max=True), (1, 3, 4, 4))):
    _min_max_pf_case("PF_" + _name, _build, _shape, [P + _name.split("__")[0]])


# -- parametric_function_api (kept here with the other PF names nnabla-examples added) ---------
@nnabla_case(names=[P + "parametric_function_api"])
def parametric_function_api(nn, F, r):
    PF = r.module("nnabla.parametric_functions")

    @PF.parametric_function_api("gated", [("W", "weights", "(in, out)", True)])
    def gated(x, n_out, fix_parameters=False):
        """A gated affine layer (NNabla appends param_desc to the docstring)."""
        w = PF.get_parameter_or_create("W", (x.shape[1], n_out), need_grad=True)
        return F.sigmoid(F.affine(x, w))

    @PF.parametric_function_api("plain")      # NNabla 1.39 needs the scope name (NameError)
    def plain(x, fix_parameters=False):
        """A learned scale (NNabla 1.39 needs a docstring: it appends a note to it)."""
        return x * PF.get_parameter_or_create("s", (1, 1), need_grad=True)

    x = nn.Variable.from_numpy_array(r.randn(2, 3), need_grad=True)
    y = gated(x, 4) + gated(x, 4, name="second")
    z = plain(y)
    params = nn.get_parameters()
    res = {"params": r.set_params(params)}
    z.forward()
    res["out"] = z.d.copy()
    return res


# -- scatter_nd (kept here with the other names nnabla-examples added) -------------------------
def _scatter_case(name, data_shape, indices, shape, **opts):
    def fn(nn, F, r):
        data = nn.Variable.from_numpy_array(r.randn(*data_shape), need_grad=True)
        idx = nn.Variable.from_numpy_array(np.array(indices, np.int32))
        y = F.scatter_nd(data, idx, shape=shape, **opts)
        y.forward()
        data.g = 0
        y.backward(r.weights_like(y.d))
        return {"out": y.d.copy(), "grad data": data.g.copy()}
    fn.__name__ = name
    nnabla_case(name=name, names=["nnabla.functions.scatter_nd"])(fn)


_scatter_case("scatter_nd", (3, 2), [[4, 0, 2]], (5, 2))
_scatter_case("scatter_nd__full_index", (4,), [[0, 2, 1, 0], [1, 0, 2, 2]], (3, 3))
_scatter_case("scatter_nd__add", (4, 2), [[1, 3, 1, 0]], (4, 2), add=True)
