"""NNabla 1.39: the dtype of parameters ``nn.load_parameters`` gives, and what a graph and a
solver then compute with them.

NNabla 1.39 reads a ``.protobuf`` file's (and an ``.nnp``'s ``parameter.protobuf``) values from
the message's repeated ``float`` field with ``numpy.reshape(parameter.data, ...)``
(nnabla/parameter.py:397 of the 1.39 wheel), which makes a float64 array, so the parameters
read back float64; an ``.h5`` dataset keeps its dtype (utils/get_file_handle.py:303,
``var.data.cast(ds.dtype)[...] = ds[...]``), float32 here.  Its functions read float32 and its
solvers write float32, so the outputs, gradients and updates are those of float32 values.
Stadyn's Variables hold float32 there (``docs/nnabla-names.md``, "Variable.d = values of
another floating dtype"): the dtypes are the known keys; every value is compared.
"""

import zipfile

import numpy as np

from compat_harness import nnabla_case

_F64 = ("NNabla 1.39 reads a .protobuf parameter as float64 (nnabla/parameter.py:397: "
        "numpy.reshape of the repeated float field); a Stadyn Variable holds float32, as "
        "docs/nnabla-names.md says for float64 values ('Variable.d = values of another "
        "floating dtype'): the values, outputs, gradients and updates are compared and agree")


@nnabla_case(names=["nnabla.load_parameters", "nnabla.save_parameters",
                    "nnabla.get_parameters", "nnabla.solvers.Sgd"],
             known={"protobuf_W_dtype": _F64, "protobuf_b_dtype": _F64,
                    "nnp_W_dtype": _F64, "nnp_b_dtype": _F64},
             note="PF.affine's float32 W, b given values, saved as .protobuf and .h5 (and the "
                  ".protobuf zipped as an .nnp's parameter.protobuf), each loaded after "
                  "nn.clear_parameters(): the parameters' dtypes and values, then a graph "
                  "sum(affine(x)**2) built on them (output, W's gradient), an Sgd(0.1) update "
                  "and the loss after it")
def parameter_files__loaded_dtypes(nn, F, PF, S, r):
    res = {}
    nn.clear_parameters()
    x0 = (np.arange(6, dtype=np.float32).reshape(2, 3) / 7).astype(np.float32)
    with nn.parameter_scope("fc"):
        PF.affine(nn.Variable.from_numpy_array(x0), 2)
    params = nn.get_parameters()
    params["fc/affine/W"].d = (np.arange(6).reshape(3, 2) / 3.0).astype(np.float32)
    params["fc/affine/b"].d = np.array([0.1, -0.2], np.float32)
    nn.save_parameters("p.protobuf")
    nn.save_parameters("p.h5")
    with zipfile.ZipFile("p.nnp", "w") as z:
        z.write("p.protobuf", "parameter.protobuf")
        z.writestr("nnp_version.txt", "0.1")
    for ext in ("protobuf", "h5", "nnp"):
        nn.clear_parameters()
        nn.load_parameters("p." + ext)
        params = nn.get_parameters()
        for key in ("W", "b"):
            p = params["fc/affine/" + key]
            res["%s_%s_dtype" % (ext, key)] = p.d.dtype.name
            res["%s_%s" % (ext, key)] = p.d.astype(np.float64)
        x = nn.Variable.from_numpy_array(x0)
        with nn.parameter_scope("fc"):
            y = PF.affine(x, 2)
        loss = F.sum(y * y)
        loss.forward()
        loss.backward()
        W = params["fc/affine/W"]
        res[ext + "_y"] = y.d.copy()
        res[ext + "_W_grad"] = W.g.copy()
        solver = S.Sgd(0.1)
        solver.set_parameters(nn.get_parameters())
        solver.update()
        res[ext + "_W_after_update"] = W.d.copy()
        loss.forward()
        res[ext + "_loss_after_update"] = loss.d.copy()
    nn.clear_parameters()
    return res
