"""NNabla 1.39: the dtype a parameter keeps from a file or an initializer array, what its
functions compute in over it, and what a re-save writes.

NNabla 1.39 holds a parameter in the dtype it was given: an ``.h5`` dataset's
(nnabla/utils/get_file_handle.py:303, ``var.data.cast(ds.dtype)[...] = ds[...]``), float64
from a ``.protobuf`` / ``.nnp``'s ``parameter.protobuf`` (nnabla/parameter.py:392,
``numpy.reshape`` of the message's repeated ``float`` field: its ``Parameter`` message has no
data type), an initializer array's (parameter.py:244, ``Variable.from_numpy_array``).  Its
functions read float32 and write float32, its gradients are float32, a solver's update writes
float32; ``save_parameters('....h5')`` writes each parameter's array as it is
(get_file_handle.py:470, ``hd[k] = v.data.get_data("r")``), so a re-save keeps the dtype and,
for float64, every digit.  Stadyn's Variable holds one float32 tensor (its ops compute in
it): ``.d`` is float32 there (the known keys), and the array NNabla holds is kept beside it
for the ``.h5`` re-save while nothing but an in-place write through ``.d`` changed the
Variable (``compat/nnabla/_kept_dtypes.py``; float32 before nnio28).
"""

import zipfile

import numpy as np

from compat_harness import nnabla_case

_ONE_TENSOR = ("NNabla 1.39 holds the parameter in the dtype it was given (float64, float16) "
               "and .d shows it, every digit; a Stadyn Variable holds one float32 tensor, in "
               "which its ops compute (NNabla's functions compute in float32 too: the outputs, "
               "gradients and updates agree), so .d is float32, the values rounded "
               "(docs/nnabla-names.md, 'Variable.d = values of another floating dtype')")
_WRITTEN = ("NNabla 1.39 stores v.d = float64 array as float64 and re-saves it so; Stadyn's .d "
            "setter casts into the Variable's float32 tensor and keeps nothing beside it (a "
            "copy of each float64 array written, data fed each step included, for a re-save "
            "only), so the .h5 holds float32 (docs/nnabla-names.md)")


def _h5_arrays(path):
    import h5py
    found = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, obj: found.__setitem__(name, obj[...])
                     if isinstance(obj, h5py.Dataset) else None)
    return found


def _saved(nn, name):
    nn.save_parameters(name)
    return {k: [str(a.dtype), a.astype(np.float64).ravel().tolist()]
            for k, a in sorted(_h5_arrays(name).items())}


@nnabla_case(names=["nnabla.load_parameters", "nnabla.save_parameters",
                    "nnabla.get_parameters", "nnabla.solvers.Sgd", "nnabla.solvers.Adam",
                    "nnabla.solvers.AdamW", "nnabla.solvers.AMSGRAD", "nnabla.Variable.d"],
             known={"loaded dtypes": _ONE_TENSOR, "loaded w digits": _ONE_TENSOR},
             note="an .h5 of a float64 w = [1 + 1e-9, 2, -0.1] and a float16 h = [0.5, 1/3]: "
                  "loaded, the dtypes and w's digits ((w[0] - 1) * 1e9 in float64); "
                  "sum((w - 1) * 1e9) (forward, w's gradient); re-saved as .h5 (each "
                  "dataset's dtype and values) and as "
                  ".protobuf (reloaded); after an Sgd(0.5) update of w, re-saved as .h5; "
                  "reloaded, w.d[0] = 5 in place, re-saved as .h5; reloaded, two Adam / AdamW / "
                  "AMSGRAD(0.01) steps of sum(w * [0, 1, 1]) (w[0]'s gradient 0: NNabla's "
                  "update writes float32 over all of w), re-saved as .h5")
def h5_float64__resaved_with_its_digits(nn, F, S, r):
    r.touch("nnabla.Variable.d")
    import h5py
    with h5py.File("src.h5", "w") as f:
        f["w"] = np.array([1.0 + 1e-9, 2.0, -0.1], np.float64)
        f["h"] = np.array([0.5, 1.0 / 3.0], np.float16)
        for i, k in enumerate(("w", "h")):
            f[k].attrs["need_grad"] = True
            f[k].attrs["index"] = i
    nn.clear_parameters()
    nn.load_parameters("src.h5")
    params = nn.get_parameters()
    w = params["w"]
    res = {"loaded dtypes": {k: str(v.d.dtype) for k, v in params.items()},
           "loaded w digits": (w.d.astype(np.float64)[0] - 1.0) * 1e9}
    loss = F.sum((w - 1.0) * 1e9)
    loss.forward()
    w.grad.zero()
    loss.backward()
    res["loss"] = loss.d.copy()
    res["w grad"] = w.g.copy()
    res["resaved h5"] = _saved(nn, "re.h5")
    nn.save_parameters("re.protobuf")
    nn.clear_parameters()
    nn.load_parameters("re.protobuf")
    res["protobuf reloaded"] = {k: v.d.astype(np.float32).tolist()
                                for k, v in nn.get_parameters().items()}
    nn.clear_parameters()
    nn.load_parameters("src.h5")
    params = nn.get_parameters()
    loss = F.sum(params["w"] * 0.25)
    loss.forward()
    solver = S.Sgd(0.5)
    solver.set_parameters({"w": params["w"]})
    solver.zero_grad()
    loss.backward()
    solver.update()
    res["after update: resaved"] = _saved(nn, "upd.h5")
    for name in ("Adam", "AdamW", "AMSGRAD"):
        nn.clear_parameters()
        nn.load_parameters("src.h5")
        w = nn.get_parameters()["w"]
        loss = F.sum(w * nn.Variable.from_numpy_array(np.array([0.0, 1.0, 1.0], np.float32)))
        solver = getattr(S, name)(0.01)
        solver.set_parameters({"w": w})
        for _ in range(2):
            loss.forward()
            solver.zero_grad()
            loss.backward()
            solver.update()
        res["after %s (w[0]'s gradient 0): resaved" % name] = _saved(nn, "adam.h5")
    nn.clear_parameters()
    nn.load_parameters("src.h5")
    nn.get_parameters()["w"].d[0] = 5.0
    res["in place: resaved"] = _saved(nn, "inplace.h5")
    nn.clear_parameters()
    return res


@nnabla_case(names=["nnabla.load_parameters", "nnabla.save_parameters",
                    "nnabla.parameter.get_parameter_or_create", "nnabla.Variable.d",
                    "nnabla.parametric_functions.affine", "nnabla.utils.save.save"],
             known={"protobuf dtype": _ONE_TENSOR, "nnp dtype": _ONE_TENSOR,
                    "initializer dtypes": _ONE_TENSOR, "written float64: resaved": _WRITTEN,
                    "affine dtypes": _ONE_TENSOR},
             note="a float32 w = [0.1, 0.2] saved as .protobuf, loaded (also as an .nnp's "
                  "parameter.protobuf) and re-saved as .h5; get_parameter_or_create with a "
                  "float64 array [1 + 1e-9, 0.3] and with a callable giving float64 "
                  "(re-saved as .h5); PF.affine with float64 w_init / b_init arrays: the "
                  "output * 1e9 of x = [1, 2] (float32 on NNabla), the dtypes, the .h5 "
                  "re-save and its nnabla.utils.save .nnp's parameter.h5; v.d = float32 "
                  "values written over a float64 one, re-saved; u.d = float64 values, "
                  "re-saved")
def protobuf_and_initializers__resaved_in_their_dtype(nn, F, PF, r):
    r.touch("nnabla.Variable.d", "nnabla.parameter.get_parameter_or_create")
    res = {}
    nn.clear_parameters()
    w = nn.parameter.get_parameter_or_create("w", (2,))
    w.d = np.array([0.1, 0.2], np.float32)
    nn.save_parameters("p.protobuf")
    with zipfile.ZipFile("p.nnp", "w") as z:
        z.write("p.protobuf", "parameter.protobuf")
        z.writestr("nnp_version.txt", "0.1")
    for ext in ("protobuf", "nnp"):
        nn.clear_parameters()
        nn.load_parameters("p." + ext)
        res[ext + " dtype"] = str(nn.get_parameters()["w"].d.dtype)
        res[ext + ": resaved"] = _saved(nn, ext + ".h5")
    nn.clear_parameters()
    a = nn.parameter.get_parameter_or_create(
        "a", (2,), np.array([1.0 + 1e-9, 0.3], np.float64))
    c = nn.parameter.get_parameter_or_create(
        "c", (2,), lambda shape: np.full(shape, 0.7, np.float64))
    res["initializer dtypes"] = [str(a.d.dtype), str(c.d.dtype)]
    res["initializers: resaved"] = _saved(nn, "init.h5")
    nn.clear_parameters()
    x = nn.Variable.from_numpy_array(np.array([[1.0, 2.0]], np.float32))
    with nn.parameter_scope("fc"):
        y = PF.affine(x, 1, w_init=np.array([[1.0 + 1e-9], [1.0]], np.float64),
                      b_init=np.array([-3.0], np.float64))
    z = y * 1e9
    z.forward()
    res["affine output"] = z.d.copy()
    res["affine dtypes"] = {k: str(v.d.dtype) for k, v in nn.get_parameters().items()}
    res["affine: resaved"] = _saved(nn, "affine.h5")
    SV = r.module("nnabla.utils.save")
    SV.save("n.nnp", {"networks": [{"name": "net", "batch_size": 1, "outputs": {"y": y},
                                    "names": {"x": x}}],
                      "executors": [{"name": "e", "network": "net", "data": ["x"],
                                     "output": ["y"]}]})
    with zipfile.ZipFile("n.nnp") as z:
        with open("n_parameter.h5", "wb") as f:
            f.write(z.read("parameter.h5"))
    res["affine: saved .nnp"] = {k: [str(a.dtype), a.astype(np.float64).ravel().tolist()]
                                 for k, a in sorted(_h5_arrays("n_parameter.h5").items())}
    nn.clear_parameters()
    v = nn.parameter.get_parameter_or_create("v", (2,), np.array([0.1, 0.2], np.float64))
    v.d = np.array([0.1, 0.2], np.float32)
    res["written float32: resaved"] = _saved(nn, "written.h5")
    nn.clear_parameters()
    u = nn.parameter.get_parameter_or_create("u", (2,))
    u.d = np.array([1.0 + 1e-9, 0.3], np.float64)
    res["written float64: resaved"] = _saved(nn, "written64.h5")
    nn.clear_parameters()
    return res


_INT_ONE_TENSOR = ("NNabla 1.39 holds an integer initializer array of a parameter that needs a "
                   "gradient as given (int64) beside a float32 gradient; a Stadyn Variable "
                   "that needs a gradient holds float32, torch's gradients being of floating "
                   "tensors (docs/nnabla-names.md): the outputs agree")


@nnabla_case(names=["nnabla.parametric_functions.batch_normalization",
                    "nnabla.parametric_functions.affine", "nnabla.save_parameters"],
             known={"bn dtypes": _INT_ONE_TENSOR, "affine dtypes": _INT_ONE_TENSOR},
             note="PF.batch_normalization(batch_stat=False) of x = arange(6) (2, 3) with "
                  "integer param_init beta = [[1, 2, 3]], gamma = [[2, 2, 2]] and PF.affine "
                  "with w_init 0.5 (float32), b_init = [4, 5] (int64): the outputs, the "
                  "parameters' dtypes, an .h5 re-save (each dataset's dtype and values)")
def integer_initializers__resaved_as_integers(nn, F, PF, r):
    nn.clear_parameters()
    x = nn.Variable.from_numpy_array(np.arange(6, dtype=np.float32).reshape(2, 3))
    y = PF.batch_normalization(x, param_init={"beta": np.array([[1, 2, 3]]),
                                              "gamma": np.array([[2, 2, 2]])},
                               batch_stat=False, name="bn")
    z = PF.affine(x, 2, w_init=np.full((3, 2), 0.5, np.float32), b_init=np.array([4, 5]),
                  name="fc")
    y.forward()
    z.forward()
    res = {"bn output": y.d.copy(), "affine output": z.d.copy()}
    params = nn.get_parameters(grad_only=False)
    res["bn dtypes"] = {k: str(v.d.dtype) for k, v in params.items() if k.startswith("bn")}
    res["affine dtypes"] = {k: str(v.d.dtype) for k, v in params.items()
                            if k.startswith("fc")}
    res["resaved"] = _saved(nn, "ints.h5")
    nn.clear_parameters()
    return res


@nnabla_case(names=["nnabla.parametric_functions.batch_normalization",
                    "nnabla.parametric_functions.affine",
                    "nnabla.parameter.get_parameter_or_create", "nnabla.NdArray.fill",
                    "nnabla.NdArray.zero", "nnabla.NdArray.cast", "nnabla.save_parameters"],
             note="PF.batch_normalization with float64 param_init mean = zeros, var = ones "
                  "(of beta's and gamma's shape and values); PF.affine with a w_init lambda "
                  "giving float64 0.1 + 1e-12 and PF.affine with float32 w_init zeros and "
                  "float64 b_init zeros: each .h5 re-save's dtypes and values; parameters "
                  "made of float64 [1 + 1e-9, 0.3] then fill(0.1), zero(), "
                  "cast(np.float32), each re-saved as .h5")
def initializers_by_name_and_fills__resaved(nn, F, PF, r):
    r.touch("nnabla.NdArray.fill", "nnabla.NdArray.zero", "nnabla.NdArray.cast",
            "nnabla.parameter.get_parameter_or_create")
    nn.clear_parameters()
    PF.batch_normalization(nn.Variable((2, 3)), param_init={"mean": np.zeros((1, 3)),
                                                            "var": np.ones((1, 3))}, name="bn")
    res = {"bn float64 mean, var": _saved(nn, "bn.h5")}
    nn.clear_parameters()
    PF.affine(nn.Variable((1, 2)), 1, w_init=lambda shape: np.full(shape, 0.1 + 1e-12),
              name="fc")
    saved = _saved(nn, "fc.h5")
    res["lambda w_init"] = {k: [dtype, ((np.array(v) - 0.1) * 1e12).tolist()]
                            for k, (dtype, v) in saved.items()}
    nn.clear_parameters()
    PF.affine(nn.Variable((1, 2)), 2, w_init=np.zeros((2, 2), np.float32), b_init=np.zeros(2),
              name="fc")
    res["float64 b zeros"] = _saved(nn, "b.h5")
    for how in ("fill", "zero", "cast"):
        nn.clear_parameters()
        p = nn.parameter.get_parameter_or_create("p", (2,), np.array([1.0 + 1e-9, 0.3]))
        if how == "fill":
            p.data.fill(0.1)
        elif how == "zero":
            p.data.zero()
        else:
            p.data.cast(np.float32)
        res["after " + how] = _saved(nn, how + ".h5")
    nn.clear_parameters()
    return res
