"""Run a thirteenth batch of nnabla-examples' programs (sony/nnabla-examples:
``meta-learning/prototypical``'s prototypical networks, trained on Omniglot's layout, then
evaluated as matching networks with the cosine similarity; ``image-classification/imagenet``'s
``infer.py`` with three architectures), unchanged, at a tiny size, and
write as JSON what they wrote.  The same file runs on NNabla 1.39 (which made
``refs/nnabla139_examples_13.json``) and, with ``--stadyn``, on Stadyn through
``examples/nnabla/on_stadyn.py``'s import hook.

    python tests/examples/nnabla_examples_13.py EXAMPLES WORK OUT.json [--stadyn] [--only=R,..]

The reference file is this, run on NNabla 1.39 (``/work/peers/nnabla/bin/python
tests/examples/nnabla_examples_13.py EXAMPLES WORK
tests/examples/refs/nnabla139_examples_13.json``, with matplotlib 3.8.4 and scikit-learn 1.4.2
installed there: the program imports both at its top).

EXAMPLES holds the programs' folders and ``utils`` (a checkout or an archive of the
repository); WORK is an empty folder.  The data are a stand-in the driver writes in the
program's own format, from NumPy's generator seeded 0: ``WORK/data/omniglot/data/train.npy``
and ``val.npy``, each a pickled pair (pictures, labels) whose pictures, classes by 20 drawings
of 56 x 56, make Omniglot's 1,623 classes together (the program resizes them to 28 x 28 with
``nnabla.utils.image_utils.imresize``, nearest neighbour).  Only the harness around the
programs differs from a user's shell: ``np.float``, which the program uses and NumPy 1.24
removed, is ``float`` again; NumPy's, ``random``'s and NNabla's generators are seeded 0 before
each run, the parameter initializers 313 (on Stadyn torch's 0 too); each program runs in its
own folder of WORK; and scikit-learn's ``TSNE``, which the program fits to 1,000 training
pictures' embeddings after training for its plot, is replaced by one that records what it is
given (the embeddings, compared here) and returns their first two columns: t-SNE's own result
depends on scikit-learn's version, not on the framework.  infer.py reads a 110 x 90 PNG of
noise (``WORK/picture.png``, seed 0) and a parameter file the driver writes from the
program's own ``models.build_network`` (seed 313); what it logs for its top 5 is recorded.
"""

import contextlib
import io
import os
import random
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nnabla_example_runs as record  # noqa: E402
from nnabla_examples_5 import nnp_summary  # noqa: E402

PROTOTYPICAL = "meta-learning/prototypical"
IMAGENET = "image-classification/imagenet"
PROGRAMS = (PROTOTYPICAL, IMAGENET, "utils")
CLASSES, DRAWINGS, SIDE = 1623, 20, 56     # Omniglot's classes, drawings of each, stand-in size
TRAIN_CLASSES = 964                        # in Omniglot's images_background (train.npy)

# (run, program, arguments); {out} is WORK/<run>, {work} is WORK.
RUNS = [
    # Meta-training: 6 episodes of 5 classes (1 support, 2 queries each) through the conv4
    # embedding (PF.convolution, PF.batch_normalization, F.max_pooling), the euclidean
    # similarity (broadcast subtraction of (q, 1, d) and (1, s, d), ** 2.0, F.sum), F.mean
    # and F.softmax_cross_entropy; Adam with its learning rate halved every 4 iterations
    # (solver.learning_rate / set_learning_rate); a validation of 4 episodes (F.top_n_error)
    # every 3 iterations, nn.save_parameters of the best, nn.load_parameters, a test of 4
    # episodes, the embeddings of 1,000 pictures, and two .nnp exports (neu's save_nnp)
    ("proto_train", PROTOTYPICAL + "/prototypical.py",
     "-c cpu -dr {work}/data -nwt 5 -nst 1 -nqt 2 -mi 6 -vi 3 -ei 3 -ev 4 -et 4 -lrdi 4 "
     "-w {out}"),
    # Meta-test of the initial parameters (written by the driver) as matching networks with
    # the cosine similarity, 2 shots of 5 classes: ** -0.5, F.minimum_scalar /
    # F.maximum_scalar, F.softmax, F.reshape to (queries, classes, shots) with the shots a
    # float (xs.shape[0] / n_class), F.mean over the shots and F.log
    ("proto_test_matching", PROTOTYPICAL + "/prototypical.py",
     "-c cpu -dr {work}/data -tt test -n matching -d cosine -ns 2 -nq 3 -et 6 -w {out}"),
]
# ImageNet inference (infer.py) at 64 x 64 on the stand-in picture, each architecture with
# its initial parameters (seed 313) written by the driver from the program's own
# models.build_network: nn.load_parameters, imread with size=, the network on an NdArray,
# F.softmax, F.sort(reverse=True, only_index=True) and slicing of NdArrays; MobileNet v3's
# head pools its 2 x 2 maps with a 7 x 7 kernel (one window on NNabla 1.39)
INFER_ARCHS = ("resnet18", "se_resnext50", "mobilenet_v3_small")
RUNS += [("infer_" + arch, IMAGENET + "/infer.py",
          "-c cpu -a %s --spatial-size 64 --labels {examples}/%s/label_words.csv "
          "{work}/picture.png {out}/weights.h5" % (arch, IMAGENET))
         for arch in INFER_ARCHS]
# runs made only when ``--only`` names them: one training step, its loss the first episode's
# with the initial parameters and its parameters Adam's first step from them
BY_HAND = [
    ("proto_one_step", PROTOTYPICAL + "/prototypical.py",
     "-c cpu -dr {work}/data -nwt 5 -nst 1 -nqt 2 -mi 1 -vi 1 -ei 1 -ev 4 -et 4 -w {out}"),
]
# the programs' own modules, forgotten after each run
OWN_MODULES = ("_checkpoint_nnp_util", "neu", "args", "models", "normalize_config")


def omniglot_data(folder):
    """``folder/omniglot/data/{train,val}.npy``: pickled pairs (pictures, labels) as the
    program's loader reads them, ``x, _ = np.load(path, allow_pickle=True)``."""
    rng = np.random.RandomState(0)
    pictures = (rng.rand(CLASSES, DRAWINGS, SIDE, SIDE) < 0.2).astype(np.uint8) * 255
    data = os.path.join(folder, "omniglot", "data")
    os.makedirs(data, exist_ok=True)
    for name, part in (("train", pictures[:TRAIN_CLASSES]), ("val", pictures[TRAIN_CLASSES:])):
        pair = np.empty(2, dtype=object)
        pair[0], pair[1] = part, np.arange(len(part))
        np.save(os.path.join(data, name + ".npy"), pair, allow_pickle=True)


class RecordingTSNE:
    """Stands for scikit-learn's ``manifold.TSNE``: keeps what ``fit_transform`` is given."""
    given = []

    def __init__(self, **kwargs):
        self.kwargs = kwargs

    def fit_transform(self, u):
        RecordingTSNE.given.append(np.array(u))
        return np.asarray(u)[:, :2]


def embeddings_summary(given):
    """The embeddings handed to t-SNE: shape, sum, sum of squares and the first values."""
    return [{"shape": list(u.shape), "sum": float(u.sum(dtype=np.float64)),
             "sum of squares": float(np.square(u, dtype=np.float64).sum()),
             "first": [float(x) for x in u.ravel()[:8]]} for u in given]


def stand_in_picture(path):
    """A 110 x 90 RGB picture of NumPy's uniform noise (seed 0), PNG."""
    from PIL import Image
    rng = np.random.RandomState(0)
    Image.fromarray(rng.randint(0, 256, (90, 110, 3)).astype(np.uint8)).save(path)


def imagenet_weights(program, arch, path):
    """The initial parameters (seed 313) of ``arch`` for 64 x 64 pictures, built by the
    program's own ``models.build_network``, saved at ``path``."""
    import nnabla as nn
    import nnabla.random
    folder = os.path.dirname(program)
    sys.path.insert(0, folder)
    try:
        from models import build_network
        nn.clear_parameters()
        nnabla.random.set_parameter_seed(313)
        build_network(nn.Variable((1, 3, 64, 64)), 1000, arch, test=True)
        nn.save_parameters(path)
        nn.clear_parameters()
    finally:
        sys.path.remove(folder)
        for name in list(sys.modules):
            if name.split(".")[0] in ("models", "args", "normalize_config"):
                sys.modules.pop(name)


class PrintedTop5:
    """A logging handler keeping the lines infer.py logs for its top 5 (``* index label:
    percent``)."""

    def __init__(self):
        import logging
        self.handler = logging.Handler()
        self.lines = []
        self.handler.emit = lambda record: self.lines.append(record.getMessage())

    def top5(self):
        rows = [line[2:].split(" ", 1) for line in self.lines
                if line.startswith("* ") and line[2:3].isdigit()]
        return [[int(i), float(rest.rsplit(": ", 1)[1])] for i, rest in rows]


def initial_parameters(program, path):
    """The conv4 embedding's initial parameters (seed 313), made by the program's own
    ``conv4`` (its file loaded under a name of its own), saved at ``path``: the meta-test reads
    ``params.h5`` from its ``-w`` folder.  Both frameworks draw them alike, so the meta-test's
    numbers are compared exactly; trained ones would carry Adam's first step of the conv biases,
    whose gradients (followed by batch normalization) are rounding noise."""
    import importlib.util
    import nnabla as nn
    import nnabla.random
    sys.path.insert(0, os.path.dirname(program))
    try:
        spec = importlib.util.spec_from_file_location("prototypical_of_examples_13", program)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(os.path.dirname(program))
    nn.clear_parameters()
    nnabla.random.set_parameter_seed(313)
    module.conv4(nn.Variable((1, 1, 28, 28)), test=True)
    nn.save_parameters(path)
    nn.clear_parameters()


def main(argv):
    examples, work, out_path, stadyn = record.begin(argv, ROOT)
    np.float = float
    import nnabla as nn
    import nnabla.random
    from sklearn import manifold
    manifold.TSNE = RecordingTSNE
    omniglot_data(os.path.join(work, "data"))
    stand_in_picture(os.path.join(work, "picture.png"))
    from nnabla import logger
    results = {}
    named = [n for a in argv if a.startswith("--only=") for n in a.split("=", 1)[1].split(",")]
    runs = RUNS + [r for r in BY_HAND if r[0] in named]
    for run, program, args, out in record.selected(runs, argv, work):
        if run == "proto_test_matching":
            initial_parameters(os.path.join(examples, program),
                               os.path.join(out, "params.h5"))
        np.random.seed(0)
        random.seed(0)
        nn.seed(0)
        nnabla.random.set_parameter_seed(313)
        if stadyn:
            import torch
            torch.manual_seed(0)
        nn.clear_parameters()
        if run.startswith("infer_"):
            imagenet_weights(os.path.join(examples, program), run[len("infer_"):],
                             os.path.join(out, "weights.h5"))
        RecordingTSNE.given = []
        printed_top5 = PrintedTop5()
        logger.addHandler(printed_top5.handler)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            error, seconds = record.run_beside_its_modules(
                os.path.join(examples, program),
                args.format(work=work, out=out, examples=examples).split(), out, OWN_MODULES)
        logger.removeHandler(printed_top5.handler)
        results[run] = record.result(out, error, seconds, stadyn, digest=run.startswith("proto"))
        results[run]["embeddings"] = embeddings_summary(RecordingTSNE.given)
        results[run]["top5"] = printed_top5.top5()
        results[run]["nnp"] = {
            name: {"files": n["files"], "types": n["types"],
                   "executor variables": len(n["executor variables"])}
            for name, n in nnp_summary(out).items()}
        nn.clear_parameters()
    record.write_results(results, out_path)


if __name__ == "__main__":
    main(sys.argv[1:])
