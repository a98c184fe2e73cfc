"""Held-out accuracy of the tutorial's digits CNN after each epoch, for correct and for
deliberately broken training: the data behind the bar of
``tests/models/test_nnabla_tutorial.py::test_three_static_epochs_learn_the_held_out_digits``.

Trains exactly what the test trains (:func:`stadyn.cli.demo.train_digits_cnn`'s static mode:
Adam 1e-3, batch 16, 80% of the digits, the split, initial parameters and shuffling set by the
seed) and evaluates on the held-out 20% (359 images, one image is 0.28 points) after the last
step of every epoch, so one run of ``--epochs N`` gives the figure of every shorter training
too.  It also records the epoch's mean training loss as ``train_digits_cnn`` reports it.

``--variants`` adds broken trainings, bugs the test is there to catch (the two frozen ones reach
the accuracy of correct training; the test sees them by the parameters that did not move):

* ``frozen-convs``: the solver holds only the two affine layers (a stale weight on all twelve
  convolution blocks and their batch normalisations: the features stay the random ones);
* ``frozen-classifier``: the solver holds every parameter but the classifier's (a stale last
  layer);
* ``wrong-grad``: the gradients of the convolution weights of blocks 2-11 arrive negated (a
  wrong sign in a backward).

    PYTHONPATH=src python benchmarks/digits_epoch_accuracy.py --seeds 0 1 2 3 4 --epochs 3 \\
        --precisions fp32 bf16 --threads 1 --out benchmarks/results_digits_epochs.json

``--check-same`` first trains ``correct`` for two epochs on 160 images both here and through
``train_digits_cnn`` and stops unless the losses agree exactly (this loop is that function's).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

import stadyn as sd
import stadyn.functions as F
from stadyn import solvers as S
from stadyn.cli.demo import evaluate, train_digits_cnn
from stadyn.io import data_iterator_digits, load_digits_source, split_indices
from stadyn.models import digits_cnn

VARIANTS = ("correct", "frozen-convs", "frozen-classifier", "wrong-grad")
CONTEXTS = {"fp32": None, "bf16": sd.context("cpu", dtype="bfloat16")}


def _trained_names(variant: str, names: list[str]) -> list[str]:
    if variant == "frozen-convs":
        return [n for n in names if n.startswith(("cnn/fc/", "cnn/classifier/"))]
    if variant == "frozen-classifier":
        return [n for n in names if not n.startswith("cnn/classifier/")]
    return names


def _negated_names(variant: str, names: list[str]) -> list[str]:
    if variant != "wrong-grad":
        return []
    return [f"cnn/conv{i}/conv/W" for i in range(2, 12)]


def train(train_set, test_set, epochs: int, seed: int, variant: str, ctx,
          batch_size: int = 16) -> dict:
    """One run; the held-out accuracy and mean training loss after each epoch."""
    registry = sd.ParameterRegistry()
    accuracy: list[float] = []
    epoch_losses: list[float] = []
    losses: list[float] = []
    epoch_loss: list[float] = []

    def on_epoch_end(epoch: int) -> None:     # what train_digits_cnn reports as an epoch's loss
        epoch_losses.append(float(np.mean(epoch_loss)) if epoch_loss else float("nan"))
        epoch_loss.clear()

    with sd.context_scope(ctx or sd.get_current_context()):
        sd.seed(seed)
        data = data_iterator_digits(train_set, batch_size, shuffle=True,
                                    rng=np.random.RandomState(seed))
        data.register_epoch_end_callback(on_epoch_end)
        x = sd.Variable((batch_size, 1, 8, 8))
        t = sd.Variable((batch_size, 1))
        start = time.process_time()
        with sd.parameter_registry(registry):
            solver = S.Adam(alpha=1e-3)
            y = digits_cnn(x)
            y.persistent = True
            loss = F.mean(F.softmax_cross_entropy(y, t))
            params = sd.get_parameters()
            solver.set_parameters({n: params[n] for n in _trained_names(variant, list(params))})
            negated = [params[n] for n in _negated_names(variant, list(params))]
            for epoch in range(epochs):
                while data.epoch == epoch:
                    x.d, t.d = data.next()
                    loss.forward(clear_no_need_grad=True)
                    solver.zero_grad()
                    loss.backward(clear_buffer=True)
                    with torch.no_grad():
                        for p in negated:
                            p.grad.neg_()
                    solver.update()
                    value = float(loss.d)
                    losses.append(value)
                    epoch_loss.append(value)
                accuracy.append(evaluate(registry, test_set, ctx=ctx))
        data.close()
    return {"accuracy": accuracy, "epoch_losses": epoch_losses, "losses": losses,
            "cpu_s": time.process_time() - start}


def check_same(digits) -> None:
    """Stop unless this loop gives ``train_digits_cnn``'s losses bit for bit."""
    small = digits.subset(np.arange(160))
    mine = train(small, small, 2, 0, "correct", None)
    theirs, _ = train_digits_cnn("static", small, 2, log=lambda *_: None)
    if mine["losses"] != theirs.losses or mine["epoch_losses"] != theirs.epoch_losses:
        raise SystemExit("this loop does not reproduce train_digits_cnn")
    print("losses and epoch losses equal train_digits_cnn's on 2 epochs of 160 images")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--precisions", nargs="+", choices=list(CONTEXTS), default=["fp32"])
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=["correct"])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--check-same", action="store_true")
    parser.add_argument("--out", help="write the runs as JSON here (appends to a file there)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    digits = load_digits_source()
    if args.check_same:
        check_same(digits)
    runs = []
    if args.out:
        try:
            with open(args.out) as f:
                runs = json.load(f)["runs"]
        except FileNotFoundError:
            pass
    for seed in args.seeds:
        train_idx, test_idx = split_indices(len(digits), 0.2, seed)
        for variant in args.variants:
            for precision in args.precisions:
                run = train(digits.subset(train_idx), digits.subset(test_idx), args.epochs,
                            seed, variant, CONTEXTS[precision])
                del run["losses"]
                run.update(seed=seed, variant=variant, precision=precision,
                           threads=args.threads)
                runs.append(run)
                print(f"seed {seed} {precision} {variant}: held-out accuracy by epoch "
                      + " ".join(f"{100 * a:.2f}" for a in run["accuracy"])
                      + "; loss last/first epoch "
                      f"{run['epoch_losses'][-1] / run['epoch_losses'][0]:.3f}"
                      f" ({run['cpu_s']:.0f} s CPU)", flush=True)
                if args.out:
                    with open(args.out, "w") as f:
                        json.dump({"runs": runs}, f, indent=1)


if __name__ == "__main__":
    main()
