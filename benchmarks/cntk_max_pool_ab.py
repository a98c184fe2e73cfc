"""CNTK 2.7's max pooling (NaN passed by: ``F.max_pooling(..., rule="cntk")``, what compat.cntk
and BrainScript pool with) against torch's own ``max_pool2d``, side by side in one process:
forward and backward, eager and compiled (traced with ``make_fx`` and compiled by inductor as
``compile_step`` does it, after a ReLU, whose loop the NaN pass can join).  Prints the time per
step and the ratio to torch's for each; no NaN in the data (the common case).

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/cntk_max_pool_ab.py [--threads 1]
        [--rounds 30] [--no-compile]

Runs on older trees too (where ``stadyn.ops.kernels_as_torch_ops`` does not exist yet the
compiled program calls the kernel as one opaque operator), so the same command gives the
before and after figures.
"""

import argparse
import contextlib
import statistics
import time

import torch
import torch.nn.functional as TF
from torch.fx.experimental.proxy_tensor import make_fx

from stadyn.compile._kernels import keep_max_pooling
from stadyn.ops._picks import cntk_max_pool

try:
    from stadyn.ops import kernels_as_torch_ops
except ImportError:                      # before nanfid2: always the opaque kernel
    kernels_as_torch_ops = contextlib.nullcontext

SHAPES = [((16, 64, 32, 32), [2, 2], [2, 2], [0, 0]), ((16, 64, 32, 32), [3, 3], [2, 2], [1, 1])]


def torch_pool(x, k, s, p):
    return TF.max_pool2d(x, k, s, p)


def cntk_pool(x, k, s, p):
    return cntk_max_pool(x, k, s, p)


def step_fn(pool, k, s, p, relu):
    def step(x, g):
        x = x.detach().requires_grad_()
        y = pool(torch.relu(x) if relu else x, k, s, p)
        return (y,) + torch.autograd.grad(y, x, g)
    return step


def timed(fn, args, rounds):
    for _ in range(3):
        fn(*args)
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def compiled(step, args):
    from torch._inductor.compile_fx import compile_fx
    with torch.enable_grad(), kernels_as_torch_ops():
        gm = make_fx(step, tracing_mode="fake")(*args)
    keep_max_pooling(gm)                 # as compile_step does on the CPU
    return compile_fx(gm, list(args)), "cntk_max_pool" in gm.code


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--no-compile", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    for shape, k, s, p in SHAPES:
        x = torch.randn(shape)
        g = torch.randn(torch_pool(x, k, s, p).shape)
        row = {}
        with torch.enable_grad():
            for name, pool in (("torch", torch_pool), ("cntk", cntk_pool)):
                row["eager " + name] = timed(step_fn(pool, k, s, p, False), (x, g), a.rounds)
        opaque = None
        if not a.no_compile:
            for name, pool in (("torch", torch_pool), ("cntk", cntk_pool)):
                program, kept = compiled(step_fn(pool, k, s, p, True), (x, g))
                opaque = kept if name == "cntk" else opaque
                row["compiled relu+pool " + name] = timed(program, (x, g), a.rounds)
        print(f"{shape} window {k} stride {s} pad {p}, {a.threads} thread(s), fwd+bwd ms:")
        for mode in ("eager", "compiled relu+pool"):
            if mode + " torch" in row:
                t, c = row[mode + " torch"], row[mode + " cntk"]
                extra = "" if mode == "eager" else (" (CNTK's kernel opaque to inductor)"
                                                    if opaque else " (traced as torch ops)")
                print(f"  {mode:20s} torch {t:7.2f}  cntk {c:7.2f}  ratio {c / t:.2f}{extra}")


if __name__ == "__main__":
    main()
