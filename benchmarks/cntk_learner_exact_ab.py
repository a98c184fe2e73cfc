"""Cost of one update of each CNTK learner two ways, alternating in one process: ``A`` the torch
multi-tensor path the learners took before cntksolv40 (``solvers/_functional.py``: fused
``add_(alpha=)``, torch's float32 ``sqrt``), ``B`` CNTK 2.7's float32 arithmetic in cache-sized
NumPy blocks (``solvers/_cntk_cpu.py``, the default now; bit for bit with CNTK's CPU
learners, ``tests/compat/compat_cases/cntk_fidelity_40.py``).  Sizes: 1 M parameters in one
tensor, the digits CNN's 10.4 M in 52 tensors, CNTK's CIFAR-10 ConvNet (1.2 M in 14 tensors),
and 200 tensors of 1000 values (the worst case for the blocks: their cost per tensor is
Python's), float32, with L2 regularisation on and off.

    PYTHONPATH=src python benchmarks/cntk_learner_exact_ab.py [--steps 3] [--rounds 5] \
        [--only adam ...]
        [--sizes 1M ...] [--threads 1]

Prints, per learner and size, the median process CPU time and wall time of one
``learner.update(M)`` in ms (gradient copy, L2 and the rule) and the largest difference between
the parameters A and B left (a few units in the last place).
"""

import argparse
import contextlib
import statistics
import time

import numpy as np
import torch

import stadyn as sd
import stadyn.learners as L
from stadyn.solvers import functional as Fn

BLOCK_RULES = ["sgd_cntk", "momentum_cntk", "adam_cntk", "fsadagrad_cntk", "adagrad_cntk",
               "rmsprop_cntk", "adadelta_cntk", "l2_cntk"]
# the digits CNN of ``stadyn demo`` (10.4 M parameters in 52 tensors), as
# benchmarks/nnabla_adam_exact_ab.py times NNabla's Adam on it
CNN = ([(64, 1, 3, 3), (64,), (1, 64, 1, 1), (1, 64, 1, 1), (128, 64, 3, 3), (128,)]
       + [(1, 128, 1, 1)] * 2 + [(128, 128, 3, 3), (128,), (1, 128, 1, 1), (1, 128, 1, 1)] * 9
       + [(512, 128, 3, 3), (512,), (1, 512, 1, 1), (1, 512, 1, 1), (8192, 1024), (1024,),
          (1024, 10), (10,)])
# CNTK's CIFAR-10 ConvNet (Examples/Image/Classification/ConvNet/Python/ConvNet_CIFAR10.py:
# four 3x3 convolutions of 64 channels, Dense 256, 128, 10; 1.2 M parameters in 14 tensors),
# trained there by momentum_sgd with L2
CONVNET = ([(64, 3, 3, 3), (64, 1, 1)] + [(64, 64, 3, 3), (64, 1, 1)] * 3
           + [(64, 8, 8, 256), (256,), (256, 128), (128,), (128, 10), (10,)])
SIZES = {"1M": [(1000, 1000)], "CNN": CNN, "ConvNet": CONVNET, "200x1K": [(1000,)] * 200}
LEARNERS = {
    "sgd": lambda p, **kw: L.sgd(p, 0.01, **kw),
    "momentum_sgd": lambda p, **kw: L.momentum_sgd(p, 0.01, 0.9, **kw),
    "nesterov": lambda p, **kw: L.nesterov(p, 0.01, 0.9, **kw),
    "adam": lambda p, **kw: L.adam(p, 0.01, 0.9, **kw),
    "adamax": lambda p, **kw: L.adam(p, 0.01, 0.9, adamax=True, **kw),
    "fsadagrad": lambda p, **kw: L.fsadagrad(p, 0.01, 0.9, **kw),
    "adagrad": lambda p, **kw: L.adagrad(p, 0.01, **kw),
    "adadelta": lambda p, **kw: L.adadelta(p, 0.01, **kw),
    "rmsprop": lambda p, **kw: L.rmsprop(p, 0.01, 0.95, 1.2, 0.7, 10.0, 0.001, **kw),
}


@contextlib.contextmanager
def blocks_refused(refused):
    """While in it, the learners take their torch path where ``refused`` (``A``), CNTK's float
    blocks otherwise (``B``)."""
    saved = {k: getattr(Fn, k) for k in BLOCK_RULES}
    if refused:
        for k in BLOCK_RULES:
            setattr(Fn, k, lambda *a, **kw: False)
    try:
        yield
    finally:
        for k, f in saved.items():
            setattr(Fn, k, f)


def _state(make, shapes, l2, seed=0):
    rs = np.random.RandomState(seed)
    ps = [sd.Variable.from_numpy_array(rs.randn(*s).astype(np.float32), need_grad=True)
          for s in shapes]
    for p in ps:
        p.grad = torch.from_numpy(rs.randn(*p.shape).astype(np.float32))
    return ps, make(ps, l2_regularization_weight=l2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", nargs="*", help="learners to time (default: all)")
    ap.add_argument("--sizes", nargs="*", help="sizes to time (default: all)")
    ap.add_argument("--threads", type=int, help="torch.set_num_threads (default: torch's)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print("one CNTK learner update, ms (median of %d rounds of %d), torch %s, %d thread(s)"
          % (args.rounds, args.steps, torch.__version__, torch.get_num_threads()))
    for name, make in LEARNERS.items():
        if args.only and name not in args.only:
            continue
        for size, shapes in SIZES.items():
            if args.sizes and size not in args.sizes:
                continue
            for l2 in (0.0, 1e-4):
                states = {k: _state(make, shapes, l2) for k in "AB"}
                cpu = {k: [] for k in "AB"}
                wall = {k: [] for k in "AB"}
                for _ in range(args.rounds):
                    for k, (_, learner) in states.items():
                        with blocks_refused(k == "A"):
                            c0, w0 = time.process_time(), time.perf_counter()
                            for _ in range(args.steps):
                                learner.update(32)
                            cpu[k].append((time.process_time() - c0) / args.steps * 1e3)
                            wall[k].append((time.perf_counter() - w0) / args.steps * 1e3)
                diff = max(float(np.abs(a.d - b.d).max())
                           for a, b in zip(states["A"][0], states["B"][0]))
                print("%-13s %-6s l2=%-6g cpu A torch %7.1f  B blocks %7.1f | wall A %7.1f  "
                      "B %7.1f | |A-B| <= %.2g"
                      % (name, size, l2, statistics.median(cpu["A"]),
                         statistics.median(cpu["B"]), statistics.median(wall["A"]),
                         statistics.median(wall["B"]), diff))


if __name__ == "__main__":
    main()
