"""Ops whose output shape depends on values (``value_shape``: ``nonzero``, ``unique``,
``bool_gather``, ``pack_padded_sequence``, ...) in a static graph: the build gives the exact
shape where the inputs hold values, else the provisional one; the plan runs eagerly and says
why; each forward gives the shape of that run's values, and the backward follows it; a model
file saved after a run loads and runs on other values."""

from __future__ import annotations

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F
from stadyn.graph import TrialPlan, _runner
from stadyn.ops import CATALOG


def test_the_value_shape_ops_are_declared_so():
    assert {n for n, s in CATALOG.items() if s.value_shape} == {
        "nonzero", "unique", "bool_gather", "pack_padded_sequence", "pad_packed_sequence",
        "onnx_non_max_suppression", "sequence_where", "sequence_gather",
        "cntk_sequence_columns"}


def test_a_build_on_values_the_op_refuses_gets_the_provisional_shape_and_the_run_refuses(
        monkeypatch):
    """An input's values at a build may be a placeholder's, not the data a run gets (CNTK's
    inputs hold zeros until fed): values the op refuses leave the provisional shape, and the
    run on them raises the op's error."""
    monkeypatch.setattr(_runner, "BUILD_RUNS", 0)   # a first evaluation lowered, not run eagerly
    c = sd.Variable.from_numpy_array(np.zeros((1, 2)))
    n = sd.Variable.from_numpy_array(np.array([2]))
    y, m = F.sequence_where(c, n)                      # no step taken: refused when run
    assert y.shape == (1, 2)
    with pytest.raises(sd.ShapeError, match="takes no step"):
        y.forward()
    c.d = np.array([[1.0, 2.0]])
    y.forward()
    assert not isinstance(y._plan, TrialPlan)       # built (a value-shape op's plan is eager)
    assert y.d.tolist() == [[0.0, 1.0, 1.0]]


def test_a_build_on_values_gets_the_exact_shape_an_intermediate_the_provisional_one():
    x = sd.Variable.from_numpy_array(np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]]))
    assert F.nonzero(x).shape == (2, 3)
    assert F.unique(x).shape == (4,)
    later = F.nonzero(x * 2.0)
    assert later.shape == (2, 6)                 # every element might be nonzero
    later.forward()
    assert later.shape == (2, 3)
    np.testing.assert_array_equal(later.d, [[0, 1, 1], [1, 0, 2]])
    later.forward()                              # its first run was eager: this one builds
    assert later._plan.code == ("# runs eagerly: an output shape depends on values: nonzero "
                                "(x's count of nonzero elements)")


def test_each_forward_gives_the_shape_of_its_values_and_the_backward_follows():
    x = sd.Variable.from_numpy_array(np.arange(12.0).reshape(4, 3), need_grad=True)
    mask = sd.Variable.from_numpy_array(np.array([1.0, 0.0, 1.0, 0.0]))
    picked = F.bool_gather(x * 1.0, mask * 1.0)
    loss = F.sum(picked * picked)
    for m in ([1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 1.0, 1.0]):
        mask.d = np.array(m)
        x.g = 0
        loss.forward()
        loss.backward()
        rows = np.flatnonzero(m)
        assert float(loss.d) == pytest.approx(float((x.d[rows] ** 2).sum()))
        expected = np.zeros((4, 3))
        expected[rows] = 2 * x.d[rows]
        np.testing.assert_allclose(x.g, expected)
        with sd.auto_forward():
            dynamic = F.bool_gather(x, mask)
        assert dynamic.shape == (len(rows), 3)


def test_a_packed_round_trip_in_a_static_graph_equals_the_dynamic_one():
    data = np.random.default_rng(0).standard_normal((5, 3, 2)).astype(np.float32)
    lengths = np.array([5, 3, 2])

    def build(x, n):
        packed, sizes = F.pack_padded_sequence(x * 1.0, n)
        return F.pad_packed_sequence(packed * 2.0, sizes, total_length=6)

    x = sd.Variable.from_numpy_array(data, need_grad=True)
    n = sd.Variable.from_numpy_array(lengths)
    padded, out_lengths = build(x, n)
    assert padded.shape == (6, 15, 2)            # provisional: a batch of every step
    padded.forward()
    x.g = 0
    padded.backward(np.ones((6, 3, 2), np.float32))
    static = padded.d.copy(), out_lengths.d.copy(), x.g.copy()
    with sd.auto_forward():
        xd = sd.Variable.from_numpy_array(data, need_grad=True)
        pd, ld = build(xd, sd.Variable.from_numpy_array(lengths))
    pd.backward(np.ones((6, 3, 2), np.float32))
    assert padded.shape == pd.shape == (6, 3, 2)
    np.testing.assert_array_equal(static[0], pd.d)
    np.testing.assert_array_equal(static[1], ld.d)
    np.testing.assert_array_equal(static[2], xd.g)
    step = np.arange(5)[:, None] < lengths[None, :]
    np.testing.assert_array_equal(xd.g, 2.0 * np.broadcast_to(step[..., None], (5, 3, 2)))


def test_a_model_file_saved_after_a_run_loads_and_runs_on_other_values(tmp_path):
    # the file holds the shape the saved run's values gave (2 rows); the load builds on
    # placeholder values (0 rows): it took the difference for a damaged file
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    x = sd.Variable.from_numpy_array(data)
    mask = sd.Variable.from_numpy_array(np.array([1.0, 0.0, 1.0, 0.0]))
    y = F.bool_gather(x, mask)
    y.forward()
    assert y.shape == (2, 3)
    sd.save(tmp_path / "m.stadyn", {"y": y}, {"x": x, "mask": mask})
    net = sd.load(tmp_path / "m.stadyn")
    np.testing.assert_array_equal(net(x=data, mask=np.array([0.0, 1.0, 1.0, 1.0]))["y"],
                                  data[1:])
