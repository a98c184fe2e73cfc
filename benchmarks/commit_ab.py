"""A/B of ``stadyn bench`` cases between two source trees (two commits) by process CPU time.

    git worktree add --detach /tmp/a OLD && git worktree add --detach /tmp/b NEW
    python benchmarks/commit_ab.py /tmp/a/src /tmp/b/src --cases mlp:static mlp:dynamic \
        mlp:torch-eager --rounds 10 --steps 40 --threads 1

Each case is ``workload:mode`` (a Stadyn mode of ``stadyn bench``, or ``torch-<mode>`` for the
PyTorch twin).  A round starts one process per tree (A, then B; the order alternates between
rounds); each builds every case from its own tree, warms them up, then times ``--steps`` steps
of each, the cases taking turns step by step, reading the process CPU time around each step.
A round's figure for a case is its median step; the report gives, per case, the median over
rounds for each tree, B over A, and the median and spread (min-max) of the rounds' own B/A
(the two processes of a round run back to back, under much the same load).  A one-thread
process's CPU time moves far less than its wall time on a machine shared with other jobs; the
PyTorch twin runs the same ATen kernels in both trees and shows what is left of the noise.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def worker(cases, steps, warmup):
    import torch

    from stadyn.bench import WORKLOADS

    built = []
    for spec in cases:
        name, mode = spec.split(":")
        w = WORKLOADS[name]
        case = (w.torch_case(mode[len("torch-"):]) if mode.startswith("torch-")
                else w.stadyn_case(mode))
        for _ in range(warmup):
            case.step()
        built.append((spec, case.step))
    times = {spec: [] for spec, _ in built}
    for _ in range(steps):
        for spec, step in built:
            start = time.process_time()
            step()
            times[spec].append(time.process_time() - start)
    print(json.dumps({spec: statistics.median(t) * 1e3 for spec, t in times.items()}))
    del torch


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="*", help="the two src/ folders, A then B")
    parser.add_argument("--cases", nargs="+", default=["mlp:static", "mlp:dynamic",
                                                        "mlp:torch-eager"])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--worker", action="store_true")
    args = parser.parse_args()
    if args.worker:
        worker(args.cases, args.steps, args.warmup)
        return
    if len(args.trees) != 2:
        parser.error("give two src/ folders")
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads),
               MKL_NUM_THREADS=str(args.threads))
    results = {tree: [] for tree in args.trees}
    load = [os.getloadavg()[0]]
    for r in range(args.rounds):
        for tree in (args.trees if r % 2 == 0 else args.trees[::-1]):
            out = subprocess.run(
                [sys.executable, __file__, "--worker", "--cases", *args.cases, "--steps",
                 str(args.steps), "--warmup", str(args.warmup)],
                env=dict(env, PYTHONPATH=tree), capture_output=True, text=True, check=True)
            results[tree].append(json.loads(out.stdout.strip().splitlines()[-1]))
        load.append(os.getloadavg()[0])
    a, b = args.trees
    print(f"A = {a}\nB = {b}\n{args.rounds} rounds x {args.steps} steps, {args.threads} "
          f"thread(s); load average (1 min) {min(load):.1f}-{max(load):.1f} on "
          f"{os.cpu_count()} CPUs")
    print(f"{'case':<22} {'A ms cpu':>9} {'B ms cpu':>9} {'B/A':>6} {'median B/A':>10} "
          f"{'B/A per round':>16}")
    for spec in args.cases:
        ma = statistics.median(x[spec] for x in results[a])
        mb = statistics.median(x[spec] for x in results[b])
        per = [y[spec] / x[spec] for x, y in zip(results[a], results[b])]
        print(f"{spec:<22} {ma:9.3f} {mb:9.3f} {mb / ma:6.3f} {statistics.median(per):10.3f} "
              f"{min(per):7.3f}-{max(per):.3f}")


if __name__ == "__main__":
    main()
