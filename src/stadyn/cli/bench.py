"""``stadyn bench``: Stadyn's modes against PyTorch twins, side by side in one process.

Prints ms/iter (median of interleaved timed iterations after warm-up) for each workload and mode,
the ratio of each against PyTorch eager, and writes a bar chart PNG.
"""

from __future__ import annotations

import argparse
import json
import os

import torch

from ..bench import WORKLOADS, run_cases
from ..bench._workloads import STADYN_MODES, TORCH_MODES

__all__ = ["run_bench", "add_parser"]


def run_bench(workloads=("seed2", "mlp", "cifar"), stadyn_modes=STADYN_MODES,
              torch_modes=TORCH_MODES,
              rounds: int = 5, per_round: int = 4, warmup: int = 3, out: str | None = "runs/bench",
              log=print) -> dict:
    """Measure and print; returns ``{workload: {mode: ms}}``."""
    log(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s)")
    table: dict[str, dict[str, float]] = {}
    for name in workloads:
        w = WORKLOADS[name]
        log(f"{name}: {w.description}")
        cases = [w.stadyn_case(m) for m in stadyn_modes] + [w.torch_case(m) for m in torch_modes]
        firsts = {c.mode: c.first_loss for c in cases}
        results = run_cases(cases, warmup=warmup, rounds=rounds, per_round=per_round, log=log)
        table[name] = {m.mode: m.ms for m in results}
        base = table[name].get("torch-eager")
        log(f"  {'mode':24s} {'ms/iter':>9s} {'vs torch-eager':>15s} {'setup s':>8s} "
            f"{'first loss':>11s}")
        for m in results:
            ratio = f"{base / m.ms:.2f}x faster" if base else "-"
            if base and m.ms > base:
                ratio = f"{m.ms / base:.2f}x slower"
            log(f"  {m.mode:24s} {m.ms:9.2f} {ratio:>15s} {m.setup_s:8.1f} "
                f"{firsts[m.mode]:11.6f}")
        row = table[name]
        if "stadyn-static" in row and "stadyn-dynamic" in row:
            log(f"  static vs dynamic: {row['stadyn-dynamic'] / row['stadyn-static']:.2f}x")
        if "stadyn-static" in row and "stadyn-static-bf16" in row:
            log(f"  bf16 vs fp32 static: {row['stadyn-static'] / row['stadyn-static-bf16']:.2f}x")
    if out:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "bench.json"), "w") as f:
            json.dump(table, f, indent=2)
        _plot(table, os.path.join(out, "bench.png"))
        log(f"written: {os.path.join(out, 'bench.json')}, {os.path.join(out, 'bench.png')}")
    return table


def _plot(table: dict[str, dict[str, float]], path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(table), figsize=(5 * len(table), 3.6), squeeze=False)
    for ax, (name, row) in zip(axes[0], table.items()):
        base = row.get("torch-eager")
        modes = list(row)
        speed = [base / row[m] if base else 1.0 for m in modes]
        colors = ["tab:orange" if m.startswith("torch") else "tab:blue" for m in modes]
        ax.barh(modes, speed, color=colors)
        ax.axvline(1.0, color="gray", lw=0.8)
        for i, (m, s) in enumerate(zip(modes, speed)):
            ax.text(s, i, f" {row[m]:.1f} ms", va="center", fontsize=8)
        ax.set_title(name)
        ax.set_xlabel("speed vs PyTorch eager (higher is faster)")
        ax.invert_yaxis()
    fig.tight_layout()
    from .._fileutil import atomic_write
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=110))
    plt.close(fig)


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("bench", help="time Stadyn's modes against PyTorch twins",
                              description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("workloads", nargs="*", default=list(WORKLOADS),
                   help=f"workloads to run (default: all; known: {', '.join(WORKLOADS)})")
    p.add_argument("--stadyn-modes", nargs="+", default=list(STADYN_MODES))
    p.add_argument("--torch-modes", nargs="+", default=list(TORCH_MODES))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--per-round", type=int, default=4)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--out", default="runs/bench")
    p.add_argument("--memory", action="store_true",
                   help="measure the seed-2 CNN's memory under NNabla's buffer flags instead")
    p.add_argument("--memory-batch", type=int, default=256)

    def run(a):
        if a.memory:
            from ..bench._memory import measure_memory
            measure_memory(a.memory_batch)
            return 0
        unknown = [w for w in a.workloads if w not in WORKLOADS]
        if unknown:
            raise SystemExit(f"stadyn bench: unknown workload(s) {unknown}; known: "
                             f"{', '.join(WORKLOADS)}")
        run_bench(a.workloads, a.stadyn_modes, a.torch_modes, a.rounds, a.per_round, a.warmup,
                  a.out)
    p.set_defaults(func=run)
