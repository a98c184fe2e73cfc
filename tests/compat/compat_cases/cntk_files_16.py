"""Model files CNTK 2.7 writes that Stadyn refused or read otherwise (cntkfiles16):
``sequence.softmax`` saved as a CNTK v2 file, and v1 files (``save_as_legacy_model``) of
``sequence.last`` of a recurrence, a splice of a forward and a backward recurrence and a
transposed convolution with an output shape, each framework saving and loading its own file.
CNTK 2.7's files read by Stadyn and Stadyn's by CNTK 2.7 are compared in
tests/serialize/test_cntk_files_16.py (fixtures in tests/fixtures/cntk_files_16)."""

import os
import warnings

import numpy as np

from compat_harness import cntk_case


@cntk_case(names=["cntk.sequence.softmax", "cntk.Function.save", "cntk.load_model"],
           note="sequence.softmax saved and loaded again: the warnings of the save (Stadyn wrote "
                "its own format with a warning before), the loaded root's op name and its "
                "output for two sequences")
def sequence_softmax_saved_as_a_cntk_file(C, r):
    r.touch("cntk.Function.save")
    x = C.sequence.input_variable(3, name="x")
    z = C.sequence.softmax(x, name="sm")
    data = [r.randn(4, 3).astype(np.float32), r.randn(2, 3).astype(np.float32)]
    with r.tempdir() as folder:
        path = os.path.join(folder, "sm.model")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            z.save(path)
        loaded = C.load_model(path)
    return {"save warnings": [str(w.message)[:80] for w in caught
                              if issubclass(w.category, UserWarning)],
            "root": [loaded.root_function.op_name, loaded.name],
            "out": loaded.eval({loaded.arguments[0]: data})}


def _v1_models(C):
    x = C.sequence.input_variable(2, name="x")
    yield "last", C.sequence.last(C.layers.Recurrence(C.layers.LSTM(3))(x))
    y = C.sequence.input_variable(2, name="y")
    yield "bidir", C.splice(C.layers.Recurrence(C.layers.LSTM(2))(y),
                            C.layers.Recurrence(C.layers.LSTM(2), go_backwards=True)(y))
    img = C.input_variable((2, 4, 4), name="img")
    yield "transpose", C.layers.ConvolutionTranspose((3, 3), 3, pad=True, strides=2,
                                                     output_shape=(8, 8))(img)


@cntk_case(names=["cntk.debugging.save_as_legacy_model", "cntk.load_model"],
           note="each model (parameters from the case's seeded draws) saved as a v1 model file "
                "and loaded again: its argument's dynamic axes and its output (Stadyn refused "
                "all three before)")
def recurrences_and_transposed_convolutions_in_v1_files(C, r):
    res = {}
    for kind, z in _v1_models(C):
        for p in z.parameters:
            p.value = (0.5 * r.randn(*p.shape)).astype(np.float32)
        with r.tempdir() as folder:
            path = os.path.join(folder, kind + ".dnn")
            C.debugging.save_as_legacy_model(z, path)
            loaded = C.load_model(path)
        (a,) = loaded.arguments
        res[kind + " axes"] = [ax.name for ax in a.dynamic_axes]
        data = r.randn(2, 2, 4, 4).astype(np.float32) if kind == "transpose" else \
            [r.randn(4, 2).astype(np.float32), r.randn(2, 2).astype(np.float32)]
        res[kind] = loaded.eval({a: data})
    return res
