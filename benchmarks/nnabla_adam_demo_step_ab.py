"""How much of a ``stadyn demo`` training step NNabla's Adam update takes, three ways, a step of
each in turn in one process: ``A`` torch's fused Adam kernel (``solver.fused = True``), ``B``
nnhalf39's exact update as torch multi-tensor ops, ``C`` the exact update in NumPy blocks (the
default since rmF39).  The digits CNN of the demo (10.4 M parameters), batch 16, in ``static`` or
``dynamic`` mode.

    PYTHONPATH=src python benchmarks/nnabla_adam_demo_step_ab.py [--mode static] [--steps 12]

Prints the median process CPU time and wall time of a step (after the first) for each.
"""

import argparse
import statistics
import time

from stadyn.cli.demo import TrainingRun
from stadyn.io import load_digits_source

from nnabla_adam_exact_ab import blocks_refused


def _step(kind, run):
    run.solver.fused = kind == "A"
    with blocks_refused(kind == "B"):
        c0, w0 = time.process_time(), time.perf_counter()
        run.step()
        return (time.process_time() - c0) * 1e3, (time.perf_counter() - w0) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", default="static", choices=("static", "dynamic"))
    ap.add_argument("--steps", type=int, default=12)
    args = ap.parse_args()
    few = load_digits_source().subset(range(16 * (args.steps + 1)))
    runs = {k: TrainingRun(args.mode, few, 1, log=lambda line: None) for k in "ABC"}
    times = {k: [] for k in runs}
    for i in range(args.steps + 1):
        for k, run in runs.items():
            t = _step(k, run)
            if i:
                times[k].append(t)
    print("digits CNN %s step, ms (median of %d): cpu / wall" % (args.mode, args.steps))
    for k, name in zip("ABC", ("fused kernel", "torch exact (nnhalf39)", "NumPy blocks exact")):
        print("%s %-24s %7.1f / %7.1f" % (k, name, statistics.median(c for c, _ in times[k]),
                                         statistics.median(w for _, w in times[k])))


if __name__ == "__main__":
    main()
