"""Per-minibatch cost of ``Trainer.train_minibatch`` on CNTK's tutorial models: Stadyn's CNTK
layer against CNTK 2.7 itself, the same program and the same data.

    PYTHONPATH=src python benchmarks/cntk_tutorial_overhead.py [--models lr mlp] \
        [--steps 800] [--rounds 5] [--cntk-python PATH] [--cntk-libs DIR]

Each model is trained the way CNTK 101 (``lr``: ``C.times`` + bias, 2 -> 2) and CNTK 102
(``mlp``: two sigmoid ``Dense(50)`` layers under ``default_options``) do: SGD at 0.5 on
minibatches of 25 points, ``trainer.previous_minibatch_loss_average`` and ``..._evaluation_average``
read every 50 minibatches.  The minibatches are drawn before the clock starts, from NumPy's
``RandomState(0)`` (the same numbers in both Pythons).  Each framework runs in its own process
(this file is the worker too: ``--worker cntk|stadyn``), one thread each (``OMP_NUM_THREADS=1``;
``--threads default`` leaves it unset), and ``--rounds`` rounds alternate between them.
Reported (medians over the rounds): the process CPU time of building the model and Trainer and
of the first minibatch (where Stadyn traces its plan), the CPU and wall time per minibatch after
a warm-up of 50, and Stadyn's per-minibatch CPU time over CNTK's.  On a machine shared with
other jobs the CPU time of a one-thread process moves far less than its wall time, so the ratio
is of CPU times.

CNTK's Python is ``--cntk-python`` (default: ``$CNTK_PYTHON`` or
/work/peers/cntk27/venv36/bin/python) with ``--cntk-libs`` on ``LD_LIBRARY_PATH`` (default:
``$CNTK_LIBS`` or /work/peers/cntk27/shimlib); without it only Stadyn runs.
"""

from __future__ import print_function

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

FREQUENCY = 50          # the tutorials print every 50 minibatches


def _data(steps, minibatch):
    """The tutorials' two Gaussian classes of 2-D points, one-hot labels."""
    rng = np.random.RandomState(0)
    batches = []
    for _ in range(steps):
        y = rng.randint(size=(minibatch, 1), low=0, high=2)
        x = ((rng.randn(minibatch, 2) + 3) * (y + 1)).astype(np.float32)
        batches.append((x, np.hstack([y == 0, y == 1]).astype(np.float32)))
    return batches


def _model(C, name, features):
    if name == "lr":
        w = C.parameter(shape=(2, 2))
        b = C.parameter(shape=(2,))
        return C.times(features, w) + b
    with C.layers.default_options(init=C.layers.glorot_uniform(), activation=C.sigmoid):
        h = features
        for _ in range(2):
            h = C.layers.Dense(50)(h)
        return C.layers.Dense(2, activation=None)(h)


def worker(framework, name, steps, minibatch):
    """Train ``steps`` minibatches (after a warm-up) and print one JSON line of timings."""
    if framework == "cntk":
        import cntk as C
    else:
        import stadyn.compat.cntk as C
    C.cntk_py.set_fixed_random_seed(1)
    build = time.process_time()
    features, labels = C.input_variable(2, np.float32), C.input_variable(2, np.float32)
    z = _model(C, name, features)
    loss = C.cross_entropy_with_softmax(z, labels)
    error = C.classification_error(z, labels)
    trainer = C.Trainer(z, (loss, error),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.5))])
    build = time.process_time() - build
    batches = _data(steps, minibatch)
    read = []

    def train(part):
        for i, (x, y) in enumerate(part):
            trainer.train_minibatch({features: x, labels: y})
            if i % FREQUENCY == 0:
                read.append((trainer.previous_minibatch_loss_average,
                             trainer.previous_minibatch_evaluation_average))

    first = time.process_time()
    train(batches[:1])                                    # Stadyn traces its plan here
    first = time.process_time() - first
    train(batches[1:50])                                  # warm-up: allocations
    cpu, wall = time.process_time(), time.perf_counter()
    train(batches)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    print(json.dumps({"build_ms": build * 1e3, "first_ms": first * 1e3,
                      "cpu_us": cpu / steps * 1e6, "wall_us": wall / steps * 1e6,
                      "last_loss": read[-1][0]}))


def _run(command, env):
    out = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True)
    if out.returncode != 0:
        raise SystemExit("failed: {}\n{}".format(" ".join(command), out.stderr[-3000:]))
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", choices=["cntk", "stadyn"])
    parser.add_argument("--models", nargs="+", default=["lr", "mlp"], choices=["lr", "mlp"])
    parser.add_argument("--steps", type=int, default=800)
    parser.add_argument("--minibatch", type=int, default=25)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", default="1",
                        help="OMP_NUM_THREADS of both (default 1; 'default': left unset, so "
                             "each framework takes every core)")
    parser.add_argument("--cntk-python", default=os.environ.get(
        "CNTK_PYTHON", "/work/peers/cntk27/venv36/bin/python"))
    parser.add_argument("--cntk-libs", default=os.environ.get(
        "CNTK_LIBS", "/work/peers/cntk27/shimlib"))
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.models[0], args.steps, args.minibatch)
        return
    env = dict(os.environ)
    if args.threads != "default":
        env.update(OMP_NUM_THREADS=args.threads, MKL_NUM_THREADS=args.threads)
    else:
        env.pop("OMP_NUM_THREADS", None)
        env.pop("MKL_NUM_THREADS", None)
    cntk_env = dict(env, LD_LIBRARY_PATH=args.cntk_libs)
    have_cntk = os.path.exists(args.cntk_python)
    if not have_cntk:
        print("(no CNTK at {}: Stadyn only)".format(args.cntk_python))
    print("load average: {:.2f} {:.2f} {:.2f}; threads: {}".format(*os.getloadavg(),
                                                                   args.threads))
    print("{:<5} {:>6} {:>15} {:>15} {:>15} {:>15} {:>9}".format(
        "model", "", "build ms cpu", "1st step ms cpu", "step us cpu", "step us wall",
        "cpu ratio"))
    for name in args.models:
        common = [__file__, "--models", name, "--steps", str(args.steps),
                  "--minibatch", str(args.minibatch)]
        ours, theirs = [], []
        for _ in range(args.rounds):
            ours.append(_run([sys.executable] + common + ["--worker", "stadyn"], env))
            if have_cntk:
                theirs.append(_run([args.cntk_python, "-W", "ignore"] + common
                                   + ["--worker", "cntk"], cntk_env))

        def median(runs, key):
            return statistics.median(r[key] for r in runs) if runs else float("nan")
        ratio = median(ours, "cpu_us") / median(theirs, "cpu_us") if theirs else float("nan")
        for label, runs in (("stadyn", ours), ("cntk", theirs)):
            print("{:<5} {:>6} {:>15.1f} {:>15.1f} {:>15.0f} {:>15.0f} {:>9}".format(
                name, label, median(runs, "build_ms"), median(runs, "first_ms"),
                median(runs, "cpu_us"), median(runs, "wall_us"),
                "{:.2f}".format(ratio) if label == "stadyn" else ""))


if __name__ == "__main__":
    main()
