"""NNabla's low-rank and pruned layers (``PF.svd_affine``, ``PF.svd_convolution``,
``PF.cpd3_convolution``, ``PF.pruned_affine``, ``PF.pruned_convolution``) and the initialisers
``PF`` re-exports: the parameters each creates, the output and gradients with the parameters
set from their names, the factors' starting values (through the output they give, which does
not depend on the factorisation's signs), and the pruned weights ``W_q``/``b_q``."""

import numpy as np

from compat_harness import nnabla_case
from compat_cases.nnabla_parametric import pf_case

P = "nnabla.parametric_functions."

pf_case("PF_svd_affine", lambda nn, PF, x: PF.svd_affine(x, (2, 3), 2), (4, 5),
        [P + "svd_affine"])
pf_case("PF_svd_affine__base_axis_fixed",
        lambda nn, PF, x: PF.svd_affine(x, 3, 1, base_axis=2, fix_parameters=True,
                                        with_bias=False, name="s"), (2, 3, 4),
        [P + "svd_affine"])
pf_case("PF_svd_convolution",
        lambda nn, PF, x: PF.svd_convolution(x, 4, (3, 3), 2, pad=(1, 1), stride=(2, 1)),
        (2, 3, 6, 5), [P + "svd_convolution"])
pf_case("PF_cpd3_convolution",
        lambda nn, PF, x: PF.cpd3_convolution(x, 4, (3, 2), 2, pad=(1, 0), dilation=(1, 2)),
        (2, 3, 6, 5), [P + "cpd3_convolution"])
pf_case("PF_pruned_affine", lambda nn, PF, x: PF.pruned_affine(x, 4, rate_w=0.5, rate_b=0.25),
        (3, 5), [P + "pruned_affine"], forward_twice=True)
pf_case("PF_pruned_affine__no_prune",
        lambda nn, PF, x: PF.pruned_affine(x, (2, 2), prune_w=False, prune_b=False), (3, 5),
        [P + "pruned_affine"])
pf_case("PF_pruned_convolution",
        lambda nn, PF, x: PF.pruned_convolution(x, 4, (2, 2), group=1, rate_w=0.7,
                                                 prune_b=False),
        (2, 3, 4, 4), [P + "pruned_convolution"], forward_twice=True)


def _first_output(nn, r, y, x):
    """The output with the parameters' starting values, and the parameters' names/shapes."""
    y.forward()
    params = nn.get_parameters(grad_only=False)
    return {"out": y.d.copy(),
            "params": sorted([k, list(v.shape)] for k, v in params.items())}


@nnabla_case(names=[P + "svd_affine"], rtol=1e-4, atol=1e-5)
def PF_svd_affine__initial_factors(nn, PF, r):
    """From an array ``uv_init``: ``U V`` is its rank-2 truncated SVD."""
    x = nn.Variable.from_numpy_array(r.randn(3, 6))
    w = r.randn(6, 4)
    res = _first_output(nn, r, PF.svd_affine(x, 4, 2, uv_init=w), x)
    p = nn.get_parameters()
    res["UV"] = np.dot(p["svd_affine/U"].d, p["svd_affine/V"].d)
    return res


@nnabla_case(names=[P + "svd_convolution"], rtol=1e-4, atol=1e-5)
def PF_svd_convolution__initial_factors(nn, PF, r):
    x = nn.Variable.from_numpy_array(r.randn(2, 3, 5, 5))
    w = r.randn(4, 3, 3, 3)
    return _first_output(nn, r, PF.svd_convolution(x, 4, (3, 3), 2, pad=(1, 1), uv_init=w), x)


@nnabla_case(names=[P + "cpd3_convolution"], rtol=1e-3, atol=1e-4,
             note="alternating least squares to 1e-5 of an exactly rank-2 kernel: 1e-3")
def PF_cpd3_convolution__initial_factors(nn, PF, r):
    """From an exactly rank-2 ``oik_init``, the factors reproduce it (CP decomposition)."""
    x = nn.Variable.from_numpy_array(r.randn(2, 3, 5, 5))
    o, i, k = r.randn(4, 2), r.randn(3, 2), r.randn(9, 2)
    w = np.einsum("or,ir,kr->oik", o, i, k).reshape(4, 3, 3, 3).astype(np.float32)
    return _first_output(nn, r, PF.cpd3_convolution(x, 4, (3, 3), 2, pad=(1, 1), oik_init=w,
                                                    stopping_criterion=1e-9), x)


@nnabla_case(names=[P + "pruned_affine", P + "UniformInitializer", P + "NormalInitializer",
                    P + "ConstantInitializer", P + "calc_uniform_lim_glorot"])
def PF_initializers(nn, PF, r):
    """``PF``'s initialisers (``nnabla.initializer``'s) as a layer's ``w_init``/``b_init``, with
    a seeded ``rng``: the same starting values; the pruned ``W_q`` after a forward."""
    x = nn.Variable.from_numpy_array(r.randn(2, 6))
    lim = PF.calc_uniform_lim_glorot(6, 5)
    y = PF.pruned_affine(x, 5, w_init=PF.UniformInitializer(lim, rng=np.random.RandomState(7)),
                         b_init=PF.ConstantInitializer(0.25), name="u")
    z = PF.pruned_affine(x, 4, w_init=PF.NormalInitializer(0.5, rng=np.random.RandomState(8)),
                         name="n")
    res = {"lim": list(lim)}
    for k, v in sorted(nn.get_parameters(grad_only=False).items()):
        res["initial " + k] = v.d.copy()
    y.forward()
    z.forward()
    for k, v in sorted(nn.get_parameters(grad_only=False).items()):
        res["after " + k] = v.d.copy()
    return res
