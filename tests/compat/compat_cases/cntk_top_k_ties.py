"""``top_k`` among equal values: which indices CNTK 2.7 takes, and in which order.

CNTK 2.7 gives ``[[2, 3], [0, 1]]`` for ``[[0, 1, 9, 2, 2], [3, 3, 3, 1, 0]]`` and k = 2;
``torch.topk`` left the order of ties to its kernel (``[[2, 4], [1, 2]]``).  With more ties
CNTK's order is its partial sort's heap (``ops/_top_k_order.py`` replays it), not the lowest
index first: ``[2, 4, 3]`` for ``[0, 1, 9, 2, 2, 2]`` and k = 3, and it may take other
positions than NNabla: ``[1, 3, 5, 0]`` for ``[2, 7, 2, 7, 2, 7]`` and k = 4 (NNabla
``[5, 3, 1, 0]``).  ``top_k__random_ties``: small random integers, several k, two axes.
"""

import numpy as np

from compat_harness import cntk_case

DATA = np.array([[0, 1, 9, 2, 2], [3, 3, 3, 1, 0]], np.float32)
# more ties: a threshold shared by three, a tie for the top, all equal, alternating
ROWS = np.array([[0, 1, 9, 2, 2, 2], [1, 1, 5, 0, 0, 0], [3, 3, 3, 3, 3, 3],
                 [2, 7, 2, 7, 2, 7]], np.float32)


@cntk_case(names=["cntk.ops.top_k"],
           note="ties along the last axis and along axis 0 (a block transposing around the "
                "op); the gradient of the values goes to the indices taken. ROWS: more ties, "
                "where CNTK 2.7's order is not the lowest index first")
def top_k__ties(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.outputs")
    x = C.input_variable(5, needs_gradient=True)
    t = C.top_k(x, 2)
    out = t.eval({x: DATA})
    res = {"values": out[t.outputs[0]], "indices": out[t.outputs[1]]}
    value, grads = r.cntk_forward_backward(t.outputs[0] * 1.0, {x: DATA}, [x])
    res["train values"] = value
    res["grad"] = grads[0]
    xt = C.input_variable((5, 2))
    along = C.top_k(xt, 2, axis=0)
    out = along.eval({xt: DATA.T[None]})
    res["axis 0 values"] = out[along.outputs[0]]
    res["axis 0 indices"] = out[along.outputs[1]]
    xr = C.input_variable(6)
    for k in (1, 2, 3, 4):
        tk = C.top_k(xr, k)
        out = tk.eval({xr: ROWS})
        res["ties k=%d values" % k] = out[tk.outputs[0]]
        res["ties k=%d indices" % k] = out[tk.outputs[1]]
    return res


@cntk_case(names=["cntk.ops.top_k"],
           note="integers in -3..3 (ties everywhere): k = 2..7 of rows of 7 values, 3, 6, 9 "
                "of 10 (k = 1 is CNTK's own loop: the first largest), along the last axis and "
                "axis 0; the gradient goes to the positions taken")
def top_k__random_ties(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.outputs")
    res = {}
    for n in (7, 10):
        data = r.randint(-3, 4, (12, n)).astype(np.float32)
        x = C.input_variable(n, needs_gradient=True)
        xt = C.input_variable((n, 12))
        for k in (range(2, n + 1) if n == 7 else (3, 6, 9)):
            t = C.top_k(x, k)
            out = t.eval({x: data})
            res["n=%d k=%d values" % (n, k)] = out[t.outputs[0]]
            res["n=%d k=%d indices" % (n, k)] = out[t.outputs[1]]
            if k % 3 == 0:
                along = C.top_k(xt, k, axis=0)
                out = along.eval({xt: data.T[None]})
                res["n=%d k=%d axis 0 indices" % (n, k)] = out[along.outputs[1]]
        t = C.top_k(x, 4)
        value, grads = r.cntk_forward_backward(t.outputs[0] * 1.0, {x: data}, [x])
        res["n=%d k=4 grad" % n] = grads[0]
    return res


@cntk_case(names=["cntk.ops.top_k"],
           note="rows holding NaN and inf (CNTK's heap and its k = 1 loop pass a NaN by; a "
                "sort puts it first): every k")
def top_k__nan_rows(C, r):
    data = np.array([[1, np.nan, 3, 3, 2, np.inf, np.inf],
                     [np.nan, np.nan, 1, 1, 1, 0, 0],
                     [2, 5, np.nan, -np.inf, 5, 1, 2]], np.float32)
    x = C.input_variable(7)
    res = {}
    for k in range(1, 8):
        t = C.top_k(x, k)
        out = t.eval({x: data})
        res["k=%d values" % k] = out[t.outputs[0]]
        res["k=%d indices" % k] = out[t.outputs[1]]
    return res
