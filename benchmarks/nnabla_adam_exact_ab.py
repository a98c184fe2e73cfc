"""Cost of one NNabla ``Adam`` update three ways, alternating in one process: ``A`` torch's fused
Adam kernel (``solver.fused = True``), ``B`` NNabla 1.39's float32 arithmetic as torch
multi-tensor ops (nnhalf39's default: a dozen whole-array passes, roots through NumPy per
tensor), ``C`` the same arithmetic in cache-sized NumPy blocks (``solvers/_float32_blocks.py``,
the default since rmF39).  Sizes: 1 M and 10 M parameters in one tensor, and the digits CNN of
``stadyn demo`` (10.4 M parameters in 52 tensors).

    PYTHONPATH=src python benchmarks/nnabla_adam_exact_ab.py [--steps 3] [--rounds 5]

Prints, per size, the median process CPU time and wall time of one update in ms, and whether B
and C left the same parameters bit for bit (and A's largest difference from them).
"""

import argparse
import contextlib
import statistics
import time

import numpy as np
import torch

import stadyn.solvers as S
import stadyn.solvers._functional_nnabla as nn_maths
from stadyn.solvers._float32_blocks import adam_blocks

CNN = ([(64, 1, 3, 3), (64,), (1, 64, 1, 1), (1, 64, 1, 1), (128, 64, 3, 3), (128,)]
       + [(1, 128, 1, 1)] * 2 + [(128, 128, 3, 3), (128,), (1, 128, 1, 1), (1, 128, 1, 1)] * 9
       + [(512, 128, 3, 3), (512,), (1, 512, 1, 1), (1, 512, 1, 1), (8192, 1024), (1024,),
          (1024, 10), (10,)])
SIZES = {"1M": [(1000, 1000)], "10M": [(1000, 10000)], "digits CNN": CNN}


def _state(shapes, seed=0):
    rs = np.random.RandomState(seed)
    ps = [torch.from_numpy(rs.randn(*s).astype(np.float32)) for s in shapes]
    gs = [torch.from_numpy(rs.randn(*s).astype(np.float32)) for s in shapes]
    return ps, gs, [torch.zeros_like(p) for p in ps], [torch.zeros_like(p) for p in ps]


@contextlib.contextmanager
def blocks_refused(refused):
    """While in it, ``adam_nnabla`` takes its torch multi-tensor path where ``refused`` (``B``),
    its NumPy blocks otherwise (``C``)."""
    nn_maths.adam_blocks = (lambda *a, **k: False) if refused else adam_blocks
    try:
        yield
    finally:
        nn_maths.adam_blocks = adam_blocks


def timed_rounds(states, update, rounds, steps):
    """``{kind: median ms}`` of process CPU time and of wall time of one ``update(kind,
    state)``, the kinds of ``states`` in turn for ``rounds`` rounds of ``steps`` updates."""
    cpu = {k: [] for k in states}
    wall = {k: [] for k in states}
    for _ in range(rounds):
        for k, st in states.items():
            c0, w0 = time.process_time(), time.perf_counter()
            for _ in range(steps):
                update(k, st)
            cpu[k].append((time.process_time() - c0) / steps * 1e3)
            wall[k].append((time.perf_counter() - w0) / steps * 1e3)
    return ({k: statistics.median(c) for k, c in cpu.items()},
            {k: statistics.median(w) for k, w in wall.items()})


def _update(kind, state):
    ps, gs, m, v = state
    kw = dict(step_size=1e-3, beta1=0.9, beta2=0.999, eps=1e-8)
    if kind == "A":
        S.functional.fused_adam(ps, gs, m, v, **kw)
        return
    with blocks_refused(kind == "B"):
        nn_maths.adam_nnabla(ps, gs, m, v, **kw)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    print("one Adam update, ms (median of %d rounds of %d), torch %s, %d thread(s)"
          % (args.rounds, args.steps, torch.__version__, torch.get_num_threads()))
    for name, shapes in SIZES.items():
        states = {k: _state(shapes) for k in "ABC"}
        cpu, wall = timed_rounds(states, _update, args.rounds, args.steps)
        same = all(torch.equal(b, c) for b, c in zip(states["B"][0], states["C"][0]))
        diff = max(float((a - c).abs().max()) for a, c in zip(states["A"][0], states["C"][0]))
        n = sum(int(np.prod(s)) for s in shapes)
        print("%-10s %5.1f M  cpu A fused %7.1f  B torch exact %7.1f  C blocks exact %7.1f | "
              "wall A %7.1f  B %7.1f  C %7.1f | B==C %s, |A-C| <= %.2g"
              % (name, n / 1e6, *(cpu[k] for k in "ABC"), *(wall[k] for k in "ABC"), same, diff))


if __name__ == "__main__":
    main()
