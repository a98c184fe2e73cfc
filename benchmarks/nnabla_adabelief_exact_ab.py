"""Cost of one NNabla ``AdaBelief`` (``--solver AMSBound``, ``RMSpropGraves``) update two
ways, alternating in one process: ``A`` torch's multi-tensor path (the functions of
``stadyn.solvers.functional``, the path before solv39, not bit-exact), ``B`` NNabla 1.39's
arithmetic in cache-sized NumPy blocks (``solvers/_float32_blocks.py``, the default on CPU
since solv39).  Sizes as ``nnabla_adam_exact_ab.py``.

    PYTHONPATH=src python benchmarks/nnabla_adabelief_exact_ab.py [--solver AdaBelief|AMSBound|...]
        [--steps 3] [--rounds 5]

Prints, per size, the median process CPU time and wall time of one update in ms, and the
largest difference between the two paths' parameters.
"""

import argparse

import numpy as np
import torch

import stadyn.solvers as S
from stadyn.solvers._float32_blocks import adabelief_blocks, adabound_blocks, rmsprop_graves_blocks

from nnabla_adam_exact_ab import SIZES, _state, timed_rounds


def _update(kind, state, solver="AdaBelief"):
    ps, gs, m, v = state[:4]
    if solver == "RMSpropGraves":
        d = [torch.zeros_like(p) for p in ps] if len(state) == 4 else state[4]
        state[4:] = [d]
        kw = dict(lr=1e-2, decay=0.95, momentum=0.9, eps=1e-4)
        if kind == "A":
            S.functional.rmsprop_graves(ps, gs, m, v, d, **kw)
        else:
            rmsprop_graves_blocks(ps, gs, m, v, d, **kw)
        return
    if solver == "AMSBound":
        v_max = [torch.zeros_like(p) for p in ps] if len(state) == 4 else state[4]
        state[4:] = [v_max]
        bounds = dict(step_size=1e-2, lower=1e-3, upper=1e2, beta1=0.9, beta2=0.999, eps=1e-8,
                      v_max=v_max)
        if kind == "A":
            S.functional.adabound(ps, gs, m, v, **bounds)
        else:
            adabound_blocks(ps, gs, m, v, **bounds)
        return
    if kind == "A":
        S.functional.adabelief(ps, gs, m, v, step_size=1e-2, sgd_step=0.0, bias2=0.05,
                               beta1=0.9, beta2=0.999, eps=1e-8)
    else:
        adabelief_blocks(ps, gs, m, v, step_size=1e-2, sgd=False, correction2=0.2236068,
                         beta1=0.9, beta2=0.999, eps=1e-8)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--solver", default="AdaBelief", choices=["AdaBelief", "AMSBound",
                                                                "RMSpropGraves"])
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    print("one %s update, ms (median of %d rounds of %d), torch %s, %d thread(s)"
          % (args.solver, args.rounds, args.steps, torch.__version__, torch.get_num_threads()))
    for name, shapes in SIZES.items():
        states = {k: list(_state(shapes)) for k in "AB"}
        cpu, wall = timed_rounds(states, lambda k, st: _update(k, st, args.solver), args.rounds,
                                 args.steps)
        diff = max(float((a - b).abs().max()) for a, b in zip(states["A"][0], states["B"][0]))
        n = sum(int(np.prod(s)) for s in shapes)
        print("%-10s %5.1f M  cpu A torch %7.1f  B blocks exact %7.1f | wall A %7.1f  B %7.1f"
              " | |A-B| <= %.2g" % (name, n / 1e6, *(cpu[k] for k in "AB"),
                                    *(wall[k] for k in "AB"), diff))


if __name__ == "__main__":
    main()
