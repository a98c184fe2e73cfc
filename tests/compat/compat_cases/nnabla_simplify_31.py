"""NNabla 1.39 behaviours a simplification reader of compat.nnabla's batch statistics and
eager replays found Stadyn missing:

* a graph that runs eagerly (it holds a ``PythonFunction``) with a
  ``F.batch_normalization(batch_stat=True)`` in it, forwarded from its loss only, then
  ``x.need_grad = True`` and ``y.backward()`` from an inner Variable: NNabla runs no forward
  again, so the running mean and variance are those of the one forward; Stadyn ran the forward
  of ``y`` again unguarded and moved them a second time (Stadyn now refuses that backward, as it
  refuses ``loss.backward()`` in the same state: the refusal is a known difference);
* ``PF.batch_normalization`` over several axes with ``output_stat=True``: NNabla's parametric
  function calls ``F.batch_normalization``, whose adapter transposes the batch mean and variance
  back (their parent is a ``Transpose``); Stadyn's gave the kernel's own outputs.
"""

import numpy as np

from compat_cases.nnabla_review_mends_31 import _twice
from compat_harness import nnabla_case

_F = "nnabla.functions."


@nnabla_case(names=["nnabla.Variable.need_grad", "nnabla.Variable.backward",
                    "nnabla.function.PythonFunction", _F + "batch_normalization"],
             note="x = arange(8).reshape(4, 2), w = ones, h = Twice(x * w) (a PythonFunction: "
                  "the graph runs eagerly on Stadyn), b = batch_normalization(h, 0, 1, rm=0, "
                  "rv=1, batch_stat=True), y = b * 1, loss = sum(y * y); loss.forward(), "
                  "x.need_grad = True, y.backward(): the running statistics after each step")
def late_need_grad__inner_backward_keeps_running_stats(nn, F, PF, r):
    PythonFunction = r.module("nnabla.function").PythonFunction
    r.touch("nnabla.Variable.need_grad", "nnabla.Variable.backward")
    x = nn.Variable.from_numpy_array(np.arange(8.0, dtype=np.float32).reshape(4, 2))
    w = nn.Variable.from_numpy_array(np.ones((4, 2), np.float32), need_grad=True)
    beta = nn.Variable.from_numpy_array(np.zeros((1, 2), np.float32))
    gamma = nn.Variable.from_numpy_array(np.ones((1, 2), np.float32))
    rm = nn.Variable.from_numpy_array(np.zeros((1, 2), np.float32))
    rv = nn.Variable.from_numpy_array(np.ones((1, 2), np.float32))
    h = _twice(PythonFunction)(x * w)
    y = F.batch_normalization(h, beta, gamma, rm, rv, batch_stat=True) * 1.0
    loss = F.sum(y * y)
    loss.forward()
    res = {"forward: mean": rm.d.copy(), "forward: var": rv.d.copy()}
    x.need_grad = True
    x.grad.zero()
    try:
        y.backward()
        res["raised"] = None
    except Exception as exc:           # noqa: BLE001 (whether it raises is the result)
        res["raised"] = type(exc).__name__
    res.update({"backward: mean": rm.d.copy(), "backward: var": rv.d.copy(),
                "x.g": x.g.copy()})
    return res


@nnabla_case(names=["nnabla.Variable.need_grad", "nnabla.Variable.backward",
                    "nnabla.function.PythonFunction", _F + "mean_subtraction"],
             note="as late_need_grad__inner_backward_keeps_running_stats with "
                  "F.mean_subtraction(h, rm, t) in place of the batch normalization: "
                  "backward() from loss and from y, the running mean, count and gradients "
                  "(Stadyn's run again for the backward subtracts the mean and scales by the "
                  "count the forward left, as NNabla differentiates the forward that ran)")
def late_need_grad__mean_subtraction(nn, F, PF, r):
    PythonFunction = r.module("nnabla.function").PythonFunction
    r.touch("nnabla.Variable.need_grad", "nnabla.Variable.backward")
    res = {}
    for root in ("loss", "y"):
        x = nn.Variable.from_numpy_array(np.arange(8.0, dtype=np.float32).reshape(4, 2))
        w = nn.Variable.from_numpy_array(np.ones((4, 2), np.float32), need_grad=True)
        rm = nn.Variable.from_numpy_array(np.zeros((2,), np.float32))
        t = nn.Variable.from_numpy_array(np.zeros((1,), np.float32))
        h = _twice(PythonFunction)(x * w)
        y = F.mean_subtraction(h, rm, t) * 1.0
        loss = F.sum(y * y)
        loss.forward()
        x.need_grad = True
        x.grad.zero()
        try:
            (loss if root == "loss" else y).backward()
            res[root + ": raised"] = None
        except Exception as exc:       # noqa: BLE001 (whether it raises is the result)
            res[root + ": raised"] = type(exc).__name__
        res.update({root + ": mean": rm.d.copy(), root + ": t": t.d.astype(np.float32),
                    root + ": x.g": x.g.copy(), root + ": w.g": w.g.copy()})
    return res


@nnabla_case(names=["nnabla.parametric_functions.batch_normalization"],
             note="x (2, 3, 4); PF.batch_normalization over axes [0, 2] and [1] with "
                  "output_stat=True: the batch mean's and variance's parent ops, the values")
def batch_normalization__pf_output_stat_over_several_axes(nn, F, PF, r):
    x = nn.Variable.from_numpy_array(r.randn(2, 3, 4))
    res = {}
    for axes in ([0, 2], [1]):
        nn.clear_parameters()
        y, m, v = PF.batch_normalization(x, axes=axes, output_stat=True)
        y.forward()
        key = "axes=%s" % axes
        res.update({key + ": parents": [m.parent.name, v.parent.name],
                    key + ": y": y.d.copy(), key + ": mean": m.d.copy(),
                    key + ": var": v.d.copy()})
    return res
