"""A/B of a recurrent CNTK model's per-run cost between two source trees: ``Function.eval``
and ``Trainer.train_minibatch`` of ``Recurrence(LSTM(64))`` + ``Dense`` over 8 sequences of
20 steps, by process CPU time.

    git worktree add --detach /tmp/a OLD && git worktree add --detach /tmp/b NEW
    python benchmarks/cntk_function_runs_ab.py /tmp/a/src /tmp/b/src --rounds 7 --steps 200

A recurrent Function and Trainer carry their recurrences' states from every run (CNTK's
sequence-begin flags: a later False flag goes on from the previous run), so this measures what
carrying costs on top of the run itself.  A round starts one process per tree (A, then B; the
order alternates between rounds); each builds the model, a Trainer (SGD) and the data from
``RandomState(0)``, warms up (``--warmup`` runs of each, so a graph whose plan pays gets it),
then times ``--steps`` runs of each case, the cases taking turns run by run, reading the
process CPU time around each run.  A round's figure for a case is its median run; the report
gives, per case, the median over rounds for each tree, B over A, and the median and spread
(min-max) of the rounds' own B/A.  ``OMP_NUM_THREADS=1`` unless ``--threads`` says otherwise.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CASES = ("eval", "eval-flagged", "train_minibatch")


def worker(steps: int, warmup: int, hidden: int, sequences: int, length: int) -> None:
    import numpy as np

    import stadyn.compat.cntk as C

    rs = np.random.RandomState(0)
    x = C.sequence.input_variable(16, name="x")
    y = C.sequence.input_variable(4, name="y")
    z = C.layers.Sequential([C.layers.Recurrence(C.layers.LSTM(hidden)), C.layers.Dense(4)])(x)
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.01))])
    xs = [rs.randn(length, 16).astype(np.float32) for _ in range(sequences)]
    ys = [np.eye(4, dtype=np.float32)[rs.randint(0, 4, length)] for _ in range(sequences)]
    flags = [False] * sequences
    runs = {"eval": lambda: z.eval({x: xs}),
            # a False flag: each sequence goes on from the previous eval's state
            "eval-flagged": lambda: z.eval(({x: xs}, flags)),
            "train_minibatch": lambda: trainer.train_minibatch({x: xs, y: ys})}
    for _ in range(warmup):
        for run in runs.values():
            run()
    times = {name: [] for name in runs}
    for _ in range(steps):
        for name, run in runs.items():
            start = time.process_time()
            run()
            times[name].append(time.process_time() - start)
    print(json.dumps({name: statistics.median(t) * 1e3 for name, t in times.items()}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="*", help="the two src/ folders, A then B")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=80)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--sequences", type=int, default=8)
    parser.add_argument("--length", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--worker", action="store_true")
    args = parser.parse_args()
    if args.worker:
        worker(args.steps, args.warmup, args.hidden, args.sequences, args.length)
        return
    if len(args.trees) != 2:
        parser.error("give two src/ folders")
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads),
               MKL_NUM_THREADS=str(args.threads))
    command = [sys.executable, __file__, "--worker", "--steps", str(args.steps), "--warmup",
               str(args.warmup), "--hidden", str(args.hidden), "--sequences",
               str(args.sequences), "--length", str(args.length)]
    results = {tree: [] for tree in args.trees}
    load = [os.getloadavg()[0]]
    for r in range(args.rounds):
        for tree in (args.trees if r % 2 == 0 else args.trees[::-1]):
            out = subprocess.run(command, env=dict(env, PYTHONPATH=tree), capture_output=True,
                                 text=True, check=True)
            results[tree].append(json.loads(out.stdout.strip().splitlines()[-1]))
        load.append(os.getloadavg()[0])
    a, b = args.trees
    print(f"A = {a}\nB = {b}\n{args.rounds} rounds x {args.steps} runs, {args.threads} "
          f"thread(s); LSTM({args.hidden}) + Dense over {args.sequences} sequences of "
          f"{args.length} steps; load average (1 min) {min(load):.1f}-{max(load):.1f} on "
          f"{os.cpu_count()} CPUs")
    print(f"{'case':<16} {'A ms cpu':>9} {'B ms cpu':>9} {'B/A':>6} {'median B/A':>10} "
          f"{'B/A per round':>16}")
    for case in CASES:
        ma = statistics.median(x[case] for x in results[a])
        mb = statistics.median(x[case] for x in results[b])
        per = [y[case] / x[case] for x, y in zip(results[a], results[b])]
        print(f"{case:<16} {ma:9.3f} {mb:9.3f} {mb / ma:6.3f} {statistics.median(per):10.3f} "
              f"{min(per):7.3f}-{max(per):.3f}")


if __name__ == "__main__":
    main()
