"""Cost of NNabla's ``F.affine`` and ``F.convolution`` in ``cpu:half`` for MNIST-sized layers,
alternating in one process: ``A`` the product Stadyn computed before nnhalf40b (the float16
operands multiplied in float32 and rounded once: ``ops/_kernels.linear``), ``B`` NNabla 1.39's
CPU kernel, each product and partial sum rounded to float16 (``ops/_half_matmul.fold_affine``:
a loop over the inner axis of float16 operations over the whole output).  One forward +
backward (``dx``, ``dW``, ``db``) of the kernel on float16 tensors, and of a dynamic NNabla
two-layer network (B only: the rule is what ``compat.nnabla`` passes); the same A/B for a
convolution of (batch, 1, 28, 28) by 16 5x5 kernels (``A`` ``ops/_kernels.convolution``, ``B``
``ops/_half_conv.fold_conv2d``).

    PYTHONPATH=src python benchmarks/nnabla_half_affine_ab.py [--batch 64] [--sizes 784 100 10]
        [--rounds 5] [--threads 1]

``--threads``: torch's intra-op threads (default 1: on a machine whose cores other processes
keep busy, a parallel region waits for its threads).  Prints the median wall time in ms.
"""

import argparse
import statistics
import time

import numpy as np
import torch

import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as F
import stadyn.compat.nnabla.parametric_functions as PF
from stadyn.compat.nnabla.ext_utils import get_extension_context
from stadyn.ops._half_conv import fold_conv2d
from stadyn.ops._half_matmul import fold_affine
from stadyn.ops._kernels import convolution, linear


def _conv_a(x, w, b):
    return convolution(torch.nn.functional.conv2d, x, w, b, 1, 0, 1, 1)


def _conv_b(x, w, b):
    return fold_conv2d(x, w, b, [1, 1], [0, 0], [1, 1], 1)


def _kernel(fn, x0, w0, b0, reps):
    start = time.perf_counter()
    for _ in range(reps):
        x = x0.detach().requires_grad_()
        w = w0.detach().requires_grad_()
        b = b0.detach().requires_grad_()
        y = fn(x, w, b)
        y.backward(torch.ones_like(y))
        float(w.grad.reshape(-1)[0])
    return (time.perf_counter() - start) / reps * 1e3


def _network(x0, sizes, half, reps):
    nn.set_auto_forward(True)
    nn.clear_parameters()
    x = nn.Variable.from_numpy_array(x0)
    start = time.perf_counter()
    for _ in range(reps):
        with nn.context_scope(half):
            h = F.relu(PF.affine(x, sizes[1], name="fc1"))
            y = F.mean(PF.affine(h, sizes[2], name="fc2"))
        y.backward(clear_buffer=True)
    nn.set_auto_forward(False)
    return (time.perf_counter() - start) / reps * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--sizes", type=int, nargs=3, default=[784, 100, 10])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    rs = np.random.RandomState(0)
    k, m = args.sizes[0], args.sizes[1]
    x0 = torch.from_numpy(rs.rand(args.batch, k).astype(np.float16))
    w0 = torch.from_numpy((rs.randn(k, m) * 0.05).astype(np.float16))
    b0 = torch.zeros(m, dtype=torch.float16)
    half = get_extension_context("cpu", type_config="half")
    xn = rs.rand(args.batch, k).astype(np.float32)
    xc = torch.from_numpy(rs.rand(args.batch, 1, 28, 28).astype(np.float16))
    wc = torch.from_numpy((rs.randn(16, 1, 5, 5) * 0.2).astype(np.float16))
    bc = torch.zeros(16, dtype=torch.float16)
    times = {"A kernel": [], "B kernel": [], "B network": [], "A conv": [], "B conv": []}
    for _ in range(args.rounds):
        times["A kernel"].append(_kernel(linear, x0, w0, b0, args.reps))
        times["B kernel"].append(_kernel(fold_affine, x0, w0, b0, args.reps))
        times["B network"].append(_network(xn, args.sizes, half, args.reps))
        times["A conv"].append(_kernel(_conv_a, xc, wc, bc, args.reps))
        times["B conv"].append(_kernel(_conv_b, xc, wc, bc, args.reps))
    print("batch %d, sizes %s, %d torch thread(s); median ms of forward + backward:"
          % (args.batch, args.sizes, args.threads))
    for key, ts in times.items():
        print("  %-10s %8.2f" % (key, statistics.median(ts)))


if __name__ == "__main__":
    main()
