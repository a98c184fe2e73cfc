"""A/B of what a static plan's re-cast of half-cast parameters costs (halfstale41, merge
13231ad0: ``graph/_partition._recast_of_primal`` makes the backward cast each fp32 parameter a
half op reads again from the parameter, so a solver update between forward and backward is
seen, as NNabla 1.39 sees it).  ``A``: ``_recast_of_primal`` answering no (the backward takes
the forward's half copy as a residual, as before 13231ad0); ``B``: this tree.

    PYTHONPATH=src python benchmarks/half_recast_ab.py [--rounds 6] [--steps 30] [--threads 1]

Cases, each one training step of a static graph (forward, zero_grad, backward, update):
``half-mlp``: NNabla's ``cpu:half`` context (``get_extension_context('cpu',
type_config='half')``), an MLP 784-512-512-10 of ``PF.affine`` and ``F.relu`` on a batch of
32, softmax cross-entropy, ``Sgd``; ``bf16-mlp``: ``stadyn bench``'s ``mlp`` workload in
``static-bf16`` (the digits MLP 64-256-256-10, batch 16, Adam, a ``bfloat16`` context).  A
static plan is cached by the graph's structure, so each round runs A and B in a fresh process
each (the order alternating); a process builds both cases, warms them up and times ``steps``
steps of each by process CPU time.  Reports per case the median over rounds of the median
step, B/A, and whether A's and B's losses after the last step are equal bit for bit (the
re-cast reads the same parameter values here: no update comes between forward and backward).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def _half_mlp():
    import numpy as np

    import stadyn.compat.nnabla as nn
    import stadyn.compat.nnabla.functions as F
    import stadyn.compat.nnabla.parametric_functions as PF
    import stadyn.compat.nnabla.solvers as S
    from stadyn.compat.nnabla.ext_utils import get_extension_context

    rs = np.random.RandomState(0)
    nn.seed(0)
    with nn.context_scope(get_extension_context("cpu", type_config="half")):
        x = nn.Variable.from_numpy_array(rs.rand(32, 784).astype(np.float32))
        t = nn.Variable.from_numpy_array(rs.randint(0, 10, (32, 1)))
        h = F.relu(PF.affine(x, 512, name="fc1"))
        h = F.relu(PF.affine(h, 512, name="fc2"))
        loss = F.mean(F.softmax_cross_entropy(PF.affine(h, 10, name="out"), t))
        solver = S.Sgd(1e-2)
        solver.set_parameters(nn.get_parameters())

    def step():
        loss.forward(clear_no_need_grad=True)
        solver.zero_grad()
        loss.backward(clear_buffer=True)
        solver.update()
    return step, lambda: float(loss.d)


def _bf16_mlp():
    from stadyn.bench import WORKLOADS

    case = WORKLOADS["mlp"].stadyn_case("static-bf16")
    return case.step, lambda: None


CASES = {"half-mlp": _half_mlp, "bf16-mlp": _bf16_mlp}


def worker(variant: str, steps: int, warmup: int) -> None:
    if variant == "A":
        import stadyn.graph._partition as P
        P._recast_of_primal = lambda n, primals: False
    built = {name: make() for name, make in CASES.items()}
    times = {name: [] for name in built}
    for step, _ in built.values():
        for _ in range(warmup):
            step()
    for _ in range(steps):
        for name, (step, _) in built.items():
            start = time.process_time()
            step()
            times[name].append(time.process_time() - start)
    print(json.dumps({name: [statistics.median(t) * 1e3, built[name][1]()]
                      for name, t in times.items()}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--worker", choices=("A", "B"))
    args = ap.parse_args()
    if args.worker:
        import torch
        torch.set_num_threads(args.threads)
        worker(args.worker, args.steps, args.warmup)
        return
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads))
    results: dict = {"A": [], "B": []}
    load = [os.getloadavg()[0]]
    for r in range(args.rounds):
        for variant in ("AB" if r % 2 == 0 else "BA"):
            out = subprocess.run([sys.executable, __file__, "--worker", variant, "--steps",
                                  str(args.steps), "--warmup", str(args.warmup), "--threads",
                                  str(args.threads)], env=env, capture_output=True, text=True,
                                 check=True).stdout
            results[variant].append(json.loads(out.strip().splitlines()[-1]))
        load.append(os.getloadavg()[0])
    print(f"A: no re-cast (before 13231ad0), B: this tree; {args.rounds} rounds x {args.steps} "
          f"steps, {args.threads} thread(s), load average {min(load):.1f}-{max(load):.1f}")
    for name in CASES:
        a = statistics.median(x[name][0] for x in results["A"])
        b = statistics.median(x[name][0] for x in results["B"])
        per = [y[name][0] / x[name][0] for x, y in zip(results["A"], results["B"])]
        same = all(x[name][1] == y[name][1] for x, y in zip(results["A"], results["B"]))
        print(f"{name:9s} A {a:8.3f} ms  B {b:8.3f} ms  B/A {b / a:.3f} (rounds "
              f"{min(per):.3f}-{max(per):.3f})  last loss A == B: {same}")


if __name__ == "__main__":
    main()
