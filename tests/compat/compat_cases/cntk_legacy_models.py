"""``cntk.debugging.save_as_legacy_model``: small models (Dense, Convolution, pooling, batch
normalisation) saved as CNTK v1 model files and loaded again by ``cntk.load_model``, each
framework its own file; and what CNTK 2.7 refuses to save (an input of free dimensions).
Stadyn's files loaded by CNTK 2.7 itself, and CNTK 2.7's by Stadyn, are compared in
tests/serialize/test_cntk_v1_write.py (fixtures in tests/fixtures/cntk_legacy_models)."""

import os

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import outcome


def _models(C):
    x = C.input_variable(3, name="x")
    yield "dense", C.layers.Dense(2, activation=C.relu, name="d")(x), (3,)
    img = C.input_variable((1, 5, 5), name="img")
    yield "conv", C.layers.Convolution2D((3, 3), 2, activation=C.relu, pad=True)(img), \
        (1, 5, 5)
    pix = C.input_variable((1, 4, 4), name="pix")
    pooled = C.layers.MaxPooling((2, 2), strides=2, pad=True)(pix)
    yield "pool", C.layers.AveragePooling((2, 2), strides=1)(pooled), (1, 4, 4)
    maps = C.input_variable((2, 3, 3), name="maps")
    yield "bn", C.layers.BatchNormalization(map_rank=1)(maps), (2, 3, 3)


@cntk_case(names=["cntk.debugging.save_as_legacy_model", "cntk.load_model"],
           note="each model (parameters set from the case's seeded draws) saved as a v1 model "
                "file and loaded again: the loaded model's arguments and its output for two "
                "samples")
def legacy_model_files_load_again(C, r):
    res = {}
    for kind, z, shape in _models(C):
        for p in z.parameters:
            p.value = (0.5 * r.randn(*p.shape)).astype(np.float32)
        with r.tempdir() as folder:
            path = os.path.join(folder, kind + ".dnn")
            C.debugging.save_as_legacy_model(z, path)
            loaded = C.load_model(path)
        (a,) = loaded.arguments
        res[kind + " argument"] = [a.name, list(a.shape)]
        res[kind + " outputs"] = [list(o.shape) for o in loaded.outputs]
        res[kind + " parameters"] = sorted(p.name for p in loaded.parameters)
        res[kind] = loaded.eval({a: r.randn(2, *shape).astype(np.float32)})
    return res


@cntk_case(names=["cntk.debugging.save_as_legacy_model"],
           note="an input of free dimensions is refused (CNTK 2.7's ValueError)")
def legacy_model_free_dimension_refused(C, r):
    x = C.input_variable(C.FreeDimension, name="x")
    with r.tempdir() as folder:
        path = os.path.join(folder, "free.dnn")
        return {"raises": outcome(lambda: C.debugging.save_as_legacy_model(x + 1, path)),
                "written": os.path.exists(path)}
