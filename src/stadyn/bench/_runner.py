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
              log: Callable[[str], None] = print) -> list[Measurement]:
    """Warm each case up, then time ``rounds`` x ``per_round`` steps of each, interleaved."""
    results = [Measurement(c.workload, c.mode, setup_s=c.setup_s) for c in cases]
    for case, m in zip(cases, results):
        start = time.perf_counter()
        for _ in range(warmup):
            case.step()
        m.warmup_s = time.perf_counter() - start
        log(f"  warmed up {case.workload}/{case.mode} "
            f"(setup {case.setup_s:.1f} s, warm-up {m.warmup_s:.1f} s)")
    for r in range(rounds):
        for case, m in zip(cases, results):
            gc.collect()
            for _ in range(per_round):
                start = time.perf_counter()
                case.step()
                m.times.append(time.perf_counter() - start)
    return results
