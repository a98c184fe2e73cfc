"""NNabla 1.39 fidelity, sixteenth round: a backward writes an op output's gradient into the
array its ``reshape(unlink=True)`` view reads (Stadyn gave the output a new gradient tensor, the
view kept zeros); element writes through ``y.d`` after integers were assigned to an op's output
reach the backward (Stadyn's backward read the float tensor the forward gave, which only whole
assignments reached).
"""

import numpy as np

from compat_harness import nnabla_case

_V = "nnabla.Variable."


@nnabla_case(names=[_V + "reshape", _V + "g"],
             note="the view reads the gradient each backward writes, in both modes")
def output_view__reads_backward_gradient(nn, F, r):
    r.touch(_V + "reshape", _V + "g")
    res = {}
    for dynamic in (False, True):
        mode = "dynamic " if dynamic else ""
        nn.set_auto_forward(dynamic)
        try:
            b = nn.Variable.from_numpy_array(np.arange(4, dtype=np.float32), need_grad=True)
            y = F.mul_scalar(b, 2.0)
            w = y.reshape((2, 2), unlink=True)
            loss = F.sum(F.mul2(y, y))
            for step in range(2):
                loss.forward()
                b.grad.zero()
                loss.backward()
                res[mode + "w.g %d" % step] = w.g.copy()
                res[mode + "y.g %d" % step] = y.g.copy()
                res[mode + "b.g %d" % step] = b.g.copy()
            w.g = np.full((2, 2), 0.5, np.float32)
            res[mode + "y.g after w.g ="] = y.g.copy()
        finally:
            nn.set_auto_forward(False)
    return res


@nnabla_case(names=[_V + "d"],
             note="y.d[i] = v after y.d = ints on an op's output, then backward, both modes")
def output_written_integers__element_writes(nn, F, r):
    r.touch(_V + "d")
    res = {}
    for dynamic in (False, True):
        mode = "dynamic " if dynamic else ""
        nn.set_auto_forward(dynamic)
        try:
            a = nn.Variable.from_numpy_array(np.arange(4, dtype=np.float32), need_grad=True)
            y = F.add_scalar(a, 1.0)
            loss = F.sum(F.mul2(y, y))
            if not dynamic:
                loss.forward()
            y.d = np.array([5, 6, 7, 8], np.int32)
            y.d[0] = 3
            res[mode + "y.d"] = y.d.copy()
            a.grad.zero()
            loss.backward()
            res[mode + "a.g"] = a.g.copy()
            kept = y.d
            kept[1:3] = [100, -2]
            a.grad.zero()
            loss.backward()
            res[mode + "a.g kept array"] = a.g.copy()
            y.d = np.array([1.5, 2.5, 3.5, 4.5], np.float32)
            y.d[3] = 0.25
            a.grad.zero()
            loss.backward()
            res[mode + "a.g float"] = a.g.copy()
        finally:
            nn.set_auto_forward(False)
    return res
