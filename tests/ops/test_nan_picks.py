"""NaN, infinities and ties through the comparison ops (``ops/_picks.py``): ``maximum2`` and
``minimum2`` (``a > b ? a : b``, CNTK 2.7's and NNabla 1.39's), ``where``, ``max``/``min``
with ``rule="cntk"`` (CNTK 2.7's ``reduce_max`` and ``argmax``), ``max_pooling``, ``sqrt``,
``relu`` and ``abs`` with ``rule="cntk"``, ``relu`` with ``rule="nnabla"`` and ``max`` with
``rule="cntk_pooling"`` (CNTK's GlobalMaxPooling), held to NumPy and run in the
dynamic mode, the static plan and the step program, which must agree bit for bit (NaN where
NaN).  The real frameworks' side: ``tests/compat/compat_cases/cntk_nan.py`` and
``nnabla_nan.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import stadyn as sd
import stadyn.functions as F
import stadyn.solvers as S
from stadyn.graph import StaticPlan, _runner
from stadyn.ops import _picks as picks

NAN, INF = np.nan, np.inf
A = np.array([[NAN, INF, -INF, 1, -0.0, 0, 2, NAN, 3, -INF, INF, 5]], np.float32)
B = np.array([[1, 1, 1, 1, 0.0, -0.0, 2, NAN, NAN, INF, -INF, NAN]], np.float32)
FLAG = np.array([[1, 0, NAN, INF, -0.0, 0, -1, 1, 0, 1, 0, 0.5]], np.float32)
ROWS = np.array([[NAN, 1, 2, 2], [1, NAN, 3, 0], [2, 2, 1, 0], [-INF, -INF, -INF, -INF],
                 [INF, 1, INF, 0], [NAN, NAN, NAN, NAN], [-INF, 0, 1, -INF], [3, 3, NAN, 3],
                 [-0.0, 0.0, -1, -1]], np.float32)
# windows of 2 x 2: NaN first, ties, -inf only, NaN only, inf among NaN
IMAGE = np.array([[[[NAN, 1, 2, 3, NAN, NAN],
                    [0, 0, 5, 5, NAN, NAN],
                    [-INF, -INF, INF, 1, 1, NAN],
                    [-INF, -INF, NAN, NAN, NAN, 4]]]], np.float32)


def _first_extreme(rows, smaller=False):
    """CNTK 2.7's scan: keep the first value, replace it only by a strictly better one."""
    out = []
    for row in rows:
        best, at = row[0], 0
        for i, v in enumerate(row[1:], 1):
            if (v < best) if smaller else (v > best):
                best, at = v, i
        out.append(at)
    return np.array(out)


def _expected(name):
    """(value, gradients of sum(value * 1) w.r.t. the inputs) by NumPy."""
    with np.errstate(invalid="ignore"):
        if name.startswith(("maximum2", "minimum2")):
            bigger = name.startswith("maximum2")
            took_a = A > B if bigger else A < B
            # unordered pairs (a NaN): CNTK 2.7 gives b the gradient, NNabla 1.39 neither
            took_b = ~took_a if name.endswith("cntk") else (A <= B if bigger else A >= B)
            return np.where(took_a, A, B), [took_a.astype(np.float32),
                                            took_b.astype(np.float32)]
        if name == "where":
            pick = FLAG != 0
            return np.where(pick, A, B), [pick.astype(np.float32), (~pick).astype(np.float32)]
        if name == "sqrt cntk":
            # CNTK 2.7's Source/Math/TensorOps.h: sqrt(z > 0 ? z : 0), gradient 1 / (2 sqrt)
            with np.errstate(divide="ignore"):
                value = np.sqrt(np.where(A > 0, A, np.float32(0)))
                return value, [(0.5 / value).astype(np.float32)]
        if name == "max_pooling cntk":
            # CNTK 2.7: NaN passed by, a window of NaN only gives -inf; the first value equal
            # to the result takes the gradient (none for a window of NaN only)
            value = np.full((1, 1, 2, 3), -INF, np.float32)
            grad = np.zeros_like(IMAGE)
            for i in range(2):
                for j in range(3):
                    window = IMAGE[0, 0, 2 * i:2 * i + 2, 2 * j:2 * j + 2].ravel()
                    if not np.isnan(window).all():
                        value[0, 0, i, j] = np.nanmax(window)
                        k = int(np.flatnonzero(window == value[0, 0, i, j])[0])
                        grad[0, 0, 2 * i + k // 2, 2 * j + k % 2] = 1
            return value, [grad]
        if name in ("max cntk", "min cntk"):
            reduce = np.nanmax if name == "max cntk" else np.nanmin
            import warnings
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)   # the row of NaN only
                y = reduce(ROWS, axis=1)
            return y, [(ROWS == y[:, None]).astype(np.float32)]
        if name == "relu cntk":
            # CNTK 2.7 (measured, case nan__unary): x * (x > 0), +0 for zeros; NaN for NaN and
            # -inf; the gradient where x > 0
            value = np.where(A > 0, A, A * np.float32(0)) + np.float32(0)
            return value, [(A > 0).astype(np.float32)]
        if name == "relu nnabla":
            return np.where(A > 0, A, np.float32(0)), [(A > 0).astype(np.float32)]
        if name == "abs cntk":
            # Source/Math/TensorOps.h:177-182: Sgn(z) is z itself at 0 and NaN
            return np.abs(A), [np.where(A > 0, 1, np.where(A < 0, -1, A)).astype(np.float32)]
        if name == "max cntk_pooling":
            # CNTK's GlobalMaxPooling: a max pooling over the plane, NaN passed by (a plane of
            # NaN only: -inf, no gradient), the first of tied values takes the gradient
            flat = IMAGE.reshape(1, -1)
            finite = flat[~np.isnan(flat)]
            value = np.array(finite.max() if finite.size else -INF, np.float32)
            grad = np.zeros(flat.size, np.float32)
            if finite.size:
                grad[int(np.flatnonzero(flat.ravel() == value)[0])] = 1
            return value.reshape(1, 1, 1, 1), [grad.reshape(IMAGE.shape)]
    raise KeyError(name)


BUILD = {
    "maximum2": (lambda a, b: F.maximum2(a, b), (A, B)),
    "minimum2": (lambda a, b: F.minimum2(a, b), (A, B)),
    "maximum2 cntk": (lambda a, b: F.maximum2(a, b, rule="cntk"), (A, B)),
    "minimum2 cntk": (lambda a, b: F.minimum2(a, b, rule="cntk"), (A, B)),
    "where": (lambda a, b: F.where(sd.Variable.from_numpy_array(FLAG), a, b), (A, B)),
    "max cntk": (lambda x: F.max(x, axis=1, rule="cntk"), (ROWS,)),
    "min cntk": (lambda x: F.min(x, axis=1, rule="cntk"), (ROWS,)),
    "max_pooling cntk": (lambda x: F.max_pooling(x, (2, 2), rule="cntk"), (IMAGE,)),
    "sqrt cntk": (lambda x: F.sqrt(x, rule="cntk"), (A,)),
    "relu cntk": (lambda x: F.relu(x, rule="cntk"), (A,)),
    "relu nnabla": (lambda x: F.relu(x, rule="nnabla"), (A,)),
    "abs cntk": (lambda x: F.abs(x, rule="cntk"), (A,)),
    "max cntk_pooling": (lambda x: F.max(x, axis=(2, 3), keepdims=True, rule="cntk_pooling"),
                         (IMAGE,)),
}


def _dynamic(name):
    build, data = BUILD[name]
    with sd.auto_forward():
        xs = [sd.Variable.from_numpy_array(d, need_grad=True) for d in data]
        y = build(*xs)
        y.backward(np.ones(y.shape, np.float32))
    return y.d.copy(), [x.g.copy() for x in xs]


def _static(name):
    build, data = BUILD[name]
    xs = [sd.Variable.from_numpy_array(d, need_grad=True) for d in data]
    y = build(*xs)
    y.forward()
    for x in xs:
        x.g = 0
    y.backward(np.ones(y.shape, np.float32))
    return y.d.copy(), [x.g.copy() for x in xs]


def _step(name):
    """The value and the gradients as ``compile_step``'s program (forward, backward and an
    SGD update as one traced program) leaves them."""
    build, data = BUILD[name]
    xs = [sd.Variable.from_numpy_array(d, need_grad=True) for d in data]
    y = build(*xs)
    loss = F.sum(y * 1.0)
    solver = S.Sgd(lr=1.0)
    solver.set_parameters({f"x{i}": x for i, x in enumerate(xs)})
    step = sd.compile_step(loss, solver, outputs=[y], compile=False)
    step()
    grads = [x.g.copy() for x in xs]
    return y.d.copy(), grads


@pytest.mark.parametrize("name", sorted(BUILD))
def test_values_and_gradients_match_numpy_in_every_mode(name):
    value, grads = _expected(name)
    runs = {"dynamic": _dynamic(name), "static": _static(name)}
    for mode, (got, got_grads) in runs.items():
        np.testing.assert_array_equal(got, value, err_msg=f"{name} {mode}")
        # the sign of a zero too (a tie gives the second operand)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(value),
                                      err_msg=f"{name} {mode} signbit")
        assert len(got_grads) == len(grads)
        for g, e in zip(got_grads, grads):
            np.testing.assert_array_equal(g, e, err_msg=f"{name} {mode} gradient")


@pytest.mark.parametrize("name", sorted(BUILD))
def test_the_step_program_computes_what_the_static_plan_does(name):
    static_value, static_grads = _static(name)
    value, grads = _step(name)
    np.testing.assert_array_equal(value, static_value)
    for g, e in zip(grads, static_grads):
        np.testing.assert_array_equal(g, e)


@pytest.mark.parametrize("smaller", [False, True])
def test_cntk_index_is_the_first_value_no_later_one_exceeds(monkeypatch, smaller):
    fn = F.min if smaller else F.max
    expected = _first_extreme(ROWS, smaller)
    with sd.auto_forward():
        got = fn(sd.Variable.from_numpy_array(ROWS), axis=1, only_index=True, rule="cntk").d
    np.testing.assert_array_equal(got, expected)
    monkeypatch.setattr(_runner, "BUILD_RUNS", 0)   # the static graph's plan, not an eager run
    x = sd.Variable.from_numpy_array(ROWS)
    index = fn(x, axis=1, only_index=True, rule="cntk")
    index.forward()
    assert isinstance(index._plan, StaticPlan)
    np.testing.assert_array_equal(index.d, expected)
    # several axes: the flat index over them, keepdims
    with sd.auto_forward():
        both = fn(sd.Variable.from_numpy_array(ROWS[1:3]), axis=(0, 1), keepdims=True,
                  with_index=True, rule="cntk")
    assert both[1].d.shape == (1, 1)
    assert int(both[1].d.reshape(())) == _first_extreme(ROWS[1:3].reshape(1, -1), smaller)[0]


def test_an_unknown_rule_is_refused():
    with sd.auto_forward(), pytest.raises(ValueError, match="rule='numpy'"):
        F.max(sd.Variable.from_numpy_array(ROWS), axis=1, rule="numpy")


# -- the kernels' traced form (kernels_as_torch_ops: what a compiled step traces) -------------


def _random_nan_data(shape, seed):
    """Small integers (ties), NaN, +-inf and -0.0 scattered over ``shape``."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 4, shape).astype(np.float32)
    u = rng.random(shape)
    x[u < 0.15] = NAN
    x[(u > 0.5) & (u < 0.58)] = INF
    x[(u > 0.7) & (u < 0.78)] = -INF
    x[rng.random(shape) < 0.05] = -0.0
    return torch.from_numpy(x)


_KERNELS = {
    "reduce max": (lambda x: picks.cntk_extreme(x, [1, 2], False, False), [(3, 4, 5)]),
    "reduce min": (lambda x: picks.cntk_extreme(x, [0], True, True), [(6, 5)]),
    "pick max cntk": (lambda a, b: picks.pick_max(a, b, True), [(5, 6), (5, 6)]),
    "pick min": (lambda a, b: picks.pick_min(a, b), [(5, 6), (5, 6)]),
}


def _joint(fn, n):
    def run(*ts):
        xs = [t.detach().requires_grad_() for t in ts[:n]]
        y = fn(*xs)
        return (y,) + torch.autograd.grad(y, xs, ts[n])
    return run


def _bitwise_equal(a, b):
    nan = torch.isnan(a)
    return (torch.equal(nan, torch.isnan(b))
            and torch.equal(torch.nan_to_num(a, 7.5), torch.nan_to_num(b, 7.5))
            and torch.equal(torch.signbit(a)[~nan], torch.signbit(b)[~nan]))


@pytest.mark.parametrize("name", sorted(_KERNELS))
@pytest.mark.parametrize("seed", [0, 1])
def test_the_traced_form_computes_what_the_kernel_does(name, seed):
    """Within kernels_as_torch_ops a trace records torch ops (no opaque call that inductor
    cannot fuse), forward and backward bit for bit the eager kernel's, on data with NaN,
    infinities, ties and -0.0 (seed 1: no NaN, where the kernels take their shortcuts)."""
    fn, shapes = _KERNELS[name]
    xs = [_random_nan_data(s, seed) for s in shapes]
    if seed == 1:
        xs = [torch.nan_to_num(x, nan=2.0) for x in xs]
    with torch.enable_grad():
        g = torch.randn(fn(*[x.clone() for x in xs]).shape,
                        generator=torch.Generator().manual_seed(seed))
        eager = _joint(fn, len(xs))(*xs, g)
        with picks.kernels_as_torch_ops():
            gm = make_fx(_joint(fn, len(xs)), tracing_mode="fake")(*xs, g)
    assert "stadyn_kernels" not in gm.code
    traced = gm(*xs, g)
    for e, t in zip(eager, traced):
        assert _bitwise_equal(e, t), name
    with torch.enable_grad():
        opaque = make_fx(_joint(fn, len(xs)), tracing_mode="fake")(*xs, g)
    assert "stadyn_kernels" in opaque.code          # outside the context: one operator


@pytest.mark.slow
def test_inductor_compiles_the_traced_pooling_to_the_kernels_numbers():
    """A compiled step's view of CNTK's max pooling (its kernel) after a ReLU and of a
    reduction (traced, fused): values and gradients bit for bit the eager kernels'."""
    from torch._inductor.compile_fx import compile_fx

    from stadyn.compile._kernels import keep_max_pooling

    def fn(x, y):
        return picks.cntk_max_pool(torch.relu(x) - 1.0, [2, 2], [2, 2], [0, 0]), \
            picks.cntk_extreme(y, [1], False, False)

    x, y = _random_nan_data((2, 3, 6, 6), 2), _random_nan_data((4, 6), 3)

    def joint(x, y, gx, gy):
        x, y = x.detach().requires_grad_(), y.detach().requires_grad_()
        a, b = fn(x, y)
        return (a, b) + torch.autograd.grad((a, b), (x, y), (gx, gy))

    gx, gy = torch.randn(2, 3, 3, 3), torch.randn(4)
    with torch.enable_grad():
        eager = joint(x, y, gx, gy)
        with picks.kernels_as_torch_ops():
            gm = make_fx(joint, tracing_mode="fake")(x, y, gx, gy)
    keep_max_pooling(gm)
    compiled = compile_fx(gm, [x, y, gx, gy])(x, y, gx, gy)
    for e, c in zip(eager, compiled):
        assert _bitwise_equal(e, c)


_POOLS = {"2d": ([2, 2], [2, 2], [0, 0], (3, 2, 6, 8)), "3x3 stride 1": ([3, 3], [1, 1], [1, 1],
                                                                      (2, 3, 7, 7)),
          "1d": ([3], [2], [1], (3, 2, 9)), "3d": ([2, 2, 2], [1, 2, 2], [0, 1, 0],
                                                   (2, 2, 4, 5, 4))}


@pytest.mark.parametrize("name", sorted(_POOLS))
@pytest.mark.parametrize("seed", [0, 1])
def test_cntk_max_pool_is_torch_pooling_of_nan_as_minus_inf(name, seed):
    """The kernel (which skips its NaN pass where no maximum is NaN: seed 1 has no NaN) is
    torch's pooling of the input with NaN read as -inf, and its gradient torch's, but none
    to a NaN (taken by a window of NaN and -inf only)."""
    kernel, stride, pad, shape = _POOLS[name]
    x = _random_nan_data(shape, seed)
    if seed == 1:
        x = torch.nan_to_num(x, nan=2.0)
    pool = {1: torch.nn.functional.max_pool1d, 2: torch.nn.functional.max_pool2d,
            3: torch.nn.functional.max_pool3d}[len(kernel)]
    clean = torch.where(torch.isnan(x), -INF, x).requires_grad_()
    expected = pool(clean, kernel, stride, pad)
    g = torch.randn(expected.shape, generator=torch.Generator().manual_seed(seed))
    expected_grad, = torch.autograd.grad(expected, clean, g)
    expected_grad[torch.isnan(x)] = 0.0
    xg = x.clone().requires_grad_()
    got = picks.cntk_max_pool(xg, kernel, stride, pad)
    got_grad, = torch.autograd.grad(got, xg, g)
    assert _bitwise_equal(got.detach(), expected.detach())
    assert _bitwise_equal(got_grad, expected_grad)
