"""NNabla 1.39 behaviours a review of compat.nnabla's batch statistics, eager replays and
``mean_subtraction`` found Stadyn missing:

* a graph that runs eagerly (it holds a ``PythonFunction``) forwarded from its loss only, then
  ``x.need_grad = True`` and ``y.backward()`` from an inner Variable: ``x.g`` was all zeros
  (the eager run's autograd history knew nothing of ``x``); NNabla differentiates through
  ``x`` with the forward's dropout masks;
* ``F.batch_normalization`` / ``PF.batch_normalization`` over several axes with batch
  statistics moved the running mean and variance; NNabla's adapter hands its kernel copies of
  them, so they never move;
* ``batch_stat=False, output_stat=True`` is refused with an ``AssertionError``, as NNabla's
  wrapper asserts;
* ``F.mean_subtraction`` with a counter that becomes 0 gives inf / NaN (Stadyn raised a
  ``ShapeError`` "float division by zero"), and its running mean is moved by ``(m - rm) *
  (1 / t)`` in float32, as NNabla's kernel rounds it.
"""

import numpy as np

from compat_harness import nnabla_case

_F = "nnabla.functions."


def _twice(PythonFunction):
    """A PythonFunction computing 2x (a graph holding one runs eagerly on Stadyn)."""
    class Twice(PythonFunction):
        @property
        def name(self):
            return "Twice"

        def min_outputs(self):
            return 1

        def grad_depends_output_data(self, i, o):
            return False

        def grad_depends_input_data(self, i, j):
            return False

        def setup_impl(self, inputs, outputs):
            outputs[0].reset_shape(inputs[0].shape, True)

        def forward_impl(self, inputs, outputs):
            outputs[0].d = inputs[0].d * 2

        def backward_impl(self, inputs, outputs, propagate_down, accum):
            g = 2 * outputs[0].g
            if accum[0]:
                inputs[0].g += g
            else:
                inputs[0].g = g
    return Twice()


def _late_x(nn, F, PythonFunction, drop, seed, eager):
    nn.seed(23)
    x = nn.Variable.from_numpy_array(np.ones((1, 8), np.float32), need_grad=False)
    w = nn.Variable.from_numpy_array(np.ones((1, 8), np.float32), need_grad=True)
    h = _twice(PythonFunction)(x * w) if eager else x * w * 2.0
    y = F.dropout(h, 0.5, seed=seed) if drop else h * 1.0
    loss = F.sum(y * y)
    loss.forward()                  # the loss only: y is an inner Variable of that forward
    res = {"y.d": y.d.copy()}
    x.need_grad = True
    x.grad.zero()
    w.grad.zero()
    y.backward(clear_buffer=False)
    res.update({"x.g": x.g.copy(), "w.g": w.g.copy()})
    return res


@nnabla_case(names=["nnabla.Variable.need_grad", "nnabla.Variable.backward",
                    "nnabla.function.PythonFunction", _F + "dropout"],
             note="nn.seed(23), x = w = ones((1, 8)), h = Twice(x * w) (a PythonFunction: "
                  "the graph runs eagerly on Stadyn; also x * w * 2), y = h * 1 or "
                  "dropout(h, 0.5, seed -1 or 5), loss = sum(y * y); loss.forward() only, "
                  "x.need_grad = True, y.backward(): x's and w's gradients")
def late_need_grad__backward_from_inner_variable_of_eager_graph(nn, F, PF, r):
    PythonFunction = r.module("nnabla.function").PythonFunction
    r.touch("nnabla.Variable.need_grad", "nnabla.Variable.backward", _F + "dropout")
    res = {}
    for eager in (True, False):
        for drop, seed in ((False, -1), (True, -1), (True, 5)):
            key = "%s, %s" % ("eager" if eager else "lowered",
                              "dropout seed=%d" % seed if drop else "h * 1")
            for k, v in _late_x(nn, F, PythonFunction, drop, seed, eager).items():
                res["%s: %s" % (key, k)] = v
    return res


def _tried(fn):
    try:
        return repr(fn())
    except Exception as exc:           # noqa: BLE001 (what NNabla raises is the result)
        return type(exc).__name__


@nnabla_case(names=[_F + "batch_normalization",
                    "nnabla.parametric_functions.batch_normalization"],
             note="x (2, 3, 2, 2); F.batch_normalization with running mean 0.5 and variance 2 "
                  "over axes [0, 2], [2, 3], [1] (batch_stat True, False), "
                  "PF.batch_normalization over [1, 2] and [1]: "
                  "the output and the running statistics after two forwards, static and "
                  "dynamic; batch_stat=False with output_stat=True (F and PF): the error")
def batch_normalization__running_stats_over_several_axes(nn, F, PF, r):
    res = {}
    x0 = r.randn(2, 3, 2, 2)
    for dynamic in (False, True):
        nn.set_auto_forward(dynamic)
        try:
            mode = "dynamic" if dynamic else "static"
            for axes in ([0, 2], [2, 3], [1]):
                for bs in (True, False):
                    key = "%s F axes=%s batch_stat=%s" % (mode, axes, bs)
                    x = nn.Variable.from_numpy_array(x0, need_grad=True)
                    shp = [s if i in axes else 1 for i, s in enumerate(x.shape)]
                    m = nn.Variable.from_numpy_array(np.full(shp, 0.5, np.float32))
                    v = nn.Variable.from_numpy_array(np.full(shp, 2.0, np.float32))
                    y = F.batch_normalization(x, None, None, m, v, axes=axes, batch_stat=bs)
                    y.forward()
                    y.forward()
                    res.update({key + ": y": y.d.copy(), key + ": mean": m.d.copy(),
                                key + ": var": v.d.copy()})
            for axes in ([1, 2], [1]):
                nn.clear_parameters()
                key = "%s PF axes=%s" % (mode, axes)
                x = nn.Variable.from_numpy_array(x0)
                y = PF.batch_normalization(x, axes=axes)
                y.forward()
                y.forward()
                res[key + ": y"] = y.d.copy()
                for k, p in sorted(nn.get_parameters(grad_only=False).items()):
                    res["%s: %s" % (key, k)] = p.d.copy()
            x = nn.Variable.from_numpy_array(x0)
            m = nn.Variable.from_numpy_array(np.zeros((1, 3, 1, 1), np.float32))
            v = nn.Variable.from_numpy_array(np.ones((1, 3, 1, 1), np.float32))
            for axes in ([1], [1, 2]):
                res["%s F batch_stat=False output_stat=True %s" % (mode, axes)] = _tried(
                    lambda: F.batch_normalization(x, None, None, m, v, axes=axes,
                                                  batch_stat=False, output_stat=True))
                nn.clear_parameters()
                res["%s PF batch_stat=False output_stat=True %s" % (mode, axes)] = _tried(
                    lambda: PF.batch_normalization(x, axes=axes, batch_stat=False,
                                                   output_stat=True))
        finally:
            nn.set_auto_forward(False)
            nn.clear_parameters()
    return res


@nnabla_case(names=[_F + "mean_subtraction"],
             note="F.mean_subtraction of x = arange(6).reshape(2, 3), running mean ones, "
                  "counter t = -1.5 (the count becomes 0: inf / NaN), 2.7, 3 and 1e9: the "
                  "output, the running mean, t's value and x's gradient (static and dynamic)")
def mean_subtraction__counter_zero_and_rounding(nn, F, r):
    res = {}
    for dynamic in (False, True):
        nn.set_auto_forward(dynamic)
        try:
            mode = "dynamic" if dynamic else "static"
            for name, tv in (("-1.5", -1.5), ("2.7", 2.7), ("3", 3.0), ("1e9", 1e9)):
                key = "%s %s" % (mode, name)
                x = nn.Variable.from_numpy_array(
                    np.arange(6, dtype=np.float32).reshape(2, 3), need_grad=True)
                m = nn.Variable.from_numpy_array(np.ones((3,), np.float32))
                t = nn.Variable.from_numpy_array(np.array([tv], np.float32))
                y = F.mean_subtraction(x, m, t)
                y.forward()
                x.grad.zero()
                y.backward(np.ones((2, 3), np.float32))
                res.update({key + " y": y.d.copy(), key + " mean": m.d.copy(),
                            key + " t": int(t.d[0]), key + " x.g": x.g.copy()})
        finally:
            nn.set_auto_forward(False)
    return res
