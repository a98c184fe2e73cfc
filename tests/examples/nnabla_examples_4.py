"""Run a fourth batch of nnabla-examples' programs (sony/nnabla-examples:
``3d-object-classification/pointnet``, ``image-translation/pix2pix``), unchanged, at a tiny
size, one after another in this process, and write as JSON what their monitors recorded, the
files they wrote and whether the parameters they saved are finite.  The same file runs on
NNabla 1.39 (which made ``refs/nnabla139_examples_4.json``) and, with ``--stadyn``, on Stadyn
through ``examples/nnabla/on_stadyn.py``'s import hook.

    python tests/examples/nnabla_examples_4.py EXAMPLES WORK OUT.json [--stadyn] [--only=R,..]

The reference file is this, run on NNabla 1.39 (``/work/peers/nnabla/bin/python
tests/examples/nnabla_examples_4.py EXAMPLES WORK tests/examples/refs/nnabla139_examples_4.json``).

EXAMPLES holds the programs' folders and ``utils`` (a checkout or an archive of the
repository); WORK is an empty folder.  ``utils`` goes first on ``sys.path``, as installing
nnabla-examples' ``neu`` package (the programs' README asks for it) would put it.  The data
are stand-ins in the real files: ModelNet40's "normal resampled" text files
(``examples/nnabla/modelnet40_standin.py``) under ``WORK/modelnet40``, the CMP Facade
database's picture pairs (``examples/nnabla/facade_standin.py``) under ``WORK/facades``.
Each program writes under ``WORK/<run>``.  Only the harness around the programs differs from
a user's shell: NumPy and ``random`` are seeded 0 before each (and on Stadyn torch's
generator); a NumPy ``RandomState()`` made without a seed is seeded from NumPy's global
generator (ModelNet40's dataset shuffles with one, which made NNabla's own runs differ from
each other); ``np.int`` (gone from NumPy 1.24; ``neu``'s learning-rate schedulers use it) is
put back; a two-line ``six`` stands in where the package is not installed.
"""

import os
import random
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nnabla_example_runs as record  # noqa: E402


class _SeededWhenUnseeded(np.random.RandomState):
    """``np.random.RandomState()`` without a seed draws its seed from NumPy's global generator
    (which the driver seeds) instead of the operating system: ModelNet40's dataset
    (``neu/datasets/modelnet40_normal_resampled.py``) shuffles with ``RandomState(None)``, so
    NNabla's own runs differ from one another without this."""

    def __init__(self, seed=None):
        super().__init__(np.random.randint(2 ** 31) if seed is None else seed)


PROGRAMS = ("3d-object-classification/pointnet", "image-translation/pix2pix", "utils")
# ModelNet40 stand-in: four classes, the training set one batch, the validation batch the
# program's 4
N_TRAIN, N_TEST, N_POINTS = 8, 8, 64

# (run, program, arguments); {out} is WORK/<run>, {work} is WORK.
RUNS = [
    # PointNet: T-nets (batch_matmul by a learned 3x3 and 64x64 transform), max pooling over
    # the points, the transform's orthogonality loss (F.norm); 10 epochs of one iteration
    ("pointnet", "3d-object-classification/pointnet/train.py",
     "--context cpu --data_dir {work}/modelnet40 --num_classes 4 --num_points 32 "
     "--batch_size 8 --max_epoch 10 --eval_interval 5 --result_dir {out}"),
    # pix2pix: a U-Net generator (convolutions, deconvolutions, ELU, dropout) and its
    # discriminator on 256 x 256 crops, one epoch of the 2 training pictures, then the
    # generator's pictures of the test one from the saved parameters (--generate)
    ("pix2pix", "image-translation/pix2pix/pix2pix.py",
     "--train --generate -c cpu -e 1 -b 1 -m 1 -l {out} --traindir {work}/facades/train "
     "--valdir {work}/facades/val --testdir {work}/facades/test"),
]
# the programs' own modules, forgotten after each run
OWN_MODULES = ("pointnet", "pointnet_utils", "loss", "running_utils", "args", "models", "neu",
               "unet", "facade", "generator")


def main(argv):
    examples, work, out_path, stadyn = record.begin(argv, ROOT)
    import facade_standin
    import modelnet40_standin
    modelnet40_standin.write_modelnet40(os.path.join(work, "modelnet40"), N_TRAIN, N_TEST,
                                        N_POINTS)
    facade_standin.write_facades(os.path.join(work, "facades"), 2, 1, 1)
    sys.path.insert(0, os.path.join(examples, "utils"))
    record.six_if_missing(work)     # pix2pix's facade.py imports six
    np.int = int          # neu/learning_rate_scheduler.py: np.asarray(..., dtype=np.int)
    import nnabla as nn
    results = {}
    for run, program, args, folder in record.selected(RUNS, argv, work):
        np.random.seed(0)
        random.seed(0)
        if stadyn:
            import torch
            torch.manual_seed(0)
        nn.clear_parameters()
        np.random.RandomState = _SeededWhenUnseeded
        try:
            error, seconds = record.run_beside_its_modules(
                os.path.join(examples, program), args.format(out=folder, work=work).split(),
                folder, OWN_MODULES)
        finally:
            np.random.RandomState = _SeededWhenUnseeded.__mro__[1]
        results[run] = record.result(folder, error, seconds, stadyn)
    record.write_results(results, out_path)


if __name__ == "__main__":
    main(sys.argv[1:])
