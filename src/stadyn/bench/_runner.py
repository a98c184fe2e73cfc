"""Timing cases side by side: warm-up, then interleaved rounds, median per iteration."""

from __future__ import annotations

import gc
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable

__all__ = ["Case", "Measurement", "run_cases"]


@dataclass
class Case:
    """One workload in one mode: ``step()`` runs one training iteration."""

    workload: str
    mode: str
    step: Callable[[], object]
    setup_s: float = 0.0
    first_loss: float | None = None


@dataclass
class Measurement:
    workload: str
    mode: str
    times: list[float] = field(default_factory=list)
    setup_s: float = 0.0
    warmup_s: float = 0.0

    @property
    def ms(self) -> float:
        return 1e3 * statistics.median(self.times) if self.times else float("nan")


def run_cases(cases: list[Case], warmup: int = 3, rounds: int = 5, per_round: int = 4,
              log: Callable[[str], None] = print, min_round_s: float = 0.25,
              between: Callable[[], None] | None = None) -> list[Measurement]:
    """Warm each case up, then time ``rounds`` x ``per_round`` steps of each, interleaved.

    A case whose steps are short runs more of them per round — enough to fill about
    ``min_round_s`` seconds, judged from its last warm-up step — so that sub-millisecond steps
    are not at the mercy of a single scheduler hiccup; the median is still per step.

    ``between`` (the peers' run, in other processes) is called halfway through the rounds, and
    each case takes one untimed step after it: a machine whose speed drifts over the minutes of
    a bench then weighs on both sides of a comparison with the peers alike (an A-B-A design).
    """
    results = [Measurement(c.workload, c.mode, setup_s=c.setup_s) for c in cases]
    counts = []
    for case, m in zip(cases, results):
        start = time.perf_counter()
        last = 0.0
        for _ in range(warmup):
            t0 = time.perf_counter()
            case.step()
            last = time.perf_counter() - t0
        m.warmup_s = time.perf_counter() - start
        counts.append(max(per_round, min(1000, int(min_round_s / last) if last > 0 else 1)))
        log(f"  warmed up {case.workload}/{case.mode} "
            f"(setup {case.setup_s:.1f} s, warm-up {m.warmup_s:.1f} s)")
    # Fair timing needs a collection before each case's steps: cyclic garbage one case leaves
    # (dynamic-mode graphs, closures) must not be collected inside the next case's timed steps.
    # A full collection walks every tracked object, though (about 180,000 once torch and Stadyn
    # are imported: half a second each on these machines, seconds per bench and most of a
    # small test's time), so the heap as the warm-up left it is collected once and frozen
    # (gc.freeze: moved where no collection looks), and each per-case collection walks only
    # what the timed steps have allocated since: microseconds, the same fairness.  A frozen
    # object that dies during the rounds is collected after them (gc.unfreeze).
    called = False
    gc.collect()
    gc.freeze()
    try:
        for r in range(rounds):
            if between is not None and r == rounds // 2:
                between()
                called = True
                for case in cases:
                    case.step()
            for case, m, count in zip(cases, results, counts):
                gc.collect()
                for _ in range(count):
                    start = time.perf_counter()
                    case.step()
                    m.times.append(time.perf_counter() - start)
        if between is not None and not called:
            between()
    finally:
        gc.unfreeze()
    return results
