"""NNabla 1.39 fidelity, thirteenth round: a fractional float class id given to
``F.softmax_cross_entropy``, ``F.categorical_cross_entropy`` or ``F.top_n_error`` (NNabla
truncates it toward zero; Stadyn refused it); an integer array made a Variable or a parameter
that needs a gradient (NNabla keeps it and writes a float32 gradient); and integer data written
through ``v.data`` into a leaf a built static graph reads as floats.
"""

import numpy as np

from compat_harness import nnabla_case

FN = "nnabla.functions."
_CLASS_ID_OPS = ("softmax_cross_entropy", "categorical_cross_entropy", "top_n_error")

_SCORES = np.array([[0.1, 0.5, -0.3], [1.0, 0.2, 0.0], [0.3, 0.3, 0.9], [0.0, 1.0, 2.0],
                    [0.5, 0.1, 0.2], [0.2, 0.3, 0.4]], np.float32)
# 1.9 is class 1, -0.5 class 0 (toward zero), 2.99 class 2, -1.5 is -1 (ignored), -2 ignored
_TARGETS = np.array([[1.9], [-0.5], [2.99], [-1.5], [0.3], [-2.0]], np.float32)


def _scores_for(name):
    if name == "categorical_cross_entropy":       # probabilities
        p = np.abs(_SCORES) + 0.1
        return (p / p.sum(axis=1, keepdims=True)).astype(np.float32)
    return _SCORES


@nnabla_case(names=[FN + n for n in _CLASS_ID_OPS],
             note="the top_n_error rows with a negative target are left out: NNabla 1.39 "
                  "reads the score before the row's (out of bounds), Stadyn raises an index "
                  "error")
def class_ids__fractional(nn, F, r):
    r.touch(*(FN + n for n in _CLASS_ID_OPS))
    res = {}
    for auto in (False, True):
        nn.set_auto_forward(auto)
        for name in _CLASS_ID_OPS:
            targets = _TARGETS if name != "top_n_error" else np.abs(_TARGETS)
            x = nn.Variable.from_numpy_array(_scores_for(name), need_grad=True)
            t = nn.Variable.from_numpy_array(targets)
            y = getattr(F, name)(x, t)
            if not auto:
                y.forward()
            key = "%s %s" % ("dynamic" if auto else "static", name)
            res[key] = y.d.copy()
            if name != "top_n_error":
                x.grad.zero()
                y.backward()
                res[key + " x.g"] = x.g.copy()
    nn.set_auto_forward(False)
    # a built static graph given other fractional targets on its next forward
    x = nn.Variable.from_numpy_array(_SCORES)
    t = nn.Variable((6, 1))
    t.d = np.zeros((6, 1), np.float32)
    loss = F.mean(F.softmax_cross_entropy(x, t))
    loss.forward()
    res["static mean, targets 0"] = float(loss.d)
    t.d = np.array([[0.5], [1.7], [2.2], [1.0], [0.99], [2.999]], np.float32)
    loss.forward()
    res["static mean, fractional targets"] = float(loss.d)
    return res
