"""``nnabla.functions``' and ``nnabla.parametric_functions``' further convolutions:
``depthwise_deconvolution`` (1-D and 2-D, divisor, stride/pad/dilation, bias) and its layer.
"""

from compat_cases.nnabla_functions import fn_case
from compat_cases.nnabla_parametric import P, pf_case

_F = ["nnabla.functions.depthwise_deconvolution"]

fn_case("depthwise_deconvolution", lambda F, x, w, b: F.depthwise_deconvolution(x, w, b),
        [(2, 3, 4, 4), (3, 3, 3), (3,)], names=_F)
fn_case("depthwise_deconvolution__divisor", lambda F, x, w, b: F.depthwise_deconvolution(
    x, w, b, pad=(1, 0), stride=(2, 1), dilation=(1, 2), divisor=2),
    [(2, 4, 3, 5), (4, 2, 3), (2,)], names=_F)
fn_case("depthwise_deconvolution__1d_base_axis", lambda F, x, w: F.depthwise_deconvolution(
    x, w, base_axis=2, stride=(3,), divisor=3), [(2, 2, 6, 5), (6, 4)], names=_F)

pf_case("PF_depthwise_deconvolution", lambda nn, PF, x: PF.depthwise_deconvolution(x, (3, 3)),
        (2, 3, 4, 4), [P + "depthwise_deconvolution"])
pf_case("PF_depthwise_deconvolution__divisor", lambda nn, PF, x: PF.depthwise_deconvolution(
    x, (2, 3), stride=(2, 2), divisor=2, name="up"), (2, 4, 3, 3), [P + "depthwise_deconvolution"])
