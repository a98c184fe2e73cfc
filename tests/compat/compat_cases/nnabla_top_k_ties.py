"""``top_k_data`` and ``top_k_grad`` among equal values: which indices NNabla 1.39 takes, and
in which order.

NNabla 1.39 gives indices ``[[2, 3], [0, 1]]`` for ``[[0, 1, 9, 2, 2], [3, 3, 3, 1, 0]]`` and
k = 2; ``torch.topk`` left the order of ties to its kernel (``[[2, 4], [1, 2]]``).  NNabla keeps
a heap of the k first values and replaces its smallest only by a strictly greater one, then
sorts the heap: with more ties the order is the heap's, ``[2, 4, 3]`` for
``[0, 1, 9, 2, 2, 2]`` and k = 3 (``ops/_top_k_order.py`` replays it).  ``top_k__random_ties``:
small random integers (ties everywhere), every k, abs, smallest, reduce=False, and top_k_grad.
"""

import numpy as np

from compat_harness import nnabla_case

DATA = np.array([[0, 1, 9, 2, 2], [3, 3, 3, 1, 0]], np.float32)
SIGNED = np.array([[0, -1, 9, 2, -2], [3, -3, 3, -1, 0]], np.float32)
# more ties: a threshold shared by three, a tie for the top, all equal, alternating
ROWS = np.array([[0, 1, 9, 2, 2, 2], [1, 1, 5, 0, 0, 0], [3, 3, 3, 3, 3, 3],
                 [2, 7, 2, 7, 2, 7]], np.float32)
@nnabla_case(names=["nnabla.functions.top_k_data"],
             note="ties: values, indices and the gradient (to the indices taken), largest and "
                  "smallest, abs (3 and -3 tie), reduce=False (which values stay); ROWS: more "
                  "ties, where NNabla's order is its heap's, and base_axis over a 3-d input; "
                  "the indices are uint64, as NNabla's")
def top_k_data__ties(nn, F, r):
    res = {}
    x = nn.Variable.from_numpy_array(DATA, need_grad=True)
    for label, kw in (("", {}), ("smallest ", {"largest": False})):
        values, index = F.top_k_data(x, 2, with_index=True, **kw)
        values.forward()
        index.forward()
        x.g = 0
        values.backward(r.weights_like(values.d))
        res[label + "values"] = values.d.copy()
        res[label + "indices"] = index.d.astype(np.int64)
        res[label + "grad"] = x.g.copy()
    signed = nn.Variable.from_numpy_array(SIGNED, need_grad=True)
    for label, kw in (("abs", {"abs": True}), ("no reduce", {"reduce": False}),
                      ("no reduce abs", {"reduce": False, "abs": True}),
                      ("no reduce smallest", {"reduce": False, "largest": False})):
        y = F.top_k_data(signed, 2, **kw)
        y.forward()
        signed.g = 0
        y.backward(r.weights_like(y.d))
        res[label] = y.d.copy()
        res[label + " grad"] = signed.g.copy()
    rows = nn.Variable.from_numpy_array(ROWS)
    for k in (1, 2, 3, 4):
        values, index = F.top_k_data(rows, k, with_index=True)
        values.forward()
        index.forward()
        res["ties k=%d values" % k] = values.d.copy()
        res["ties k=%d indices" % k] = index.d.astype(np.int64)
    for k in (2, 3):
        values, index = F.top_k_data(rows, k, largest=False, with_index=True)
        values.forward()
        index.forward()
        res["ties smallest k=%d values" % k] = values.d.copy()
        res["ties smallest k=%d indices" % k] = index.d.astype(np.int64)
    cube = nn.Variable.from_numpy_array(DATA.reshape(2, 1, 5))
    values, index = F.top_k_data(cube, 3, base_axis=1, with_index=True)
    values.forward()
    index.forward()
    res["3-d k=3 values"] = values.d.copy()
    res["3-d k=3 indices"] = index.d.astype(np.int64)
    res["index dtype"] = str(index.d.dtype)
    return res


@nnabla_case(names=["nnabla.functions.top_k_grad"],
             note="the gradients passed back among equal ones, with and without abs")
def top_k_grad__ties(nn, F, r):
    res = {}
    x = nn.Variable.from_numpy_array(r.randn(2, 5), need_grad=True)
    for label, kw, g in (("", {}, DATA), ("abs ", {"abs": True}, SIGNED)):
        y = F.top_k_grad(x, 2, **kw)
        y.forward()
        x.g = 0
        y.backward(g)
        res[label + "out"] = y.d.copy()
        res[label + "grad"] = x.g.copy()
    return res


@nnabla_case(names=["nnabla.functions.top_k_data", "nnabla.functions.top_k_grad",
                    "nnabla.auto_forward"],
             note="integers in -3..3 (ties everywhere): every k of rows of 7 and 10 values, "
                  "largest and smallest, abs, reduce=False; top_k_grad's positions (computed "
                  "at once: auto_forward)")
def top_k__random_ties(nn, F, r):
    res = {}
    with nn.auto_forward():
        for n in (7, 10):
            data = r.randint(-3, 4, (12, n)).astype(np.float32)
            x = nn.Variable.from_numpy_array(data, need_grad=True)
            for k in range(1, n + 1):
                for label, kw in (("", {}), ("smallest ", {"largest": False}),
                                  ("abs ", {"abs": True}),
                                  ("abs smallest ", {"abs": True, "largest": False})):
                    values, index = F.top_k_data(x, k, with_index=True, **kw)
                    key = "n=%d k=%d %s" % (n, k, label)
                    res[key + "values"] = values.d.copy()
                    res[key + "indices"] = index.d.astype(np.int64)
                kept = F.top_k_data(x, k, reduce=False, abs=k % 2 == 0)
                res["n=%d k=%d no reduce" % (n, k)] = kept.d.copy()
                y = F.top_k_grad(x, k, abs=k % 2 == 1)
                x.g = 0
                y.backward(data)
                res["n=%d k=%d grad" % (n, k)] = x.g.copy()
    return res


@nnabla_case(names=["nnabla.functions.top_k_data"],
             note="rows holding NaN and inf (NNabla's heap passes a NaN by; a sort puts it "
                  "first): every k, largest and smallest")
def top_k__nan_rows(nn, F, r):
    data = np.array([[1, np.nan, 3, 3, 2, np.inf, np.inf],
                     [np.nan, np.nan, 1, 1, 1, 0, 0],
                     [2, 5, np.nan, -np.inf, 5, 1, 2]], np.float32)
    res = {}
    x = nn.Variable.from_numpy_array(data)
    for k in range(1, 8):
        for label, kw in (("", {}), ("smallest ", {"largest": False})):
            values, index = F.top_k_data(x, k, with_index=True, **kw)
            values.forward()
            index.forward()
            res["k=%d %sindices" % (k, label)] = index.d.astype(np.int64)
            res["k=%d %svalues" % (k, label)] = values.d.copy()
    return res
