"""``top_k`` among equal values: which indices CNTK 2.7 takes, and in which order.

CNTK 2.7 gives ``[[2, 3], [0, 1]]`` for ``[[0, 1, 9, 2, 2], [3, 3, 3, 1, 0]]`` and k = 2 (the
lowest index first, as Stadyn's stable sort); ``torch.topk`` left the order of ties to its
kernel (``[[2, 4], [1, 2]]``).  With more ties CNTK's order is its partial sort's, not the lowest
index first: ``[2, 4, 3]`` for ``[0, 1, 9, 2, 2, 2]`` and k = 3.
"""

import numpy as np

from compat_harness import cntk_case

DATA = np.array([[0, 1, 9, 2, 2], [3, 3, 3, 1, 0]], np.float32)
# more ties: a threshold shared by three, a tie for the top, all equal, alternating
ROWS = np.array([[0, 1, 9, 2, 2, 2], [1, 1, 5, 0, 0, 0], [3, 3, 3, 3, 3, 3],
                 [2, 7, 2, 7, 2, 7]], np.float32)
_ORDER = ("ops/_index.py top_k_data takes a stable sort's first k (the lowest index first "
          "among ties); CNTK 2.7's CPU TopK orders ties its own way: [2, 4, 3] for "
          "[0, 1, 9, 2, 2, 2] and k = 3 (the same indices, another order)")


@cntk_case(names=["cntk.ops.top_k"],
           note="ties along the last axis and along axis 0 (a block transposing around the "
                "op); the gradient of the values goes to the indices taken. ROWS: more ties, "
                "where CNTK 2.7's order is not the lowest index first",
           known={"ties k=2 indices": _ORDER, "ties k=3 indices": _ORDER,
                  "ties k=4 indices": _ORDER})
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
