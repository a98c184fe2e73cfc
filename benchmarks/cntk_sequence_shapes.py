"""Seconds per minibatch of a CNTK 599A-like sequence model whose minibatches all have new
shapes: Stadyn (new rule and old rule) against CNTK 2.7, the same program and the same data.

    PYTHONPATH=src python benchmarks/cntk_sequence_shapes.py [--minibatches 12] [--rounds 1] \
        [--hidden 24] [--cntk-python PATH] [--cntk-libs DIR]

The model is CNTK 599A's hand-made LSTM (``LSTM_layer``: ``C.layers.LSTM`` called on two
placeholders, the loop closed by ``sequence.past_value`` and ``replace_placeholders``) over an
``Embedding``, then a ``Dense`` per step and ``cross_entropy_with_softmax`` against a label
sequence; ``momentum_sgd`` as in 599A.  Each minibatch holds 8 sequences: the longest is 3, 4,
... 18 steps long in minibatches 0..15 (then again), the others' lengths NumPy's
``RandomState(0)`` draws below it (the same numbers in both Pythons), so every minibatch of
the first 16 has a new padded length and new lengths, as a reader's minibatches of CMUDict
words often do.  Each framework runs in its own process (this file is the worker too: ``--worker``),
one thread each.  Reported (medians over the rounds): the process CPU and wall seconds of the
first minibatch and per minibatch after it, and for Stadyn the number of plans built; "old
rule" is Stadyn with every new shape lowered at once (before ``TrialPlan``), and the ratio is
of CPU seconds per minibatch against CNTK's.

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

VOCAB = 30


def _data(minibatches, per_minibatch=8):
    rng = np.random.RandomState(0)
    out = []
    for k in range(minibatches):
        longest = 3 + k % 16               # a new padded length for each of 16 minibatches
        lengths = [longest] + list(rng.randint(1, longest + 1, size=per_minibatch - 1))
        eye = np.eye(VOCAB, dtype=np.float32)
        xs = [eye[rng.randint(0, VOCAB, n)] for n in lengths]
        ys = [eye[rng.randint(0, VOCAB, n)] for n in lengths]
        out.append((xs, ys))
    return out


def _lstm_layer(C, x, hidden):
    """599A's ``LSTM_layer``."""
    dh = C.placeholder(shape=(hidden,), dynamic_axes=x.dynamic_axes)
    dc = C.placeholder(shape=(hidden,), dynamic_axes=x.dynamic_axes)
    cell = C.layers.LSTM(hidden)(dh, dc, x)
    h, c = cell.outputs
    cell.replace_placeholders({dh: C.sequence.past_value(h).output,
                               dc: C.sequence.past_value(c).output})
    return cell.outputs[0]


def worker(framework, minibatches, hidden, old_rule):
    if framework == "cntk":
        import cntk as C
        built = None
    else:
        import stadyn.compat.cntk as C
        from stadyn.graph import _runner
        built = []
        original = _runner.build_plan

        def counted(*a, **k):
            built.append(1)
            return original(*a, **k)
        _runner.build_plan = counted
        if old_rule:
            _runner._PlanCache._try_first = lambda *a: False
    np.random.seed(0)
    data = _data(minibatches)
    x = C.sequence.input_variable(VOCAB)
    y = C.sequence.input_variable(VOCAB)
    z = C.layers.Dense(VOCAB)(_lstm_layer(C, C.layers.Embedding(16)(x), hidden))
    loss = C.cross_entropy_with_softmax(z, y)
    error = C.classification_error(z, y)
    learner = C.momentum_sgd(z.parameters, C.learning_parameter_schedule_per_sample(0.007),
                             C.momentum_schedule(0.9366416204111472, minibatch_size=72))
    trainer = C.Trainer(z, (loss, error), learner)
    cpu, wall, losses = [], [], []
    for xs, ys in data:
        c0, w0 = time.process_time(), time.perf_counter()
        trainer.train_minibatch({x: xs, y: ys})
        losses.append(trainer.previous_minibatch_loss_average)
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    print(json.dumps({"first_cpu": cpu[0], "first_wall": wall[0],
                      "cpu": statistics.mean(cpu[1:]), "wall": statistics.mean(wall[1:]),
                      "built": len(built) if built is not None else None,
                      "loss": losses[-1]}))


def _run(command, env):
    out = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True)
    if out.returncode != 0:
        raise SystemExit("failed: {}\n{}".format(" ".join(command), out.stderr[-3000:]))
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", choices=["cntk", "stadyn", "stadyn-old"])
    parser.add_argument("--minibatches", type=int, default=12)
    parser.add_argument("--hidden", type=int, default=24)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--no-old", action="store_true", help="skip Stadyn's old rule")
    parser.add_argument("--cntk-python", default=os.environ.get(
        "CNTK_PYTHON", "/work/peers/cntk27/venv36/bin/python"))
    parser.add_argument("--cntk-libs", default=os.environ.get(
        "CNTK_LIBS", "/work/peers/cntk27/shimlib"))
    args = parser.parse_args()
    if args.worker:
        worker("cntk" if args.worker == "cntk" else "stadyn", args.minibatches, args.hidden,
               args.worker == "stadyn-old")
        return
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    sides = [("stadyn", [sys.executable], env)]
    if not args.no_old:
        sides.append(("stadyn-old", [sys.executable], env))
    if os.path.exists(args.cntk_python):
        sides.append(("cntk", [args.cntk_python, "-W", "ignore"],
                      dict(env, LD_LIBRARY_PATH=args.cntk_libs)))
    else:
        print("(no CNTK at {}: Stadyn only)".format(args.cntk_python))
    print("load average: {:.2f} {:.2f} {:.2f}; {} minibatches, each a new shape".format(
        *(os.getloadavg() + (args.minibatches,))))
    runs = {name: [] for name, _, _ in sides}
    for _ in range(args.rounds):
        for name, python, side_env in sides:
            runs[name].append(_run(python + [__file__, "--worker", name, "--minibatches",
                                             str(args.minibatches), "--hidden",
                                             str(args.hidden)], side_env))

    def median(name, key):
        return statistics.median(r[key] for r in runs[name])
    print("{:<11} {:>13} {:>14} {:>15} {:>16} {:>7} {:>10}".format(
        "", "1st s (cpu)", "1st s (wall)", "s/minibatch cpu", "s/minibatch wall", "plans",
        "cpu ratio"))
    for name, _, _ in sides:
        ratio = (median(name, "cpu") / median("cntk", "cpu")) if "cntk" in runs else None
        built = runs[name][0]["built"]
        print("{:<11} {:>13.2f} {:>14.2f} {:>15.3f} {:>16.3f} {:>7} {:>10}".format(
            name, median(name, "first_cpu"), median(name, "first_wall"), median(name, "cpu"),
            median(name, "wall"), "-" if built is None else built,
            "{:.1f}".format(ratio) if ratio is not None else "-"))


if __name__ == "__main__":
    main()
