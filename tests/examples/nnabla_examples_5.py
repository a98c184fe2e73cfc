"""Run a fifth batch of nnabla-examples' programs (sony/nnabla-examples:
``image-classification/cifar10-100``, ``image-superresolution/esrgan``), unchanged, at a tiny
size, one after another in this process, and write as JSON what their monitors recorded, the
files they wrote, whether the parameters they saved are finite and a digest of them.  The same
file runs on NNabla 1.39 (which made ``refs/nnabla139_examples_5.json``) and, with
``--stadyn``, on Stadyn through ``examples/nnabla/on_stadyn.py``'s import hook.

    python tests/examples/nnabla_examples_5.py EXAMPLES WORK OUT.json [--stadyn] [--only=R,..]

The reference file is this, run on NNabla 1.39 (``/work/peers/nnabla/bin/python
tests/examples/nnabla_examples_5.py EXAMPLES WORK tests/examples/refs/nnabla139_examples_5.json``).

EXAMPLES holds the programs' folders (a checkout or an archive of the repository); WORK is an
empty folder.  The data are stand-ins in the real files: CIFAR-10's
``cifar-10-python.tar.gz`` (``examples/nnabla/cifar10_standin.py``: the original's 50,000 +
10,000 images, which ``cifar10_data.py`` reshapes to) in NNabla's download cache
``WORK/home/nnabla_data``; DIV2K's and Set14's picture pairs (``HR/x4``, ``LR/x4``:
``examples/nnabla/superres_standin.py``) under ``WORK/div2k`` and ``WORK/set14``.  Each
program writes under ``WORK/<run>``.  Only the harness around the programs differs from a
user's shell: NumPy, ``random`` and NNabla's generators (``nn.seed(0)``: the parameter
initializers' ``prng`` and the random functions') are seeded 0 before each (and on Stadyn
torch's).  ESRGAN reads its pictures with OpenCV, which NNabla 1.39's environment here lacks:
the reference was made with ``opencv-python-headless`` 4.10 on ``PYTHONPATH``.

``classification.py`` fixes its epoch at 50,000 images and validates on all 10,000 before its
first step (minutes of a ResNet on a CPU), so it runs as a user resumes training: the driver
first writes a checkpoint, as the program's own ``checkpoint.save_checkpoint`` writes it, of the
parameters the program starts from (its ``models.resnet23_prediction`` as ``classification.py``
calls it) with a fresh Adam, 11 iterations before the end of the first epoch; then
``classification.py --epochs 1 --use-latest-checkpoint`` loads it and trains those 11
iterations (no validation falls in them) and saves the parameters and the ``.nnp``.

ESRGAN's ``train.py`` takes its sizes from its configuration file (``--cfg``), which the
driver writes (``ESRGAN_CONFIG``: the CPU, batch 2, 64 x 64 crops, one epoch, ESRGAN's
losses), and loads two files of weights: a "PSNR-pretrained" generator (``gen_pretrained``)
and the converted VGG19 (``vgg_pre_trained_weights``).  Their stand-ins are the networks'
parameters as the program's own ``models.rrdb_net`` and ``vgg19.vgg_prediction`` initialize
them, saved by the framework at hand.  (At 32 x 32 crops and batch 1 the discriminator's last
batch normalization sees one value per channel, its output no longer depends on its input,
and the gradients are float32 noise, which Adam's first step turns into steps of the learning
rate: NNabla's and Stadyn's noise differ, so that size compares nothing.)
"""

import glob
import os
import random
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nnabla_example_runs as record  # noqa: E402

PROGRAMS = ("image-classification/cifar10-100", "image-superresolution/esrgan", "utils")
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
    # ESRGAN: its generator, the RRDB network (23 residual-in-residual dense blocks, nearest
    # upsampling), from a stand-in "PSNR-pretrained" file, trained with the L1 pixel loss, the
    # VGG19 feature loss (a stand-in for the converted VGG19 weights) and the relativistic GAN
    # loss of its discriminator (Adam, the multistep learning rates), one iteration of batch 2
    # on 64 x 64 crops (the discriminator halves them five times); then validated on a picture
    # (the network on NdArrays, PSNR, the picture written with cv2)
    ("esrgan", "image-superresolution/esrgan/train.py", "--cfg {out}/config.yaml"),
]
# ESRGAN's own configuration file with the sizes shrunk and the paths set: the CPU, batch 2,
# 64 x 64 crops, one epoch, ESRGAN's losses (model: esrgan)
ESRGAN_CONFIG = """nnabla_context:
  context: cpu
  device_id: 0
  type_config: float
train:
  batch_size: 2
  seed: 10
  scale: 4
  n_epochs: 1
  gt_size: 64
  savemodel: {out}/model
  vgg_pre_trained_weights: {work}/vgg19.h5
  gen_pretrained: {work}/esrgan_generator.h5
  lr_steps: [50000, 100000, 200000, 300000]
  cosine_period: 250000
  cosine_num_period: 4
model:
  esrgan: True
val:
  batch_size: 1
  save_results: {out}/val
hyperparameters:
  eta_pixel_loss: 1e-2
  feature_loss_weight: 1
  lambda_gan_loss: 5e-3
  eta_max: 2e-4
  eta_min: 1e-7
  lr_g: 2e-4
  lr_d: 1e-4
DIV2K:
  gt_train: {work}/div2k/HR/x4
  lq_train: {work}/div2k/LR/x4
SET14:
  gt_val: {work}/set14/HR/x4
  lq_val: {work}/set14/LR/x4
"""
# the programs' own modules, forgotten after each run
OWN_MODULES = ("args", "checkpoint", "cifar10_data", "cifar100_data", "models", "utils",
               "data_loader", "esrgan_model", "vgg19", "discriminator_arch", "neu")


def write_vgg19_standin(examples, path):
    """The stand-in for ESRGAN's converted VGG19 weights (``vgg_pre_trained_weights``): the
    16 convolutions as its ``vgg19.vgg_prediction`` initializes them, and the classifier's three
    affine layers, which ``PretrainedVgg19`` drops after loading, as 1 x 1 placeholders."""
    import nnabla as nn
    program = os.path.join(examples, "image-superresolution", "esrgan")
    sys.path.insert(0, program)
    try:
        import vgg19
        nn.clear_parameters()
        vgg19.vgg_prediction(nn.Variable((1, 3, 32, 32)), finetune=True)
        for layer in ("classifier/0/affine", "classifier/3/affine", "classifier/6/affine"):
            nn.parameter.get_parameter_or_create(layer + "/W", (1, 1))
            nn.parameter.get_parameter_or_create(layer + "/b", (1,))
        nn.save_parameters(path)
        nn.clear_parameters()
    finally:
        sys.path.remove(program)
        for name in list(sys.modules):
            if name.split(".")[0] in OWN_MODULES:
                sys.modules.pop(name)


def write_esrgan_generator(examples, path):
    """The stand-in for ESRGAN's "PSNR-pretrained" generator file (``gen_pretrained``, which
    ``train.py`` loads before it builds the network): the RRDB network's parameters as its
    ``models.rrdb_net`` initializes them, under ``gen/``, saved as NNabla saves parameters."""
    import nnabla as nn
    program = os.path.join(examples, "image-superresolution", "esrgan")
    sys.path.insert(0, program)
    try:
        import models
        nn.clear_parameters()
        with nn.parameter_scope("gen"):
            models.rrdb_net(nn.Variable((1, 3, 4, 4)), 64, 23)
            nn.save_parameters(path)
        nn.clear_parameters()
    finally:
        sys.path.remove(program)
        for name in list(sys.modules):
            if name.split(".")[0] in OWN_MODULES:
                sys.modules.pop(name)


# the parameter files whose digest the test compares, and how much of each parameter it keeps
DIGESTED = ("params_6239.h5", "model/generator_param_000001.h5",
            "model/discriminator_param_000001.h5")
FIRST = 3


def digest(folder):
    """``{file: {parameter: [sum, sum of squares, first 3 values]}}`` of the ``DIGESTED`` files
    under ``folder``, to 9 significant digits (float32 carries fewer): 1,000 parameters of
    ESRGAN's two networks stay a small reference file."""
    full = record.parameter_digest(folder, first=FIRST)
    return {name: {key: [float("%.9g" % v) for v in values] for key, values in params.items()}
            for name, params in full.items() if name in DIGESTED}


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
    import superres_standin
    superres_standin.write_pairs(os.path.join(work, "div2k"), 2, 64, seed=0)
    superres_standin.write_pairs(os.path.join(work, "set14"), 1, 16, seed=1)
    import nnabla as nn
    results = {}
    for run, program, args, folder in record.selected(RUNS, argv, work):
        np.random.seed(0)
        random.seed(0)
        if stadyn:
            import torch
            torch.manual_seed(0)
        nn.seed(0)
        nn.clear_parameters()
        if run == "cifar10":
            write_cifar10_checkpoint(examples, folder)
        if run == "esrgan":
            write_esrgan_generator(examples, os.path.join(work, "esrgan_generator.h5"))
            write_vgg19_standin(examples, os.path.join(work, "vgg19.h5"))
            with open(os.path.join(folder, "config.yaml"), "w") as f:
                f.write(ESRGAN_CONFIG.format(out=folder, work=work))
        error, seconds = record.run_beside_its_modules(
            os.path.join(examples, program), args.format(out=folder, work=work).split(),
            folder, OWN_MODULES)
        results[run] = record.result(folder, error, seconds, stadyn)
        results[run]["parameters"] = digest(folder)
        results[run]["nnp"] = nnp_summary(folder)
    record.write_results(results, out_path)


if __name__ == "__main__":
    main(sys.argv[1:])
