"""Cost of NNabla's ``F.sum(x, axis=1)`` over a (64, 4096) float32 Variable made in
``cpu:half``, alternating in one process: ``A`` the float32 sum Stadyn computed before nnhalf40
(the op's ``computes_in_half`` rule switched off: its input stays float32, torch sums it),
``B`` NNabla 1.39's float16 fold, rounded after every addition (``ops/_half_sum.py``: NumPy's
``add.accumulate`` over the float16 values), ``C`` the fold as a loop of 4096 half additions
over the 64 kept elements (the kernel's path off the CPU), timed on the kernel alone.

    PYTHONPATH=src python benchmarks/nnabla_half_sum_ab.py [--shape 64 4096] [--rounds 5]
        [--threads 1]

``--threads``: torch's intra-op threads (default 1: on a machine whose cores other processes
keep busy, a parallel region waits for its threads, and a 64 x 4096 cast took 30 ms instead
of 0.1 ms).

Prints the median wall time in ms of one forward + backward, dynamic (the graph made each
time) and static (built once; each static measurement in a process of its own, as a static
plan lowered for A would be reused for B: the plans are cached per op and shape, and the rule
is switched off behind their back), and of one kernel call, for A, B and C.
"""

import argparse
import statistics
import subprocess
import sys
import time

import numpy as np
import torch

import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as F
from stadyn.compat.nnabla.ext_utils import get_extension_context
from stadyn.ops import CATALOG
from stadyn.ops._half_sum import _fold_impl

SPEC = CATALOG["sum"]
RULE = SPEC.computes_in_half


def _dynamic(x0, half, reps):
    nn.set_auto_forward(True)
    x = nn.Variable.from_numpy_array(x0, need_grad=True)
    start = time.perf_counter()
    for _ in range(reps):
        with nn.context_scope(half):
            y = F.sum(x, axis=1)
        y.backward(clear_buffer=True)
        float(x.g[0, 0])
    nn.set_auto_forward(False)
    return (time.perf_counter() - start) / reps * 1e3


def _static(x0, half, reps):
    x = nn.Variable.from_numpy_array(x0, need_grad=True)
    with nn.context_scope(half):
        y = F.sum(x, axis=1)
    y.forward()
    y.backward()
    start = time.perf_counter()
    for i in range(reps):
        x.d[0, 0] = i            # a new value, so the plan cannot keep the last forward's
        y.forward()
        y.backward()
        float(y.d[0]) + float(x.g[0, 0])     # read: the plan runs when its results are read
    return (time.perf_counter() - start) / reps * 1e3


def _kernel(x16, loop, reps):
    start = time.perf_counter()
    for _ in range(reps):
        if loop:
            acc = x16[:, 0].clone()
            for j in range(1, x16.shape[1]):
                acc = acc + x16[:, j]
        else:
            _fold_impl(x16)
    return (time.perf_counter() - start) / reps * 1e3


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shape", type=int, nargs=2, default=(64, 4096))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--static-one", choices=("A", "B"), help=argparse.SUPPRESS)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    half = get_extension_context("cpu", type_config="half")
    x0 = np.random.RandomState(0).rand(*a.shape).astype(np.float32)
    if a.static_one:
        SPEC.computes_in_half = None if a.static_one == "A" else RULE
        print(_static(x0, half, a.reps))
        return
    x16 = torch.from_numpy(x0).half()
    times = {}
    for _ in range(a.rounds):
        for variant in ("A", "B"):
            SPEC.computes_in_half = None if variant == "A" else RULE
            times.setdefault(variant + " dynamic", []).append(_dynamic(x0, half, a.reps))
            out = subprocess.run(
                [sys.executable, __file__, "--static-one", variant, "--threads", str(a.threads),
                 "--reps", str(a.reps), "--shape", *map(str, a.shape)],
                check=True, capture_output=True, text=True).stdout
            times.setdefault(variant + " static", []).append(float(out.split()[-1]))
        SPEC.computes_in_half = RULE
        times.setdefault("B kernel (NumPy fold)", []).append(_kernel(x16, False, a.reps))
        times.setdefault("C kernel (torch loop)", []).append(_kernel(x16, True, 1))
    print("F.sum(x, axis=1), x %s in cpu:half; median of %d rounds, ms per forward+backward"
          % (tuple(a.shape), a.rounds))
    for k in sorted(times):
        print("  %-24s %8.3f" % (k, statistics.median(times[k])))


if __name__ == "__main__":
    main()
