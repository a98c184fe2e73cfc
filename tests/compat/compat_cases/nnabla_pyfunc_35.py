"""NNabla 1.39 fidelity (session 35): ``need_grad`` set after a static forward whose backward
Stadyn left for later, and a ``PythonFunction`` under ``nn.grad`` and raising.

* A static graph built while every leaf it differentiates holds a gradient (after another
  graph's backward) gets its forward only (graph/_deferred_backward.py); its first backward
  built the plan with a backward by running the forward again under the ``need_grad`` marks of
  then, so ``b.need_grad = True`` set after ``w = F.sum(F.exp(b) * x).forward()`` gave ``b.g``
  ``exp(b) * x`` ([7.39, 40.17]), NNabla's [0, 0] (``F.exp`` ran with no input needing a
  gradient and takes no part), and ``m.need_grad = True`` set back after a cut lost
  ``F.exp(m * 0.1)``'s part of ``x.g`` ([6, 12], NNabla's [6.40, 12.55]).
"""

import numpy as np

from compat_harness import nnabla_case


def _late_marks(nn, F, earlier_backward):
    """x (need_grad) read by F.exp(b) * x with b set need_grad=True after the forward; tanh(x * c)
    with c set so; x * 3 cut (need_grad=False) after the forward, then set back."""
    res = {}
    x = nn.Variable.from_numpy_array(np.array([1.0, 2.0], np.float32), need_grad=True)
    if earlier_backward:        # x then holds a gradient: the next graphs are built forward only
        z = F.sum(x * 3.0)
        z.forward()
        z.backward()
    b = nn.Variable.from_numpy_array(np.array([2.0, 3.0], np.float32), need_grad=False)
    w = F.sum(F.exp(b) * x)
    w.forward()
    b.need_grad = True
    b.grad.zero()
    w.backward()
    res["exp(b) * x, b late: b.g"] = b.g.copy()
    res["exp(b) * x, b late: x.g"] = x.g.copy()
    b.grad.zero()
    w.backward()
    res["exp(b) * x, b late, backward again: b.g"] = b.g.copy()
    b.grad.zero()
    w.forward()
    w.backward()
    res["exp(b) * x, b late, forward again: b.g"] = b.g.copy()
    c = nn.Variable.from_numpy_array(np.array([0.5, -1.5], np.float32), need_grad=False)
    v = F.sum(F.tanh(x * c))
    v.forward()
    c.need_grad = True
    c.grad.zero()
    v.backward()
    res["tanh(x * c), c late: c.g"] = c.g.copy()
    res["tanh(x * c), c late: x.g"] = x.g.copy()
    m = x * 3.0
    u = F.sum(m * x + F.exp(m * 0.1))
    u.forward()
    m.need_grad = False
    x.grad.zero()
    u.backward()
    res["m = 3x cut: x.g"] = x.g.copy()
    m.need_grad = True
    x.grad.zero()
    u.backward()
    res["m = 3x cut, set back: x.g"] = x.g.copy()
    return res


@nnabla_case(names=["nnabla.Variable.need_grad", "nnabla.Variable.backward"],
             note="x = [1, 2] (need_grad), after another graph's forward and backward from x "
                  "(x holds a gradient: Stadyn builds the next static graphs forward only) and "
                  "then without: sum(exp(b) * x) forwarded, b.need_grad = True, backward (twice, "
                  "then after a forward again): b.g, x.g; sum(tanh(x * c)), c set late: c.g, "
                  "x.g; m = x * 3 in sum(m * x + exp(m * 0.1)), m.need_grad = False after the "
                  "forward, backward, then m.need_grad = True, backward: x.g")
def late_need_grad__graph_built_forward_only(nn, F, PF, r):
    r.touch("nnabla.Variable.need_grad", "nnabla.Variable.backward")
    res = {}
    for earlier in (True, False):       # (the graph built forward only first)
        for k, v in _late_marks(nn, F, earlier).items():
            res[("after another backward: " if earlier else "first: ") + k] = v
    return res
