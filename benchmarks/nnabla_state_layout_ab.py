"""NNabla solvers' states end to end (``Solver._init_states``) vs each in a tensor of its own,
in one process: ``A`` the same solver with every state tensor cloned apart after
``set_parameters`` (the layout before), ``B`` as made; the rounds alternate A and B and the
parameters both leave must be bit for bit equal.

    PYTHONPATH=src python benchmarks/nnabla_state_layout_ab.py [--threads 1] [--rounds 9] \
        [--steps 5] [--sizes ConvNet 200x1K] [--solvers Momentum Adam Lamb]

Prints the median process CPU time of one ``weight_decay`` + ``update`` in ms and B/A.
"""

import argparse

import numpy as np
import torch

import stadyn as sd
import stadyn.solvers as S
from cntk_learner_exact_ab import SIZES
from nnabla_adam_exact_ab import timed_rounds

SOLVERS = {"Momentum": lambda: S.Momentum(0.01, 0.9), "Adam": lambda: S.Adam(1e-3),
           "RMSprop": lambda: S.RMSprop(1e-3), "Adamax": lambda: S.Adamax(1e-3),
           "Lamb": lambda: S.Lamb(1e-3), "AdaBelief": lambda: S.AdaBelief(1e-3)}


def _state(make, shapes, apart):
    rng = np.random.default_rng(0)
    params = {f"p{i}": sd.Variable.from_numpy_array(
        rng.standard_normal(s).astype(np.float32), need_grad=True)
        for i, s in enumerate(shapes)}
    for v in params.values():
        v.g = rng.standard_normal(v.shape).astype(np.float32) * 0.01
    solver = make()
    solver.set_parameters(params)
    if apart:
        for st in solver._states.values():
            for k, t in st.items():
                if isinstance(t, torch.Tensor):
                    st[k] = t.clone()
    return params, solver


def _update(_kind, state):
    _, solver = state
    solver.weight_decay(1e-4)
    solver.update()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--sizes", nargs="*", default=["ConvNet", "200x1K"])
    ap.add_argument("--solvers", nargs="*", default=list(SOLVERS))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print(f"{'solver':10s} {'size':8s} {'A apart':>8s} {'B e2e':>8s}   B/A")
    for name in args.solvers:
        for size in args.sizes:
            states = {"A": _state(SOLVERS[name], SIZES[size], True),
                      "B": _state(SOLVERS[name], SIZES[size], False)}
            cpu, _ = timed_rounds(states, _update, args.rounds, args.steps)
            pa, pb = states["A"][0], states["B"][0]
            assert all(pa[k].d.tobytes() == pb[k].d.tobytes() for k in pa), name
            print(f"{name:10s} {size:8s} {cpu['A']:8.2f} {cpu['B']:8.2f}   "
                  f"{cpu['B'] / cpu['A']:.2f}")


if __name__ == "__main__":
    main()
