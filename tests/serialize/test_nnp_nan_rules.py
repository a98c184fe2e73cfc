"""An NNabla ``.nnp`` file's ReLU computes NNabla 1.39's ``x > 0 ? x : 0`` once loaded: 0 for
NaN (torch's relu keeps NaN).  ``tests/fixtures/nnp_nan/relu.nnp`` and ``relu.npz`` (its input,
holding NaN, infinities and signed zeros, and NNabla 1.39's outputs) were written by the real
NNabla 1.39 (``make_nnp.py`` there); ``z`` is a ReLU after an affine of those values, where
``inf - inf`` makes NaN that NNabla's ReLU turns into 0.
"""

from __future__ import annotations

import os

import numpy as np

from stadyn.compat.nnabla.utils.nnp_graph import NnpLoader

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "nnp_nan")


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
