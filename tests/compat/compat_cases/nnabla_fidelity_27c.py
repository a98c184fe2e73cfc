"""NNabla 1.39 fidelity: ``Variable.clear_all_graph_links`` on an intermediate of a graph that
ran before, then a forward of the graph's root.

NNabla's next forward stops at the Variable whose links were cleared and reads the value held
there (what was written into it after included); the functions before it no longer run, so a
``mean_subtraction`` cut off so updates its running mean and count no more and no longer casts
its counter ``t`` to int32.  Stadyn's plan of the graph, built before, was kept (the graph
version did not move): the forward failed with a KeyError, and the cached walk of
``mean_subtraction``'s counters cast ``t`` again.
"""

import numpy as np

from compat_harness import nnabla_case

_F = "nnabla.functions."


@nnabla_case(names=["nnabla.Variable.clear_all_graph_links", "nnabla.Variable.forward",
                    _F + "mul_scalar", _F + "add_scalar"],
             note="x = [1, 1], h = mul_scalar(x, 2), y = add_scalar(h, 1); y.forward(); "
                  "h.clear_all_graph_links(); h.d = [10, 20]; y.forward(): y")
def clear_all_graph_links__a_forward_after_reads_the_value(nn, F, PF, r):
    r.touch("nnabla.Variable.clear_all_graph_links", "nnabla.Variable.forward")
    x = nn.Variable.from_numpy_array(np.ones((2,), np.float32))
    h = F.mul_scalar(x, 2.0)
    y = F.add_scalar(h, 1.0)
    y.forward()
    res = {"first": y.d.copy()}
    h.clear_all_graph_links()
    h.d = np.array([10.0, 20.0], np.float32)
    y.forward()
    res["after"] = y.d.copy()
    x.d = np.array([5.0, 6.0], np.float32)      # x no longer reaches y
    y.forward()
    res["x changed"] = y.d.copy()
    return res


@nnabla_case(names=["nnabla.Variable.clear_all_graph_links", "nnabla.Variable.forward",
                    _F + "mean_subtraction", _F + "add_scalar"],
             note="x ones (2, 3), mean zeros (3,), t = [2.7]; h = mean_subtraction(x, mean, "
                  "t), y = add_scalar(h, 1); y.forward(); h.clear_all_graph_links(); h.d = "
                  "10; t.data = NdArray [2.5] (float32); y.forward(): y, mean, t (its dtype "
                  "as a number: 1 for int32)")
def clear_all_graph_links__mean_subtraction_cut_off(nn, F, PF, r):
    r.touch("nnabla.Variable.clear_all_graph_links", "nnabla.Variable.forward")
    x = nn.Variable.from_numpy_array(np.ones((2, 3), np.float32))
    mean = nn.Variable.from_numpy_array(np.zeros(3, np.float32))
    t = nn.Variable.from_numpy_array(np.array([2.7], np.float32))
    h = F.mean_subtraction(x, mean, t)
    y = F.add_scalar(h, 1.0)
    y.forward()
    res = {"first: y": y.d.copy(), "first: mean": mean.d.copy(),
           "first: t": t.d.astype(np.float32),
           "first: t int32": np.array(t.d.dtype == np.int32)}
    h.clear_all_graph_links()
    h.d = np.full((2, 3), 10.0, np.float32)
    t.data = nn.NdArray.from_numpy_array(np.array([2.5], np.float32))
    y.forward()
    res.update({"after: y": y.d.copy(), "after: mean": mean.d.copy(),
                "after: t": t.d.astype(np.float32),
                "after: t int32": np.array(t.d.dtype == np.int32)})
    return res
