"""A CNTK 2.7 file holding a ``LocalResponseNormalization`` block and a sequence input (read
flat: ``serialize/_legacy_import_flat.py``): the block's output keeps its name and shows as
the block, as CNTK 2.7 shows it (Stadyn showed its inner ``ElementDivide``, unnamed).

``tests/fixtures/cntk_lrn_sequences/``: CNTK 2.7's file, outputs, output names and op names
(``make_model.py``)."""

from __future__ import annotations

import os

import numpy as np

import stadyn.compat.cntk as C

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_lrn_sequences")
REFS = dict(np.load(os.path.join(FIXTURE, "refs.npz")))


def test_the_lrn_block_keeps_its_name_beside_a_sequence_input():
    m = C.load_model(os.path.join(FIXTURE, "lrn_steps.model"))
    assert [o.name for o in m.outputs] == REFS["names"].tolist()
    assert [o.owner.op_name for o in m.outputs] == REFS["op_names"].tolist()
    lrn = m.find_by_name("lrn")
    assert lrn.is_block and lrn.op_name == "LocalResponseNormalization"
    steps = [REFS[f"steps/{k}"] for k in range(2)]
    got = m.eval({a: REFS["maps"] if a.name == "maps" else steps for a in m.arguments})
    np.testing.assert_allclose(got[m.outputs[0]], REFS["out/lrn"], rtol=1e-5, atol=1e-7)
    for k in range(2):
        np.testing.assert_allclose(got[m.outputs[1]][k], REFS[f"out/t/{k}"], rtol=1e-6)
