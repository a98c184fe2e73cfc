"""A clone keyed by many leaves walks the graph once, not once per key (review D of the
cntkfid30 merge: a 600-key clone of a 300-layer stack took 2.25 s against 0.08 s before it;
``compat/cntk/_function_rebuild.py``, ``_refuse_view``)."""

import numpy as np

import stadyn.compat.cntk as C
from stadyn.compat.cntk import _function_rebuild


def test_a_clone_of_every_parameter_walks_the_graph_once(monkeypatch):
    calls = []
    walk = _function_rebuild.topological_nodes

    def counted(roots):
        calls.append(1)
        return walk(roots)

    monkeypatch.setattr(_function_rebuild, "topological_nodes", counted)
    x = C.input_variable(4, name="x")
    z = C.layers.Sequential([C.layers.Dense(4, activation=C.relu) for _ in range(20)])(x)
    subs = {p: C.constant(np.asarray(p.value)) for p in z.parameters}
    c = z.clone(C.CloneMethod.share, subs)
    assert len(subs) == 40
    assert len(calls) <= 2      # (9b30dab9: one walk per key, 40)
    data = np.arange(8, dtype=np.float32).reshape(2, 4) / 8
    np.testing.assert_allclose(c.eval({c.arguments[0]: data}), z.eval({x: data}), rtol=1e-6)
    assert c.parameters == ()
