"""The NNabla gallery (``examples/nnabla/``): each program, written as an NNabla 1.39 user
writes it (``import nnabla``...), runs unchanged on Stadyn through ``on_stadyn.py`` at a tiny
size, and what it learned is checked against what chance or the untrained network gives.

The longer runs, beside NNabla 1.39's own runs of the same files, are in each program's README.
"""

import importlib.util
import os
import sys

import numpy as np
import pytest

# the programs import scikit-learn in their own processes; only whether it is installed is
# checked here (importing it would cost each collecting worker ~1.5 s of CPU)
pytestmark = pytest.mark.skipif(importlib.util.find_spec("sklearn") is None,
                                reason="the gallery's digits come from scikit-learn")
import fork_server  # noqa: E402
from fork_server import ForkServer  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GALLERY = os.path.join(ROOT, "examples", "nnabla")


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    """Each program's process forked from one that imported what every program imports first
    (NumPy, and through ``on_stadyn.py``'s names ``nnabla`` and its functions, parametric
    functions and solvers: Stadyn's compat layer; before, each program started an interpreter
    and imported them), run as ``python on_stadyn.py PROGRAM ARGS`` (tests/fork_server.py)."""
    env = dict(os.environ, OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "src"),
                                           os.environ.get("PYTHONPATH", "")]))
    server = ForkServer([sys.executable, fork_server.__file__, "numpy", "stadyn.compat.nnabla",
                         "stadyn.compat.nnabla.functions",
                         "stadyn.compat.nnabla.parametric_functions",
                         "stadyn.compat.nnabla.solvers"],
                        tmp_path_factory.mktemp("programs"), env)
    yield server
    server.close()


def run(programs, program, tmp_path, *args):
    """Run ``examples/nnabla/<program>/<program>.py`` on Stadyn; returns its monitor folder."""
    monitor = tmp_path / program
    status, _, stderr = programs.run(
        [os.path.join(GALLERY, "on_stadyn.py"), os.path.join(GALLERY, program, program + ".py"),
         "-m", str(monitor), *args], tmp_path, tmp_path / "logs", 600)
    assert status == 0, stderr[-3000:]
    assert "final" in stderr                           # the closing line of NNabla's logger
    assert len(list(monitor.glob("params_*.h5"))) == 1
    return monitor


def series(monitor, name):
    """A ``MonitorSeries`` file as ``{iteration: value}``."""
    rows = np.loadtxt(monitor / (name.replace(" ", "-") + ".series.txt"), ndmin=2)
    return {int(i): v for i, v in rows}


def is_png(path):
    with open(path, "rb") as f:
        return f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_the_programs_import_nnabla_itself():
    """Nothing in a program names Stadyn: the same file runs on NNabla 1.39."""
    for program in ("classification", "vae", "dcgan", "siamese", "segmentation"):
        source = open(os.path.join(GALLERY, program, program + ".py")).read()
        assert "import nnabla as nn" in source and "stadyn" not in source.lower()
    assert "stadyn" not in open(os.path.join(GALLERY, "digits_data.py")).read().lower()


def test_classification_with_augmentation_learns(programs, tmp_path):
    monitor = run(programs, "classification", tmp_path, "--max-iter", "40", "--batch-size", "32",
                  "--val-interval", "40", "--val-iter", "4")
    loss = series(monitor, "Training loss")
    assert sorted(loss) == [9, 19, 29, 39]
    assert loss[39] < 0.7 * loss[9]
    assert series(monitor, "Validation error")[40] < 0.5          # chance: 0.9


def test_vae_loss_falls_and_it_writes_its_images(programs, tmp_path):
    monitor = run(programs, "vae", tmp_path, "--max-iter", "100", "--val-interval", "50")
    loss, validation = series(monitor, "Training loss"), series(monitor, "Validation loss")
    assert loss[99] < loss[49] < 40.0     # an untrained decoder: about 64 * log 2 = 44 nats
    assert validation[100] < validation[50]
    assert is_png(monitor / "Reconstructions" / "000100.png")
    assert is_png(monitor / "Samples" / "000100.png")


def test_dcgan_generator_moves_toward_the_data(programs, tmp_path):
    monitor = run(programs, "dcgan", tmp_path, "--max-iter", "60", "--val-interval", "60")
    distance = series(monitor, "Mean image distance")
    assert distance[60] < 0.85 * distance[0]       # NNabla 1.39: 0.323 -> 0.201 at 100
    for name in ("Generator loss", "Discriminator loss"):
        assert np.isfinite(list(series(monitor, name).values())).all()
    assert is_png(monitor / "Fake-images" / "000060.png")


def test_siamese_embedding_separates_the_digits(programs, tmp_path):
    monitor = run(programs, "siamese", tmp_path, "--max-iter", "100", "--val-interval", "100")
    loss = series(monitor, "Training loss")
    assert loss[99] < loss[49]
    assert series(monitor, "Nearest neighbour accuracy")[100] > 0.6    # chance: 0.1


def test_segmentation_encoder_decoder_finds_the_shapes(programs, tmp_path):
    monitor = run(programs, "segmentation", tmp_path, "--max-iter", "100", "--val-interval", "100",
                  "--num-train", "512", "--num-val", "64")
    loss = series(monitor, "Training loss")
    assert loss[99] < loss[49]
    # predicting the background everywhere gives a mean IoU of about 0.27 (0.8, 0, 0)
    assert series(monitor, "Validation mean IoU")[100] > 0.5
    assert is_png(monitor / "Predictions" / "000100.png")
