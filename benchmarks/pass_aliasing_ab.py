"""A/B in one run: what a plan's split and passes cost with the alias analysis of
``graph/_aliases.py`` (B: this checkout) against a base commit (A: 5136b170, where the split
read views from the schema's annotations only and a backward judged its outputs' sharing
twice, before and after placing its buffers).

    PYTHONPATH=src python benchmarks/pass_aliasing_ab.py [--base 5136b170] [--layers 400]
                                                         [--rounds 5]

Each tree runs in a worker process of its own (the two alternate, ``rounds`` times each), which
traces the joint program of ``partition_write_edges_ab.py`` (imported from it: a residual stack
of ``layers`` steps of ``tanh(h @ w) + h``, here with a (512, 512) weight, so its gradient is a
product the backward writes into a buffer; about 12 ATen nodes a step) once and then times, by
process CPU time, what a plan's build does after the trace: ``partition``, ``plan_passes`` of
both programs and ``finish_backward``. Reports each tree's median over rounds, in milliseconds.
The results hold for the machine it runs on.
"""

import argparse
import io
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _worker(layers: int) -> None:
    import gc
    import time

    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    import stadyn as sd
    from stadyn.graph import partition, plan_passes
    from stadyn.graph._plan import finish_backward

    # The program partition_write_edges_ab.py splits (this script's folder is on sys.path).
    from partition_write_edges_ab import _joint

    joint = _joint(layers)
    x, w = torch.ones(8, 512), torch.ones(512, 512, requires_grad=True)
    gm = make_fx(joint, tracing_mode="fake")(x, w, torch.tensor(1.0))
    leaf = sd.Variable.from_numpy_array(w.detach().numpy(), need_grad=True)
    gc.disable()        # (as a plan's build runs: graph/_tracing.py collector_paused)
    times = []
    for _ in range(3):
        start = time.process_time()
        fw, bw, _ = partition(gm, 2, 1)
        plan_passes(fw)
        finish_backward(bw, [leaf])
        times.append(time.process_time() - start)
    print(min(times))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="5136b170")
    parser.add_argument("--layers", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        _worker(args.layers)
        return
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", ROOT, "archive", args.base, "src"],
                                 check=True, capture_output=True).stdout
        tarfile.open(fileobj=io.BytesIO(archive)).extractall(tmp)
        trees = {f"A {args.base}": os.path.join(tmp, "src"),
                 "B this tree": os.path.join(ROOT, "src")}
        times: dict = {label: [] for label in trees}
        for k in range(args.rounds):
            for label, src in list(trees.items())[::1 if k % 2 else -1]:
                env = dict(os.environ, PYTHONPATH=src)
                out = subprocess.run([sys.executable, __file__, "--worker", "--layers",
                                      str(args.layers)], env=env, check=True,
                                     capture_output=True, text=True).stdout
                times[label].append(float(out.split()[-1]))
    print(f"split + passes + finish_backward, {args.layers} layers, "
          f"median of {args.rounds} rounds (each the best of 3):")
    for label, ts in times.items():
        print(f"  {label}: {statistics.median(ts) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
