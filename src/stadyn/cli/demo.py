"""``stadyn demo``: NNabla's static-vs-dynamic tutorial — one CNN trained as a static and as a
dynamic graph.

The "unnecessarily deep" CNN of NNabla's static-vs-dynamic tutorial is trained on 80% of the 8x8
digits (scikit-learn's bundled copy) twice, from the same initial parameters and the same batches:
once as a static graph (built once, lowered to generated code, replayed) and once as a dynamic
graph (rebuilt every iteration under ``auto_forward``), a step of one and a step of the other in
turn, so that both are timed over the same seconds of the machine.  It prints each epoch's mean
training loss (``[static] epoch 1/3: training loss 1.56086 (mean softmax cross-entropy over 90
iterations)``), a side-by-side table (time per iteration, final loss, held-out accuracy) and
writes a loss-curve PNG.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from .. import functions as F
from .. import solvers as S
from .._extras import require
from .._random import seed as seed_all
from . import count, plain
from ..compile import compile_step
from ..graph import (Context, Variable, auto_forward, context, context_scope,
                     get_current_context)
from ..io import DigitsData, data_iterator_digits, load_digits_source, split_indices
from ..models import digits_cnn
from ..parametric import ParameterRegistry, get_parameters, parameter_registry

__all__ = ["RunResult", "TrainingRun", "train_digits_cnn", "evaluate", "run_demo", "add_parser"]


@dataclass
class RunResult:
    """What one training run measured."""

    mode: str
    losses: list[float] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    epoch_losses: list[float] = field(default_factory=list)
    epoch_iters: list[int] = field(default_factory=list)
    wall: float = 0.0
    accuracy: float = float("nan")
    batch_size: int = 16

    @property
    def iterations(self) -> int:
        return len(self.losses)

    @property
    def first_ms(self) -> float:
        """The first iteration (which includes building and lowering the graph)."""
        return 1e3 * self.times[0] if self.times else float("nan")

    @property
    def ms_per_iter(self) -> float:
        """Median iteration time after the first."""
        steady = self.times[1:] or self.times
        return 1e3 * float(np.median(steady)) if steady else float("nan")

    @property
    def samples_per_s(self) -> float:
        return 1e3 * self.batch_size / self.ms_per_iter


def _progress(total: int, desc: str):
    if not sys.stderr.isatty():
        return None
    from tqdm import tqdm
    return tqdm(total=total, desc=desc, leave=False, unit="it")


MODES = ("static", "dynamic", "compiled", "program")


def train_digits_cnn(mode: str, train: DigitsData, epochs: int, batch_size: int = 16,
                     seed: int = 0, log=print, registry: ParameterRegistry | None = None,
                     ctx: Context | None = None) -> tuple[RunResult, ParameterRegistry]:
    """Train the tutorial's digits CNN for ``epochs`` with Adam 1e-3 in ``mode``: ``static`` (NNabla's
    forward/backward/update calls on a static graph), ``dynamic`` (rebuilt under
    ``auto_forward`` every iteration), ``compiled`` (:func:`stadyn.compile_step`: one program
    compiled by torch.compile, CUDA graphs on CUDA) or ``program`` (the same program, not
    compiled).  ``ctx`` picks device and precision.

    Returns the result and the registry holding the trained parameters.

    Example:
        >>> from stadyn.io import load_digits_source
        >>> digits = load_digits_source()
        >>> result, registry = train_digits_cnn("static", digits.subset(range(32)), 1,
        ...                                     log=lambda line: None)
        >>> result.iterations, len(result.losses)
        (2, 2)
    """
    run = TrainingRun(mode, train, epochs, batch_size, seed, log, registry, ctx)
    bar = _progress(run.total_iterations, f"{mode:7s}")
    while not run.done:
        run.step()
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return run.finish()


class TrainingRun:
    """One mode's training of the digits CNN, one iteration per :meth:`step`, so that the demo
    can interleave its modes step by step (each mode then meets the machine's speed of the same
    seconds, as ``stadyn bench``'s interleaved rounds do; one mode after the other, a drift of
    the machine over a minute shows up as a difference between the modes).

    The graph, the solver and the data iterator are this run's own, and every step enters this
    run's context and parameter registry itself, so steps of several runs may alternate.  A
    dynamic run seeds the generator in its first step, where it creates its parameters: runs
    built or stepped before it do not change its initial values.

    Example:
        >>> from stadyn.io import load_digits_source
        >>> few = load_digits_source().subset(range(32))
        >>> runs = [TrainingRun(m, few, 1, log=lambda line: None) for m in ("static", "dynamic")]
        >>> while not all(r.done for r in runs):
        ...     losses = [r.step() for r in runs]
        >>> runs[0].result.losses == runs[1].result.losses
        True
    """

    def __init__(self, mode: str, train: DigitsData, epochs: int, batch_size: int = 16,
                 seed: int = 0, log=print, registry: ParameterRegistry | None = None,
                 ctx: Context | None = None):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        self.mode, self.epochs, self.seed, self.log = mode, epochs, seed, log
        self.ctx = ctx or get_current_context()
        self.registry = registry or ParameterRegistry()
        self.result = RunResult(mode, batch_size=batch_size)
        self.total_iterations = epochs * -(-len(train) // batch_size)
        self.data = data_iterator_digits(train, batch_size, shuffle=True,
                                         rng=np.random.RandomState(seed))
        self.data.register_epoch_end_callback(self._on_epoch_end)
        self.x = Variable((batch_size, 1, 8, 8))
        self.t = Variable((batch_size, 1))
        self.epoch, self.iters_in_epoch = 0, 0
        self._epoch_loss: list[float] = []
        self._compiled = None
        self._seeded = False             # a dynamic run seeds in its first step (see above)
        with context_scope(self.ctx), parameter_registry(self.registry):
            self.solver = S.Adam(alpha=1e-3)
            if mode != "dynamic":
                seed_all(seed)
                self._seeded = True
                y = digits_cnn(self.x)
                y.persistent = True
                self.loss = F.mean(F.softmax_cross_entropy(y, self.t))
                self.solver.set_parameters(get_parameters())
                if mode in ("compiled", "program"):
                    self._compiled = compile_step(self.loss, self.solver,
                                                  compile=(mode == "compiled"))
        self.done = self.epoch >= epochs

    def _on_epoch_end(self, epoch: int) -> None:
        losses = self._epoch_loss
        mean = float(np.mean(losses)) if losses else float("nan")
        self.result.epoch_losses.append(mean)
        self.result.epoch_iters.append(self.iters_in_epoch)
        self.log(f"[{self.mode}] epoch {epoch + 1}/{self.epochs}: training loss {mean:.6g} (mean "
                 f"softmax cross-entropy over {self.iters_in_epoch} iterations)")
        losses.clear()

    def step(self) -> float:
        """Train one iteration; returns its loss."""
        start = time.perf_counter()
        with context_scope(self.ctx), parameter_registry(self.registry):
            if not self._seeded:
                seed_all(self.seed)
                self._seeded = True
            self.x.d, self.t.d = self.data.next()
            tick = time.perf_counter()
            if self._compiled is not None:
                self._compiled()
            else:
                if self.mode == "static":
                    self.loss.forward(clear_no_need_grad=True)
                else:
                    with auto_forward():
                        self.loss = F.mean(F.softmax_cross_entropy(digits_cnn(self.x), self.t))
                    self.solver.set_parameters(get_parameters(), reset=False, retain_state=True)
                self.solver.zero_grad()
                self.loss.backward(clear_buffer=True)
                self.solver.update()
            value = float(self.loss.d)            # waits for the device, so timing is right
            self.result.times.append(time.perf_counter() - tick)
        self.result.losses.append(value)
        self._epoch_loss.append(value)
        self.iters_in_epoch += 1
        self.result.wall += time.perf_counter() - start
        if self.data.epoch != self.epoch:
            self.epoch, self.iters_in_epoch = self.data.epoch, 0
            self.done = self.epoch >= self.epochs
        return value

    def finish(self) -> tuple[RunResult, ParameterRegistry]:
        """Close the data iterator; returns the result and the trained parameters."""
        self.data.close()
        return self.result, self.registry


def evaluate(registry: ParameterRegistry, test: DigitsData, ctx: Context | None = None) -> float:
    """Held-out accuracy of the CNN whose parameters are in ``registry`` (running BN stats)."""
    with parameter_registry(registry), torch.no_grad(), \
            context_scope(ctx or get_current_context()):
        x = Variable((len(test), 1, 8, 8))
        y = digits_cnn(x, test=True)
        x.d = test.images[:, None]
        y.forward(clear_buffer=True)
        return float(np.mean(np.argmax(y.d, axis=1) == test.target))


def _same_values(a: ParameterRegistry, b: ParameterRegistry) -> bool:
    """Whether the two registries hold the same names with values equal bit for bit (running
    statistics included; ``-0.0`` is not ``0.0``, and a NaN is never equal, so such parameters
    are evaluated again)."""
    if list(a) != list(b):
        return False
    for name in a:
        x, y = a.get(name).d, b.get(name).d
        if x.dtype != y.dtype or x.shape != y.shape or x.tobytes() != y.tobytes():
            return False
        if x.dtype.kind in "fc" and np.isnan(x).any():
            return False
    return True


def _plot(results: list[RunResult], path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    for r, style in zip(results, ("-", "--", ":", "-.")):
        losses = np.asarray(r.losses)
        k = max(1, min(20, len(losses) // 10))
        smooth = np.convolve(losses, np.ones(k) / k, mode="valid")
        ax.plot(np.arange(len(smooth)) + k - 1, smooth, style,
                label=f"{r.mode} ({r.ms_per_iter:.0f} ms/iter)")
    ax.set_yscale("log")
    ax.set_xlabel("iteration")
    ax.set_ylabel(f"training loss (moving mean of {k})")
    ax.set_title("NNabla tutorial's deep CNN on digits: " + " vs ".join(r.mode for r in results))
    ax.legend()
    fig.tight_layout()
    from .._fileutil import atomic_write
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=110))
    plt.close(fig)


def run_demo(epochs: int = 3, batch_size: int = 16, out: str = "runs/demo", seed: int = 0,
             train_limit: int | None = None, plot: bool = True, log=print,
             modes: tuple[str, ...] = ("static", "dynamic"), device: str = "cpu",
             dtype: str = "float32", interleave: bool = True) -> list[RunResult]:
    """Run the experiment and print/plot the comparison (see the module docstring).

    ``interleave`` (the default) trains the modes step by step in turn (one iteration of each,
    then the next), so their times per iteration are measured over the same seconds of the
    machine; ``interleave=False`` trains them one after the other.  The losses are the same
    either way.  Each mode's held-out accuracy is evaluated on its trained parameters, once
    for modes whose parameters are equal bit for bit (static and dynamic on the CPU).
    """
    ctx = context(device, dtype=dtype)
    if plot:                       # before training, not after it
        require("matplotlib", "demo", "stadyn demo's plot")
    digits = load_digits_source()
    train_idx, test_idx = split_indices(len(digits), 0.2, seed)
    if train_limit is not None:
        train_idx = train_idx[:train_limit]
    train, test = digits.subset(train_idx), digits.subset(test_idx)
    where = f"{ctx.device}" + (f" ({dtype})" if dtype != "float32" else "")
    log(f"digits: {len(train)} training and {len(test)} held-out images; batch {batch_size}, "
        f"{epochs} epoch(s), Adam(alpha=1e-3), {where}, {torch.get_num_threads()} thread(s)")
    results = []
    if interleave:
        runs = [TrainingRun(mode, train, epochs, batch_size, seed, log, ctx=ctx) for mode in modes]
        bar = _progress(sum(r.total_iterations for r in runs), " + ".join(modes))
        while not all(r.done for r in runs):
            for run in runs:
                if not run.done:
                    run.step()
                    if bar is not None:
                        bar.update(1)
        if bar is not None:
            bar.close()
        trained = [run.finish() for run in runs]
    else:
        trained = (train_digits_cnn(mode, train, epochs, batch_size, seed, log, ctx=ctx)
                   for mode in modes)
    evaluated: list[tuple[ParameterRegistry, float]] = []
    for result, registry in trained:
        # static and dynamic training give the same parameters bit for bit (on CPU): a mode
        # whose parameters equal an evaluated mode's has its held-out accuracy
        same = next((acc for done, acc in evaluated if _same_values(done, registry)), None)
        result.accuracy = evaluate(registry, test, ctx) if same is None else same
        evaluated.append((registry, result.accuracy))
        results.append(result)
    log("")
    log(f"{'mode':8s} {'wall s':>8s} {'1st iter ms':>12s} {'ms/iter':>8s} {'samples/s':>10s} "
        f"{'final loss':>11s} {'held-out acc':>13s}")
    for r in results:
        final = r.epoch_losses[-1] if r.epoch_losses else float("nan")
        log(f"{r.mode:8s} {r.wall:8.1f} {r.first_ms:12.0f} {r.ms_per_iter:8.1f} "
            f"{r.samples_per_s:10.0f} {final:11.6f} {100 * r.accuracy:12.2f}%")
    by_mode = {r.mode: r for r in results}
    if "static" in by_mode and "dynamic" in by_mode:
        static, dynamic = by_mode["static"], by_mode["dynamic"]
        n = min(static.iterations, dynamic.iterations)
        same = sum(a == b for a, b in zip(static.losses, dynamic.losses))
        log(f"dynamic / static ms/iter: {dynamic.ms_per_iter / static.ms_per_iter:.2f}x; "
            f"identical losses in {same} of {n} iterations")
    if plot:
        os.makedirs(out, exist_ok=True)
        path = os.path.join(out, "digits_cnn_loss.png")
        _plot(results, path)
        log(f"loss curves: {path}")
    return results


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("demo", help="NNabla's static-vs-dynamic tutorial: its deep CNN on digits",
                              description=plain(__doc__),
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--epochs", type=count(), default=3, help="epochs per mode (30 reproduces the tutorial)")
    p.add_argument("--batch-size", type=count(), default=16,
                   help="images per training step (default 16)")
    p.add_argument("--out", default="runs/demo", help="folder for the loss-curve PNG")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the initial parameters, the data split and the batch order "
                        "(default 0)")
    p.add_argument("--train-limit", type=count(), default=None,
                   help="use only the first N training images (quick checks)")
    p.add_argument("--no-plot", action="store_true", help="do not write the loss-curve PNG")
    p.add_argument("--modes", nargs="+", default=["static", "dynamic"], choices=MODES,
                   metavar="MODE",
                   help=f"modes to train, a step of each in turn (default: static dynamic; "
                        f"known: {', '.join(MODES)}): static/dynamic (NNabla's calls), compiled "
                        "(compile_step with torch.compile; CUDA graphs on CUDA), program (the "
                        "same, not compiled)")
    p.add_argument("--one-after-another", action="store_true",
                   help="train the modes one after the other instead of a step of each in turn "
                        "(their times then also differ by how the machine's speed drifts)")
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (the GPU of index N)")
    p.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"),
                   help="precision of the computation (default float32; parameters stay "
                        "float32)")
    p.set_defaults(func=lambda a: run_demo(a.epochs, a.batch_size, a.out, a.seed,
                                           a.train_limit, not a.no_plot, modes=tuple(a.modes),
                                           device=a.device, dtype=a.dtype,
                                           interleave=not a.one_after_another) and 0)
