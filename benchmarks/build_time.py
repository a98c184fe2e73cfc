"""Build time of a static graph holding an unrolled recurrence: nnabla-examples' PTB LSTM.

    PYTHONPATH=src python benchmarks/build_time.py [--steps 5 10 20 35] [--rounds 1] \
        [--iterations 5] [--tree PATH ...] [--json OUT.json] [--profile STEPS]

The graph is the one ``language-modeling/lstm/train.py`` builds (its ``get_loss`` with
dropout, through ``stadyn.compat.nnabla``): ``PF.embed`` of each of ``STEPS`` words, two
``PF.LSTMCell`` layers, ``PF.affine`` to 10,000 words and ``F.softmax_cross_entropy`` per
step, unrolled ``STEPS`` times, at the size ``tests/examples/nnabla_examples_more.py`` runs it
(batch 4, state 16).  For each unroll length a fresh process (this file is the worker too:
``--worker``, one thread) defines the graph (``define``), runs the first ``loss.forward()``,
where the plan is lowered (``build``), its ``backward``, and then ``--iterations``
forward+backward pairs (``iteration``: the median); then train.py's validation graph on the
same parameters (``get_loss`` without dropout) and its first ``forward()`` (``eval build``).
Times are process CPU seconds, which a loaded machine disturbs less than wall time; ``nodes``
is the ATen node count of the training plan's forward and backward programs.  With
several ``--tree`` paths (source trees, each put first on ``PYTHONPATH`` as its ``src``) the
trees alternate within every round, so a shared machine's load falls on each alike; the
numbers are medians over the rounds.  ``build/step`` is the build's CPU seconds per unrolled
step: flat when the build scales linearly.

``--profile STEPS`` runs cProfile over one build in this process and prints the top functions
by cumulative time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

BATCH, STATE, WORDS = 4, 16, 10000


def _graph(steps, dropout=True, cells=None, made=None):
    """train.py's training graph (``get_loss(..., dropout=True)``) for ``steps`` words; with
    ``cells`` (the training graph's ``(l1, l2)``, which ``made`` receives: its parameters) and
    ``dropout=False``, its validation graph."""
    import numpy as np
    import stadyn.compat.nnabla as nn
    import stadyn.compat.nnabla.functions as F
    import stadyn.compat.nnabla.initializer as I
    import stadyn.compat.nnabla.parametric_functions as PF
    if cells is None:
        nn.clear_parameters()
    l1, l2 = cells or (PF.LSTMCell(BATCH, STATE), PF.LSTMCell(BATCH, STATE))
    drop = F.dropout if dropout else (lambda v, p: v)
    x, t = nn.Variable((BATCH, steps)), nn.Variable((BATCH, steps))
    w, b = I.UniformInitializer((-0.1, 0.1)), I.ConstantInitializer(1)
    loss = 0
    for e_t, t_t in zip([PF.embed(xe, WORDS, STATE, name="embed") for xe in F.split(x, axis=1)],
                        F.split(t, axis=1)):
        h1 = l1(drop(e_t, 0.5), w, b)
        h2 = l2(drop(h1, 0.5), w, b)
        y = PF.affine(drop(h2, 0.5), WORDS, name="pred")
        loss += F.mean(F.softmax_cross_entropy(y, F.reshape(t_t, [BATCH, 1])))
    loss /= float(steps)
    rng = np.random.RandomState(0)
    x.d, t.d = rng.randint(0, WORDS, (BATCH, steps)), rng.randint(0, WORDS, (BATCH, steps))
    if made is not None:
        made.extend((l1, l2))
    return loss


def _nodes(plan):
    programs = [plan.fw] + ([plan.bw] if plan.bw is not None else [])
    return sum(1 for gm in programs for n in gm.graph.nodes if n.op == "call_function")


def _worker(steps, iterations):
    import torch
    torch.set_num_threads(1)
    import stadyn.compat.nnabla  # noqa: F401 - imported before the clock starts
    t0 = time.process_time()
    cells = []
    loss = _graph(steps, made=cells)
    t1 = time.process_time()
    loss.forward()
    t2 = time.process_time()
    loss.backward(clear_buffer=True)
    t3 = time.process_time()
    pairs = []
    for _ in range(iterations):
        s = time.process_time()
        loss.forward()
        loss.backward(clear_buffer=True)
        pairs.append(time.process_time() - s)
    vloss = _graph(steps, dropout=False, cells=cells)
    t4 = time.process_time()
    vloss.forward()                 # the validation graph's build (after a training step)
    t5 = time.process_time()
    print(json.dumps({"define": t1 - t0, "build": t2 - t1, "first_backward": t3 - t2,
                      "iteration": statistics.median(pairs) if pairs else None,
                      "nodes": _nodes(loss._plan), "eval_build": t5 - t4}))


def _run(tree, steps, iterations):
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONHASHSEED="0",
               PYTHONPATH=os.path.join(os.path.abspath(tree), "src"))
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", str(steps),
                          "--iterations", str(iterations)], env=env, capture_output=True,
                         text=True, check=True, cwd=os.path.abspath(tree))
    return json.loads(out.stdout.strip().splitlines()[-1])


def _profile(steps):
    import cProfile
    import pstats
    import torch
    torch.set_num_threads(1)
    loss = _graph(steps)
    prof = cProfile.Profile()
    prof.enable()
    loss.forward()
    prof.disable()
    pstats.Stats(prof).sort_stats("cumulative").print_stats(40)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", nargs="+", type=int, default=[5, 10, 20, 35])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--tree", nargs="+",
                        default=[os.path.dirname(os.path.dirname(os.path.abspath(__file__)))])
    parser.add_argument("--json", help="also write the medians here")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--profile", type=int, metavar="STEPS")
    args = parser.parse_args(argv)
    if args.worker:
        return _worker(args.worker, args.iterations)
    if args.profile:
        return _profile(args.profile)
    runs = {(t, s): [] for t in args.tree for s in args.steps}
    for _ in range(args.rounds):
        for s in args.steps:
            for t in args.tree:
                runs[t, s].append(_run(t, s, args.iterations))
    keys = ("define", "build", "iteration", "nodes", "eval_build")
    print("%-28s %5s %8s %8s %10s %7s %10s %10s  (process CPU s, 1 thread, median of %d "
          "rounds)" % ("tree", "steps", "define", "build", "build/step", "nodes", "iteration",
                       "eval build", args.rounds))
    table = []
    for (t, s), rows in runs.items():
        med = {k: statistics.median(r[k] for r in rows) for k in keys}
        table.append({"tree": t, "steps": s, **med})
        print("%-28s %5d %8.2f %8.2f %10.3f %7d %10.4f %10.2f" % (
            t[-28:], s, med["define"], med["build"], med["build"] / s, med["nodes"],
            med["iteration"], med["eval_build"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(table, f, indent=1)


if __name__ == "__main__":
    main()
