"""``nnabla.functions`` used by nnabla-examples beyond the first two files' functions (by
call-site count, ``benchmarks/nnabla_examples_callsites.py``): ``shift``, batched linear
algebra, norm clipping and normalisations, quantisation, grids and warping, ``add_n``/``mul_n``,
``dot``, ``kl_multinomial``, ``meshgrid``, ``searchsorted``.
"""

import numpy as np

from compat_cases.nnabla_functions import fn_case, positive


def well_conditioned(r, s):
    return (r.randn(*s) * 0.3 + np.eye(s[-1], dtype=np.float32)).astype(np.float32)


def probabilities(r, s):
    e = np.exp(r.randn(*s))
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)


def sorted_rows(r, s):
    return np.sort(r.randint(-6, 7, s).astype(np.float32) * 0.5, axis=-1)


def halves(r, s):
    return (r.randint(-6, 7, s) * 0.5).astype(np.float32)   # ties with the sorted values


def unit_grid(r, s):
    return r.rand(*s, low=-1.2, high=1.2)


def quantize_data(r, s):
    return r.rand(*s, low=-1.3, high=1.3)


# -- shift ------------------------------------------------------------------------------------
fn_case("shift", lambda F, x: F.shift(x, (1, -2)), [(2, 3, 5)])
fn_case("shift__reflect", lambda F, x: F.shift(x, (-3, 2), border_mode="reflect"), [(2, 4, 5)])
fn_case("shift__far_reflect", lambda F, x: F.shift(x, (6,), border_mode="reflect"), [(2, 4)],
        names=["nnabla.functions.shift"])
fn_case("shift__default", lambda F, x: F.shift(x), [(2, 3)])

# -- linear algebra -----------------------------------------------------------------------------
fn_case("batch_inv", lambda F, x: F.batch_inv(x), [(2, 3, 3)], data=[well_conditioned],
        rtol=1e-4, atol=1e-5, note="fp32 LU factorisations of two libraries")
fn_case("batch_det", lambda F, x: F.batch_det(x), [(3, 3, 3)], data=[well_conditioned],
        rtol=1e-4, atol=1e-5, note="fp32 LU factorisations of two libraries")
fn_case("batch_logdet", lambda F, x: F.batch_logdet(x), [(2, 3, 3)], data=[well_conditioned],
        rtol=1e-4, atol=1e-5, note="fp32 LU factorisations of two libraries")
fn_case("matrix_diag", lambda F, x: F.matrix_diag(x), [(2, 3)])
fn_case("matrix_diag_part", lambda F, x: F.matrix_diag_part(x), [(2, 3, 3)])
fn_case("dot", lambda F, a, b: F.dot(a, b), [(3, 4), (4, 2)])
fn_case("dot__vector", lambda F, a, b: F.dot(a, b), [(2, 3, 4), (4,)])
fn_case("dot__nd", lambda F, a, b: F.dot(a, b), [(2, 3, 4), (2, 4, 5)])
fn_case("dot__inner", lambda F, a, b: F.dot(a, b), [(4,), (4,)])

# -- norms and rescaling ------------------------------------------------------------------------
fn_case("clip_by_norm", lambda F, x: F.clip_by_norm(x, 1.5), [(3, 4)])
fn_case("clip_by_norm__axis", lambda F, x: F.clip_by_norm(x, 1.5, axis=1), [(3, 4)])
fn_case("clip_by_norm__axes", lambda F, x: F.clip_by_norm(x, 2.0, axis=(0, 2)), [(2, 3, 4)])
fn_case("norm_normalization", lambda F, x: F.norm_normalization(x), [(3, 4)])
fn_case("norm_normalization__p", lambda F, x: F.norm_normalization(x, p=3, axes=1),
        [(3, 4)], data=[positive])
fn_case("norm_normalization__axes", lambda F, x: F.norm_normalization(x, axes=[0, 2]),
        [(2, 3, 4)])
fn_case("weight_standardization", lambda F, w: F.weight_standardization(w), [(3, 2, 2, 2)])
fn_case("weight_standardization__axis",
        lambda F, w: F.weight_standardization(w, channel_axis=1, eps=0.1), [(3, 4, 2)])
fn_case("weight_standardization__stat",
        lambda F, w: (lambda y, m, v: y + m * 2.0 + v * 3.0)(
            *F.weight_standardization(w, output_stat=True)), [(3, 4)],
        names=["nnabla.functions.weight_standardization"])
fn_case("weight_normalization", lambda F, w, g: F.weight_normalization(w, g), [(3, 2, 2), (3,)])
fn_case("weight_normalization__dim", lambda F, w, g: F.weight_normalization(w, g, dim=1),
        [(3, 4, 2), (4,)])

# -- quantisation ---------------------------------------------------------------------------
fn_case("fixed_point_quantize", lambda F, x: F.fixed_point_quantize(x, n=4, delta=0.125),
        [(4, 5)], data=[quantize_data])
fn_case("fixed_point_quantize__unsigned",
        lambda F, x: F.fixed_point_quantize(x, sign=False, n=3, delta=0.25,
                                            ste_fine_grained=False), [(4, 5)],
        data=[quantize_data])
fn_case("fixed_point_quantize__off",
        lambda F, x: F.fixed_point_quantize(x, quantize=False) * 2.0, [(2, 3)],
        note="NNabla returns x itself (no function), so the case computes on it")

# -- grids and warping ------------------------------------------------------------------------
fn_case("meshgrid", lambda F, x, y: (lambda a, b: a * 2.0 + b)(*F.meshgrid(x, y)),
        [(3,), (2,)])
fn_case("meshgrid__ij", lambda F, x, y, z: (lambda a, b, c: a * 3.0 + b * 2.0 + c)(
    *F.meshgrid(x, y, z, ij_indexing=True)), [(3,), (2,), (4,)])
fn_case("affine_grid", lambda F, t: F.affine_grid(t, (3, 4)), [(2, 2, 3)])
fn_case("affine_grid__corners", lambda F, t: F.affine_grid(t, (2, 3, 4), align_corners=True),
        [(1, 3, 4)])
fn_case("warp_by_grid", lambda F, x, g: F.warp_by_grid(x, g), [(2, 3, 4, 5), (2, 3, 2, 2)],
        data=[None, unit_grid])
fn_case("warp_by_grid__repeat",
        lambda F, x, g: F.warp_by_grid(x, g, padding_mode="repeat", align_corners=True),
        [(1, 2, 4, 4), (1, 3, 3, 2)], data=[None, unit_grid])
fn_case("warp_by_grid__reflect",
        lambda F, x, g: F.warp_by_grid(x, g, padding_mode="reflect"),
        [(1, 2, 4, 4), (1, 3, 3, 2)], data=[None, unit_grid])

# -- sums and products of many, KL, search ------------------------------------------------------
fn_case("add_n", lambda F, a, b, c: F.add_n(a, b, c), [(2, 3)] * 3)
fn_case("mul_n", lambda F, a, b, c: F.mul_n(a, b, c), [(2, 3)] * 3)
fn_case("kl_multinomial", lambda F, p, q: F.kl_multinomial(p, q), [(3, 4), (3, 4)],
        data=[probabilities, probabilities])
fn_case("kl_multinomial__base_axis", lambda F, p, q: F.kl_multinomial(p, q, base_axis=2),
        [(2, 3, 4), (2, 3, 4)], data=[probabilities, probabilities])
fn_case("searchsorted", lambda F, s, v: F.searchsorted(s, v), [(2, 6), (2, 5)],
        data=[sorted_rows, halves], grads=False)
fn_case("searchsorted__right", lambda F, s, v: F.searchsorted(s, v, right=True),
        [(2, 3, 6), (2, 3, 4)], data=[sorted_rows, halves], grads=False)


def pow2_data(r, s):
    """Magnitudes from 0 to 5 over many octaves, both signs, and an exact 0."""
    v = (np.exp2(r.rand(*s, low=-8.0, high=2.4)) * np.where(r.rand(*s) < 0.3, -1, 1))
    v.flat[0] = 0.0
    return v.astype(np.float32)


fn_case("pow2_quantize", lambda F, x: F.pow2_quantize(x, n=4, m=1), [(5, 6)], data=[pow2_data])
for _sign in (True, False):
    for _zero in (True, False):
        fn_case("pow2_quantize__%s_%s" % ("signed" if _sign else "unsigned",
                                          "zero" if _zero else "nozero"),
                (lambda s, z: lambda F, x: F.pow2_quantize(x, sign=s, with_zero=z, n=3, m=0))(
                    _sign, _zero), [(5, 6)], data=[pow2_data],
                names=["nnabla.functions.pow2_quantize"])
fn_case("pow2_quantize__coarse_ste", lambda F, x: F.pow2_quantize(x, n=5, m=-1,
                                                                  ste_fine_grained=False),
        [(4, 5)], data=[pow2_data], names=["nnabla.functions.pow2_quantize"])
fn_case("pow2_quantize__off", lambda F, x: F.pow2_quantize(x, quantize=False) * 2.0, [(2, 3)],
        names=["nnabla.functions.pow2_quantize"],
        note="NNabla returns x itself (no function), so the case computes on it")
