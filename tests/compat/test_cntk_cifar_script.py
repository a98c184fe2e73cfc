"""CNTK's CIFAR-10 ConvNet script, imports changed only, on a generated CIFAR-shaped data set."""

import io
import os
import pickle
import re
import subprocess
import sys
import tarfile

import numpy as np
import pytest

import stadyn.compat.cntk as cntk
from stadyn.io import convert_cifar10

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "tests", "fixtures", "seeds", "cntk_cifar10_dataaug.py")

# Colours that make the ten classes learnable in a few steps.
PALETTE = np.array([[230, 25, 75], [60, 180, 75], [255, 225, 25], [0, 130, 200], [245, 130, 48],
                    [145, 30, 180], [70, 240, 240], [240, 50, 230], [128, 128, 0],
                    [0, 0, 128]], dtype=np.float64)


def _synthetic_cifar_archive(path, per_batch: int, seed: int = 0) -> None:
    """``cifar-10-python.tar.gz`` in CIFAR's own format (pickled dicts of uint8 rows holding
    1024 red, 1024 green and 1024 blue values), with noisy images of one colour per class."""
    rng = np.random.default_rng(seed)
    with tarfile.open(path, "w:gz") as tar:
        for name in [f"data_batch_{k}" for k in range(1, 6)] + ["test_batch"]:
            labels = rng.integers(0, 10, per_batch)
            rgb = PALETTE[labels][:, :, None] + rng.normal(0, 40, (per_batch, 3, 1024))
            data = np.clip(rgb, 0, 255).astype(np.uint8).reshape(per_batch, 3072)
            raw = pickle.dumps({"data": data, "labels": labels.tolist(), "batch_label": name})
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))


@pytest.mark.usefixtures("fresh_parameters")
def test_the_convnet_reports_cntks_parameter_count(capsys):
    x = cntk.input_variable((3, 32, 32))
    with cntk.layers.default_options(activation=cntk.ops.relu, pad=True):
        z = cntk.models.Sequential([
            cntk.models.LayerStack(2, lambda: [cntk.layers.Convolution((3, 3), 64),
                                               cntk.layers.Convolution((3, 3), 64),
                                               cntk.layers.MaxPooling((3, 3), (2, 2))]),
            cntk.models.LayerStack(2, lambda i: [cntk.layers.Dense([256, 128][i]),
                                                 cntk.layers.Dropout(0.5)]),
            cntk.layers.Dense(10, activation=None)])(
                cntk.ops.element_times(cntk.ops.constant(0.00390625), x))
    cntk.utils.log_number_of_parameters(z)
    assert capsys.readouterr().out.strip() == "Training 1195594 parameters in 14 parameter tensors."
    assert z.shape == (10,)


def run_reduced_script(tmp_path, data_seed: int = 0, epochs: int = 5, epoch_size: int = 512,
                       test_size: int = 64, replacements=(), python: str = sys.executable,
                       env=None) -> subprocess.CompletedProcess:
    """The CNTK CIFAR-10 script cut to ``epochs`` epochs of ``epoch_size`` samples and
    ``test_size`` test samples, on a synthetic CIFAR archive drawn with ``data_seed``, run in
    ``tmp_path``.

    ``replacements`` are further ``(old, new)`` edits of the script (the calibration in
    ``benchmarks/seed1_error_spread.py`` uses them to break the training on purpose, and to
    port it to CNTK 2.7's names, run by CNTK 2.7's ``python`` with its ``env``).
    """
    data = tmp_path / "DataSets" / "CIFAR-10"
    per_batch = max(128, test_size, -(-epoch_size // 5))   # 5 training batches, 1 test batch
    _synthetic_cifar_archive(tmp_path / "cifar-10-python.tar.gz", per_batch=per_batch,
                             seed=data_seed)
    convert_cifar10(tmp_path / "cifar-10-python.tar.gz", data, ctf=False, progress=False)
    # The script finds its data at ../../../DataSets/CIFAR-10 from its own folder.
    folder = tmp_path / "Examples" / "Image" / "Classification"
    folder.mkdir(parents=True)
    source = open(SCRIPT).read()
    for old, new in (("epoch_size = 50000", f"epoch_size = {epoch_size}"),
                     ("max_epochs = 80", f"max_epochs = {epochs}"),
                     ("epoch_size     = 10000", f"epoch_size     = {test_size}"),
                     *replacements):
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    (folder / "ConvNet_CIFAR10_DataAug.py").write_text(source)
    return subprocess.run([python, "ConvNet_CIFAR10_DataAug.py"], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=1200)


def final_error(out: str) -> float | None:
    """The script's last line, ``Final Results: ... errs = E% * N``, as a percentage."""
    final = re.search(r"^Final Results: Minibatch\[\d+-\d+\]: errs = ([0-9.]+)% \* \d+$", out,
                      re.M)
    return float(final.group(1)) if final else None


# The bar on the held-out error (64 test images, so one image is 1.56 points), calibrated with
# benchmarks/seed1_error_spread.py (results_seed1_error.json, 2026-12-02, after Stadyn began
# starting CNTK layers from CNTK's own initial values and reading CNTK's sample order): five
# epochs of 512 samples end between 25% and 59% over data seeds 0-4 with one thread on an
# AVX-512 CPU; three epochs were too few (81% for seed 0 with one thread); the same run with the
# learning rate 0 (a model that does not learn) ends at 92.2% and 90.6% (seeds 0, 1), chance
# being 90%.  80% passes a run that learnt by 20 points or more and fails the frozen ones by 10
# (a model at chance stays at 80% or above with probability 0.997 on 64 images).
ERROR_BAR = 80.0
# The run is chaotic: the script's rate is 0.1 a minibatch with no momentum for its first 20
# epochs, and on an AVX2-only CPU (AMD EPYC, 2026-12-04), whose kernels sum in another order,
# data seed 0 falls from a minibatch loss of 0.80 to 9.44 in its fifth epoch and ends at 92.19%,
# seed 2 stalls near 70% training error and ends at 90.62%, seed 1 ends at 42.19% (the same with
# one or two threads).  So two runs are made and the better must have learnt: a frozen model
# passes that with probability about 0.006.
# CNTK 2.7 itself, on this AVX2 machine, running the same reduced script ported to its names
# (`benchmarks/seed1_error_spread.py --cntk27 ...`, `results_seed1_error_avx2.json`): 64.06,
# 45.31, 46.88, 59.38, 10.94% over data seeds 0-4, its epoch losses also rising in some epochs
# (seed 0: 1.63 -> 1.81 in epoch 4; seed 2: 1.49 -> 1.63 in epoch 5); Stadyn there: 92.19,
# 42.19, 90.62, 42.19, 40.62% (its first-epoch losses within 0.01 of CNTK's: 2.2503 / 2.2577
# for seed 0; dropout masks and crops differ).  Both frameworks pass the test's rule on
# seeds 0 and 1; Stadyn's two collapses in five seeds against CNTK's none is within what five
# chaotic runs can show (rank test p ~ 0.3) but is the thing to watch.
DATA_SEEDS = (0, 1)


@pytest.mark.slow
def test_the_script_runs_end_to_end(tmp_path):
    # Reduced for CI: 5 epochs of 512 samples (the seed: 80 of 50,000), 64 test samples.
    results = []
    for seed in DATA_SEEDS:
        folder = tmp_path / f"data_seed_{seed}"
        folder.mkdir()
        proc = run_reduced_script(folder, data_seed=seed)
        assert proc.returncode == 0, proc.stderr[-4000:]
        out = proc.stdout
        assert "Training 1195594 parameters in 14 parameter tensors." in out
        epochs = re.findall(r"^Finished Epoch \[(\d+)\]: \[Training\] loss = ([0-9.]+) \* 512, "
                            r"metric = ([0-9.]+)% \* 512 [0-9.]+s "
                            r"\( *[0-9.]+ samples per second\)$", out, re.M)
        assert [int(e) for e, _, _ in epochs] == [1, 2, 3, 4, 5], out
        models = folder / "Examples" / "Image" / "Classification" / "Models"
        for epoch in range(5):
            assert (models / f"ConvNet_CIFAR10_DataAug_{epoch}.dnn").is_file()
        assert re.search(r"^Final Results: Minibatch\[1-5\]: errs = ([0-9.]+)% \* 64$", out,
                         re.M), out
        results.append((final_error(out), [float(v) for _, v, _ in epochs], seed))
    error, losses, seed = min(results)
    assert error < ERROR_BAR, results
    assert losses[-1] < losses[0], (seed, losses)
