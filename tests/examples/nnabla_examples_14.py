"""Run a fourteenth batch of nnabla-examples' programs (sony/nnabla-examples:
``parametric_function_classes/mnist-collection/main.py``, a CNN on MNIST written with
``nnabla.experimental.parametric_function_classes``; ``compression/cifar10``'s ShiftNet and
ShuffleNet ``classification.py``), unchanged, at a tiny size, and write as JSON what they
wrote.  The same file runs on NNabla 1.39 (which made ``refs/nnabla139_examples_14.json``)
and, with ``--stadyn``, on Stadyn through ``examples/nnabla/on_stadyn.py``'s import hook.

    python tests/examples/nnabla_examples_14.py EXAMPLES WORK OUT.json [--stadyn] [--only=R,..]

The reference file is this, run on NNabla 1.39 (``/work/peers/nnabla/bin/python
tests/examples/nnabla_examples_14.py EXAMPLES WORK
tests/examples/refs/nnabla139_examples_14.json --only=pfc_mnist,shiftnet_csc,shufflenet``: the
CIFAR-10 runs are made only when ``--only`` names them).

EXAMPLES holds the programs' folders (a checkout or an archive of the repository); WORK is an
empty folder.  The data are stand-ins in NNabla's download cache (``WORK/home/nnabla_data``):
MNIST's (``examples/nnabla/mnist_standin.py``, 1,280 training and 192 test digits: main.py's
one epoch of batches of 64 is 20 iterations) and, for the CIFAR-10 runs, CIFAR-10's
(``examples/nnabla/cifar10_standin.py``: the original's 50,000 + 10,000 images, which
``cifar10_data.py`` reshapes to).  Only the harness around the programs differs from a
user's shell: NumPy's, ``random``'s and NNabla's generators are seeded 0 before each run, the
parameter initializers 313 (on Stadyn torch's 0 too); each program runs in its own folder of
WORK; main.py, which asks for the ``"cudnn"`` extension whatever the machine, gets the CPU
context where NNabla's CUDA extension is not installed (NNabla 1.39 on CPU stops with
``No module named 'nnabla_ext.cudnn'``); and main.py's ``PFC.Module``, ``PFC.Conv2d`` ...,
which NNabla 1.39's ``nnabla.experimental.parametric_function_classes`` no longer re-exports
(``AttributeError: ... has no attribute 'Module'``), are put there from NNabla's own
``parametric_function_class.<kind>`` modules (Stadyn's module has them); a two-line ``six``
stands in where the package is not installed (the CIFAR-10 programs import ``six.moves``).
"""

import os
import random
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nnabla_example_runs as record  # noqa: E402

PFC = "parametric_function_classes/mnist-collection"
SHIFTNET = "compression/cifar10/shiftnet"
SHUFFLENET = "compression/cifar10/shufflenet"
PROGRAMS = (PFC, SHIFTNET, SHUFFLENET)
N_TRAIN, N_TEST = 1280, 192

# (run, program, arguments); {out} is WORK/<run>.
RUNS = [
    # One epoch (20 iterations of 64) of a network of PFC.Module's (PFC.Conv2d,
    # PFC.BatchNorm2d, PFC.Affine, nested modules, get_parameters(grad_only=True)),
    # F.image_augmentation (flips, rotations) in training, Adam, a test of 3 batches
    ("pfc_mnist", PFC + "/main.py", ""),
]
# runs made only when ``--only`` names them (by hand: each goes twice over the 10,000 test
# pictures, minutes on a loaded CPU; the reference holds them)
BY_HAND = [
    # ShiftNet (the CSC module: F.pad, shifts by slicing, F.concatenate, dropout 0) with 9
    # maps, 10 iterations of 500 with weight decay and Adam, a test of the 10,000 test
    # images at 0 and at the end, the best parameters saved
    ("shiftnet_csc", SHIFTNET + "/classification.py",
     "-c cpu -b 500 -i 10 -v 10 --maps 9 -n cifar10_shift_csc_prediction -m {out} -o {out}"),
    # ShuffleNet (grouped convolutions, the channel shuffle's reshape and transpose) in 2
    # groups of 8 maps, the same schedule
    ("shufflenet", SHUFFLENET + "/classification.py",
     "-c cpu -b 500 -i 10 -v 10 --maps 8 -g 2 -n cifar10_shufflenet_prediction "
     "-m {out} -o {out}"),
]
# the programs' own modules, forgotten after each run
OWN_MODULES = ("args", "models", "cifar10_data", "mnist_data")


def cpu_if_no_cuda():
    """``nnabla.ext_utils.get_extension_context`` giving the CPU context for ``"cudnn"`` and
    ``"cuda"`` where NNabla's CUDA extension cannot be imported."""
    import importlib
    import nnabla.ext_utils as ext_utils
    try:
        importlib.import_module("nnabla_ext.cudnn")
        return
    except ImportError:
        pass
    asked = ext_utils.get_extension_context

    def get_extension_context(ext_name, **kwargs):
        if ext_name in ("cudnn", "cuda", "cuda.cudnn"):
            ext_name = "cpu"
        return asked(ext_name, **kwargs)
    ext_utils.get_extension_context = get_extension_context


def classes_if_empty():
    """``nnabla.experimental.parametric_function_classes`` with NNabla's own classes where the
    module is empty: NNabla 1.39's is (its imports were dropped in a clean-up), its classes are
    in ``parametric_function_class.<kind>``; Stadyn's module has them already."""
    import nnabla.experimental.parametric_function_classes as classes
    if hasattr(classes, "Module"):
        return
    from nnabla.experimental.parametric_function_class import (affine, batch_normalization,
                                                                convolution, deconvolution,
                                                                embed, module)
    for kind in (affine, batch_normalization, convolution, deconvolution, embed, module):
        for name, value in vars(kind).items():
            if isinstance(value, type) and value.__module__ == kind.__name__:
                setattr(classes, name, value)
        for name in ("Linear", "Conv1d", "Conv2d", "Conv3d", "ConvNd", "Deconv1d", "Deconv2d",
                     "Deconv3d", "DeconvNd"):
            if hasattr(kind, name):
                setattr(classes, name, getattr(kind, name))


def main(argv):
    examples, work, out_path, stadyn = record.begin(argv, ROOT)
    import cifar10_standin
    import mnist_standin
    data = os.path.join(work, "home", "nnabla_data")
    mnist_standin.write_mnist(data, N_TRAIN, N_TEST)
    named = [n for a in argv if a.startswith("--only=") for n in a.split("=", 1)[1].split(",")]
    runs = RUNS + [r for r in BY_HAND if r[0] in named]
    if any(program.startswith("compression/") for _, program, _ in runs):
        cifar10_standin.write_cifar10(data, compresslevel=0)
    import nnabla as nn
    import nnabla.random
    cpu_if_no_cuda()
    record.six_if_missing(work)
    classes_if_empty()
    results = {}
    for run, program, args, out in record.selected(runs, argv, work):
        np.random.seed(0)
        random.seed(0)
        nn.seed(0)
        nnabla.random.set_parameter_seed(313)
        if stadyn:
            import torch
            torch.manual_seed(0)
        nn.clear_parameters()
        error, seconds = record.run_beside_its_modules(
            os.path.join(examples, program), args.format(out=out).split(), out, OWN_MODULES)
        results[run] = record.result(out, error, seconds, stadyn, digest=True)
        nn.clear_parameters()
    record.write_results(results, out_path)


if __name__ == "__main__":
    main(sys.argv[1:])
