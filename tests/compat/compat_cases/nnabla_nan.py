"""NaN, infinities, ties and -0.0 through NNabla 1.39's ``maximum2``, ``minimum2`` and
``where``, the ops CNTK's ``element_max``, ``element_min`` and ``element_select`` share with it
(``cntk_nan.py`` holds CNTK 2.7's side).

NNabla computes ``maximum2`` as ``x0 > x1 ? x0 : x1`` as CNTK 2.7 does (a NaN in ``x0`` gives
``x1``, one in ``x1`` NaN, a tie ``x1``), and its gradient goes to ``x0`` where ``x0 > x1``,
to ``x1`` where ``x0 <= x1``: where the two are unordered (a NaN) to neither, where CNTK
gives it to ``x1`` (``rule="cntk"`` of Stadyn's op, which ``element_max`` passes).
``where`` selects: nothing of the branch not taken reaches the value or the gradients.
"""

import numpy as np

from compat_harness import nnabla_case

NAN, INF = np.nan, np.inf
A = np.array([[NAN, INF, -INF, 1, -0.0, 0, 2, NAN, 3, -INF, INF, 5]], np.float32)
B = np.array([[1, 1, 1, 1, 0.0, -0.0, 2, NAN, NAN, INF, -INF, NAN]], np.float32)
FLAG = np.array([[1, 0, NAN, INF, -0.0, 0, -1, 1, 0, 1, 0, 0.5]], np.float32)


def _run(nn, y, inputs, r):
    y.forward()
    for v in inputs:
        v.g = 0
    y.backward(r.weights_like(y.d))
    return y.d.copy(), [v.g.copy() for v in inputs]


@nnabla_case(names=["nnabla.functions.maximum2", "nnabla.functions.minimum2"], rtol=0,
             atol=0,
             note="x0 > x1 ? x0 : x1 (x0 < x1 for minimum2): NaN either side, infinities, a tie, "
                  "signed zeros (compared through signbit)")
def nan__maximum2_minimum2(nn, F, r):
    res = {}
    for label, fn in (("maximum2", F.maximum2), ("minimum2", F.minimum2)):
        x0 = nn.Variable.from_numpy_array(A, need_grad=True)
        x1 = nn.Variable.from_numpy_array(B, need_grad=True)
        out, (g0, g1) = _run(nn, fn(x0, x1), [x0, x1], r)
        res[label] = out
        res[label + " signbit"] = np.signbit(out)
        res[label + " grad x0"], res[label + " grad x1"] = g0, g1
    return res


@nnabla_case(names=["nnabla.functions.where"], rtol=0, atol=0,
             note="NaN and inf conditions are true, -0.0 false; a NaN or inf in the branch not "
                  "taken reaches neither the value nor the gradients")
def nan__where(nn, F, r):
    c = nn.Variable.from_numpy_array(FLAG)
    t = nn.Variable.from_numpy_array(A, need_grad=True)
    f = nn.Variable.from_numpy_array(B, need_grad=True)
    out, (gt, gf) = _run(nn, F.where(c, t, f), [t, f], r)
    return {"where": out, "where signbit": np.signbit(out), "grad true": gt, "grad false": gf}


ROWS = np.array([[NAN, 1, 2, 2], [1, NAN, 3, 0], [2, 2, 1, 0], [-INF, -INF, -INF, -INF],
                 [INF, 1, INF, 0], [NAN, NAN, NAN, NAN], [-INF, 0, 1, -INF], [3, 3, NAN, 3],
                 [-0.0, 0.0, -1, -1]], np.float32)
IMAGE = np.array([[[[NAN, 1, 2, 3, NAN, NAN],
                    [0, 0, 5, 5, NAN, NAN],
                    [-INF, -INF, INF, 1, 1, NAN],
                    [1, 1, NAN, NAN, NAN, 4]]]], np.float32)


@nnabla_case(names=["nnabla.functions.max", "nnabla.functions.min",
                    "nnabla.functions.max_pooling", "nnabla.functions.relu"], rtol=0, atol=0,
             known=dict([(k, "ops/_nn.py max_pooling (rule='torch') is torch's: any NaN wins "
                               "its window (the last NaN takes the gradient); NNabla 1.39 scans "
                               "from the window's first value, so only a NaN there wins (and "
                               "takes the gradient), a later one is passed by")
                           for k in ("max_pooling", "max_pooling grad")]),
             note="the ops whose CNTK 2.7 rule Stadyn declares (rule='cntk') keep their default "
                  "for NNabla's front end; pinned here: NNabla 1.39's answers, where Stadyn's "
                  "default (torch's) differs; relu is x > 0 ? x : 0, 0 for NaN with no "
                  "gradient (nanfid2: NNabla's F.relu was torch.relu, NaN for NaN)")
def nan__max_min_pooling_relu(nn, F, r):
    res = {}
    for label, fn in (("max", F.max), ("min", F.min)):
        x = nn.Variable.from_numpy_array(ROWS, need_grad=True)
        res[label], (res[label + " grad"],) = _run(nn, fn(x, axis=1), [x], r)
        index = fn(nn.Variable.from_numpy_array(ROWS), axis=1, only_index=True)
        index.forward()
        res[label + " index"] = index.d.astype(np.int64)
    x = nn.Variable.from_numpy_array(IMAGE, need_grad=True)
    res["max_pooling"], (res["max_pooling grad"],) = _run(nn, F.max_pooling(x, (2, 2)), [x], r)
    a = nn.Variable.from_numpy_array(A, need_grad=True)
    res["relu"], (res["relu grad"],) = _run(nn, F.relu(a), [a], r)
    return res
