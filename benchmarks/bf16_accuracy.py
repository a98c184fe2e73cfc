"""bf16 against fp32 on NNabla's static-vs-dynamic tutorial: held-out accuracy and real
training speed.

Trains the tutorial's digits CNN (static graph, Adam 1e-3, batch 16) on 80% of the digits for
the same epochs in fp32 and in a bfloat16 context, for several seeds (the seed sets the split, the
initial parameters and the shuffling), and prints for each seed the held-out accuracy of both and
their difference, and the median ms per training iteration of both; then the mean difference
and its standard error.

    PYTHONPATH=src python benchmarks/bf16_accuracy.py --seeds 0 1 2 3 4 --epochs 10

The bf16 and fp32 runs of a seed alternate, so machine noise falls on both alike.
"""

from __future__ import annotations

import argparse
import json
import statistics

import torch

import stadyn as sd
from stadyn.cli.demo import evaluate, train_digits_cnn
from stadyn.io._digits import load_digits_source, split_indices


def run(seeds: list[int], epochs: int, threads: int) -> list[dict]:
    torch.set_num_threads(threads)
    digits = load_digits_source()
    rows = []
    for seed in seeds:
        train_idx, test_idx = split_indices(len(digits), 0.2, seed)
        row: dict = {"seed": seed}
        for name, ctx in (("fp32", None), ("bf16", sd.context("cpu", dtype="bfloat16"))):
            result, registry = train_digits_cnn("static", digits.subset(train_idx), epochs,
                                                seed=seed, log=lambda *_: None, ctx=ctx)
            row[f"{name}_accuracy"] = evaluate(registry, digits.subset(test_idx), ctx=ctx)
            row[f"{name}_ms"] = statistics.median(result.times) * 1e3
        row["difference_points"] = 100 * (row["bf16_accuracy"] - row["fp32_accuracy"])
        rows.append(row)
        print(f"seed {seed}: fp32 {100 * row['fp32_accuracy']:.2f}% ({row['fp32_ms']:.1f} ms/iter)"
              f"  bf16 {100 * row['bf16_accuracy']:.2f}% ({row['bf16_ms']:.1f} ms/iter)"
              f"  difference {row['difference_points']:+.2f} points"
              f"  speed-up {row['fp32_ms'] / row['bf16_ms']:.2f}x", flush=True)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", help="write the rows as JSON here")
    args = parser.parse_args(argv)
    rows = run(args.seeds, args.epochs, args.threads)
    diffs = [r["difference_points"] for r in rows]
    mean = statistics.fmean(diffs)
    sem = statistics.stdev(diffs) / len(diffs) ** 0.5 if len(diffs) > 1 else float("nan")
    speed = statistics.median(r["fp32_ms"] / r["bf16_ms"] for r in rows)
    print(f"bf16 - fp32 held-out accuracy over {len(rows)} seeds: {mean:+.2f} points "
          f"(standard error {sem:.2f}); median training speed-up {speed:.2f}x")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"epochs": args.epochs, "threads": args.threads, "rows": rows,
                       "mean_difference_points": mean, "standard_error": sem}, f, indent=1)


if __name__ == "__main__":
    main()
