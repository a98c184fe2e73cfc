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

With ``--cntk27 PYTHON`` the same runs are made on CNTK 2.7 itself (variant ``cntk27``): the
script is the CNTK 2.0-beta example, so it is first ported to CNTK 2.7's names (``PORT_TO_2_7``
below: ``cntk.layers.For`` for ``LayerStack``, ``cntk.io.transforms`` for the deserializer's
transforms, the learners and loggers at their 2.7 homes, ``Trainer(z, (ce, pe), [learner])``);
Stadyn runs that ported script with the same numbers as the original.  CNTK's library path is
``--cntk27-ld-path`` (the shims of ``shared/tools/setup_cntk27.sh``):

    PYTHONPATH=src python benchmarks/seed1_error_spread.py --seeds 0 1 2 3 4 --broken-seeds \
        --cntk27 /work/peers/cntk27/venv36/bin/python --cntk27-ld-path /work/peers/cntk27/shimlib
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "compat"))

import torch  # noqa: E402
from test_cntk_cifar_script import final_error, run_reduced_script  # noqa: E402

BROKEN = {
    "frozen": [("lr_per_sample          = [0.0015625]*20",
                "lr_per_sample          = [0.0]*20")],
}


# The seed script (CNTK 2.0 beta) in CNTK 2.7's names; each text occurs once in the script.
PORT_TO_2_7 = [
    ("import stadyn.compat.cntk as cntk\nfrom stadyn.compat.cntk import _cntk_py",
     "import cntk\nimport _cntk_py"),
    ("cntk.io.ImageDeserializer.crop(crop_type='Random', ratio=0.8, jitter_type='uniRatio')",
     "cntk.io.transforms.crop(crop_type='randomside', side_ratio=0.8, jitter_type='uniratio')"),
    ("cntk.io.ImageDeserializer.scale(", "cntk.io.transforms.scale("),
    ("cntk.io.ImageDeserializer.mean(", "cntk.io.transforms.mean("),
    ("cntk.models.Sequential", "cntk.layers.Sequential"),
    ("cntk.models.LayerStack(2, lambda : [", "cntk.layers.For(range(2), lambda : ["),
    ("cntk.models.LayerStack(2, lambda i: [", "cntk.layers.For(range(2), lambda i: ["),
    ("cntk.ops.cross_entropy_with_softmax", "cntk.losses.cross_entropy_with_softmax"),
    ("cntk.ops.classification_error", "cntk.metrics.classification_error"),
    ("unit=cntk.learner.UnitType.sample", "unit=cntk.UnitType.sample"),
    ("cntk.learner.momentum_as_time_constant_schedule", "cntk.momentum_as_time_constant_schedule"),
    ("cntk.learner.momentum_sgd", "cntk.momentum_sgd"),
    ("cntk.Trainer(z, ce, pe, learner)", "cntk.Trainer(z, (ce, pe), [learner])"),
    ("cntk.utils.log_number_of_parameters", "cntk.logging.log_number_of_parameters"),
    ("cntk.utils.ProgressPrinter", "cntk.logging.ProgressPrinter"),
    ("z.save_model(", "z.save("),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--broken-seeds", type=int, nargs="*", default=[0, 1])
    parser.add_argument("--cntk27", metavar="PYTHON",
                        help="also run the script ported to CNTK 2.7 with this Python")
    parser.add_argument("--cntk27-ld-path", default="", help="LD_LIBRARY_PATH for CNTK 2.7")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results_seed1_error.json"))
    opts = parser.parse_args()
    rows = []
    runs = [("real", opts.seeds), ("frozen", opts.broken_seeds)]
    env = None
    if opts.cntk27:
        runs.append(("cntk27", opts.seeds))
        env = dict(os.environ, LD_LIBRARY_PATH=opts.cntk27_ld_path, PYTHONWARNINGS="ignore")
    for variant, seeds in runs:
        for seed in seeds:
            with tempfile.TemporaryDirectory() as tmp:
                if variant == "cntk27":
                    proc = run_reduced_script(Path(tmp), data_seed=seed, replacements=PORT_TO_2_7,
                                              python=opts.cntk27, env=env)
                else:
                    proc = run_reduced_script(Path(tmp), data_seed=seed,
                                              replacements=BROKEN.get(variant, ()))
            error = final_error(proc.stdout)
            if proc.returncode != 0 or error is None:
                print(proc.stderr[-3000:])
                raise SystemExit(f"{variant} seed {seed}: the run failed")
            rows.append({"variant": variant, "data_seed": seed, "error_pct": error,
                         "cpu": torch.backends.cpu.get_cpu_capability()})
            print(f"{variant:8s} seed {seed}: held-out error {error:.2f}%", flush=True)
    Path(opts.out).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
