"""Run a fifth batch of nnabla-examples' programs (sony/nnabla-examples:
``image-classification/cifar10-100``), unchanged, at a tiny size, one after another in this
process, and write as JSON what their monitors recorded, the files they wrote, whether the
parameters they saved are finite and a digest of them.  The same file runs on NNabla 1.39
(which made ``refs/nnabla139_examples_5.json``) and, with ``--stadyn``, on Stadyn through
``examples/nnabla/on_stadyn.py``'s import hook.

    python tests/examples/nnabla_examples_5.py EXAMPLES WORK OUT.json [--stadyn] [--only=R,..]

The reference file is this, run on NNabla 1.39 (``/work/peers/nnabla/bin/python
tests/examples/nnabla_examples_5.py EXAMPLES WORK tests/examples/refs/nnabla139_examples_5.json``).

EXAMPLES holds the programs' folders (a checkout or an archive of the repository); WORK is an
empty folder.  The data are stand-ins in the real files: CIFAR-10's
``cifar-10-python.tar.gz`` (``examples/nnabla/cifar10_standin.py``: the original's 50,000 +
10,000 images, which ``cifar10_data.py`` reshapes to) in NNabla's download cache
``WORK/home/nnabla_data``.  Each program writes under ``WORK/<run>``.  Only the harness around
the programs differs from a user's shell: NumPy and ``random`` are seeded 0 before each (and
on Stadyn torch's generator).

``classification.py`` fixes its epoch at 50,000 images and validates on all 10,000 before its
first step (minutes of a ResNet on a CPU), so it runs as a user resumes training: the driver
first writes a checkpoint, as the program's own ``checkpoint.save_checkpoint`` writes it, of the
parameters the program starts from (its ``models.resnet23_prediction`` as ``classification.py``
calls it) with a fresh Adam, 11 iterations before the end of the first epoch; then
``classification.py --epochs 1 --use-latest-checkpoint`` loads it and trains those 11
iterations (no validation falls in them) and saves the parameters and the ``.nnp``.
"""

import glob
import os
import random
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nnabla_example_runs as record  # noqa: E402

PROGRAMS = ("image-classification/cifar10-100",)
CIFAR = "image-classification/cifar10-100"
# classification.py at batch 8: 6,250 iterations an epoch; it resumes to train the last 11
CIFAR_BATCH, CIFAR_STEPS = 8, 11
CIFAR_RESUME_AT = 50000 // CIFAR_BATCH - CIFAR_STEPS

# (run, program, arguments); {out} is WORK/<run>, {work} is WORK.
RUNS = [
    # ResNet-23 (bottleneck units, batch normalization, max pooling), resumed from a checkpoint
    # of its initial parameters: image augmentation, Adam, the monitors (a value at the first
    # iteration and the mean of the next 10), the parameters and the .nnp saved at the end
    ("cifar10", CIFAR + "/classification.py",
     f"-c cpu -b {CIFAR_BATCH} --epochs 1 --use-latest-checkpoint -m {{out}} -o {{out}}"),
]
# the programs' own modules, forgotten after each run
OWN_MODULES = ("args", "checkpoint", "cifar10_data", "cifar100_data", "models")


def nnp_summary(folder):
    """``{file: {...}}`` of the ``.nnp`` files under ``folder``: the files inside, and the
    network's functions and variables counted by type (``type: "..."`` in the ``.nntxt``), which
    do not depend on how the writer names the variables."""
    import collections
    import re
    import zipfile
    out = {}
    for path in sorted(glob.glob(os.path.join(folder, "**", "*.nnp"), recursive=True)):
        with zipfile.ZipFile(path) as z:
            names = sorted(z.namelist())
            text = "".join(z.read(n).decode() for n in names if n.endswith(".nntxt"))
        out[os.path.basename(path)] = {
            "files": names,
            "types": dict(collections.Counter(re.findall(r'\btype: "(\w+)"', text))),
            "executor variables": sorted(re.findall(r'variable_name: "([^"]+)"', text))}
    return out


def write_cifar10_checkpoint(examples, folder):
    """A checkpoint in ``folder`` of the parameters ``classification.py`` starts from (its
    ResNet-23 for CIFAR-10, made as the program makes it) with a fresh Adam, at iteration
    ``CIFAR_RESUME_AT``, written by the program's own ``checkpoint.py``."""
    import nnabla as nn
    import nnabla.functions as F
    import nnabla.solvers as S
    program = os.path.join(examples, CIFAR)
    sys.path.insert(0, program)
    try:
        import checkpoint
        import models
        nn.clear_parameters()
        models.resnet23_prediction(nn.Variable((CIFAR_BATCH, 3, 32, 32)), test=False,
                                   rng=np.random.RandomState(313), ncls=10, nmaps=64,
                                   act=F.relu)
        solver = S.Adam()
        solver.set_parameters(nn.get_parameters())
        checkpoint.save_checkpoint(folder, CIFAR_RESUME_AT, solver)
        nn.clear_parameters()
    finally:
        sys.path.remove(program)
        for name in list(sys.modules):
            if name.split(".")[0] in OWN_MODULES:
                sys.modules.pop(name)


def main(argv):
    examples, work, out_path, stadyn = record.begin(argv, ROOT)
    import cifar10_standin
    cifar10_standin.write_cifar10(os.path.join(work, "home", "nnabla_data"), compresslevel=0)
    import nnabla as nn
    results = {}
    for run, program, args, folder in record.selected(RUNS, argv, work):
        if run == "cifar10":
            write_cifar10_checkpoint(examples, folder)
        np.random.seed(0)
        random.seed(0)
        if stadyn:
            import torch
            torch.manual_seed(0)
        nn.clear_parameters()
        error, seconds = record.run_beside_its_modules(
            os.path.join(examples, program), args.format(out=folder, work=work).split(),
            folder, OWN_MODULES)
        results[run] = record.result(folder, error, seconds, stadyn, digest=True)
        results[run]["nnp"] = nnp_summary(folder)
    record.write_results(results, out_path)


if __name__ == "__main__":
    main(sys.argv[1:])
