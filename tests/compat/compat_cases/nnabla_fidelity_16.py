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


_MAKERS = {
    "exp": lambda F, a: F.exp(a), "mul": lambda F, a: a * 1.0,
    "relu": lambda F, a: F.relu(a), "relu inplace": lambda F, a: F.relu(a, inplace=True),
    "tanh": lambda F, a: F.tanh(a), "sigmoid": lambda F, a: F.sigmoid(a),
    "softmax": lambda F, a: F.softmax(a, axis=0), "swish": lambda F, a: F.swish(a),
    "leaky_relu": lambda F, a: F.leaky_relu(a, 0.1),
    "leaky_relu negative": lambda F, a: F.leaky_relu(a, -0.1),
    "reshape": lambda F, a: F.reshape(a, (4,)),
    "reshape not inplace": lambda F, a: F.reshape(a, (4,), inplace=False),
    "identity": lambda F, a: F.identity(a), "exp of mul": lambda F, a: F.exp(a * 1.0),
    "prod": lambda F, a: F.prod(F.reshape(a, (4, 1)), axis=1), "add_scalar":
    lambda F, a: F.add_scalar(a, 1.0), "log_softmax": lambda F, a: F.log_softmax(a, axis=0),
}


@nnabla_case(names=["nnabla.functions.scatter_nd"],
             note="out=x computed by a function whose backward reads its output, from an "
                  "input needing a gradient or not: refused or not, at the call")
def scatter_nd__out_computed_refused(nn, F, r):
    res = {}
    idx = nn.Variable.from_numpy_array(np.array([[0, 2]]))
    data = nn.Variable.from_numpy_array(np.array([1.0, 2.0], np.float32))
    for dynamic in (False, True):
        nn.set_auto_forward(dynamic)
        try:
            for need_grad in (True, False):
                for key, make in _MAKERS.items():
                    a = nn.Variable.from_numpy_array(np.full(4, 0.5, np.float32),
                                                     need_grad=need_grad)
                    x = make(F, a)
                    label = "%s%s%s" % ("dynamic " if dynamic else "", key,
                                        "" if need_grad else " (no grad)")
                    try:
                        y = F.scatter_nd(data, idx, out=x)
                        if not dynamic:
                            y.forward()
                        res[label] = y.d.copy()
                    except RuntimeError:
                        res[label] = "RuntimeError"
        finally:
            nn.set_auto_forward(False)
    return res
