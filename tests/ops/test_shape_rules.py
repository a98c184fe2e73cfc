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
    for name in ("add2", "mul2", "relu", "tanh", "exp", "add_scalar", "r_div_scalar",
                 "sum", "mean", "prod", "logical_not", "max", "min", "softmax",
                 "log_softmax"):
        assert name in RULED, name
    # an op whose shape is not its input's keeps meta inference
    for name in ("affine", "concatenate", "crelu"):
        assert name not in RULED, name
    # where's condition of the inputs' leading shape is not NumPy's broadcast: its own rule
    assert "where" in RULED


@pytest.mark.parametrize("shapes", [((3, 5), (3, 5, 3, 1, 1), (3, 5, 3, 1, 1)),
                                    ((3,), (3, 4), (4,)), ((3,), (3, 4), ()),
                                    ((2, 3), (2, 3, 4), (1, 4)), ((3,), (4, 3), (4, 3)),
                                    ((), (2, 3), (2, 3)), ((2,), (3, 4), (3, 4))])
def test_where_rule_matches_meta_inference_for_a_leading_shape_condition(shapes):
    # NNabla's where aligns a condition of x_true's leading shape to its leading axes
    # ((3, 5) against (3, 5, 3, 1, 1)); NumPy's broadcast would not; the last two are
    # NumPy's broadcast and a mismatch (meta inference raises: the rule must not decide)
    spec = CATALOG["where"]
    decided = 0
    for dtypes in [(torch.bool, torch.float32, torch.float32),
                   (torch.float32, torch.float16, torch.float64),
                   (torch.int64, torch.int32, torch.float32)]:
        for grad in (False, True):
            args = [_meta(s, d, grad and d.is_floating_point and k > 0)
                    for k, (s, d) in enumerate(zip(shapes, dtypes))]
            decided += _compare(spec, args, {})
    assert decided == (0 if shapes[0] == (2,) else 6)


def test_a_static_where_over_a_leading_shape_condition_traces_and_trains():
    # F.where(c of (3, 5), x of (3, 5, 3, 1, 1), ...) aligns c to the leading axes (NNabla's
    # rule): the element-wise rule read it as NumPy's broadcast, so a static graph showed
    # (3, 5, 3, 3, 5) until it ran, and where later ops read that shape the trace failed
    # ("Mismatch in shape: grad_output[0] ...") and ran eagerly with a RuntimeWarning (a
    # loaded CNTK file of a sequence convolution, tests/serialize/test_onnx_sequences.py)
    import warnings

    import numpy as np

    import stadyn as sd
    import stadyn.functions as F
    r = np.random.RandomState(0)
    c = (r.rand(3, 5) > 0.5).astype(np.float32)
    a, b = r.randn(3, 5, 3, 1, 1).astype(np.float32), r.randn(3, 5, 3, 1, 1).astype(np.float32)
    x, cv, bv = (sd.Variable(v.shape, need_grad=v is a) for v in (a, c, b))
    y = F.where(cv, x, bv)           # (inputs given their values after the graph is built)
    assert y.shape == (3, 5, 3, 1, 1)               # (the rule said (3, 5, 3, 3, 5))
    loss = F.sum(y * y)
    x.d, cv.d, bv.d = a, c, b
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        loss.forward()
        x.g = np.zeros_like(a)
        loss.backward()
    picked = np.where(c.reshape(3, 5, 1, 1, 1) != 0, a, b)
    np.testing.assert_allclose(y.d, picked, rtol=1e-6)
    np.testing.assert_allclose(x.g, np.where(c.reshape(3, 5, 1, 1, 1) != 0, 2 * a, 0),
                               rtol=1e-6)


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


# -- a wider generated set: Python numbers of each type as attributes, every dtype, 0-d inputs
# beside inputs with axes, inputs whose every axis has length 1, size-0 broadcasts, grad off.
# Each call's independent expectation is the implementation on meta tensors (``_compare``).

WIDE_DTYPES = DTYPES + [torch.int8]
WIDE_SHAPES = {1: [((2, 3),), ((1,),), ((1, 1, 1),), ((0, 4),), ((),), ((0,),)],
               2: [((2, 1), (3,)), ((0, 1), (1, 3)), ((1,), (0,)), ((), (2,)), ((2, 3), ()),
                   ((), ()), ((1, 1), (1,)), ((), (0, 1)), ((0,), (3,))],
               3: [((2, 1), (1, 3), (3,)), ((), (2,), ()), ((), (), ()), ((1,), (), (0, 1))]}
NUMBERS = [2, -1, 0, 0.5, -0.0, 1e40, 2 ** 40, True, False]
NUMBER_ATTRS = ("val", "alpha", "min", "max", "beta", "scale")


def _pow_of_bools(name, args, kwargs):
    # torch's meta kernel promotes ``bool ** bool`` to int64 where its CPU and CUDA kernels keep
    # bool (torch 2.13: ``torch.pow(torch.ones(2, dtype=torch.bool), True).dtype`` is bool, on
    # meta int64); the rule gives what running the op gives (test below)
    return (name == "pow_scalar" and args[0].dtype == torch.bool
            and type(kwargs.get("val")) is bool)


@pytest.mark.parametrize("grad_mode", [True, False], ids=["grad", "no_grad"])
@pytest.mark.parametrize("name", [n for n in RULED if "keepdims" not in CATALOG[n].attrs])
def test_elementwise_rule_matches_meta_inference_on_a_wide_set(name, grad_mode):
    spec = CATALOG[name]
    count = len(spec.inputs)
    attrs = [{}] + [{a: v} for a in NUMBER_ATTRS if a in spec.attrs for v in NUMBERS]
    decided = 0
    with torch.set_grad_enabled(grad_mode):
        for shapes in WIDE_SHAPES[count]:
            for dtypes in itertools.product(WIDE_DTYPES, repeat=count):
                if len(set(dtypes)) > 2:
                    continue
                args = [_meta(s, d, d.is_floating_point) for s, d in zip(shapes, dtypes)]
                for kwargs in attrs:
                    if not _pow_of_bools(name, args, kwargs):
                        decided += _compare(spec, args, dict(kwargs))
    assert decided > 0


def test_pow_of_bools_gives_the_dtype_the_op_computes():
    x = torch.ones(2, dtype=torch.bool)
    computed = CATALOG["pow_scalar"].impl(x, val=True)
    got = CATALOG["pow_scalar"].rule([x.to("meta")], {"val": True})
    assert (got.dtype, tuple(got.shape)) == (computed.dtype, (2,)) == (torch.bool, (2,))


@pytest.mark.parametrize("name", ["add2", "mul2", "exp", "mul_scalar", "r_sub_scalar",
                                  "greater_scalar", "logical_not"])
def test_zero_d_inputs_are_decided_by_the_rule(name):
    # a 0-d input used to make the rule give up (meta inference, torch._dynamo's import); a
    # 0-d probe keeps torch's promotion (0-d below inputs with axes): int64 0-d * float16 (3,)
    # is float16, float64 0-d * int32 (3,) float64 -- what meta inference gives
    spec = CATALOG[name]
    count = len(spec.inputs)
    cases = [[((), torch.float64)] * count,
             [((), torch.float64)] + [((3,), torch.float16)] * (count - 1),
             [((), torch.int64)] + [((1, 3), torch.int32)] * (count - 1)]
    for case in cases:
        args = [_meta(s, d, d.is_floating_point) for s, d in case]
        assert _compare(spec, args, {}), case


def test_the_rule_computes_no_element_of_one_element_inputs():
    # the probe of an input whose every axis has length 1 held one uninitialised element, and
    # (-2.5) ** garbage raised the CPU's "invalid" flag inside NumPy's loop (NumPy's object
    # loop builds the node through x.__rpow__): "invalid value encountered in power"
    import warnings

    import numpy as np

    import stadyn as sd

    names = ("r_pow_scalar", "r_sub_scalar", "mul_scalar", "r_div_scalar", "pow2", "div2")
    for name in names:
        CATALOG[name].inferred.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for rank in range(1, 9):
            for make in (lambda a, x: a ** x, lambda a, x: a - x, lambda a, x: a * x,
                         lambda a, x: a / x):
                x = sd.Variable((1,) * rank, need_grad=True)
                y = make(np.full((1,) * rank, -2.5), x)
                assert tuple(y.shape) == (1,) * rank


@pytest.mark.parametrize("name", ["max", "min", "sum", "prod"])
def test_reductions_with_their_options_match_meta_inference(name):
    # max and min: with_index/only_index/rule; an empty axis reduced (max and min refuse it, on
    # meta as on values: the rule must not decide); negative, duplicate and float axes
    spec = CATALOG[name]
    options = ([{"with_index": w, "only_index": o, "rule": r}
                for w, o in itertools.product((False, True), repeat=2)
                for r in ("torch", "cntk", "cntk_pooling", "nnabla")]
               if name in ("max", "min") else
               [{"rule": r} for r in ("torch", "nnabla")] if name == "prod" else [{}])
    decided = 0
    for dtype, axis, keep, shape, extra in itertools.product(
            (torch.float32, torch.float16, torch.int32), (None, 0, -1, (0, 2), (0, 0), [], 1.0, 3),
            (False, True), ((2, 3, 4), (0, 3, 4), (2, 0, 1), (1, 1, 1)), options):
        x = _meta(shape, dtype, dtype.is_floating_point)
        decided += _compare(spec, [x], {"axis": axis, "keepdims": keep, **extra})
    assert decided > 50


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_same_shape_rule_matches_meta_inference(name):
    # axes in range, negative, out of range (meta raises: the rule must not decide), on empty
    # and 0-d inputs, every dtype (integers: torch refuses), grad on and off
    spec = CATALOG[name]
    decided = 0
    for dtype, axis, shape, grad_mode in itertools.product(
            WIDE_DTYPES, (None, 0, 1, -1, -2, 2, -3), ((2, 3), (0, 3), (1, 1), (), (4,)),
            (True, False)):
        with torch.set_grad_enabled(grad_mode):
            x = _meta(shape, dtype, dtype.is_floating_point)
            decided += _compare(spec, [x], {"axis": axis})
            decided += _compare(spec, [x, axis], {})
    assert decided > 50


@pytest.mark.parametrize("name", [n for n in RULED if CATALOG[n].attrs.keys()
                                  & {"inplace", "rule", "fmod"}])
def test_rules_with_each_option_match_meta_inference(name):
    # rule="torch"/"nnabla"/"cntk" (and one no op takes), inplace=True, fmod=True
    spec = CATALOG[name]
    options = ([{"inplace": True}] if "inplace" in spec.attrs else []) + (
        [{"rule": r} for r in ("torch", "nnabla", "cntk", "bogus")]
        if "rule" in spec.attrs else []) + ([{"fmod": True}] if "fmod" in spec.attrs else [])
    for dtype, shape, kwargs, grad_mode in itertools.product(
            (torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.bool),
            ((2, 3), (), (1,), (0, 2)), options, (True, False)):
        with torch.set_grad_enabled(grad_mode):
            args = [_meta(shape, dtype, dtype.is_floating_point) for _ in spec.inputs]
            _compare(spec, args, dict(kwargs))


def test_cntk_sqrt_of_integers_infers_the_dtype_it_computes():
    # the kernel op's fake (meta) function said int32 where the kernel gives float32: a static
    # F.sqrt(x, rule="cntk") of an int32 x was declared int32 and computed float32
    x = torch.tensor([4, 9], dtype=torch.int32)
    computed = CATALOG["sqrt"].impl(x, rule="cntk")
    inferred = CATALOG["sqrt"].impl(x.to("meta"), rule="cntk")
    assert computed.tolist() == [2.0, 3.0]
    assert inferred.dtype == computed.dtype == torch.float32
