"""NNabla 1.39's ``nn.grad`` details mended in rmnngrad44 (a review of nngrad44): the
functions without a backward function that nngrad44's list had not checked."""

import functools

import numpy as np

from compat_harness import nnabla_case
from compat_outcomes import as_raised, outcome

_RAISED = functools.partial(outcome, raised=functools.partial(as_raised, first_line=True))


def _forms(nn, F, PF):
    def const(v):
        return nn.Variable.from_numpy_array(np.asarray(v, dtype=np.float32))
    eye = np.eye(2, dtype=np.float32)[None].repeat(2, 0)
    return [
        ("assign", lambda x: F.assign(const(np.zeros((2, 4))), x)),
        ("unlink", lambda x: F.unlink(x)),
        ("batch_logdet",
         lambda x: F.batch_logdet(const(eye) + F.reshape(x[:, :2] * 0.1, (2, 1, 2)))),
        ("fixed_point_quantize", lambda x: F.fixed_point_quantize(x)),
        ("pow2_quantize", lambda x: F.pow2_quantize(x)),
        ("top_k_grad", lambda x: F.top_k_grad(x, 2)),
        ("vat_noise", lambda x: F.vat_noise(x, const(np.ones((2, 4))))),
        ("warp_by_grid",
         lambda x: F.warp_by_grid(F.reshape(x, (1, 1, 2, 4)), const(np.zeros((1, 2, 2, 2))))),
        ("roi_align", lambda x: F.roi_align(F.reshape(x, (1, 1, 2, 4)),
                                            const([[0, 0, 0, 2, 1]]), (1, 1), (1.0, 1.0))),
        ("binary_connect_affine", lambda x: PF.binary_connect_affine(x, 3)),
        ("inq_affine", lambda x: PF.inq_affine(x, 3)),
    ]


@nnabla_case(names=["nnabla.grad", "nnabla.functions.assign", "nnabla.functions.unlink",
                    "nnabla.functions.batch_logdet", "nnabla.functions.fixed_point_quantize",
                    "nnabla.functions.pow2_quantize", "nnabla.functions.top_k_grad",
                    "nnabla.functions.vat_noise", "nnabla.functions.warp_by_grid",
                    "nnabla.functions.roi_align",
                    "nnabla.parametric_functions.binary_connect_affine",
                    "nnabla.parametric_functions.inq_affine"])
def nn_grad__more_functions_without_backward_function(nn, F, PF, r):
    """``nn.grad`` through functions whose NNabla 1.39 backward function raises at once
    (python/src/nnabla/backward_function/<name>.py: ``NotImplementedError("<name>_backward is
    not implemented.")``) that nngrad44's list left out: ``assign``, ``unlink``,
    ``batch_logdet``, the quantizers, ``top_k_grad``, ``vat_noise``, ``warp_by_grid``,
    ``roi_align``, the binary and INQ layers; static and dynamic.  Stadyn gave a gradient
    (``warp_by_grid``'s, ``batch_logdet``'s nonzero; ``assign``'s, ``unlink``'s zeros)."""
    xv = r.randn(2, 4).astype(np.float32)
    res = {}
    for dynamic in (False, True):
        for name, f in _forms(nn, F, PF):
            nn.clear_parameters()

            def run():
                with nn.auto_forward(dynamic):
                    x = nn.Variable.from_numpy_array(xv, need_grad=True)
                    y = f(x)
                    g, = nn.grad([F.sum(y * y)], [x])
                g.forward()
                return g.d.copy()
            res[("dynamic " if dynamic else "") + name] = _RAISED(run)
    nn.clear_parameters()
    return res


@nnabla_case(names=["nnabla.grad", "nnabla.parametric_functions.affine",
                    "nnabla.functions.tanh", "nnabla.functions.sigmoid"],
             rtol=1e-5, atol=1e-5)
def nn_grad__apply_w_reading_the_weight_twice(nn, F, PF, r):
    """``nn.grad`` with respect to a ``W`` that ``apply_w`` reads twice
    (``PF.affine(x, 3, apply_w=lambda w: w * 2 + F.tanh(w))``): NNabla 1.39 hands ``apply_w``
    one Variable per call (``get_unlinked_variable``), so both readers count; Stadyn bound
    ``W`` to the reader met last (the ``F.tanh``) and cut the other (``F.sum(h)``: NNabla
    69.28, Stadyn 19.92).  Also with a second call sharing ``W`` (met first or last), with
    ``apply_b``, and with a program's ``F.affine(x, W)`` (NNabla's registered ``W``, another
    Variable than the call's: met last, it alone counts, 74.04; Stadyn's ``F.tanh`` in
    ``apply_w`` reads the same view as the program's call and counted with it, 144.80); static
    and dynamic."""
    x_np = r.randn(2, 4)
    w_np = r.randn(4, 3)
    res = {}
    for dynamic in (False, True):
        mode = "dynamic " if dynamic else ""
        for form in ("alone", "second call last", "second call first", "apply_b", "F last",
                     "F first"):
            nn.clear_parameters()
            with nn.auto_forward(dynamic):
                x = nn.Variable.from_numpy_array(x_np)
                h = PF.affine(x, 3, name="fc", w_init=w_np.copy(), b_init=np.full(3, 0.5),
                              apply_w=lambda w: w * 2 + F.tanh(w),
                              apply_b=(lambda b: F.sigmoid(b) * b) if form == "apply_b"
                              else None)
                y = F.sum(h * h)
                if form == "second call last":
                    y = y + F.sum(PF.affine(x * 3, 3, name="fc") * 0.5)
                if form == "second call first":
                    y = F.sum(PF.affine(x * 3, 3, name="fc") * 0.5) + y
                if form.startswith("F "):       # a program's F call on the registered W
                    f = F.sum(F.affine(x, nn.get_parameters()["fc/affine/W"]) * 3)
                    y = y + f if form == "F last" else f + y
                gs = nn.grad([y], list(nn.get_parameters().values()))
            for g in gs:
                g.forward()
            res[mode + form] = [g.d.copy() for g in gs]
    nn.clear_parameters()
    return res
