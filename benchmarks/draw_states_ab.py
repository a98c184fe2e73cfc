"""A/B: what noting the generators' states before each static forward costs
(``graph/_draw_states.py: keep``), between two source trees, in a chain of 100 dropouts on a
(4, 16) input -- compat.nnabla's Variables and Stadyn's own (the front ends other than NNabla's,
a CNTK ``Trainer`` among them), each with a seed per dropout and with ``seed=-1``.

    git worktree add --detach /tmp/a OLD
    python benchmarks/draw_states_ab.py /tmp/a/src src [--rounds 6] [--steps 300]

A round starts one process per tree (the order alternating between rounds); each times
``loss.forward()`` with ``keep`` as it is and with ``keep`` replaced by a no-op (what noting
costs on top of the forward), by process CPU time, the two taking turns.  The report gives, per
case and tree, the median over rounds of each figure (microseconds per forward).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CASES = ["nnabla seeded", "nnabla seed=-1", "stadyn seeded", "stadyn seed=-1"]


def worker(steps):
    import numpy as np

    import stadyn.graph._runner as R

    def chain(front, seeded):
        if front == "nnabla":
            import stadyn.compat.nnabla as nn
            import stadyn.compat.nnabla.functions as F
            x = nn.Variable.from_numpy_array(np.ones((4, 16), np.float32), need_grad=True)
        else:
            import stadyn as sd
            import stadyn.functions as F
            x = sd.Variable.from_numpy_array(np.ones((4, 16), np.float32), need_grad=True)
        h = x
        for i in range(100):
            h = F.dropout(h, 0.1, seed=i + 1) if seeded else F.dropout(h, 0.1)
        return F.sum(h)

    def timed(loss, n):
        t = time.process_time()
        for _ in range(n):
            loss.forward()
        return (time.process_time() - t) / n * 1e6

    real, out = R.keep, {}
    for case in CASES:
        front, how = case.split(" ")
        loss = chain(front, how == "seeded")
        for _ in range(30):
            loss.forward()
        on, off = [], []
        for _ in range(4):
            R.keep = real
            on.append(timed(loss, steps // 4))
            R.keep = lambda found: None
            off.append(timed(loss, steps // 4))
        R.keep = real
        out[case] = (min(on), min(on) - min(off))
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--steps", type=int, default=300)
    args = ap.parse_args()
    seen = {"A": [], "B": []}
    for k in range(args.rounds):
        order = [("A", args.a), ("B", args.b)][:: 1 if k % 2 == 0 else -1]
        for tag, src in order:
            env = dict(os.environ, PYTHONPATH=src, OMP_NUM_THREADS="1")
            run = subprocess.run([sys.executable, "-W", "ignore", __file__, "--worker",
                                  str(args.steps)], env=env, capture_output=True, text=True,
                                 check=True)
            seen[tag].append(json.loads(run.stdout.strip().splitlines()[-1]))
    print(f"{'case':16} {'tree':4} {'forward us':>11} {'keep us':>8}")
    for case in CASES:
        for tag in "AB":
            fw = statistics.median(r[case][0] for r in seen[tag])
            kp = statistics.median(r[case][1] for r in seen[tag])
            print(f"{case:16} {tag:4} {fw:11.0f} {kp:8.0f}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(int(sys.argv[2]))
    else:
        main()
