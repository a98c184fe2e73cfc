"""Process CPU time of *building* CNTK models through ``stadyn.compat.cntk`` (no training).

    PYTHONPATH=src python benchmarks/cntk_build_time.py [--models lr mlp cifar lstm] \
        [--builds 5] [--rounds 3] [--tree PATH ...] [--profile MODEL]

Each model is built as a CNTK 2.7 script builds it: ``lr`` (CNTK 101: ``input_variable``,
``parameter``, ``times`` + bias, ``cross_entropy_with_softmax``, ``classification_error``),
``mlp`` (CNTK 102: two sigmoid ``Dense(50)`` under ``default_options``), ``cifar`` (the CIFAR-10
ConvNet of ``stadyn.bench._cntk_workload``: ``Sequential`` of ``Convolution``/``MaxPooling``/
``Dense``/``Dropout``), ``lstm`` (``Embedding`` + ``Recurrence(LSTM)`` + ``sequence.last`` +
``Dense`` on a sequence ``input_variable``).  Each model runs in a fresh process (this file is
the worker too: ``--worker``) with one thread; the process imports ``stadyn.compat.cntk``
(reported apart), builds the model once (``first``: what a user's first script pays), trains
one minibatch of 8 samples on it (``step``: the first ``Trainer.train_minibatch``, where the
static plan is traced) and then builds it ``--builds`` more times (``later``: the median).
With several ``--tree`` paths (source trees, each put first on ``PYTHONPATH`` as its ``src``)
the trees alternate within every round, so a shared machine's load falls on both alike; the
numbers are medians over the rounds.

``--profile MODEL`` runs cProfile over one first build in this process and prints the top
functions by cumulative time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

MODELS = ("lr", "mlp", "cifar", "lstm")


def _build(C, name):
    """Build one model with CNTK's calls; return its input, label, loss and metric."""
    if name == "lr":
        features = C.input_variable(2)
        label = C.input_variable(2)
        w = C.parameter(shape=(2, 2))
        b = C.parameter(shape=(2,))
        z = C.times(features, w) + b
    elif name == "mlp":
        features = C.input_variable(2)
        label = C.input_variable(2)
        with C.layers.default_options(init=C.layers.glorot_uniform(), activation=C.sigmoid):
            h = features
            for _ in range(2):
                h = C.layers.Dense(50)(h)
            z = C.layers.Dense(2, activation=None)(h)
    elif name == "cifar":
        features = C.input_variable((3, 32, 32))
        label = C.input_variable(10)
        scaled = C.element_times(C.constant(0.00390625), features)
        with C.layers.default_options(activation=C.relu, pad=True):
            z = C.layers.Sequential([
                C.layers.For(range(2), lambda: [
                    C.layers.Convolution((3, 3), 64),
                    C.layers.Convolution((3, 3), 64),
                    C.layers.MaxPooling((3, 3), (2, 2))]),
                C.layers.For(range(2), lambda i: [
                    C.layers.Dense([256, 128][i]),
                    C.layers.Dropout(0.5)]),
                C.layers.Dense(10, activation=None)])(scaled)
    elif name == "lstm":
        features = C.sequence.input_variable(50, is_sparse=True)
        label = C.input_variable(5)
        z = C.layers.Sequential([
            C.layers.Embedding(25),
            C.layers.Recurrence(C.layers.LSTM(25)),
            C.sequence.last,
            C.layers.Dense(5)])(features)
    else:
        raise SystemExit("unknown model %r" % name)
    return (features, label, C.cross_entropy_with_softmax(z, label),
            C.classification_error(z, label))


def _first_step(C, name, model):
    """One ``Trainer.train_minibatch`` on 8 samples (where Stadyn traces its plan)."""
    import numpy as np
    features, label, loss, metric = model
    rng = np.random.RandomState(0)
    if name == "lstm":
        x = [np.eye(50, dtype=np.float32)[rng.randint(0, 50, size=n)] for n in (3, 5, 2, 4) * 2]
    else:
        x = rng.rand(8, *features.shape).astype(np.float32)
    y = np.eye(label.shape[0], dtype=np.float32)[rng.randint(0, label.shape[0], size=8)]
    learner = C.sgd(loss.parameters, C.learning_parameter_schedule(0.1))
    C.Trainer(loss, (loss, metric), [learner]).train_minibatch({features: x, label: y})


def _worker(name, builds):
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    t0 = time.process_time()
    import torch
    torch.set_num_threads(1)
    t1 = time.process_time()
    import stadyn.compat.cntk as C
    t2 = time.process_time()
    model = _build(C, name)
    t3 = time.process_time()
    _first_step(C, name, model)
    t4 = time.process_time()
    later = []
    for _ in range(builds):
        s = time.process_time()
        _build(C, name)
        later.append(time.process_time() - s)
    print(json.dumps({"torch_import": t1 - t0, "import": t2 - t1, "first": t3 - t2,
                      "step": t4 - t3, "later": statistics.median(later) if later else None}))


def _run(tree, name, builds):
    env = dict(os.environ, OMP_NUM_THREADS="1",
               PYTHONPATH=os.path.join(os.path.abspath(tree), "src"))
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", name,
                          "--builds", str(builds)], env=env, capture_output=True, text=True,
                         check=True, cwd=os.path.abspath(tree))
    return json.loads(out.stdout.strip().splitlines()[-1])


def _profile(name):
    import cProfile
    import pstats
    import torch
    torch.set_num_threads(1)
    import stadyn.compat.cntk as C
    prof = cProfile.Profile()
    prof.enable()
    _build(C, name)
    prof.disable()
    pstats.Stats(prof).sort_stats("cumulative").print_stats(40)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--builds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tree", nargs="+",
                        default=[os.path.dirname(os.path.dirname(os.path.abspath(__file__)))])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--profile", choices=MODELS)
    args = parser.parse_args(argv)
    if args.worker:
        return _worker(args.worker, args.builds)
    if args.profile:
        return _profile(args.profile)
    results = {(t, m): [] for t in args.tree for m in args.models}
    for _ in range(args.rounds):
        for m in args.models:
            for t in args.tree:
                results[t, m].append(_run(t, m, args.builds))
    keys = ("import", "first", "step", "later")
    print("%-28s %-6s %9s %9s %9s %9s  (process CPU ms, 1 thread, median of %d rounds)"
          % (("tree", "model") + keys + (args.rounds,)))
    for (t, m), rows in results.items():
        med = [statistics.median(r[k] for r in rows) * 1e3 for k in keys]
        print("%-28s %-6s %9.1f %9.1f %9.1f %9.1f" % ((t[-28:], m) + tuple(med)))


if __name__ == "__main__":
    main()
