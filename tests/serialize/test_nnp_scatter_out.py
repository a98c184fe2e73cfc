"""An NNabla ``.nnp`` file's ``ScatterNd`` with a third input (NNabla's ``out=``: the array
written over) loads and computes NNabla 1.39's values, and writes back as such.

``tests/fixtures/nnp_scatter_out/scatter_out.nnp`` and ``scatter_out.npz`` were written by the
real NNabla 1.39 (``make_nnp.py`` there): ``y = scatter_nd(v, idx, out=2 x)`` and ``z =
scatter_nd(v, idx, out=2 x, add=True)``; NNabla writes the index tuples as an input
(``@net/ScatterNd_in``), fed here as NNabla's program would.  Before, the third input was taken
as the ``shape`` argument.
"""

from __future__ import annotations

import os

import numpy as np

import stadyn as sd
from stadyn.compat.nnabla.utils.nnp_graph import NnpLoader

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "nnp_scatter_out")
PATH = os.path.join(FIXTURES, "scatter_out.nnp")
IDX = "@net/ScatterNd_in"


def test_an_nnp_scatter_nd_over_its_third_input_computes_nnablas_values():
    data = np.load(os.path.join(FIXTURES, "scatter_out.npz"))
    net = NnpLoader(PATH).get_network("net", batch_size=2)
    net.inputs["x"].d = data["x"]
    net.inputs["v"].d = data["v"]
    net.inputs[IDX].d = data["idx"]
    for name in ("y", "z"):
        out = net.outputs[name]
        out.forward()
        np.testing.assert_array_equal(out.d, data[name], err_msg=name)
        assert len(out.parent.inputs) == 3


def test_stadyn_load_nnp_and_a_written_copy_compute_the_same(tmp_path):
    data = np.load(os.path.join(FIXTURES, "scatter_out.npz"))
    net = sd.load_nnp(PATH, network="net")
    feed = {"x": data["x"], "v": data["v"], IDX: data["idx"]}
    got = net(**feed)
    for name in ("y", "z"):
        np.testing.assert_array_equal(got[name], data[name], err_msg=name)
    copy = str(tmp_path / "copy.nnp")
    sd.save_nnp(copy, net)
    again = sd.load_nnp(copy)(**feed)
    for name in ("y", "z"):
        np.testing.assert_array_equal(again[name], data[name], err_msg="copy " + name)
