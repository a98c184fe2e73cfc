"""NNabla 1.39: the dtype ``NnpLoader`` (``nnabla.utils.nnp_graph``) and ``nnabla.utils.load``
hold a loaded ``.nnp``'s parameters in, as a re-save with ``nn.save_parameters`` to ``.h5``
shows it.

NNabla's loaders set the parameters as its ``load_parameters`` does: an ``.h5`` dataset's dtype
(float64 kept, every digit), float64 from a ``parameter.protobuf`` or a text's parameters; a
solver's update then writes float32 over the array.  Stadyn's Variable holds float32 (``.d``:
the known keys) and keeps NNabla's array beside it for the re-save
(``compat/nnabla/_kept_dtypes.py``; before nnio35 its loaders kept nothing and re-saved
float32).
"""

import numpy as np

from compat_harness import nnabla_case
from compat_cases.nnabla_dtypes_28 import _ONE_TENSOR, _h5_arrays

G = "nnabla.utils.nnp_graph."


def _resaved(nn, name):
    nn.save_parameters(name)
    return {k: [str(a.dtype), a.astype(np.float64).ravel().tolist()]
            for k, a in sorted(_h5_arrays(name).items())}


def _model_file(nn, PF, r, name, dtype, parameter_format):
    SV = r.module("nnabla.utils.save")
    nn.clear_parameters()
    x = nn.Variable((2, 3))
    y = PF.affine(x, 2, w_init=np.full((3, 2), 1.0 + 1e-9).astype(dtype),
                  b_init=np.array([0.1, -0.2]).astype(dtype), name="fc")
    SV.save(name, {"networks": [{"name": "net", "batch_size": 2, "outputs": {"y": y},
                                 "names": {"x": x}}],
                   "executors": [{"name": "runtime", "network": "net", "data": ["x"],
                                  "output": ["y"]}]},
            parameter_format=parameter_format or ".h5", include_params=parameter_format is None)
    nn.clear_parameters()


@nnabla_case(names=[G + "NnpLoader", G + "NnpLoader.get_network", "nnabla.utils.load.load",
                    "nnabla.save_parameters", "nnabla.utils.save.save", "nnabla.solvers.Sgd"],
             known={"NnpLoader %s dtypes" % k: _ONE_TENSOR
                    for k in ("f64", "pb", "txt", "f16", "i64")},
             note="PF.affine with w_init = 1 + 1e-9 and b_init = [0.1, -0.2] saved by "
                  "nnabla.utils.save as .nnp: float64 arrays (parameter.h5), float32 ones, "
                  "float32 ones with parameter_format='.protobuf'; and as .nntxt with "
                  "include_params (float32 ones); float16 and int64 ones (parameter.h5); "
                  "each loaded by NnpLoader (get_network) and by nnabla.utils.load.load, "
                  "re-saved as .h5 (dtypes and values); the float64 one's network run on "
                  "x = ones (output * 1e9), then one Sgd(0.5) update of sum(y) and re-saved "
                  "again")
def loaded_nnp__resaved_in_its_dtype(nn, F, PF, S, r):
    NG = r.module("nnabla.utils.nnp_graph")
    L = r.module("nnabla.utils.load")
    r.touch(G + "NnpLoader.get_network")
    res = {}
    for key, dtype, fmt in (("f64", np.float64, ".h5"), ("f32", np.float32, ".h5"),
                            ("pb", np.float32, ".protobuf"), ("txt", np.float32, None),
                            ("f16", np.float16, ".h5"), ("i64", np.int64, ".h5")):
        path = "m_%s.%s" % (key, "nntxt" if fmt is None else "nnp")
        _model_file(nn, PF, r, path, dtype, fmt)
        net = NG.NnpLoader(path).get_network("net", batch_size=2)
        res["NnpLoader %s dtypes" % key] = {
            k: str(v.d.dtype) for k, v in sorted(nn.get_parameters(grad_only=False).items())}
        res["NnpLoader %s: resaved" % key] = _resaved(nn, "nl_%s.h5" % key)
        nn.clear_parameters()
        L.load([path], prepare_data_iterator=False)
        res["load %s: resaved" % key] = _resaved(nn, "ld_%s.h5" % key)
        nn.clear_parameters()
    net = NG.NnpLoader("m_f64.nnp").get_network("net", batch_size=2)
    net.inputs["x"].d = np.ones((2, 3), np.float32)
    y = net.outputs["y"]
    loss = F.sum(y)
    loss.forward()
    res["f64 output"] = (y.d.astype(np.float64) - 3.0) * 1e9
    solver = S.Sgd(0.5)
    solver.set_parameters(nn.get_parameters())
    solver.zero_grad()
    loss.backward()
    solver.update()
    res["f64 after update: resaved"] = _resaved(nn, "upd.h5")
    nn.clear_parameters()
    return res


def _resaved_dtypes(nn, name):
    nn.save_parameters(name)
    return {k: str(a.dtype) for k, a in sorted(_h5_arrays(name).items())}


@nnabla_case(names=["nnabla.parametric_functions.svd_affine",
                    "nnabla.parametric_functions.svd_convolution",
                    "nnabla.parametric_functions.cpd3_convolution"],
             note="the low-rank layers' factors re-saved as .h5 (dtypes): svd_affine with "
                  "its default initializer, a float32 and a float64 uv_init array, a function "
                  "giving float64; made again when one factor is missing (U of another "
                  "dtype set before); found when both are there; svd_convolution and "
                  "cpd3_convolution (max_iter=5) with their default initializers and a "
                  "float64 array; the float64 svd_affine after one Sgd update")
def low_rank_factors__resaved_in_their_dtype(nn, F, PF, S, r):
    rng = np.random.RandomState(3)
    x = nn.Variable.from_numpy_array(np.ones((2, 4), np.float32))
    xc = nn.Variable((1, 2, 5, 5))
    res = {}
    for key, kw in (("default", {}), ("f32", {"uv_init": rng.randn(4, 3).astype(np.float32)}),
                    ("f64", {"uv_init": rng.randn(4, 3)}),
                    ("fn64", {"uv_init": lambda shape: np.ones(shape) + np.eye(*shape)})):
        nn.clear_parameters()
        PF.svd_affine(x, 3, 2, name="s", **kw)
        res["svd_affine %s" % key] = _resaved_dtypes(nn, "aff_%s.h5" % key)
    nn.clear_parameters()
    with nn.parameter_scope("s/svd_affine"):
        nn.parameter.get_parameter_or_create("U", (4, 2))
    PF.svd_affine(x, 3, 2, uv_init=rng.randn(4, 3), name="s")
    res["svd_affine U there, V made"] = _resaved_dtypes(nn, "aff_u.h5")
    nn.clear_parameters()
    with nn.parameter_scope("s/svd_affine"):
        nn.parameter.get_parameter_or_create("U", (4, 2))
        nn.parameter.get_parameter_or_create("V", (2, 3))
    PF.svd_affine(x, 3, 2, uv_init=rng.randn(4, 3), name="s")
    res["svd_affine both there"] = _resaved_dtypes(nn, "aff_uv.h5")
    for key, kw in (("default", {}), ("f64", {"uv_init": rng.randn(3, 2, 3, 3)})):
        nn.clear_parameters()
        PF.svd_convolution(xc, 3, (3, 3), 1, **kw)
        res["svd_convolution %s" % key] = _resaved_dtypes(nn, "conv_%s.h5" % key)
    for key, kw in (("default", {}), ("f64", {"oik_init": rng.randn(3, 2, 3, 3)})):
        nn.clear_parameters()
        PF.cpd3_convolution(xc, 3, (3, 3), 2, max_iter=5, **kw)
        res["cpd3_convolution %s" % key] = _resaved_dtypes(nn, "cpd_%s.h5" % key)
    nn.clear_parameters()
    loss = F.sum(PF.svd_affine(x, 3, 2, uv_init=rng.randn(4, 3)))
    solver = S.Sgd(0.1)
    solver.set_parameters(nn.get_parameters())
    loss.forward()
    solver.zero_grad()
    loss.backward()
    solver.update()
    res["svd_affine f64 after update"] = _resaved_dtypes(nn, "aff_upd.h5")
    nn.clear_parameters()
    return res


@nnabla_case(names=["nnabla.NdArray.cast", "nnabla.save_parameters"],
             note="parameters cast in place (v.data.cast) to another dtype than float32, "
                  "re-saved as .h5 (dtypes and values): a float64 one (1 + 1e-9) to float16, "
                  "float32 ones to float64 and to int64 (1.7, -2.5), a float64 one to float32; "
                  "then one cast to float64 updated by Sgd and re-saved again")
def cast_parameters__resaved_in_the_cast_dtype(nn, F, PF, S, r):
    r.touch("nnabla.NdArray.cast")
    G = nn.parameter.get_parameter_or_create
    a = G("a", (2,), np.array([1 + 1e-9, 2.0]))
    b = G("b", (2,), np.array([0.1, 1.7], np.float32))
    c = G("c", (2,), np.array([1.7, -2.5], np.float32))
    d = G("d", (2,), np.array([1 + 1e-9, 2.0]))
    a.data.cast(np.float16)
    b.data.cast(np.float64)
    c.data.cast(np.int64)
    d.data.cast(np.float32)
    res = {"resaved": _resaved(nn, "cast.h5")}
    nn.clear_parameters()
    w = G("w", (2,), np.array([0.1, 1.7], np.float32))
    w.data.cast(np.float64)
    loss = F.sum(w * w)
    solver = S.Sgd(0.5)
    solver.set_parameters({"w": w})
    loss.forward()
    solver.zero_grad()
    loss.backward()
    solver.update()
    res["after update: resaved"] = _resaved(nn, "cast_upd.h5")
    nn.clear_parameters()
    return res
