"""Cost of building (first forward + backward) and then running a static NNabla graph of
``F.convolution`` in ``cpu:half`` on (2, 1, 28, 28) by 4 5x5 kernels, alternating in one
process: ``A`` the convolution's backward folds traced through (``ops/_half_conv`` calling
``fold_matmul`` itself, before rmnnhalf41: the static plan's trace records ``dW``'s fold one
step per output position), ``B`` each fold one operator (``fold_matmul_op``).

    PYTHONPATH=src python benchmarks/nnabla_half_conv_static_ab.py [--size 28] [--rounds 2]

Each round runs A and B in a fresh process each (a static plan is cached by the graph's
structure, so a second build in one process would reuse the first's trace).  Prints each
run's build and run times and whether A's and B's ``W.g`` agree bit for bit.
"""

import argparse
import subprocess
import sys
import time

import numpy as np
import torch

import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as F
from stadyn.compat.nnabla.ext_utils import get_extension_context
from stadyn.ops import _half_conv
from stadyn.ops._half_matmul import fold_matmul


def _once(size):
    rs = np.random.RandomState(0)
    x = nn.Variable.from_numpy_array(rs.rand(2, 1, size, size).astype(np.float32))
    w = nn.Variable.from_numpy_array((rs.randn(4, 1, 5, 5) * 0.1).astype(np.float32),
                                     need_grad=True)
    with nn.context_scope(get_extension_context("cpu", type_config="half")):
        y = F.mean(F.convolution(x, w))
    start = time.perf_counter()
    y.forward()
    y.backward()
    build = time.perf_counter() - start
    w.grad.zero()
    start = time.perf_counter()
    y.forward()
    y.backward()
    return build, time.perf_counter() - start, w.g.copy()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=28)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--only", choices=("A", "B"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.only:
        if args.only == "A":
            _half_conv.fold_matmul_op = fold_matmul
        build, run, g = _once(args.size)
        print(f"{args.only}: build {build:.2f} s, run {run * 1e3:.1f} ms", flush=True)
        print(" ".join(repr(float(v)) for v in g.ravel()))
        return
    for r in range(args.rounds):
        grads = {}
        for label in ("A", "B"):
            out = subprocess.run([sys.executable, __file__, "--size", str(args.size),
                                  "--only", label], capture_output=True, text=True,
                                 check=True).stdout.splitlines()
            print(f"round {r} {out[0]}")
            grads[label] = out[1]
        print(f"round {r} W.g equal: {grads['A'] == grads['B']}")


if __name__ == "__main__":
    main()
