"""The graph of a CNTK v2 file saved untyped, loaded and not yet given types, shown as CNTK
2.7 shows it (``root_function``, its ``op_name``, ``name``, ``uid``, ``str``, ``inputs`` and
their ``owner``, the root's ``outputs``; the composite's ``op_name``, ``uid``, ``inputs``):
CNTK 2.7's own answers recorded by ``tests/fixtures/cntk_saved_arguments/make_untyped_view.py``
in ``untyped_view.json``."""

import json
import os

import numpy as np
import pytest

import stadyn.compat.cntk as C

HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_saved_arguments")
with open(os.path.join(HERE, "untyped_view.json")) as f:
    SEEN = json.load(f)


def _shown(call) -> str:
    try:
        return str(call())
    except Exception as e:      # noqa: BLE001 - (compared with the error CNTK 2.7 raises)
        return f"{type(e).__name__}: {str(e).splitlines()[0]}"


@pytest.mark.parametrize("kind", sorted(SEEN))
def test_untyped_file_graph_as_cntk_shows_it(kind):
    cntk = SEEN[kind]
    m = C.load_model(os.path.join(HERE, kind + ".model"))
    root = m.root_function
    assert (m.op_name, m.name, m.uid) == (cntk["op_name"], cntk["name"], cntk["uid"])
    assert [repr(i) for i in m.inputs] == cntk["inputs"]
    assert [repr(o) for o in m.outputs] == cntk["outputs"]
    want = cntk["root"]
    assert (root.op_name, root.name, root.uid, str(root)) == \
        (want["op_name"], want["name"], want["uid"], want["str"])
    assert [repr(i) for i in root.inputs] == want["inputs"]
    assert [_shown(lambda i=i: i.owner.uid) for i in root.inputs] == want["owners"]
    assert [_shown(lambda i=i: i.owner.op_name) for i in root.inputs] == want["owner_ops"]
    assert [repr(o) for o in root.outputs] == want["outputs"]
    assert root.output.owner.uid == want["output_owner"]
    assert m.owner.uid == want["uid"]


def test_untyped_file_graph_gives_way_to_the_typed_one():
    # given types, the loaded Function is the file applied to inputs of them (CNTK 2.7:
    # untyped.model's d + b over a (3,) and b (2,): [[1,1,1]] @ W + b + b)
    m = C.load_model(os.path.join(HERE, "untyped.model"))
    assert m.root_function.uid == SEEN["untyped"]["root"]["uid"]
    w, b = (np.array(p.value) for p in m.parameters)
    m.update_signature(3, 2)
    assert m.root_function.op_name == "Plus"
    assert [a.shape for a in m.arguments] == [(3,), (2,)]
    x, y = np.ones((1, 3), np.float32), np.full((1, 2), 2, np.float32)
    np.testing.assert_allclose(m.eval({m.arguments[0]: x, m.arguments[1]: y}),
                               x @ w + b + y, rtol=1e-6)


def test_untyped_gather_file_as_an_operand_binds_its_arguments_by_name():
    # CNTK 2.7: element_times(gather.model, 2), its placeholders replaced by table T (a (4, 3)
    # constant) and indices i (an input of 2), has arguments [table, indices] before, [i]
    # after, shape (2, 3), and gives 2 * T[[1, 3]]; Stadyn applied the file to its
    # placeholders in their listed order (indices first): arguments [indices, table], the
    # table bound as the indices (a (3,) output, then RuntimeError at eval)
    m = C.load_model(os.path.join(HERE, "gather.model"))
    g = C.element_times(m, 2.0)
    assert [a.name for a in g.arguments] == ["table", "indices"]
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    t, i = C.constant(table, name="T"), C.input_variable(2, name="i")
    ph = {p.name: p for p in g.placeholders}
    g.replace_placeholders({ph["table"]: t, ph["indices"]: i})
    assert [a.name for a in g.arguments] == ["i"] and g.shape == (2, 3)
    np.testing.assert_array_equal(g.eval({i: np.array([[1, 3]], np.float32)})[0],
                                  2 * table[[1, 3]])
