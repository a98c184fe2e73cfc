"""A/B of a static plan's backward where it has many roots, between two source trees: what the
gradients of the roots another root reads (nnfix38, ``_intermediate_grads.roots_read``) cost.

    mkdir -p /tmp/a /tmp/b
    git archive a8693cb4 src | tar -x -C /tmp/a; git archive HEAD src | tar -x -C /tmp/b
    python benchmarks/roots_read_ab.py /tmp/a/src /tmp/b/src --roots 64 --rounds 5

Three graphs of ``--roots`` roots over one (8, 8) leaf: ``chain`` (h_k = tanh(h_{k-1}), all
of them ``forward_all``'s roots, each read by the next: the backward from the last keeps every
other's gradient), ``fan`` (``sink`` of ``sum(tanh(x) * k)``: no root reads another), and the
same ``chain`` with ``backward(clear_buffer=True)`` after each forward.  A round starts one
process per tree (the order alternating); each builds its graphs, warms them up and times
``--steps`` forward+backward steps (process CPU time, one thread), reporting the median step;
the report gives each tree's median over rounds and B/A.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def worker(n_roots, steps, warmup):
    import numpy as np
    import torch

    import stadyn as sd
    import stadyn.functions as F

    torch.set_num_threads(1)
    x = sd.Variable.from_numpy_array(np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8),
                                     need_grad=True)
    chain = [F.tanh(x)]
    for _ in range(n_roots - 1):
        chain.append(F.tanh(chain[-1]))
    last = F.sum(chain[-1])
    fan = F.sink(*[F.sum(F.tanh(x) * float(k)) for k in range(n_roots)])

    def chain_step(clear=False):
        sd.forward_all([*chain, last])
        last.backward(clear_buffer=clear)

    def fan_step():
        fan.forward()
        fan.backward()

    cases = {"chain": chain_step, "fan": fan_step,
             "chain clear_buffer": lambda: chain_step(True)}
    out = {}
    for name, step in cases.items():
        for _ in range(warmup):
            step()
        times = []
        for _ in range(steps):
            start = time.process_time()
            step()
            times.append(time.process_time() - start)
        out[name] = statistics.median(times) * 1e3
    print(json.dumps(out))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="*", help="the two src/ folders, A then B")
    parser.add_argument("--roots", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--worker", action="store_true")
    args = parser.parse_args()
    if args.worker:
        worker(args.roots, args.steps, args.warmup)
        return
    results = {"A": [], "B": []}
    for r in range(args.rounds):
        order = ("A", "B") if r % 2 == 0 else ("B", "A")
        for which in order:
            tree = args.trees[0 if which == "A" else 1]
            env = dict(os.environ, PYTHONPATH=tree, OMP_NUM_THREADS="1")
            got = subprocess.run([sys.executable, __file__, "--worker", "--roots",
                                  str(args.roots), "--steps", str(args.steps), "--warmup",
                                  str(args.warmup)], env=env, check=True, capture_output=True,
                                 text=True)
            results[which].append(json.loads(got.stdout.strip().splitlines()[-1]))
    for case in results["A"][0]:
        a = statistics.median(r[case] for r in results["A"])
        b = statistics.median(r[case] for r in results["B"])
        print(f"{case:20s} A {a:8.3f} ms  B {b:8.3f} ms  B/A {b / a:.3f}")


if __name__ == "__main__":
    main()
