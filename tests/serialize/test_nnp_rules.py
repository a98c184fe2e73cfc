"""NNabla ``.nnp`` files compute NNabla 1.39's rules once loaded: a file's ReLU is NNabla's
``x > 0 ? x : 0`` (0 for NaN; torch's relu keeps NaN), its batch, layer, instance and group
normalisations take the variance in one pass, its Abs passes a gradient of 1 at 0 and NaN.
``tests/fixtures/nnp_rules/relu.nnp`` and ``relu.npz`` (its input, holding NaN, infinities and
signed zeros, and NNabla 1.39's outputs) were written by the real NNabla 1.39 (``make_nnp.py``
there), as were ``bn.nnp``/``bn.npz`` and ``norm.nnp``/``norm.npz``; ``z`` is a ReLU after an
affine of those values, where ``inf - inf`` makes NaN that NNabla's ReLU turns into 0.
``order.nnp``/``order.npz`` (the same script) hold ``Max``, ``Min`` and ``Sort``: NNabla's
scans from -1e8 / 1e8 that pass NaN by, and its Sort backward gathering by the index.
"""

from __future__ import annotations

import os

import numpy as np

from stadyn.compat.nnabla.utils.nnp_graph import NnpLoader

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "nnp_rules")


def test_a_loaded_nnp_files_relu_is_nnablas():
    # before: F.relu's torch rule, y[0, 2] and y[1, 2] NaN (NNabla: 0), z NaN where NNabla's
    # ReLU of the affine's NaN gives 0
    data = np.load(os.path.join(FIXTURES, "relu.npz"))
    net = NnpLoader(os.path.join(FIXTURES, "relu.nnp")).get_network("net", batch_size=2)
    net.inputs["x"].d = data["x"]
    for name in ("y", "z"):
        out = net.outputs[name]
        out.forward()
        np.testing.assert_array_equal(out.d, data[name])


def test_a_loaded_nnp_files_batch_normalization_takes_nnablas_one_pass_variance():
    # NNabla 1.39 computes the batch variance as E[x^2] - mean^2 in float32: for channels of
    # 3.0 and 3.001 it normalises to +-0.15810 where the two-pass variance gives +-0.15616
    # (before: the file's BatchNormalization and FusedBatchNormalization took the two-pass one)
    data = np.load(os.path.join(FIXTURES, "bn.npz"))
    net = NnpLoader(os.path.join(FIXTURES, "bn.nnp")).get_network("net", batch_size=2)
    net.inputs["x"].d = data["x"]
    for name in ("y", "f"):
        out = net.outputs[name]
        out.forward()
        np.testing.assert_allclose(out.d, data[name], rtol=1e-6, atol=1e-7, err_msg=name)


def test_a_loaded_nnp_files_normalizations_and_abs_are_nnablas():
    # NNabla 1.39's layer, instance and group normalisation are its batch normalisation over
    # the kept axes: rows [3, 3.001], [5, 5.001] give +-0.15810 and -0.13445/0.13458, dx for
    # dy = [1, 2] +-154.16 (before: the two-pass variance, +-0.15616, -0.15609/0.15624 and
    # -152.37); so is weight standardisation (its tensor normalisation); Abs's gradient is
    # x < 0 ? -1 : 1 (before: 0 at 0, -0.0 and NaN)
    data = np.load(os.path.join(FIXTURES, "norm.npz"))
    net = NnpLoader(os.path.join(FIXTURES, "norm.nnp")).get_network("net", batch_size=1)
    inputs = {"ln": "x", "in": "xi", "gn": "xi", "abs": "xa", "ws": "xw"}
    for name, inp in inputs.items():
        x = net.inputs[inp]
        x.d = data[inp]
        x.need_grad = True
        out = net.outputs[name]
        out.forward()
        x.grad = None                           # a fresh gradient (xi feeds two)
        out.backward(data["dy_" + name])
        np.testing.assert_allclose(out.d, data[name], rtol=1e-5, atol=1e-6, err_msg=name)
        np.testing.assert_allclose(x.g, data["dx_" + name], rtol=1e-5, atol=1e-6,
                                   err_msg="dx " + name)


def test_a_loaded_nnp_files_max_min_and_sort_are_nnablas():
    # NNabla 1.39's Max/Min scan from -1e8/1e8 passing NaN by: [1, NaN, 3] -> 3, a row of NaN
    # -> -1e8 (its gradient to the first element), [2e8, -2e8, 5] -> 2e8 and -2e8; its Sort's
    # backward gathers dy by the sort index: [3, 1, 4, 2] with dy [1, 2, 3, 4] -> [2, 4, 1, 3]
    # (before: torch's max and min, NaN propagated, and sort's true derivative [3, 1, 4, 2])
    data = np.load(os.path.join(FIXTURES, "order.npz"))
    net = NnpLoader(os.path.join(FIXTURES, "order.nnp")).get_network("net", batch_size=4)
    for name in ("max", "min", "sort"):
        x = net.inputs["xs" if name == "sort" else "x"]
        x.d = data["xs" if name == "sort" else "x"]
        x.need_grad = True
        out = net.outputs[name]
        out.forward()
        x.grad = None
        out.backward(data["dy_" + name])
        np.testing.assert_array_equal(out.d, data[name], err_msg=name)
        np.testing.assert_array_equal(x.g, data["dx_" + name], err_msg="dx " + name)
