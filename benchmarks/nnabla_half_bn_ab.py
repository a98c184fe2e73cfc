"""Cost of NNabla's ``F.batch_normalization`` in ``cpu:half`` (training, forward + backward),
alternating in one process: ``A`` the kernel Stadyn ran before nnhalfbn40 (float16 data
normalised in float32 and rounded once, float32 statistics: ``ops/_kernels.batch_norm_nnabla``
with the one-pass variance), ``B`` NNabla 1.39's CPU ``Half`` kernel, every step rounded to
float16 (``ops/_half_batch_norm.half_batch_norm``: NumPy float16 arithmetic and folds).  On a
float16 ``(batch, channels, 28, 28)`` input with float32 ``gamma``/``beta`` and running
statistics, as ``compat.nnabla`` hands them; the gradients of ``x``, ``gamma`` and ``beta``.

    PYTHONPATH=src python benchmarks/nnabla_half_bn_ab.py [--shape 64 16 28 28] [--rounds 5]
        [--reps 3] [--threads 1]

``--threads``: torch's intra-op threads (default 1: on a machine whose cores other processes
keep busy, a parallel region waits for its threads).  Prints the median wall time in ms.
"""

import argparse
import statistics
import time

import numpy as np
import torch

from stadyn.ops._half_batch_norm import half_batch_norm
from stadyn.ops._kernels import batch_norm_nnabla, batch_norm_update_running


def _a(x, g, b, rm, rv):
    y, m, v = batch_norm_nnabla(x, g, b, None, None, True, 1e-5, True)
    batch_norm_update_running(rm, rv, m, v, x.numel() // x.shape[1], 0.9)
    return y


def _b(x, g, b, rm, rv):
    return half_batch_norm(x, g, b, rm, rv, True, 1e-5, 0.9)


def _run(fn, x0, g0, b0, dy, reps):
    rm, rv = torch.zeros(g0.shape), torch.ones(g0.shape)
    start = time.perf_counter()
    for _ in range(reps):
        x = x0.detach().requires_grad_()
        g = g0.detach().requires_grad_()
        b = b0.detach().requires_grad_()
        y = fn(x, g, b, rm, rv)
        y.backward(dy)
        float(g.grad.reshape(-1)[0])
    return (time.perf_counter() - start) / reps * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", type=int, nargs=4, default=[64, 16, 28, 28])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    rs = np.random.RandomState(0)
    shape = args.shape
    x0 = torch.from_numpy((rs.randn(*shape) + 1.0).astype(np.float16))
    dy = torch.from_numpy(rs.randn(*shape).astype(np.float16))
    ps = (1, shape[1], 1, 1)
    g0 = torch.from_numpy((rs.rand(*ps) + 0.5).astype(np.float32))
    b0 = torch.from_numpy(rs.randn(*ps).astype(np.float32))
    times = {"A": [], "B": []}
    for _ in range(args.rounds):
        times["A"].append(_run(_a, x0, g0, b0, dy, args.reps))
        times["B"].append(_run(_b, x0, g0, b0, dy, args.reps))
    for k, label in (("A", "before (fp32, rounded once)"), ("B", "NNabla's Half kernel")):
        print("%s %-28s %8.2f ms" % (k, label, statistics.median(times[k])))


if __name__ == "__main__":
    main()
