"""Calibrate the bar of tests/compat/test_cntk_cifar_script.py: the reduced seed-1 run's held-out
error over seeds.

Runs the seed-1 CNTK CIFAR-10 script as the test does (5 epochs of 512 samples, 64 test
samples, on a synthetic CIFAR archive) for several data seeds, and the same run with the
training broken on purpose: ``frozen`` (learning rate 0: the model stays at its initial
weights).  Prints one line per run and writes the figures as JSON.

The real run ends near 50% error, so a ``test_minibatch`` that returned the accuracy would
print about the same figure: no bar on this run can tell the two apart
(``tests/train/test_trainer_numbers.py`` does, against NumPy).

    PYTHONPATH=src python benchmarks/seed1_error_spread.py --seeds 0 1 2 3 4
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "compat"))

from test_cntk_cifar_script import final_error, run_reduced_script  # noqa: E402

BROKEN = {
    "frozen": [("lr_per_sample          = [0.0015625]*20",
                "lr_per_sample          = [0.0]*20")],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--broken-seeds", type=int, nargs="*", default=[0, 1])
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results_seed1_error.json"))
    opts = parser.parse_args()
    rows = []
    for variant, seeds in (("real", opts.seeds), ("frozen", opts.broken_seeds)):
        for seed in seeds:
            with tempfile.TemporaryDirectory() as tmp:
                proc = run_reduced_script(Path(tmp), data_seed=seed,
                                          replacements=BROKEN.get(variant, ()))
            error = final_error(proc.stdout)
            if proc.returncode != 0 or error is None:
                print(proc.stderr[-3000:])
                raise SystemExit(f"{variant} seed {seed}: the run failed")
            rows.append({"variant": variant, "data_seed": seed, "error_pct": error})
            print(f"{variant:8s} seed {seed}: held-out error {error:.2f}%", flush=True)
    Path(opts.out).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
