"""The binarised-weight layers: ``F.binary_connect_*``, ``F.binary_weight_*`` (the output, the
gradients of input, weight and bias, and the binarised weights and scales the function writes)
and their parametric functions (scopes, parameter names and shapes, outputs, gradients).
"""

from compat_harness import nnabla_case
from compat_cases.nnabla_parametric import P, pf_case

F_ = "nnabla.functions."


def binary_case(name, in_shape, w_shape, units, scaled, conv, **opts):
    """``F.<name>`` on seeded x, W (one entry exactly 0: ``quantize_zero_to``) and b."""

    def fn(nn, F, r):
        x = nn.Variable.from_numpy_array(r.randn(*in_shape), need_grad=True)
        w_value = r.randn(*w_shape)
        w_value.flat[1] = 0.0
        w = nn.Variable.from_numpy_array(w_value, need_grad=True)
        wb = nn.Variable(w_shape)
        b = nn.Variable.from_numpy_array(r.randn(units), need_grad=True)
        args = [x, w, wb]
        if scaled:
            alpha = nn.Variable((units,))
            args.append(alpha)
        y = getattr(F, name.split("__")[0])(*(args + [b]), quantize_zero_to=0.25, **opts)
        y.forward()
        res = {"out": y.d.copy(), "Wb": wb.d.copy()}
        if scaled:
            res["alpha"] = alpha.d.copy()
        for v in (x, w, b):
            v.g = 0
        y.backward(r.weights_like(y.d))
        res.update({"grad x": x.g.copy(), "grad W": w.g.copy(), "grad b": b.g.copy()})
        return res
    fn.__name__ = name
    nnabla_case(name=name, names=[F_ + name.split("__")[0]])(fn)


binary_case("binary_connect_affine", (2, 3, 2), (6, 4), 4, False, False)
binary_case("binary_weight_affine", (2, 5), (5, 3), 3, True, False)
binary_case("binary_connect_convolution", (2, 3, 5, 5), (4, 3, 3, 3), 4, False, True)
binary_case("binary_weight_convolution", (2, 3, 5, 5), (4, 3, 3, 3), 4, True, True)
binary_case("binary_weight_convolution__options", (1, 4, 6, 6), (6, 2, 3, 2), 6, True, True,
            pad=(1, 0), stride=(2, 1), dilation=(1, 2), group=2)

for _name, _build, _shape in (
        ("binary_connect_affine", lambda nn, PF, x: PF.binary_connect_affine(x, 4), (3, 5)),
        ("binary_weight_affine", lambda nn, PF, x: PF.binary_weight_affine(x, 3, name="l1"),
         (2, 2, 3)),
        ("binary_connect_convolution",
         lambda nn, PF, x: PF.binary_connect_convolution(x, 4, (3, 3), pad=(1, 1)),
         (2, 3, 4, 4)),
        ("binary_weight_convolution",
         lambda nn, PF, x: PF.binary_weight_convolution(x, 2, (2, 2), with_bias=False),
         (1, 3, 4, 4))):
    pf_case("PF_" + _name, _build, _shape, [P + _name], forward_twice=True)


# -- fused batch normalisation (kept here with the other layers nnabla-examples added) ---------
def _fused_bn(z_too, **opts):
    def fn(nn, F, r):
        x = nn.Variable.from_numpy_array(r.randn(4, 3, 2, 2), need_grad=True)
        z = nn.Variable.from_numpy_array(r.randn(4, 3, 2, 2), need_grad=True) if z_too else None
        s = (1, 3, 1, 1)
        beta = nn.Variable.from_numpy_array(r.randn(*s), need_grad=True)
        gamma = nn.Variable.from_numpy_array(r.rand(*s, low=0.5, high=1.5), need_grad=True)
        mean = nn.Variable.from_numpy_array(r.randn(*s))
        var = nn.Variable.from_numpy_array(r.rand(*s, low=0.5, high=1.5))
        y = F.fused_batch_normalization(x, beta, gamma, mean, var, z, **opts)
        y.forward()
        res = {"out": y.d.copy(), "mean": mean.d.copy(), "var": var.d.copy()}
        ins = [x, beta, gamma] + ([z] if z_too else [])
        for v in ins:
            v.g = 0
        y.backward(r.weights_like(y.d))
        for i, v in enumerate(ins):
            res["grad%d" % i] = v.g.copy()
        return res
    return fn


for _name, _z, _opts in (("fused_batch_normalization", True, {}),
                         ("fused_batch_normalization__no_z", False, {"decay_rate": 0.5}),
                         ("fused_batch_normalization__inference", True, {"batch_stat": False})):
    _fn = _fused_bn(_z, **_opts)
    _fn.__name__ = _name
    nnabla_case(name=_name, names=[F_ + "fused_batch_normalization"],
                tols={"grad0": (1e-4, 1e-5)})(_fn)

pf_case("PF_fused_batch_normalization",
        lambda nn, PF, x: PF.fused_batch_normalization(x, x * 0.5), (4, 3, 2, 2),
        [P + "fused_batch_normalization"], forward_twice=True, tols={"grad x": (1e-4, 1e-5)})
