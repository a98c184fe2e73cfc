"""CNTK 2.7's files of ``random_sample`` / ``random_sample_inclusion_frequency`` whose weights
have the batch axis (``tests/fixtures/cntk_batched_weights``, written by CNTK 2.7 with the
script there): CNTK 2.7 loads them and cannot evaluate them, raising a RuntimeError naming the
weights' node.  Stadyn loads them, shows the op and shape CNTK shows, and its evaluation raises
a RuntimeError with CNTK's words (it refused the file at load before: "weights of shape (1,
4) (a vector of class weights is read)")."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_batched_weights")
with open(os.path.join(HERE, "refs.json")) as _f:
    REFS = json.load(_f)


@pytest.mark.parametrize("case", list(REFS))
def test_cntk_files_of_batched_weights_load_and_fail_as_cntk(case):
    import stadyn.compat.cntk as C
    ref = REFS[case]
    m = C.load_model(os.path.join(HERE, f"{case}.model"))
    assert (m.root_function.op_name, list(m.shape)) == (ref["op_name"], ref["shape"])
    kind, words = ref["error"]
    assert kind == "RuntimeError"
    with pytest.raises(RuntimeError) as caught:
        m.eval({m.arguments[0]: np.ones((1, 4), np.float32)})
    assert words in str(caught.value)
