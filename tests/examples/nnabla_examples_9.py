"""Run a ninth batch of nnabla-examples' programs (sony/nnabla-examples:
``image-translation/cycle-gan``'s training) at a tiny size, and write as JSON what its
monitors recorded, the files it wrote and a digest of the parameters it saved.  The same file
runs on NNabla 1.39 (which made ``refs/nnabla139_examples_9.json``) and, with ``--stadyn``, on
Stadyn through ``examples/nnabla/on_stadyn.py``'s import hook.

    python tests/examples/nnabla_examples_9.py EXAMPLES WORK OUT.json [--stadyn] [--only=R,..]

The reference file is this, run on NNabla 1.39 (``/work/peers/nnabla/bin/python
tests/examples/nnabla_examples_9.py EXAMPLES WORK tests/examples/refs/nnabla139_examples_9.json``).

EXAMPLES holds the program's folder (a checkout or an archive of the repository); WORK is an
empty folder.  The data are a stand-in in the real file: CycleGAN's ``horse2zebra.zip``
(``examples/nnabla/horse2zebra_standin.py``, 32 x 32 pictures) in NNabla's download cache
``WORK/home/nnabla_data``.

CycleGAN's ``train.py`` hard-codes its pictures' size (``b, c, h, w = ..., 3, 256, 256``: its
input Variables), so the driver runs a copy of the program's folder (``WORK/programs``) whose
``train.py`` has that one line at 32 x 32 (the smallest its discriminator's five
convolutions take); every other line is the program's own, on both frameworks.  Only the
harness around the program differs from a user's shell: NumPy, ``random`` and NNabla's
generators (``nn.seed(0)``: ``F.image_augmentation``'s draws) are seeded 0 before the run, the
parameter initializers' 313 (and on Stadyn torch's 0).
"""

import os
import random
import shutil
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nnabla_example_runs as record  # noqa: E402

PROGRAMS = ("image-translation/cycle-gan",)
CYCLE_GAN = "image-translation/cycle-gan"
# the one line of train.py the run changes: its pictures' size
SIZE_LINE = "b, c, h, w = int(args.batch_size), 3, 256, 256"
SMALL_LINE = "b, c, h, w = int(args.batch_size), 3, 32, 32"

# (run, program, arguments); {out} is WORK/<run>
RUNS = [
    # CycleGAN: two ResNet generators (reflection-free 7x7 convolutions, 9 residual blocks,
    # deconvolutions, instance normalization written as F.batch_normalization over a
    # parameter_function_api scope), two PatchGAN discriminators, F.image_augmentation of the
    # inputs (NNabla's draws), LSGAN and cycle losses, three Adam solvers; 2 epochs of the 2
    # training pictures a domain (4 steps), each epoch's end recording the losses and the
    # pictures, translating the test pictures and saving the parameters
    ("cycle_gan", CYCLE_GAN + "/train.py",
     "-c cpu -b 1 -e 2 -m {out} -o {out}"),
]
# the program's own modules, forgotten after the run
OWN_MODULES = ("args", "cycle_gan_data", "models", "helpers")


def small_copy(examples, work):
    """``WORK/programs``: a copy of the program's folder whose ``train.py`` makes 32 x 32
    inputs (:data:`SMALL_LINE`); the folder it is in."""
    out = os.path.join(work, "programs")
    target = os.path.join(out, CYCLE_GAN)
    shutil.copytree(os.path.join(examples, CYCLE_GAN), target)
    path = os.path.join(target, "train.py")
    with open(path) as f:
        text = f.read()
    assert text.count(SIZE_LINE) == 1, "train.py's size line changed: " + SIZE_LINE
    with open(path, "w") as f:
        f.write(text.replace(SIZE_LINE, SMALL_LINE))
    return out


def main(argv):
    examples, work, out_path, stadyn = record.begin(argv, ROOT)
    import horse2zebra_standin
    horse2zebra_standin.write_horse2zebra(os.path.join(work, "home", "nnabla_data"), 2, 1, 32)
    programs = small_copy(examples, work)
    import nnabla as nn
    import nnabla.random
    results = {}
    for run, program, args, folder in record.selected(RUNS, argv, work):
        np.random.seed(0)
        random.seed(0)
        nn.seed(0)
        nnabla.random.set_parameter_seed(313)
        if stadyn:
            import torch
            torch.manual_seed(0)
        nn.clear_parameters()
        error, seconds = record.run_beside_its_modules(
            os.path.join(programs, program), args.format(out=folder).split(), folder,
            OWN_MODULES)
        results[run] = record.result(folder, error, seconds, stadyn, digest=True)
        nn.clear_parameters()
    record.write_results(results, out_path)


if __name__ == "__main__":
    main(sys.argv[1:])
