"""NNabla 1.39's spectral norm in a dynamic graph, and a ``test=True`` call's gradient (nnvar36).

In a dynamic (``auto_forward``) graph each ``SpectralNorm`` call keeps the ``u`` it read
(``u_orig_``, spectral_norm.cpp:255-263) and its backward runs the forward again from it,
writing the result into ``u`` (spectral_norm.cpp:294-311): a GAN's discriminator called on the
real then the fake images, one backward each, leaves after the real loss's backward the real
call's ``u`` (the fake call's forward had moved it on), after the fake loss's backward the fake
call's.  A ``test=True`` call's backward recomputes from a ``u_orig_`` it never wrote: NaN
gradients, static and dynamic alike.
"""

import functools

from compat_harness import nnabla_case
from compat_outcomes import as_raised, outcome

_raised = functools.partial(as_raised, first_line=True)

FN = "nnabla.functions."
PFN = "nnabla.parametric_functions."


def _discriminator(PF, x):
    return PF.affine(x, 2, apply_w=PF.spectral_norm, name="d")


@nnabla_case(names=[PFN + "spectral_norm", PFN + "affine", "nnabla.auto_forward"])
def sn_u__dynamic_gan_backwards(nn, F, PF, r):
    """``D`` (``PF.affine`` with ``apply_w=PF.spectral_norm``) on real then fake inputs in a
    dynamic graph; the real loss's backward, then the fake loss's: ``u`` after each, and the
    gradients of the layer's ``W``.  Then both calls in one loss, one backward (the real
    call's branch the deeper: NNabla's backward runs its spectral norm last, leaving its
    ``u``)."""
    res = {}
    xr = nn.Variable.from_numpy_array(r.randn(2, 3))
    xf = nn.Variable.from_numpy_array(r.randn(2, 3))
    with nn.parameter_scope("gan"):
        with nn.auto_forward():
            loss_real = F.mean(_discriminator(PF, xr))
            params = nn.get_parameters(grad_only=False)
            u, w = params["d/affine/spectral-norm/u"], params["d/affine/W"]
            res["u after real forward"] = u.d.copy()
            loss_fake = F.mean(_discriminator(PF, xf) * 2.0)
            res["u after fake forward"] = u.d.copy()
            w.grad.zero()
            loss_real.backward()
            res["u after real backward"] = u.d.copy()
            res["W grad real"] = w.g.copy()
            w.grad.zero()
            loss_fake.backward()
            res["u after fake backward"] = u.d.copy()
            res["W grad fake"] = w.g.copy()
            loss = F.mean(_discriminator(PF, xr) * 2.0) + F.mean(_discriminator(PF, xf))
            res["u after both forwards"] = u.d.copy()
            start = u.d.copy()
            w.grad.zero()
            loss.backward()
            res["u after one backward"] = u.d.copy()
            res["W grad both"] = w.g.copy()
            res["backward moved u"] = bool(abs(start - u.d).max() > 0)
    return res


_TEST_GRAD = (
    "NNabla 1.39's test=True SpectralNorm keeps no u_orig_ (spectral_norm.cpp:255-263) and its "
    "backward recomputes its forward from that never-written array (304-308): sigma 0, a NaN "
    "gradient for every element of w, in a static and a dynamic graph alike; Stadyn "
    "differentiates the call at the u it read (finite gradients)")


@nnabla_case(names=[FN + "spectral_norm", "nnabla.set_auto_forward"],
             known=dict.fromkeys(["static: grad w", "dynamic: grad w", "static: grad w all NaN",
                                  "dynamic: grad w all NaN"], _TEST_GRAD))
def sn_u__test_call_gradients(nn, F, r, np):
    """The gradient through one ``test=True`` call (NaN on NNabla 1.39, every element), static
    and dynamic; ``u`` is left as it was either way."""
    res = {}
    for mode in ("static", "dynamic"):
        w = nn.Variable.from_numpy_array(r.randn(3, 4), need_grad=True)
        u = nn.Variable.from_numpy_array(r.randn(3))
        before = u.d.copy()
        nn.set_auto_forward(mode == "dynamic")
        loss = F.sum(F.spectral_norm(w, u, test=True) * 2.0)
        nn.set_auto_forward(False)
        if mode == "static":
            loss.forward()
        w.grad.zero()
        loss.backward()
        res[mode + ": grad w"] = w.g.copy()
        res[mode + ": grad w all NaN"] = bool(np.isnan(w.g).all())
        res[mode + ": u kept"] = bool((u.d == before).all())
    return res


@nnabla_case(names=[FN + "spectral_norm", "nnabla.grad"])
def sn_u__nn_grad_needs_output_u(nn, F, r, np):
    """``nn.grad`` through a ``spectral_norm`` without ``output_u`` (``PF.spectral_norm``'s):
    NNabla 1.39's backward function for it refuses (``ValueError: spectral_norm_backward is
    supported for output_u=True.``), dynamic and static; with ``output_u=True`` the gradient."""
    res = {}
    w = nn.Variable.from_numpy_array(r.randn(3, 4), need_grad=True)
    u = nn.Variable.from_numpy_array(r.randn(3))
    for dyn in (True, False):
        for output_u in (False, True):
            def run():
                nn.set_auto_forward(dyn)
                try:
                    out = F.spectral_norm(w, u, output_u=output_u)
                    y = out[0] if output_u else out
                    g, = nn.grad([F.sum(y * 2.0)], [w])
                    if not dyn:
                        g.forward()
                    return g.d.copy()
                finally:
                    nn.set_auto_forward(False)
            res[("dynamic " if dyn else "static ") + "output_u %s" % output_u] = outcome(
                run, raised=_raised)
    return res
