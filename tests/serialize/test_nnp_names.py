"""``nnabla.utils.save.save`` of ``stadyn.compat.nnabla`` writes a network's ``.nntxt`` as NNabla
1.39 writes it: functions ``@<network>/<Type>`` (``_1``, ... for a second of a type), their
outputs ``@<network>/<Type>_out`` (no prefix for a network named ``model``), the buffers before
the parameters, and an empty ``<type>_param`` block for a function whose arguments are all at
their defaults (``relu_param {}``, ``add2_param {}``; none for ``Tanh``, which has none).
Before, Stadyn wrote ``Convolution`` / ``convolution_out``, the parameters first and no empty
blocks.

``tests/fixtures/nnp_names/networks.nntxt`` was written by NNabla 1.39 from ``nets.py`` (its
``make_nntxt.py``); the same source runs here on Stadyn.  Where NNabla 1.39 is installed, it
also loads the file Stadyn wrote and runs it.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import peers

import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as F
import stadyn.compat.nnabla.parametric_functions as PF
from stadyn.compat.nnabla.utils.save import save

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "nnp_names")
NNABLA = peers.NNABLA_PYTHON
sys.path.insert(0, FIXTURES)
from nets import save_networks  # noqa: E402


def test_stadyn_writes_nnablas_names_order_and_parameter_blocks(tmp_path):
    path = str(tmp_path / "networks.nntxt")
    save_networks(nn, F, PF, save, path)
    with open(os.path.join(FIXTURES, "networks.nntxt")) as f:
        want = f.read()
    with open(path) as f:
        got = f.read()
    assert got == want


_RUN = """
import sys, numpy as np
from nnabla.utils.nnp_graph import NnpLoader
nnp = NnpLoader(sys.argv[1])
for name in ("Validation", "model"):
    net = nnp.get_network(name, batch_size=2)
    net.inputs["x"].d = np.arange(32, dtype=np.float32).reshape(2, 1, 4, 4) / 32
    y = net.outputs["y"]
    y.forward()
    print(name, list(y.shape), bool(np.isfinite(y.d).all()))
"""


@pytest.mark.skipif(not os.path.exists(NNABLA), reason="NNabla 1.39 is not installed "
                    "(STADYN_NNABLA_PYTHON)")
def test_nnabla_loads_and_runs_the_file_stadyn_wrote(tmp_path):
    path = str(tmp_path / "networks.nnp")
    save_networks(nn, F, PF, save, path)
    proc = subprocess.run([NNABLA, "-c", _RUN, path], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split("\n")[:2] == ["Validation [2, 3] True", "model [2, 3] True"]
