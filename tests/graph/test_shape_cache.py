"""A static build's shape cache (``graph/_shape_cache.py``): inference runs once per op and call
signature, and what a cached build gives equals what inference gives."""

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.functions as F
from stadyn.graph._shape_cache import key
from stadyn.ops import get_spec


@pytest.fixture
def counted(monkeypatch):
    """How many times each op's inference ran (by op name)."""
    runs: dict[str, int] = {}
    for name in ("relu", "convolution", "max_pooling", "mul_scalar", "split"):
        spec = get_spec(name)
        spec.inferred.clear()
        original = spec.infer

        def infer(margs, mkw, _name=name, _original=original):
            runs[_name] = runs.get(_name, 0) + 1
            return _original(margs, mkw)
        monkeypatch.setattr(spec, "infer", infer)
    return runs


def test_inference_runs_once_per_call_signature(counted):
    x = sd.Variable((2, 3))
    for _ in range(5):
        y = F.relu(x)
    assert counted["relu"] == 1 and y.shape == (2, 3)
    F.relu(sd.Variable((4, 3)))                    # another shape
    F.relu(sd.Variable((2, 3), need_grad=True))    # another need_grad
    F.relu(sd.Variable((2, 3), need_grad=False))    # the first signature again
    assert counted["relu"] == 3


def test_cached_outputs_equal_inference_for_shapes_attributes_and_several_outputs(counted):
    """Each build twice: the second from the cache; both equal the dynamic mode's values'."""
    rng = np.random.default_rng(0)
    xb = rng.standard_normal((2, 3, 9, 9)).astype(np.float32)
    wb = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)

    def build(x, w):
        h = F.convolution(x, w, pad=(1, 1), stride=(2, 2))
        p = F.max_pooling(h, (2, 2), (1, 1))
        a, b = F.split(F.mul_scalar(p, 2), axis=1)[:2]
        return h, p, a, b

    static = [build(sd.Variable(xb.shape), sd.Variable(wb.shape, need_grad=True))
              for _ in range(2)]
    with sd.auto_forward():
        dynamic = build(sd.Variable.from_numpy_array(xb),
                        sd.Variable.from_numpy_array(wb, need_grad=True))
    assert counted == {"convolution": 1, "max_pooling": 1, "mul_scalar": 1, "split": 1}
    for outs in static:
        assert [(v.shape, v.need_grad, v.dtype) for v in outs] == \
            [(v.shape, v.need_grad, v.dtype) for v in dynamic]
    # another attribute value is another key
    F.convolution(sd.Variable(xb.shape), sd.Variable(wb.shape), pad=(0, 0), stride=(2, 2))
    assert counted["convolution"] == 2


def test_grad_mode_and_default_dtype_are_part_of_the_key():
    x = sd.Variable((2, 3), need_grad=True)
    assert F.relu(x).need_grad
    with torch.no_grad():
        assert not F.relu(x).need_grad
    assert F.relu(x).need_grad
    k = key((x,), {})
    with torch.no_grad():
        assert key((x,), {}) != k
    saved = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert key((x,), {}) != k
    finally:
        torch.set_default_dtype(saved)


def test_what_is_not_cached():
    x = sd.Variable((2, 3))
    assert key((x, 2), {}) != key((x, 2.0), {})        # 2 and 2.0 can make other dtypes
    assert key((x, True), {}) != key((x, 1), {})
    assert key((x, (1, 2)), {}) == key((x, (1, 2)), {})
    assert key((x, torch.Size([1, 2])), {}) is not None
    for other in ([1, 2], np.float32(1.0), torch.ones(2), lambda v: v, {"a": 1}, (1, [2])):
        assert key((x, other), {}) is None, other
    assert key((x,), {"axis": [0]}) is None
    assert key((x,), {"axis": (0,)}) == key((x,), {"axis": (0,)})
    assert key((x,), {"axis": (0,)}) != key((x,), {"axis": (1,)})


def test_a_shape_error_is_still_reported_and_not_cached():
    a, b = sd.Variable((2, 3)), sd.Variable((4, 5))
    with pytest.raises(sd.StadynError, match="add2"):
        F.add2(a, b)
    with pytest.raises(sd.StadynError, match="add2"):
        F.add2(a, b)
    assert F.add2(a, sd.Variable((2, 3))).shape == (2, 3)


def test_a_build_reads_the_shapes_back_instead_of_inferring_every_op_again(counted):
    """``refresh_shapes`` (each build) keys each node as its definition did: no inference runs
    again while the leaves keep their shapes, and a resized leaf gets its new shapes."""
    x = sd.Variable((2, 3, 4, 4))
    h = F.max_pooling(F.relu(x), (2, 2))
    y = F.sum(h * 2.0)
    assert counted == {"relu": 1, "max_pooling": 1, "mul_scalar": 1}
    y.forward()
    assert counted == {"relu": 1, "max_pooling": 1, "mul_scalar": 1}
    from stadyn.graph import Subgraph, refresh_shapes
    x.data = torch.ones(5, 3, 4, 4)             # a new batch: shapes that were never inferred
    refresh_shapes(Subgraph([y]).nodes, [x])
    assert h.shape == (5, 3, 2, 2) and counted["relu"] == 2 and counted["max_pooling"] == 2
    x.data = torch.ones(2, 3, 4, 4)             # back to the first: read back again
    refresh_shapes(Subgraph([y]).nodes, [x])
    assert h.shape == (2, 3, 2, 2) and counted["relu"] == 2 and counted["max_pooling"] == 2
