"""CNTK's log lines, as its BrainScript runner printed them (``Source/SGDLib/SGD.cpp``,
``Criterion.h``, ``SimpleEvaluator.h``), each one line (wrapped here)::

     Epoch[ 1 of 3]-Minibatch[   1-  16, 25.00%]: ce = 2.29821801 * 1024;
        errs = 89.160% * 1024; time = 2.3506s; samplesPerSecond = 435.6
    Finished Epoch[ 1 of 3]: [Training] ce = 2.28370905 * 4096; errs = 87.061% * 4096;
        totalSamplesSeen = 4096; learningRatePerSample = 0.0015625; epochTime=3.85148s
    Final Results: Minibatch[1-20]: errs = 71.390% * 10000; top5Errs = 20.220% * 10000

A value is a percentage when its node's name ends in ``s`` (CNTK's heuristic for error counts).
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Sequence
from typing import TextIO

__all__ = ["CNTKLog", "log_file_path", "format_criterion", "cntk_float", "cntk_shape_text",
           "banner", "minibatch_line", "epoch_line", "results_line", "data_parallel_init_line",
           "minibatch_loop_line"]


def cntk_float(pad: int, precision: int, value: float) -> str:
    """CNTK's GeneratePaddedFloatOrExpFormat: ``%<pad>.<p>f``, or ``e`` where ``%.<p>g`` has one."""
    if "e" in f"{value:.{precision}g}":
        return f"%{pad}.{precision}e" % value
    return f"%{pad}.{precision}f" % value


def format_criterion(name: str, total: float, count: int, semicolon: bool = True) -> str:
    """``name = value * count`` as CNTK logged a criterion (``EpochCriterion::LogCriterion``):
    the average ``total / count``, as a percentage with 3 decimals when ``name`` ends in ``s``,
    else with 8 decimals.

    >>> format_criterion("ce", 11452.8, 5000), format_criterion("errs", 4339, 5000, False)
    ('ce = 2.29056000 * 5000; ', 'errs = 86.780% * 5000')
    """
    average = total / count if count > 0 else 0.0
    if name.endswith("s"):
        text = f"{name} = {cntk_float(2, 3, 100.0 * average)}% * {count}"
    else:
        text = f"{name} = {cntk_float(0, 8, average)} * {count}"
    return text + ("; " if semicolon else "")


def log_file_path(stderr: str, commands: Sequence[str], timestamping: bool, rank: int,
                  workers: int) -> str:
    """The log file cntk.exe writes for ``stderr = path`` (``cntk configFile=...``:
    ``wmainOldCNTKConfig``, Source/CNTK/CNTK.cpp:666-691): with ``timestamping = true`` (its
    "old way", kept from before 1.8) ``path_<command>_<command>.log``, each worker of a
    data-parallel job (``parallelTrain``, on where MPI runs more than one: :648) adding
    ``rank<N>`` after it, rank 0 too; otherwise ``path`` itself, the workers but rank 0 adding
    ``.rank<N>``.  Every worker writes its own.

    Example:
        >>> log_file_path("out/log", ["train", "test"], True, 1, 2)
        'out/log_train_test.logrank1'
        >>> log_file_path("out/log", ["train"], False, 0, 2), log_file_path("out/log", ["train"],
        ...                                                                  False, 1, 2)
        ('out/log', 'out/log.rank1')
    """
    parallel = workers > 1
    if timestamping:
        path = stderr + "".join(f"_{c}" for c in commands) + ".log"
        return path + (f"rank{rank}" if parallel else "")
    return stderr + (f".rank{rank}" if parallel and rank != 0 else "")


class CNTKLog:
    """Writes lines to stdout and, with CNTK's ``stderr`` key, to a log file as well."""

    def __init__(self, out: TextIO | None, path: str | None, timestamps: bool):
        self.out = out if out is not None else sys.stdout
        self.timestamps = timestamps
        self.file = None
        if path:
            folder = os.path.dirname(os.path.abspath(path))
            os.makedirs(folder, exist_ok=True)
            self.file = open(path, "w", encoding="utf-8")

    def raw(self, text: str = "") -> None:
        """A line as CNTK's plain ``fprintf`` wrote it."""
        for stream in (self.out, self.file):
            if stream is not None:
                stream.write(text + "\n")
                stream.flush()

    def __call__(self, text: str = "") -> None:
        """A line as CNTK's ``LOGPRINTF`` wrote it (prefixed by a time stamp with
        ``timestamping = true``)."""
        if self.timestamps:
            text = time.strftime("%m/%d/%Y %H:%M:%S: ") + text
        self.raw(text)

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None


def banner(log: CNTKLog, text: str) -> None:
    """The ``#``-framed banner CNTK printed before each command."""
    log("#" * 78)
    log("#" + " " * 76 + "#")
    log(f"# {text:<74s} #")
    log("#" + " " * 76 + "#")
    log("#" * 78)


def data_parallel_init_line(bits: int) -> str:
    """cntk.exe's line as it sets up DataParallelSGD's aggregation for an epoch's ``bits``
    (SGD.cpp:2271-2289, InitDistGradAgg, with traceLevel > 0; called before the first epoch
    and where an epoch's ``gradientBits`` change, :398-402, :524-529)."""
    if bits != 32:
        return f"Initializing dataParallelSGD for {bits}-bit quantization."
    return f"Initializing dataParallelSGD with FP{bits} aggregation."


def minibatch_loop_line(parallel: tuple[int, int, int] | None, distributed: bool) -> str:
    """cntk.exe's "Starting minibatch loop" with what it appends (SGD.cpp:1078-1112):
    ``parallel`` is DataParallelSGD's ``(rank, workers, the epoch's gradientBits)`` (None
    without it), ``distributed`` whether each worker reads its share of the minibatch."""
    text = "Starting minibatch loop"
    if parallel is not None:
        text += (", DataParallelSGD training (myRank = %d, numNodes = %d, numGradientBits = %d)"
                 % parallel)
    if distributed:
        text += ", distributed reading is ENABLED"
    return text + "."


def cntk_shape_text(shape: Sequence[int]) -> str:
    """A per-sample shape as CNTK wrote it (its axes reversed, joined by `` x ``).

    >>> cntk_shape_text((1, 28, 28)), cntk_shape_text(())
    ('28 x 28 x 1', '1')
    """
    return " x ".join(str(d) for d in reversed(tuple(shape))) or "1"


def minibatch_line(epoch: int, max_epochs: int, first: int, last: int, progress: float | None,
                   precision: int, names: Sequence[str], totals: Sequence[Sequence[float]],
                   logged: Sequence[Sequence[float]], elapsed: float, samples: int) -> str:
    """``Epoch[ e of E]-Minibatch[ first- last, p%]: <criteria>; time = ...; samplesPerSecond =
    ...`` for the minibatches ``first..last`` of 0-based ``epoch``: each criterion over the
    window is its running ``[sum, count]`` in ``totals`` less that at the last line (``logged``);
    ``progress`` is the fraction of the epoch done (``None`` while the epoch size is unknown).

    >>> line = minibatch_line(0, 3, 1, 16, 0.25, 2, ["ce"], [[100.0, 50]], [[0.0, 0]], 2.0, 50)
    >>> line.split("; ")  # doctest: +NORMALIZE_WHITESPACE
    [' Epoch[ 1 of 3]-Minibatch[   1-  16, 25.00%]: ce = 2.00000000 * 50', 'time = 2.0000s',
     'samplesPerSecond = 25.0']
    """
    line = f" Epoch[{epoch + 1:2d} of {max_epochs}]-Minibatch[{first:4d}-{last:4d}"
    if progress is not None:
        line += f", {100 * progress:2.{precision}f}%"
    line += "]: "
    for name, t, before in zip(names, totals, logged):
        line += format_criterion(name, t[0] - before[0], t[1] - before[1])
    return line + (f"time = {cntk_float(0, 4, elapsed)}s; samplesPerSecond = "
                   f"{samples / elapsed if elapsed > 0 else 0.0:.1f}")


def epoch_line(epoch: int, max_epochs: int, names: Sequence[str],
               totals: Sequence[Sequence[float]], samples_seen: int, learning_rate: float,
               seconds: float) -> str:
    """``Finished Epoch[ e of E]: [Training] <criteria>; totalSamplesSeen = ...;
    learningRatePerSample = ...; epochTime=...s``.

    >>> line = epoch_line(0, 3, ["ce"], [(100.0, 50)], 50, 0.0015625, 3.85148)
    >>> line.split("; ")  # doctest: +NORMALIZE_WHITESPACE
    ['Finished Epoch[ 1 of 3]: [Training] ce = 2.00000000 * 50', 'totalSamplesSeen = 50',
     'learningRatePerSample = 0.0015625', 'epochTime=3.85148s']
    """
    line = f"Finished Epoch[{epoch + 1:2d} of {max_epochs}]: [Training] "
    for name, (total, n) in zip(names, totals):
        line += format_criterion(name, total, n)
    return line + (f"totalSamplesSeen = {samples_seen}; learningRatePerSample = "
                   f"{learning_rate:.8g}; epochTime={seconds:.6g}s")


def validation_line(epoch: int, max_epochs: int, names: Sequence[str],
                    totals: Sequence[Sequence[float]]) -> str:
    """``Finished Epoch[ e of E]: [Validate] <criteria>``: the ``cvReader`` set after an epoch.

    >>> validation_line(0, 2, ["ce", "errs"], [(6924.5, 1000), (997, 1000)])
    'Finished Epoch[ 1 of 2]: [Validate] ce = 6.92450000 * 1000; errs = 99.700% * 1000'
    """
    return f"Finished Epoch[{epoch + 1:2d} of {max_epochs}]: [Validate] " + "".join(
        format_criterion(name, total, n, semicolon=k + 1 < len(names))
        for k, (name, (total, n)) in enumerate(zip(names, totals)))


def results_line(first: int, last: int, names: Sequence[str], totals: Sequence[Sequence[float]],
                 logged: Sequence[Sequence[float]], perplexity: Sequence[bool],
                 final: bool) -> str:
    """``[Final Results: ]Minibatch[first-last]: <criteria>`` of a test/eval command; a
    criterion whose ``perplexity`` flag is set (cross entropy) also gets its perplexity in the
    final line.

    >>> results_line(1, 20, ["errs"], [(7139, 10000)], [(0, 0)], [False], True)
    'Final Results: Minibatch[1-20]: errs = 71.390% * 10000'
    """
    parts = []
    for name, t, before, with_perplexity in zip(names, totals, logged, perplexity):
        total, count = t[0] - before[0], t[1] - before[1]
        text = format_criterion(name, total, count, semicolon=False)
        if final and with_perplexity:
            text += f"; perplexity = {math.exp(total / count) if count else 1.0:.8f}"
        parts.append(text)
    prefix = "Final Results: " if final else ""
    return f"{prefix}Minibatch[{first}-{last}]: " + "; ".join(parts)
