"""``nnabla.parametric_functions``: the parameters each creates (names, shapes, need_grad), and
with the parameters set from their names, the output and the gradients w.r.t. input and
parameters; running statistics of batch normalisation."""

import numpy as np

from compat_harness import nnabla_case


def forward_backward(x, y, params, r, res):
    """Forward, then backward with seeded output weights: the output and the gradients of
    ``x`` and of every parameter that needs one, into ``res``."""
    y.forward()
    res["out"] = y.d.copy()
    x.g = 0
    for v in params.values():
        v.g = 0
    y.backward(r.weights_like(y.d))
    res["grad x"] = x.g.copy()
    for k, v in params.items():
        if v.need_grad:
            res["grad " + k] = v.g.copy()


def run_pf(nn, r, build, in_shape, data=None, grads=True, forward_twice=False):
    x = nn.Variable.from_numpy_array(data(r, in_shape) if data else r.randn(*in_shape),
                                     need_grad=bool(grads))
    y = build(x)
    params = nn.get_parameters(grad_only=False)
    res = {"params": r.set_params(params),
           "need_grad": sorted([k, bool(v.need_grad)] for k, v in params.items()),
           "shape": list(y.shape)}
    if grads:
        forward_backward(x, y, params, r, res)
    else:
        y.forward()
        res["out"] = y.d.copy()
    if forward_twice:
        for k, v in params.items():
            if not v.need_grad:
                res["after " + k] = v.d.copy()
    return res


def pf_case(name, build, in_shape, names, **kw):
    opts = dict((k, kw.pop(k)) for k in ("data", "grads", "forward_twice") if k in kw)

    def fn(nn, PF, r):
        return run_pf(nn, r, lambda x: build(nn, PF, x), in_shape, **opts)
    fn.__name__ = name
    nnabla_case(name=name, names=names, **kw)(fn)


P = "nnabla.parametric_functions."

pf_case("PF_affine", lambda nn, PF, x: PF.affine(x, 4), (3, 5), [P + "affine"])
pf_case("PF_affine__base_axis", lambda nn, PF, x: PF.affine(x, (2, 3), base_axis=2), (2, 3, 4),
        [P + "affine"])
pf_case("PF_affine__no_bias", lambda nn, PF, x: PF.affine(x, 3, with_bias=False), (2, 4),
        [P + "affine"])
pf_case("PF_affine__fix_parameters", lambda nn, PF, x: PF.affine(x, 3, fix_parameters=True),
        (2, 4), [P + "affine"],
        note="the registered W and b stay need_grad=True; the graph uses views that need none, "
             "so their gradients stay 0")
pf_case("PF_affine__scopes", lambda nn, PF, x: PF.affine(_scoped(nn, PF, x), 2), (2, 4),
        [P + "affine", "nnabla.parameter_scope"],
        note="nested parameter scopes and a second affine at the top level")
pf_case("PF_affine__name", lambda nn, PF, x: PF.affine(x, 5, name="l1"), (2, 3), [P + "affine"],
        note="name= opens a scope above the function's own: l1/affine/W")
pf_case("PF_convolution", lambda nn, PF, x: PF.convolution(x, 4, (3, 3)), (2, 3, 5, 5),
        [P + "convolution"])
pf_case("PF_convolution__options", lambda nn, PF, x: PF.convolution(
    x, 6, (3, 2), pad=(1, 1), stride=(2, 1), dilation=(1, 2), group=2), (2, 4, 6, 6),
    [P + "convolution"])
pf_case("PF_convolution__no_bias", lambda nn, PF, x: PF.convolution(x, 2, (2, 2), with_bias=False),
        (1, 3, 4, 4), [P + "convolution"])
pf_case("PF_deconvolution", lambda nn, PF, x: PF.deconvolution(x, 2, (3, 3)), (2, 3, 4, 4),
        [P + "deconvolution"])
pf_case("PF_deconvolution__stride", lambda nn, PF, x: PF.deconvolution(x, 3, (2, 2), stride=(2, 2),
                                                                    pad=(1, 1)),
        (2, 2, 3, 3), [P + "deconvolution"])
pf_case("PF_embed", lambda nn, PF, x: PF.embed(x, 7, 4), (2, 3), [P + "embed"],
        data=lambda r, s: r.randint(0, 7, s), grads=False)
pf_case("PF_batch_normalization", lambda nn, PF, x: PF.batch_normalization(x), (4, 3, 2, 2),
        [P + "batch_normalization"], forward_twice=True, tols={"grad x": (1e-4, 1e-5)})
pf_case("PF_batch_normalization__inference", lambda nn, PF, x: PF.batch_normalization(
    x, batch_stat=False), (4, 3, 2, 2), [P + "batch_normalization"])
pf_case("PF_batch_normalization__options", lambda nn, PF, x: PF.batch_normalization(
    x, axes=[2], decay_rate=0.5, eps=1e-3), (3, 2, 4), [P + "batch_normalization"],
    forward_twice=True, tols={"grad x": (1e-4, 1e-5)})
pf_case("PF_batch_normalization__no_scale_bias", lambda nn, PF, x: PF.batch_normalization(
    x, no_scale=True, no_bias=True), (4, 3, 2), [P + "batch_normalization"],
    tols={"grad x": (1e-4, 1e-5)})


def _scoped(nn, PF, x):
    with nn.parameter_scope("outer"):
        with nn.parameter_scope("inner"):
            h = PF.affine(x, 3)
        h = PF.affine(h, 3, with_bias=False) * 0.5
    return h


@nnabla_case(names=[P + "affine", "nnabla.parameter_scope"])
def PF_reuse_in_scope(nn, PF, r):
    """The same scope twice gives the same parameters: one set of (W, b)."""
    x = nn.Variable.from_numpy_array(r.randn(2, 3))
    with nn.parameter_scope("fc"):
        a = PF.affine(x, 4)
    with nn.parameter_scope("fc"):
        b = PF.affine(x, 4)
    params = nn.get_parameters()
    listing = r.set_params(params)
    c = a + b
    c.forward()
    return {"params": listing, "out": c.d.copy()}


@nnabla_case(names=[P + "affine", P + "convolution", P + "batch_normalization"],
             tols={"affine/W max_abs": (0.1, 0), "conv/W max_abs": (0.1, 0)},
             note="random weights: their largest magnitude is near the initialiser's limit "
                  "(+-10%: 48 and 135 uniform draws)")
def PF_initial_values(nn, PF, r):
    """Default initialisers: zero biases, BN's ones and zeros, and the weights' range."""
    x = nn.Variable((2, 3, 4, 4))
    PF.batch_normalization(PF.convolution(x, 5, (3, 3)))
    PF.affine(nn.Variable((2, 6)), 8)
    res = {}
    for k, v in nn.get_parameters(grad_only=False).items():
        if k.endswith("/W"):
            res[k + " max_abs"] = float(np.abs(v.d).max())
        else:
            res[k] = v.d.copy()
    return res


@nnabla_case(names=[P + "sync_batch_normalization"],
             note="alone it is batch_normalization; NNabla needs a communicator (an MPI build) "
                  "to make one, so the real side runs PF.batch_normalization")
def PF_sync_batch_normalization(nn, PF, r):
    def build(x):
        if r.real:
            r.touch(P + "sync_batch_normalization")
            return PF.batch_normalization(x)
        return PF.sync_batch_normalization(x, comm=None)
    return run_pf(nn, r, build, (4, 3, 2), forward_twice=True)

# -- per-sample normalisations, learnt slopes, depthwise convolution --------------------------
pf_case("PF_layer_normalization", lambda nn, PF, x: PF.layer_normalization(x), (2, 3, 4),
        [P + "layer_normalization"], tols={"grad x": (1e-4, 1e-5)})
pf_case("PF_instance_normalization", lambda nn, PF, x: PF.instance_normalization(x),
        (2, 3, 4, 5), [P + "instance_normalization"], tols={"grad x": (1e-4, 1e-5)})
pf_case("PF_group_normalization", lambda nn, PF, x: PF.group_normalization(x, 2, name="gn"),
        (2, 4, 3, 2), [P + "group_normalization"], tols={"grad x": (1e-4, 1e-5)})
pf_case("PF_prelu", lambda nn, PF, x: PF.prelu(x), (2, 3, 4), [P + "prelu"])
pf_case("PF_prelu__channels", lambda nn, PF, x: PF.prelu(x, shared=False, name="p"), (2, 3, 4),
        [P + "prelu"])
pf_case("PF_depthwise_convolution", lambda nn, PF, x: PF.depthwise_convolution(x, (3, 3)),
        (2, 3, 5, 5), [P + "depthwise_convolution"])
pf_case("PF_depthwise_convolution__multiplier", lambda nn, PF, x: PF.depthwise_convolution(
    x, (3, 2), pad=(1, 1), multiplier=2, with_bias=False), (2, 2, 4, 4),
    [P + "depthwise_convolution"])


@nnabla_case(names=[P + "prelu", P + "depthwise_convolution"])
def PF_initial_values__slopes_depthwise(nn, PF, r):
    """The initialisers that are not random: prelu's 0.25, depthwise's zero bias; and the
    Glorot limit of depthwise's W."""
    x = nn.Variable((2, 3, 5, 5))
    PF.prelu(x, shared=False)
    PF.depthwise_convolution(x, (3, 3), multiplier=2)
    p = nn.get_parameters()
    limit = np.sqrt(6.0 / (9 * (3 * 2 + 3)))
    w = p["depthwise_conv/W"].d
    return {"slope": p["prelu/slope"].d.copy(), "b": p["depthwise_conv/b"].d.copy(),
            "w_within": bool(np.abs(w).max() <= limit),
            "w_spread": bool(np.abs(w).max() > 0.7 * limit)}


pf_case("PF_spectral_norm", lambda nn, PF, x: PF.affine(
    x, 3, apply_w=lambda w: PF.spectral_norm(w, dim=1), name="sn"), (2, 5),
    [P + "spectral_norm", P + "affine"], rtol=1e-4)


def _need_grads(nn):
    return sorted([k, v.need_grad] for k, v in nn.get_parameters(grad_only=False).items())


@nnabla_case(names=[P + "affine", P + "convolution", P + "rnn", P + "batch_normalization",
                    "nnabla.parameter.get_parameter_or_create"],
             note="a parametric function fetching a parameter registered with need_grad=False "
                  "sets its need_grad to True (NNabla's get_parameter_or_create overwrites the "
                  "flag; with fix_parameters too, whose graph view needs no gradient); the "
                  "output needs a gradient unless every input's view is fixed; BN's running "
                  "statistics asked for with need_grad=False lose a True one")
def PF_fetch_parameter_registered_without_grad(nn, PF, r):
    res = {}
    for x_grad in (False, True):
        for fix in (False, True):
            nn.clear_parameters()
            w = nn.parameter.get_parameter_or_create("affine/W", (2, 3), need_grad=False)
            w.d = r.randn(2, 3)
            nn.parameter.get_parameter_or_create("affine/b", (3,), need_grad=False)
            x = nn.Variable.from_numpy_array(r.randn(4, 2), need_grad=x_grad)
            y = PF.affine(x, 3, fix_parameters=fix)
            key = "affine x_grad=%s fix=%s" % (x_grad, fix)
            res[key] = [_need_grads(nn), y.need_grad, sorted(nn.get_parameters())]
            y.forward()
            for p in nn.get_parameters(grad_only=False).values():
                p.grad.zero()
            y.backward(np.ones((4, 3), np.float32))
            res[key + " grads"] = sorted([k, v.g.copy()] for k, v in
                                         nn.get_parameters(grad_only=False).items())
    nn.clear_parameters()
    nn.parameter.get_parameter_or_create("conv/W", (3, 2, 3, 3), need_grad=False)
    y = PF.convolution(nn.Variable((1, 2, 5, 5), need_grad=False), 3, (3, 3))
    res["convolution"] = [_need_grads(nn), y.need_grad]
    for fix in (False, True):
        nn.clear_parameters()
        nn.parameter.get_parameter_or_create("rnn/weight_l0", (1, 4, 7), need_grad=False)
        y, _ = PF.rnn(nn.Variable((2, 1, 3), need_grad=False),
                      nn.Variable((1, 1, 1, 4), need_grad=False), fix_parameters=fix)
        res["rnn fix=%s" % fix] = [_need_grads(nn), y.need_grad]
    nn.clear_parameters()
    nn.parameter.get_parameter_or_create("bn/mean", (1, 2, 1, 1), need_grad=True)
    nn.parameter.get_parameter_or_create("bn/gamma", (1, 2, 1, 1), need_grad=False)
    PF.batch_normalization(nn.Variable((2, 2, 3, 3)), name="bn")
    res["batch_normalization"] = _need_grads(nn)
    nn.clear_parameters()
    nn.parameter.get_parameter_or_create("W", (2, 3), need_grad=False)
    v = nn.parameter.get_parameter_or_create("W", (2, 3))
    res["get_parameter_or_create"] = [_need_grads(nn), v.need_grad]
    v = nn.parameter.get_parameter_or_create("W", (2, 3), need_grad=False)
    res["again with need_grad=False"] = [_need_grads(nn), v.need_grad]
    v = nn.parameter.get_parameter_or_create("W", (2, 3), need_grad=True, as_need_grad=False)
    res["need_grad=True as_need_grad=False"] = [_need_grads(nn), v.need_grad]
    return res
