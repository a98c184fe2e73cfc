"""The shape rules of ``ops/_shape_rules.py`` give what running the op on meta tensors gives.

A static build infers an element-wise op's or a reduction's outputs by its declared rule instead
of running the implementation on ``meta`` tensors (torch's Python references, which import
``torch._dynamo``).  The independent expectation here is that meta inference itself, on the
same arguments: same shapes, dtypes and ``requires_grad``; where it raises, the rule gives None
(the implementation then runs on meta tensors and raises its own error)."""

from __future__ import annotations

import itertools

import pytest
import torch

from stadyn.ops import CATALOG

RULED = sorted(name for name, spec in CATALOG.items() if spec.rule is not None)
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
          torch.uint8, torch.bool]
# shapes of an op's inputs, by input count: same shapes, broadcasts, empty axes, 0-d, mismatch
SHAPES = {1: [((2, 3),), ((1,),), ((0, 4),), ((),), ((2, 1, 5),)],
          2: [((2, 3), (2, 3)), ((2, 1), (3,)), ((4, 1, 3), (1, 2, 1)), ((0, 3), (1, 3)),
              ((), (2,)), ((2, 3), (4,))],
          3: [((2, 3), (2, 3), (2, 3)), ((2, 1), (1, 3), (3,)), ((2, 3), (4,), (2, 3))]}
AXES = [None, 0, -1, (0, 2), [], 3]


def _meta(shape, dtype, grad):
    return torch.empty(shape, dtype=dtype, device="meta").requires_grad_(grad)


def _described(out):
    outs = (out,) if isinstance(out, torch.Tensor) else out
    for o in outs:
        assert o.device.type == "meta"
    return [(tuple(o.shape), o.dtype, o.requires_grad) for o in outs]


def _compare(spec, args, kwargs):
    try:
        expected = _described(spec.impl(*args, **kwargs))
    except Exception:  # noqa: BLE001 - meta inference refuses: the rule must not decide
        expected = None
    got = spec.rule(args, kwargs)
    if got is None:
        return False
    assert expected is not None, "the rule decided where meta inference raises"
    assert _described(got) == expected
    return True


def test_the_rules_cover_the_common_ops():
    for name in ("add2", "mul2", "where", "relu", "tanh", "exp", "add_scalar", "r_div_scalar",
                 "sum", "mean", "prod", "logical_not"):
        assert name in RULED, name
    # an op whose shape is not its input's keeps meta inference
    for name in ("affine", "softmax", "concatenate", "max", "crelu"):
        assert name not in RULED, name


@pytest.mark.parametrize("name", [n for n in RULED if CATALOG[n].attrs.keys() & {"axis"}
                                  and "keepdims" in CATALOG[n].attrs])
def test_reduction_rule_matches_meta_inference(name):
    spec = CATALOG[name]
    decided = 0
    for dtype, axis, keep, grad, positional in itertools.product(
            DTYPES, AXES, (False, True), (False, True), (False, True)):
        if grad and not dtype.is_floating_point:
            continue
        for shape in ((2, 3, 4), (), (0, 3, 1)):
            x = _meta(shape, dtype, grad)
            args, kwargs = (([x, axis, keep], {}) if positional
                            else ([x], {"axis": axis, "keepdims": keep}))
            decided += _compare(spec, args, kwargs)
    assert decided > 100


@pytest.mark.parametrize("name", [n for n in RULED if "keepdims" not in CATALOG[n].attrs])
def test_elementwise_rule_matches_meta_inference(name):
    spec = CATALOG[name]
    count = len(spec.inputs)
    decided = 0
    values = [{}] + ([{"val": 2}, {"val": 0.5}] if "val" in spec.attrs else [])
    for shapes, dtypes, grad, attrs in itertools.product(
            SHAPES[count], itertools.product(DTYPES[:3] + DTYPES[4:], repeat=count)
            if count > 1 else [(d,) for d in DTYPES], (False, True), values):
        if count > 1 and len(set(dtypes)) > 2:
            continue
        args = [_meta(s, d, grad and d.is_floating_point) for s, d in zip(shapes, dtypes)]
        decided += _compare(spec, args, dict(attrs))
    with torch.no_grad():
        args = [_meta(s, torch.float32, True) for s in SHAPES[count][0]]
        decided += _compare(spec, args, {})
    assert decided > 0
