"""Run a seventh batch of nnabla-examples' programs (sony/nnabla-examples:
``graph-neural-networks/GCN``, ``image-generation/pggan``, ``image-translation/stargan``),
unchanged, at a tiny size, one after another in this process, and write as JSON what they
printed and recorded and the files they wrote. The same file runs on NNabla 1.39 (which made
``refs/nnabla139_examples_7.json``) and, with ``--stadyn``, on Stadyn through
``examples/nnabla/on_stadyn.py``'s import hook.

    python tests/examples/nnabla_examples_7.py EXAMPLES WORK OUT.json [--stadyn] [--only=R,..]

The reference file is this, run on NNabla 1.39 with all of GCN's steps
(``STADYN_LONG_EXAMPLES=1 /work/peers/nnabla/bin/python tests/examples/nnabla_examples_7.py
EXAMPLES WORK tests/examples/refs/nnabla139_examples_7.json``).

EXAMPLES holds the programs' folders and ``utils`` (a checkout or an archive of the
repository); WORK is an empty folder. ``utils`` goes on ``sys.path``, as GCN's ``utils.py``
puts ``../../utils/`` there for a run from its own folder. The data are stand-ins in the real
files: Cora's ``cora.tgz`` (``examples/nnabla/cora_standin.py``, 1,200 papers: GCN's split
takes 20 of each of the 7 subjects to train and 500 + 500 others to validate and test) in the
program's working folder ``WORK/gcn``, where its ``download_cora`` looks first; CelebA's
aligned faces (``examples/nnabla/celeba_standin.py``, two pictures) under ``WORK/celeba``, and
``STARGAN_PICTURES`` of them with their attributes (``list_attr_celeba.txt``; four distinct
pictures, the others hard links to them) under ``WORK/celeba_attributes``. GCN reads the files
with pandas, networkx (2.x) and scikit-learn's ``LabelEncoder``, which the runs on both
frameworks take from ``gcn_library_standins.py`` (NNabla's environment has none of the three,
Stadyn's no pandas and networkx 3). Only the harness around the programs differs from a user's
shell: NumPy, ``random`` and NNabla's generators (``nn.seed(0)``: GCN's dropout masks) are
seeded 0 before each, the parameter initializers' 313 (and on Stadyn torch's 0); ``np.float``
(gone from NumPy 1.24; GCN's ``normalize_adj`` uses it) is put back; an ``nnabla_ext.cuda``
whose ``clear_memory_cache`` does nothing stands in where there is none (PGGAN calls it between
its phases).

PGGAN grows its networks through every resolution from 4 to 128 pixels (fixed in the program;
about 2 minutes on NNabla 1.39 even at batch 2, a 16-number latent and one epoch of two
pictures a phase): the driver interrupts it, on both frameworks, when it logs the start of its
growth to 16 pixels, after it has trained and saved its 4-pixel phase, the fade-in to 8 and its
8-pixel phase. Its monitors average every 10 iterations and so record nothing in those 3
iterations; the run's record is a digest of its saved parameters and of its image tiles
(``pictures``).

StarGAN names its parameter and configuration files by the day and minute it ends; the record
writes ``MMDDHHMM`` there.

GCN's 200 steps are fixed in the program, and each draws NNabla's dropout masks for the 1,200 x
1,433 features (two 32-bit numbers of NNabla's ``std::mt19937`` a value): about 9 s of CPU time
on Stadyn.  Unless ``STADYN_LONG_EXAMPLES=1`` is set the driver ends the run after its first
``SHORT_STEPS`` steps, as a user interrupts it, when the program prints the step after them
(the run's ``stopped`` says so; the reference holds all 200).
"""

import contextlib
import glob
import io
import logging
import os
import random
import re
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gcn_library_standins  # noqa: E402
import nnabla_example_runs as record  # noqa: E402

PROGRAMS = ("graph-neural-networks/GCN", "image-generation/pggan", "image-translation/stargan",
            "utils")
# StarGAN keeps its last 2,000 pictures for testing and trains on --num-data of the others
STARGAN_PICTURES = 2000 + 4
CORA_PAPERS = 1200
LONG = os.environ.get("STADYN_LONG_EXAMPLES") == "1"
SHORT_STEPS = 10

# (run, program, arguments); {out} is WORK/<run>, {work} is WORK.
RUNS = [
    # GCN: two graph convolutions (dropout, PF.affine, F.dot by the normalized adjacency),
    # the training nodes' rows gathered by H[train_mask], categorical cross-entropy, weight
    # decay by F.pow_scalar; 200 Adam steps (fixed in the program) on the whole graph
    ("gcn", "graph-neural-networks/GCN/train.py", ""),
    # PGGAN: equalized-learning-rate convolutions, pixel-wise feature normalization, the
    # minibatch standard deviation, F.randn latents, fade-ins by alpha (dynamic mode)
    ("pggan", "image-generation/pggan/train.py",
     "-c cpu -b 2 --img-path {work}/celeba --epoch-per-resolution 1 --latent 16 "
     "--monitor-path {out}"),
    # StarGAN: a generator conditioned on tiled attribute labels (instance normalization,
    # deconvolutions), a WGAN-GP discriminator whose gradient penalty differentiates
    # nn.grad's gradients, F.rand, get_unlinked_variable, x_fake.backward(grad=None), the
    # learning rates' linear decay; 6 steps (the generator's every 2nd), then its test pictures
    ("stargan", "image-translation/stargan/train.py",
     "--context cpu --image-size 16 --g-conv-dim 8 --d-conv-dim 8 --g-repeat-num 1 "
     "--d-repeat-num 2 --batch-size 2 --num-data 4 --max-epoch 3 --n-critic 2 --log-step 1 "
     "--sample-step 2 --lr-update-step 1 --num-test 1 --test-during-training "
     "--celeba-image-dir {work}/celeba_attributes/images "
     "--attr-path {work}/celeba_attributes/list_attr_celeba.txt "
     "--monitor-path {out} --model-save-path {out}"),
]
# the log line on which the driver interrupts a run (on NNabla 1.39 and Stadyn alike)
INTERRUPT_AT = {"pggan": "phase : 8to16"}
# the programs' own modules, forgotten after each run
OWN_MODULES = ("gcn_model", "utils", "neu", "args", "datasets", "helpers", "networks",
               "functions", "trainer", "model", "loss", "dataloader")
# StarGAN names its parameter and configuration files by the day and minute it ends
DATED = re.compile(r"_\d{8}\.(h5|json)$")
# what GCN's train.py prints of each step
GCN_STEP = re.compile(r"loss: (\S+) acc: (\S+) loss_val: (\S+) acc_val: (\S+)")
GCN_END = re.compile(r"Best validation acc: (\S+)\s+Test acc: (\S+)")
# what StarGAN's train.py prints of its learning rates' decay
STARGAN_DECAY = re.compile(r"learning rates decayed, g_lr: (\S+), d_lr: (\S+)\.")


def printed(run, text):
    """What ``run`` printed, as numbers: GCN's ``{"steps": [[loss, acc, loss_val, acc_val],
    ...], "end": [best validation accuracy, test accuracy]}``, StarGAN's ``{"learning rates":
    [[generator's, discriminator's], ...]}``."""
    if run == "stargan":
        return {"learning rates": [[float(v) for v in m.groups()]
                                   for m in STARGAN_DECAY.finditer(text)]}
    out = {"steps": [[float(v) for v in m.groups()] for m in GCN_STEP.finditer(text)]}
    end = GCN_END.search(text)
    out["end"] = [float(v) for v in end.groups()] if end else None
    return out


class _Interrupted(KeyboardInterrupt):
    """The driver's interruption of a run (after the steps it was to compare)."""


class _Printed(io.StringIO):
    """What a program prints, kept; with ``steps`` set, the print of the step after that many
    interrupts the program."""

    def __init__(self, steps=None):
        super().__init__()
        self.steps = steps

    def write(self, text):
        n = super().write(text)
        if self.steps is not None and len(GCN_STEP.findall(self.getvalue())) > self.steps:
            raise _Interrupted("after %d steps" % self.steps)
        return n


class _InterruptAtLog(logging.Handler):
    """Interrupts the program when NNabla's logger logs ``message``."""

    def __init__(self, message):
        super().__init__()
        self.message = message

    def emit(self, record):
        if record.getMessage() == self.message:
            raise _Interrupted("at " + repr(self.message))


def pictures(folder):
    """``{png: [height, width, mean of each channel ..., sum of squares / size]}`` of the
    pictures under ``folder``, by file name."""
    from PIL import Image
    out = {}
    for path in sorted(glob.glob(os.path.join(folder, "**", "*.png"), recursive=True)):
        x = np.asarray(Image.open(path), dtype=np.float64)
        x = x.reshape(x.shape[0], x.shape[1], -1)
        out[os.path.basename(path)] = ([x.shape[0], x.shape[1]] + x.mean(axis=(0, 1)).tolist()
                                       + [float(np.mean(x * x))])
    return out


def main(argv):
    examples, work, out_path, stadyn = record.begin(argv, ROOT)
    import cora_standin
    cora_standin.write_cora(os.path.join(work, "gcn"), CORA_PAPERS)
    import celeba_standin
    celeba_standin.write_celeba(os.path.join(work, "celeba"), 2)
    celeba_standin.write_celeba_attributes(os.path.join(work, "celeba_attributes"),
                                           STARGAN_PICTURES)
    record.cuda_extension_if_missing()
    sys.path.insert(0, os.path.join(examples, "utils"))
    np.float = float      # GCN's utils.normalize_adj: .astype(np.float)
    import nnabla as nn
    import nnabla.random
    from nnabla import logger
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
        text = _Printed(None if LONG or run != "gcn" else SHORT_STEPS)
        interrupt = _InterruptAtLog(INTERRUPT_AT.get(run))
        logger.addHandler(interrupt)
        try:
            with gcn_library_standins.installed(), contextlib.redirect_stdout(text):
                error, seconds = record.run_beside_its_modules(
                    os.path.join(examples, program),
                    args.format(out=folder, work=work).split(), folder, OWN_MODULES)
        finally:
            logger.removeHandler(interrupt)
            nn.set_auto_forward(False)
        stopped = error is not None and error.startswith("_Interrupted")
        results[run] = record.result(folder, None if stopped else error, seconds, stadyn,
                                     digest=run in ("pggan", "stargan"))
        results[run]["files"] = [DATED.sub(r"_MMDDHHMM.\1", name)
                                 for name in results[run]["files"]]
        if "parameters" in results[run]:
            results[run]["parameters"] = {DATED.sub(r"_MMDDHHMM.\1", name): digest for name, digest
                                          in results[run]["parameters"].items()}
        results[run]["printed"] = printed(run, text.getvalue())
        results[run]["pictures"] = pictures(folder)
        results[run]["stopped"] = stopped
    record.write_results(results, out_path)


if __name__ == "__main__":
    main(sys.argv[1:])
