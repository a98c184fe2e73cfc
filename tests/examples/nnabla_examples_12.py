"""Run a twelfth batch of nnabla-examples' programs (sony/nnabla-examples:
``responsible_ai/tracin``'s training and self-influence scores, ``responsible_ai/
representer_point``'s representer weights), unchanged, at a tiny size, and write as JSON what
they wrote.  The same file runs on NNabla 1.39 (which made ``refs/nnabla139_examples_12.json``)
and, with ``--stadyn``, on Stadyn through ``examples/nnabla/on_stadyn.py``'s import hook.

    python tests/examples/nnabla_examples_12.py EXAMPLES WORK OUT.json [--stadyn] [--only=R,..]

The reference file is this, run on NNabla 1.39 (``/work/peers/nnabla/bin/python
tests/examples/nnabla_examples_12.py EXAMPLES WORK
tests/examples/refs/nnabla139_examples_12.json``); ``--only=tracin_train_resnet56`` makes
the run too slow for the test (``BY_HAND``).

EXAMPLES holds the programs' folders and ``utils`` (a checkout or an archive of the
repository); WORK is an empty folder.  The data are stand-ins the driver writes in the
programs' own formats, from NumPy's generator seeded 0: TracIn's ``--input`` folder of ``.npy``
arrays (``x_train``, ``y_train``, ``y_shuffle_train``, ``x_val``, ``y_val``: 8 and 8 pictures
of 32 x 32 in CIFAR-10's layout), and representer point's ``data/info/no_shuffle/info.h5``
(what its ``generate_feature.py`` writes: 40 samples' 64 features, their softmax outputs and
labels, and the last affine layer's weight and bias).  Only the harness around the programs
differs from a user's shell: ``np.int``, which neu's learning-rate scheduler uses and NumPy 1.24
removed, is ``int`` again; NumPy's, ``random``'s and NNabla's generators are seeded 0 before
each run, the parameter initializers 313 (on Stadyn torch's 0 too); each program runs in its
own folder of WORK with its ``learning_rate.yaml`` copied there (it reads ``./...``) and
nnabla-examples' ``utils`` on ``sys.path`` (its ``sys.path.append("../../utils/")`` is relative
to the folder it was started in).

TracIn's ``calculate_score.py`` reads the checkpoints of epochs 29, 59, ..., 269
(``params_29.h5`` ...) of a 270-epoch training; the driver gives it the ResNet-23's initial
parameters that ``tracin_train``'s run saved (``params_0.h5``, its checkpoint before the first
epoch) under each of those names, the one checkpoint whose values do not depend on
``F.image_augmentation``'s random draws.
"""

import contextlib
import io
import os
import random
import shutil
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nnabla_example_runs as record  # noqa: E402
from nnabla_examples_5 import nnp_summary  # noqa: E402

PROGRAMS = ("responsible_ai/tracin", "responsible_ai/representer_point", "utils")
TRACIN = "responsible_ai/tracin"
REPRESENTER = "responsible_ai/representer_point"
N_TRAIN, N_VAL = 8, 8                  # TracIn's stand-in pictures
N_FEATURES, FEATURES = 40, 64          # representer point's stand-in info.h5
CHECKPOINT_EPOCHS = range(29, 299, 30)  # the ones calculate_score.py reads

# (run, program, arguments); {out} is WORK/<run>, {work} is WORK.
RUNS = [
    # TracIn's training: a ResNet-23 (64 maps, F.image_augmentation in training, batch
    # normalization) on the .npy stand-in through a DataSource subclass and data_iterator,
    # Momentum with neu's epoch-step learning-rate scheduler (read_yaml), a validation pass
    # before each epoch, MonitorSeries / MonitorTimeElapsed, neu's save_checkpoint and two
    # .nnp exports (nnabla.utils.save), nn.save_parameters at the end
    ("tracin_train", TRACIN + "/train.py",
     "--input {work}/tracin_data --model resnet23 -c cpu --train_batch_size 4 "
     "--val_batch_size 4 --val-iter 2 --train_epochs 2 -m {out} -o {out}"),
    # TracIn's self-influence: for each of the first 50 training pictures (8 here) and each
    # checkpoint, a forward and backward of the test-mode network at batch 1 with only the
    # affine layer's parameters needing gradients, then F.sum(grad * grad) of the gradients
    # (NdArrays, imperatively) added up by F.add_n
    ("tracin_score", TRACIN + "/calculate_score.py",
     "--input {work}/tracin_data --checkpoint {work}/tracin_checkpoints --output {out} "
     "--model resnet23 -c cpu"),
    # Representer point's weights: the affine layer refitted by gradient descent with
    # backtracking line search on NdArrays (F.identity of p.data / p.grad, arithmetic of
    # NdArrays, p.data.copy_from), F.norm, F.abs and F.mean of gradients, F.log_softmax,
    # x ** 2 of parameters, then the representer weights from F.softmax
    ("representer_score", REPRESENTER + "/compute_score.py",
     "--shuffle_label False -c cpu --epoch 40"),
]
# runs made only when ``--only`` names them (too slow for the test): TracIn's training with
# its ResNet-56 (three stages of 16, 32 and 64 maps, strided convolutions and 1x1 shortcut
# convolutions where the stage changes), one epoch
BY_HAND = [
    ("tracin_train_resnet56", TRACIN + "/train.py",
     "--input {work}/tracin_data --model resnet56 -c cpu --train_batch_size 4 "
     "--val_batch_size 4 --val-iter 2 --train_epochs 1 -m {out} -o {out}"),
]
# the programs' own modules, forgotten after each run
OWN_MODULES = ("args", "model", "cifar10_load", "neu")


def tracin_data(folder):
    """TracIn's ``--input`` stand-in: CIFAR-10-shaped uint8 pictures and (N, 1) labels, a
    tenth of the training labels moved to the next class in ``y_shuffle_train``."""
    rng = np.random.RandomState(0)
    os.makedirs(folder, exist_ok=True)
    y_train = rng.randint(0, 10, (N_TRAIN, 1))
    shuffled = y_train.copy()
    shuffled[::10] = (shuffled[::10] + 1) % 10
    arrays = {"x_train": rng.randint(0, 256, (N_TRAIN, 3, 32, 32)).astype(np.uint8),
              "y_train": y_train, "y_shuffle_train": shuffled,
              "x_val": rng.randint(0, 256, (N_VAL, 3, 32, 32)).astype(np.uint8),
              "y_val": rng.randint(0, 10, (N_VAL, 1))}
    for name, array in arrays.items():
        np.save(os.path.join(folder, name + ".npy"), array)


def tracin_checkpoints(trained, folder):
    """``params_29.h5`` ... ``params_269.h5`` in ``folder``: copies of ``trained``'s initial
    parameters (``params_0.h5``)."""
    os.makedirs(folder, exist_ok=True)
    for epoch in CHECKPOINT_EPOCHS:
        shutil.copy(os.path.join(trained, "params_0.h5"),
                    os.path.join(folder, f"params_{epoch}.h5"))


def representer_info(folder):
    """Representer point's ``data/info/no_shuffle/info.h5`` under ``folder``, as its
    ``generate_feature.py`` writes it: ``label`` (N, 1), ``param/weight`` (features, 10) and
    ``param/bias`` (10,), ``feature/train`` (N, features), ``output/train`` (N, 10) softmax
    outputs."""
    import h5py
    rng = np.random.RandomState(0)
    features = np.maximum(rng.randn(N_FEATURES, FEATURES), 0).astype(np.float32)
    weight = (rng.randn(FEATURES, 10) * 0.1).astype(np.float32)
    bias = (rng.randn(10) * 0.1).astype(np.float32)
    logits = features @ weight + bias
    output = np.exp(logits - logits.max(1, keepdims=True))
    output = (output / output.sum(1, keepdims=True)).astype(np.float32)
    info = os.path.join(folder, "data", "info", "no_shuffle")
    os.makedirs(info, exist_ok=True)
    with h5py.File(os.path.join(info, "info.h5"), "w") as f:
        f.create_dataset("label", data=output.argmax(1).reshape(-1, 1).astype(np.float32))
        f.create_group("param")
        f["param"].create_dataset("weight", data=weight)
        f["param"].create_dataset("bias", data=bias)
        f.create_group("feature")
        f["feature"].create_dataset("train", data=features)
        f.create_group("output")
        f["output"].create_dataset("train", data=output)


def printed_numbers(text):
    """What compute_score.py printed: its ``Epoch:`` lines' [epoch, loss, phi_loss, l2 * lmbd,
    grad], how many line searches gave up ("t too small") and the two numbers after its L1
    and Pearson headings."""
    lines = text.splitlines()
    epochs, after = [], {"gave up": lines.count("t too small")}
    for i, line in enumerate(lines):
        if line.startswith("Epoch:"):
            epochs.append([float(part.split(":", 1)[1].strip(" []"))
                           for part in line.split("\t")])
        elif line.startswith("L1 difference") and i + 1 < len(lines):
            after["l1"] = float(lines[i + 1])
        elif line.startswith("pearson") and i + 1 < len(lines):
            after["pearson"] = float(lines[i + 1])
    return {"epochs": epochs, **after}


def arrays_in(folder, names):
    """``{name: values}`` of the ``.npy`` files ``names`` under ``folder`` (searched)."""
    out = {}
    for top, _, files in os.walk(folder):
        for name in files:
            if name in names:
                out[name] = np.load(os.path.join(top, name)).ravel().tolist()
    return out


def main(argv):
    examples, work, out_path, stadyn = record.begin(argv, ROOT)
    np.int = int
    import nnabla as nn
    import nnabla.random
    sys.path.append(os.path.join(examples, "utils"))
    tracin_data(os.path.join(work, "tracin_data"))
    results = {}
    named = [n for a in argv if a.startswith("--only=") for n in a.split("=", 1)[1].split(",")]
    runs = RUNS + [r for r in BY_HAND if r[0] in named]
    for run, program, args, out in record.selected(runs, argv, work):
        shutil.copy(os.path.join(examples, TRACIN, "learning_rate.yaml"), out)
        if run == "tracin_score":
            tracin_checkpoints(os.path.join(work, "tracin_train"),
                               os.path.join(work, "tracin_checkpoints"))
        if run == "representer_score":
            representer_info(out)
        np.random.seed(0)
        random.seed(0)
        nn.seed(0)
        nnabla.random.set_parameter_seed(313)
        if stadyn:
            import torch
            torch.manual_seed(0)
        nn.clear_parameters()
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            error, seconds = record.run_beside_its_modules(
                os.path.join(examples, program),
                args.format(work=work, out=out).split(), out, OWN_MODULES)
        results[run] = record.result(out, error, seconds, stadyn,
                                     digest=run.startswith("tracin_train"))
        if run.startswith("tracin_train"):
            # the .nnp exports: files inside, functions by type, how many executor variables
            results[run]["nnp"] = {
                name: {"files": n["files"], "types": n["types"],
                       "executor variables": len(n["executor variables"])}
                for name, n in nnp_summary(out).items()}
            # the initial and the trained parameters
            results[run]["parameters"] = {
                k: v for k, v in results[run]["parameters"].items()
                if k == "params_0.h5" or k.startswith("params_0000")}
        results[run]["arrays"] = arrays_in(out, ("influence_all_epoch.npy",
                                                 "weight_matrix.npy",
                                                 "alpha_vgg_nnabla_score.npy"))
        if run == "representer_score":
            results[run]["printed"] = printed_numbers(printed.getvalue())
        nn.clear_parameters()
    record.write_results(results, out_path)


if __name__ == "__main__":
    main(sys.argv[1:])
