"""How long a static graph of N functions takes to get ready, on Stadyn and NNabla 1.39.

    PYTHONPATH=src python benchmarks/plan_build.py [--ops 100 1000 5000] [--shared] \
        [--rounds 1] [--nnabla /work/peers/nnabla/bin/python] [--json OUT.json] \
        [--profile OPS]

The graph is a residual network written against NNabla's API, which both frameworks run
(NNabla's own ``nnabla`` package, Stadyn's ``stadyn.compat.nnabla``): residual blocks of
``PF.convolution`` (4 channels, 3x3, on 2 pictures of 4x4), ``PF.batch_normalization`` and
``F.relu`` twice, the sum with the block's input and a ReLU (7 functions a block), as many
blocks as make about ``N`` functions, then average pooling, ``PF.affine`` and
``F.softmax_cross_entropy``.  ``--shared`` gives every block the same parameters (one step of
a repeated block, a recurrence written out).  For each N and framework a fresh process (this
file is the worker too: ``--worker``, one thread) defines the graph (``define``; NNabla sets
each function up as it is added), runs its first ``forward()`` (``forward``: on Stadyn the plan
is lowered there) and first ``backward()``.  Times are process CPU seconds, which a loaded
machine disturbs less than wall time; the columns are medians over ``--rounds``.  ``ready``
is define + forward + backward: what a training program waits for before its first step ends;
``ratio`` is Stadyn's ``ready`` over NNabla's.  ``functions`` counts the graph's functions as
each framework sees them (NNabla's ``visit``, Stadyn's plan nodes), ``aten`` the ATen calls in
Stadyn's forward and backward programs, ``ms/aten`` Stadyn's forward (the build) per ATen call.

NNabla runs when ``--nnabla`` names a Python with NNabla 1.39 (by default the one ``make
bench-peers`` makes, or ``/work/peers/nnabla/bin/python``, when present); otherwise its columns
are left empty.

``--profile OPS`` builds one graph in this process under cProfile and prints where the build's
time went: the share of ``make_fx``'s trace (``_tracing.trace_fake``) and the top functions.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PEERS = (os.path.join(ROOT, ".venv-peers", "nnabla", "bin", "python"),   # make bench-peers'
         "/work/peers/nnabla/bin/python")
BATCH, CHANNELS, SIDE, CLASSES = 2, 4, 4, 10
PER_BLOCK = 7


def blocks_for(ops: int) -> int:
    """The number of residual blocks of a graph of about ``ops`` functions (at least one)."""
    return max(1, (ops - 4) // PER_BLOCK)


def define(nn, F, PF, blocks: int, shared: bool):
    """The training loss of the residual network (see the module docstring), with the
    parameters of ``nn``'s registry cleared first; the same code on both frameworks."""
    import numpy as np
    nn.clear_parameters()
    rng = np.random.RandomState(0)
    x = nn.Variable.from_numpy_array(rng.randn(BATCH, CHANNELS, SIDE, SIDE).astype(np.float32))
    t = nn.Variable.from_numpy_array(rng.randint(0, CLASSES, (BATCH, 1)).astype(np.int32))
    h = x
    for b in range(blocks):
        with nn.parameter_scope("block" if shared else f"block{b}"):
            r = h
            for layer in ("a", "b"):
                h = PF.convolution(h, CHANNELS, (3, 3), pad=(1, 1), name=f"conv_{layer}")
                h = PF.batch_normalization(h, name=f"bn_{layer}")
                if layer == "a":
                    h = F.relu(h)
            h = F.relu(h + r)
    y = PF.affine(F.average_pooling(h, (SIDE, SIDE)), CLASSES, name="classifier")
    return F.mean(F.softmax_cross_entropy(y, t))


def _functions(loss) -> int:
    """The number of functions NNabla's ``visit`` meets from ``loss``."""
    seen = []
    loss.visit(lambda f: seen.append(f))
    return len(seen)


def _worker(framework: str, blocks: int, shared: bool) -> None:
    """One measurement in this process; prints a line of JSON."""
    if framework == "stadyn":
        import torch
        torch.set_num_threads(1)
        import stadyn.compat.nnabla as nn
        import stadyn.compat.nnabla.functions as F
        import stadyn.compat.nnabla.parametric_functions as PF
    else:
        import nnabla as nn
        import nnabla.functions as F
        import nnabla.parametric_functions as PF
    t0 = time.process_time()
    loss = define(nn, F, PF, blocks, shared)
    t1 = time.process_time()
    loss.forward()
    t2 = time.process_time()
    loss.backward()
    t3 = time.process_time()
    row = {"define": t1 - t0, "forward": t2 - t1, "backward": t3 - t2,
           "functions": _functions(loss), "loss": float(loss.d)}
    if framework == "stadyn":
        plan = loss._plan
        programs = [plan.fw] + ([plan.bw] if plan.bw is not None else [])
        row["aten"] = sum(1 for gm in programs for n in gm.graph.nodes
                          if n.op == "call_function")
        row["functions"] = len(plan.nodes)
    print(json.dumps(row))


def _run(framework: str, python: str, blocks: int, shared: bool) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONHASHSEED="0")
    if framework == "stadyn":
        env["PYTHONPATH"] = os.path.join(ROOT, "src")
    command = [python, os.path.abspath(__file__), "--worker", framework, str(blocks)]
    out = subprocess.run(command + (["--shared"] if shared else []), env=env, cwd=ROOT,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _profile(ops: int, shared: bool) -> None:
    import cProfile
    import pstats
    import torch
    torch.set_num_threads(1)
    import stadyn.compat.nnabla as nn
    import stadyn.compat.nnabla.functions as F
    import stadyn.compat.nnabla.parametric_functions as PF
    loss = define(nn, F, PF, blocks_for(ops), shared)
    prof = cProfile.Profile()
    prof.enable()
    loss.forward()
    prof.disable()
    stats = pstats.Stats(prof)
    total = sum(row[3] for key, row in stats.stats.items() if key[2] == "forward"
                and key[0].endswith(os.path.join("graph", "_variable.py")))
    trace = sum(row[3] for key, row in stats.stats.items() if key[2] == "trace_fake")
    print(f"build {total:.2f} s under cProfile, of which make_fx's trace {trace:.2f} s "
          f"({100 * trace / max(total, 1e-9):.0f}%)")
    stats.sort_stats("cumulative").print_stats(30)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", nargs="+", type=int, default=[100, 1000, 5000])
    parser.add_argument("--shared", action="store_true",
                        help="every block with the same parameters")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--nnabla", help="a Python with NNabla 1.39 ('' for none)")
    parser.add_argument("--json", help="also write the medians here")
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--profile", type=int, metavar="OPS")
    args = parser.parse_args(argv)
    if args.worker:
        return _worker(args.worker[0], int(args.worker[1]), args.shared)
    if args.profile:
        return _profile(args.profile, args.shared)
    peer = args.nnabla if args.nnabla is not None else next(
        (p for p in PEERS if os.path.exists(p)), "")
    frameworks = [("stadyn", sys.executable)] + ([("nnabla", peer)] if peer else [])
    runs: dict = {}
    for _ in range(args.rounds):
        for ops in args.ops:
            for name, python in frameworks:   # alternating: a load falls on both alike
                runs.setdefault((ops, name), []).append(
                    _run(name, python, blocks_for(ops), args.shared))
    print("%6s %9s %6s %8s %8s %8s %8s %7s | %9s %8s %8s %8s | %6s   (process CPU s, 1 "
          "thread, median of %d)" % (
              "ops", "functions", "aten", "define", "forward", "backward", "ready", "ms/aten",
              "functions", "define", "forward", "ready", "ratio", args.rounds))
    print("%6s %9s %6s %8s %8s %8s %8s %7s | %9s %8s %8s %8s |" % (
        "", "Stadyn", "", "", "", "", "", "", "NNabla", "", "", ""))
    table = []
    for ops in args.ops:
        med = {name: {k: statistics.median(r[k] for r in runs[ops, name])
                      for k in runs[ops, name][0]} for name, _ in frameworks}
        for m in med.values():
            m["ready"] = m["define"] + m["forward"] + m["backward"]
        s, n = med["stadyn"], med.get("nnabla")
        line = "%6d %9d %6d %8.2f %8.2f %8.2f %8.2f %7.3f |" % (
            ops, s["functions"], s["aten"], s["define"], s["forward"], s["backward"],
            s["ready"], 1e3 * s["forward"] / s["aten"])
        if n is not None:
            line += " %9d %8.2f %8.2f %8.2f | %6.1f" % (
                n["functions"], n["define"], n["forward"], n["ready"], s["ready"] / n["ready"])
        print(line)
        table.append({"ops": ops, "shared": args.shared, "stadyn": s, "nnabla": n})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(table, f, indent=1)


if __name__ == "__main__":
    main()
