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
_OUTSIDE = ("NNabla 1.39's backward also writes values at kernel pixels outside the output's "
            "(which its forward does not read; which ones varies with the data); Stadyn's "
            "(stadyn.ops._nnabla_conv) gradient there is 0")


@nnabla_case(names=["nnabla.functions.adaptive_separable_convolution"],
             known={"grad kv outside": _OUTSIDE, "grad kh outside": _OUTSIDE})
def adaptive_separable_convolution__full_kernels(nn, F, r):
    """Kernels of the input's height and width (NNabla's documented shape): the forward reads
    the output's pixels of them, and their gradients there are compared."""
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
        res["grad %s outside" % name] = v.g[~inside]
    return res
