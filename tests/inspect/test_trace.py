"""sd.trace / F.trace: a value probe that prints what flows through it, in both modes, in static
replays and in a compiled step, leaving values and gradients untouched."""

import contextlib
import io
import re

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F
import stadyn.solvers as S

LINE = re.compile(r"trace (\S+) #(\d+) (forward|backward) \(([\d, ]*)\) (\w+): min (\S+) max (\S+) "
                  r"mean (\S+) std (\S+) nan (\d+) inf (\d+)(?: \[(.*)\])?$")


def _lines(fn):
    out = io.StringIO()
    with contextlib.redirect_stderr(out):
        fn()
    return [ln for ln in out.getvalue().splitlines() if ln.startswith("trace ")]


def _net(dynamic, x_value, gradient=True, **kw):
    """x -> tanh(x W) traced -> sum; returns (x, W, loss)."""
    with contextlib.ExitStack() as stack:
        if dynamic:
            stack.enter_context(sd.auto_forward())
        x = sd.Variable.from_numpy_array(x_value, need_grad=True)
        w = sd.Variable.from_numpy_array(np.linspace(-1, 1, 12).reshape(3, 4), need_grad=True)
        h = sd.trace(F.tanh(F.affine(x, w)), say="h", gradient=gradient, **kw)
        loss = F.sum(h * h)
    return x, w, loss


@pytest.fixture(autouse=True)
def _fresh_counts():
    sd.reset_trace_counts()
    yield
    sd.reset_trace_counts()


def test_the_line_holds_the_statistics_numpy_computes():
    v = np.array([[0.5, -3.0, np.nan], [np.inf, 2.0, 1.0]], dtype=np.float32)
    with sd.auto_forward():
        lines = _lines(lambda: F.trace(sd.Variable.from_numpy_array(v), say="v", values=4))
    m = LINE.match(lines[0])
    assert m, lines
    say, n, phase, shape, dtype, lo, hi, mean, std, nan, inf, head = m.groups()
    finite = v[np.isfinite(v)].astype(np.float64)
    assert (say, n, phase, shape, dtype) == ("v", "1", "forward", "2, 3", "float32")
    assert float(lo) == finite.min() and float(hi) == finite.max()
    assert float(mean) == pytest.approx(finite.mean(), rel=1e-3)
    assert float(std) == pytest.approx(finite.std(), rel=1e-3)
    assert (int(nan), int(inf)) == (1, 1)
    assert head == "0.5, -3, nan, inf, ..."


def test_first_then_every_nth_execution_is_printed():
    x, w, loss = _net(False, np.ones((2, 3)), gradient=False, first=2, every=3)
    lines = _lines(lambda: [loss.forward() for _ in range(7)])
    assert [int(LINE.match(ln).group(2)) for ln in lines] == [1, 2, 3, 6]


@pytest.mark.parametrize("dynamic", [False, True])
def test_values_and_gradients_are_those_of_the_graph_without_the_probe(dynamic):
    xv = np.random.RandomState(0).randn(2, 3)
    x, w, loss = _net(dynamic, xv)
    lines = _lines(lambda: (loss.forward(), loss.backward()))
    # The NumPy graph: h = tanh(x W), loss = sum(h^2), dL/dW = x^T (2 h (1 - h^2)).
    wv = np.linspace(-1, 1, 12).reshape(3, 4)
    h = np.tanh(xv @ wv)
    np.testing.assert_allclose(loss.d, (h * h).sum(), rtol=1e-5)
    np.testing.assert_allclose(w.g, xv.T @ (2 * h * (1 - h * h)), rtol=1e-4, atol=1e-6)
    forward = LINE.match(lines[0]).groups()
    backward = LINE.match(lines[1]).groups()
    assert forward[2] == "forward" and float(forward[5]) == pytest.approx(h.min(), rel=1e-3)
    assert backward[2] == "backward" and float(backward[6]) == pytest.approx((2 * h).max(),
                                                                              rel=1e-3)


def test_static_replays_print_the_same_lines_as_dynamic_runs():
    xv = np.random.RandomState(1).randn(4, 3)

    def run(dynamic):
        sd.reset_trace_counts()
        if dynamic:   # the forward runs as the graph is built
            return _lines(lambda: _net(True, xv)[2].backward())
        x, w, loss = _net(False, xv)
        return _lines(lambda: [(loss.forward(), loss.backward()) for _ in range(3)])[-2:]

    static = run(False)
    dynamic = run(True)
    # Counts differ (three static replays, one dynamic run); the rest of each line is equal.
    strip = [ln.split(" ", 3)[3] for ln in static]
    assert strip == [ln.split(" ", 3)[3] for ln in dynamic]
    assert [ln.split(" ")[2] for ln in static] == ["#3", "#3"]


def test_a_compiled_training_step_keeps_the_probe():
    registry = sd.ParameterRegistry()
    with sd.parameter_registry(registry):
        x = sd.Variable((4, 3))
        h = sd.trace(F.relu(sd.parametric_functions.affine(x, 2)), say="fc", every=1)
        loss = F.mean(h)
        solver = S.Sgd(lr=0.1)
        solver.set_parameters(sd.get_parameters())
    step = sd.compile_step(loss, solver, compile=False)
    x.d = np.ones((4, 3))
    lines = _lines(lambda: [step() for _ in range(3)])
    assert [ln.split(" ")[2] for ln in lines] == ["#1", "#2", "#3"]


def test_the_default_label_is_the_callers_line():
    with sd.auto_forward():
        lines = _lines(lambda: sd.trace(sd.Variable.from_numpy_array(np.ones(2))))
    assert re.match(r"trace \S*test_trace\.py:\d+ #1 forward", lines[0]), lines


@pytest.mark.parametrize("kw", [{"every": -1}, {"first": -2}, {"values": -1}])
def test_negative_counts_are_refused(kw):
    with pytest.raises(ValueError, match="must be >= 0"):
        F.trace(sd.Variable((2,)), say="p", **kw)
