"""CNTK 2.7's max pooling (NaN passed by: ``F.max_pooling(..., rule="cntk")``, what compat.cntk
and BrainScript pool with) against torch's own ``max_pool2d``, side by side in one process:
forward and backward, eager and compiled (a ReLU and the pooling, traced with ``make_fx`` and
compiled by inductor as ``compile_step`` does it: within ``kernels_as_torch_ops``, ATen's 2-d
pooling kept; CNTK's pooling stays its own operator there, whose kernel skips the NaN pass
where no maximum is NaN, so it is timed as the operator).  The variants run in
interleaved rounds (each round times each variant once; medians), so a busy machine slows all
alike.  Prints the time per step and the ratio to torch's; no NaN in the data (the common case).

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/cntk_max_pool_ab.py [--threads 1]
        [--rounds 40] [--no-compile] [--before OTHER_CHECKOUT]

``--before`` loads ``src/stadyn/ops/_picks.py`` of another checkout (an older commit, as
``git worktree add --detach /tmp/old a7dbedc3`` makes) beside this one's, its operators under
another namespace, and times it too ("cntk before"; compiled as it traces there: within
``kernels_as_torch_ops`` if that checkout has it, else as one opaque operator).
"""

import argparse
import contextlib
import os
import statistics
import sys
import time
import types

import torch
import torch.nn.functional as TF
from torch.fx.experimental.proxy_tensor import make_fx

import stadyn.ops._kernels
from stadyn.compile._kernels import keep_max_pooling
from stadyn.ops import _picks

SHAPES = [((16, 64, 32, 32), [2, 2], [2, 2], [0, 0]), ((16, 64, 32, 32), [3, 3], [2, 2], [1, 1])]


def load_before(checkout: str) -> types.ModuleType:
    """The other checkout's ``ops/_picks.py`` as a module (operators renamed)."""
    path = os.path.join(checkout, "src", "stadyn", "ops", "_picks.py")
    package = types.ModuleType("before_ops")
    package.__path__ = [os.path.dirname(path)]
    sys.modules["before_ops"] = package
    sys.modules["before_ops._kernels"] = stadyn.ops._kernels
    module = types.ModuleType("before_ops._picks")
    module.__package__ = "before_ops"
    with open(path) as f:
        source = f.read().replace("stadyn_kernels::", "stadyn_kernels_before::")
    exec(compile(source, path, "exec"), module.__dict__)
    return module


def pools(before):
    out = {"torch": lambda x, k, s, p: TF.max_pool2d(x, k, s, p),
           "cntk": lambda x, k, s, p: _picks.cntk_max_pool(x, k, s, p)}
    contexts = {"torch": contextlib.nullcontext, "cntk": _picks.kernels_as_torch_ops}
    if before is not None:
        out["cntk before"] = lambda x, k, s, p: before.cntk_max_pool(x, k, s, p)
        contexts["cntk before"] = getattr(before, "kernels_as_torch_ops",
                                          contextlib.nullcontext)
    return out, contexts


def step_fn(pool, k, s, p, relu):
    def step(x, g):
        x = x.detach().requires_grad_()
        y = pool(torch.relu(x) if relu else x, k, s, p)
        return (y,) + torch.autograd.grad(y, x, g)
    return step


def compiled(step, args, context):
    from torch._inductor.compile_fx import compile_fx
    with torch.enable_grad(), context():
        gm = make_fx(step, tracing_mode="fake")(*args)
    keep_max_pooling(gm)                 # as compile_step does on the CPU
    opaque = "cntk_max_pool.default" in gm.code
    return compile_fx(gm, list(args)), opaque


def interleaved(programs: dict, args, rounds: int) -> dict:
    for fn in programs.values():
        for _ in range(3):
            fn(*args)
    times = {name: [] for name in programs}
    for _ in range(rounds):
        for name, fn in programs.items():
            start = time.perf_counter()
            fn(*args)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) * 1e3 for name, t in times.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--before", default=None)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    variants, contexts = pools(load_before(a.before) if a.before else None)
    for shape, k, s, p in SHAPES:
        x = torch.randn(shape)
        g = torch.randn(TF.max_pool2d(x, k, s, p).shape)
        print(f"{shape} window {k} stride {s} pad {p}, {a.threads} thread(s), "
              f"forward + backward, ms (ratio to torch's):")
        with torch.enable_grad():
            eager = interleaved({n: step_fn(f, k, s, p, False) for n, f in variants.items()},
                                (x, g), a.rounds)
        print("  eager        " + "  ".join(f"{n} {t:6.2f} ({t / eager['torch']:.2f})"
                                            for n, t in eager.items()))
        if a.no_compile:
            continue
        programs, notes = {}, []
        for n, f in variants.items():
            programs[n], opaque = compiled(step_fn(f, k, s, p, True), (x, g), contexts[n])
            if n != "torch":
                notes.append(f"{n}: {'one opaque operator' if opaque else 'torch ops'}")
        done = interleaved(programs, (x, g), a.rounds)
        print("  compiled     " + "  ".join(f"{n} {t:6.2f} ({t / done['torch']:.2f})"
                                            for n, t in done.items())
              + "   [ReLU + pooling; " + "; ".join(notes) + "]")


if __name__ == "__main__":
    main()
