"""What nnabla-examples' language-modelling programs need beyond the MNIST ones: the PTB LSTM
(``language-modeling/lstm/train.py``) subclasses ``PF.LSTMCell``, zeroes its states through
``h.data.zero()`` and carries them from one forward to the next with ``h0.data = h.data``
(the two Variables share one array from then on); word2vec hands the monitor ``loss.d`` every
iteration, arrays that in NNabla all view the loss's buffer and so follow later forwards."""

import numpy as np

from compat_harness import nnabla_case

P = "nnabla.parametric_functions."
B, I, H = 2, 3, 4


@nnabla_case(names=[P + "LSTMCell", "nnabla.Variable.data", "nnabla.NdArray.zero"], rtol=1e-5)
def examples_lstm_carried_state(nn, F, PF, r):
    """The LSTM example's wrapper: states zeroed through ``.data.zero()``, the first step's
    states share the last step's arrays (``h0.data = h.data``), so each forward starts where
    the last one ended; ``reset_state`` zeroes the shared arrays."""
    r.touch("nnabla.Variable.data", "nnabla.NdArray.zero")
    cell = PF.LSTMCell(B, H, name="cell")
    h0, c0 = cell.h, cell.c
    h0.data.zero()
    c0.data.zero()
    res = {"states are nn.Variable": isinstance(h0, nn.Variable) and isinstance(c0, nn.Variable)}
    x = nn.Variable.from_numpy_array(r.randn(B, I))
    for _ in range(2):
        cell(x)
    res["params"] = r.set_params(nn.get_parameters(grad_only=False))
    h0.data = cell.h.data
    c0.data = cell.c.data
    for i in range(3):
        cell.h.forward()
        res["h %d" % i] = cell.h.d.copy()
        res["h0 %d" % i] = h0.d.copy()
    cell.reset_state()
    res["h0 after reset"] = h0.d.copy()
    cell.h.forward()
    res["h after reset"] = cell.h.d.copy()
    return res


@nnabla_case(names=["nnabla.Variable.data", "nnabla.Variable.d"])
def examples_shared_array_of_a_leaf(nn, F, PF, r):
    """``x.data = y.data`` between two leaves, and from a leaf to an op output: one array."""
    r.touch("nnabla.Variable.data", "nnabla.Variable.d")
    x = nn.Variable.from_numpy_array(r.randn(3).astype(np.float32))
    y = nn.Variable.from_numpy_array(r.randn(3).astype(np.float32))
    x.data = y.data
    y.d = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    res = {"x after y.d": x.d.copy()}
    x.d[0] = 7.0
    res["y after x.d[0]"] = y.d.copy()
    s = nn.Variable.from_numpy_array(np.zeros(3, dtype=np.float32))
    z = F.add_scalar(F.mul_scalar(s, 2.0), 1.0)
    s.data = z.data
    for i in range(3):
        z.forward()
        res["z %d" % i] = z.d.copy()
    return res


@nnabla_case(names=["nnabla.Variable.d", "nnabla.monitor.MonitorSeries",
                    "nnabla.monitor.MonitorSeries.add"])
def examples_handed_out_d_follows_forwards(nn, F, PF, r):
    """``loss.d`` kept (not copied) across training steps views the loss's buffer, which each
    forward overwrites: the kept arrays all show the last loss (word2vec's monitor, which
    averages them every ``interval`` iterations, writes the last loss)."""
    S = r.module("nnabla.solvers")
    M = r.module("nnabla.monitor")
    r.touch("nnabla.Variable.d", "nnabla.monitor.MonitorSeries.add")
    x = nn.Variable((4, 3))
    loss = F.mean(PF.affine(x, 2, name="fc") ** 2)
    solver = S.Sgd(0.1)
    solver.set_parameters(nn.get_parameters())
    res = {"params": r.set_params(nn.get_parameters())}
    kept, copies = [], []
    with r.tempdir() as folder:
        monitor = M.MonitorSeries("loss", M.Monitor(folder), interval=3, verbose=False)
        for i in range(3):
            x.d = r.randn(4, 3)
            loss.forward(clear_no_need_grad=True)
            solver.zero_grad()
            loss.backward(clear_buffer=True)
            solver.update()
            kept.append(loss.d)
            copies.append(loss.d.copy())
            monitor.add(i, loss.d)
        with open(folder + "/loss.series.txt") as f:
            res["monitor line"] = f.read().split()
    res["kept"] = np.array([float(k) for k in kept])
    res["copies"] = np.array([float(c) for c in copies])
    y = F.relu(x)
    y.forward()
    before = y.d
    x.d = r.randn(4, 3)
    y.forward()
    res["earlier y.d after forward"] = before.copy()
    res["y.d"] = y.d.copy()
    return res
