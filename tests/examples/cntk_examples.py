"""Run CNTK's own ``Examples/`` Python programs (of Microsoft/CNTK; not part of this repository)
at a tiny size, one after another in this process, and write what each printed as JSON.  The
same file runs on CNTK 2.7 (which made ``refs/cntk27_examples.json``) and, with ``--stadyn``, on
Stadyn, where ``import cntk`` (and ``_cntk_py``, CNTK's native module) resolve to
``stadyn.compat.cntk``: only the import differs.

    python tests/examples/cntk_examples.py EXAMPLES OUT.json [--stadyn] [--only=RUN,..]

The reference file is this, run on CNTK 2.7 (``LD_LIBRARY_PATH=.../shimlib .../venv36/bin/python
-W ignore tests/examples/cntk_examples.py EXAMPLES tests/examples/refs/cntk27_examples.json``).

EXAMPLES is a folder holding CNTK's ``Examples/`` (and the one data file the sequence
classifier reads from ``Tests/``), as ``git archive HEAD Examples`` leaves it; the programs find
their data where CNTK's download scripts would put it, so the stand-ins are written there:
MNIST (``Image/DataSets/MNIST``: synthetic digits in CTF, the format ``install_mnist.py``
writes), CIFAR-10 (``Image/DataSets/CIFAR-10``: PNGs, map files, the mean XML and the CTF files
of ``cifar_utils.py``), the MNIST that ``MNIST_Complex_Training.py`` takes from scikit-learn's
``fetch_mldata`` (a module standing in for it), and Penn Treebank for ``word_rnn.py`` (its own
``test/`` corpus as ``ptb/``), UCF11's video clips (with stand-ins for the ``imageio`` and
``PIL`` modules ``Conv3D_UCF11.py`` reads them with, on both frameworks), the pretrained
ResNet of FeatureExtraction and TransferLearning (``refs/cntk27_resnet_standin.model``, a small
one CNTK 2.7 wrote) with their Grocery and Flowers pictures, AN4's feature archive, and for
Faster R-CNN (``Image/Detection``) Grocery's detection files, a small AlexNet CNTK 2.7 wrote
(``refs/cntk27_alexnet_standin.model``) and the modules its helpers import
(``cntk_detection_standins.py``; its sizes are cut in the files it imports,
``DETECTION_CUTS``).  ATIS,
Shakespeare, AN4's labels and the sequence-classification data ship with CNTK and are used as
they are (cut).

Sizes are cut by replacing the literal text of a size (an epoch of 60000 samples, a test set
of 10000) before the program runs, as ``tools/cntk_notebooks.py`` does for the notebooks; each
replaced text must be found.  Before each program NumPy is seeded 0 and CNTK's count of
auto-selected seeds restarts (``cntk_py.reset_random_seed(0)``), so each program's parameters
start as in a process of its own.
"""

from __future__ import print_function

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import io
import json
import os
import shutil
import sys
import time
import traceback
import types

import numpy as np

from cntk_examples_standins import _png, cut_an4, image_standins, write_pretrained, write_ucf11
from cntk_detection_standins import detection_standins, write_grocery_detection

# (run, program under Examples/, argv, [(text, replacement), ...])
RUNS = [
    ("logreg_functional", "1stSteps/LogisticRegression_FunctionalAPI.py", [],
     [("generate_synthetic_data(20000)", "generate_synthetic_data(2000)")]),
    ("logreg_graph", "1stSteps/LogisticRegression_GraphAPI.py", [],
     [("generate_synthetic_data(20000)", "generate_synthetic_data(2000)")]),
    ("mnist_complex", "1stSteps/MNIST_Complex_Training.py", [],
     [("X[:60000].reshape((-1,28,28)), X[60000:]", "X[:600].reshape((-1,28,28)), X[600:]"),
      ("Y[:60000].astype(int), Y[60000:]", "Y[:600].astype(int), Y[600:]"),
      ("X_train[:54000], X_train[54000:]", "X_train[:540], X_train[540:]"),
      ("Y_train[:54000], Y_train[54000:]", "Y_train[:540], Y_train[540:]"),
      ("max_epochs=50", "max_epochs=3"),
      ("X_test[0:10000:400].copy(), Y_test[0:10000:400]",
       "X_test[0:100:4].copy(), Y_test[0:100:4]")]),
    ("simple_mnist", "Image/Classification/MLP/Python/SimpleMNIST.py", [],
     [("num_samples_per_sweep = 60000", "num_samples_per_sweep = 600"),
      ("num_sweeps_to_train_with = 10", "num_sweeps_to_train_with = 2"),
      ("num_samples = 10000", "num_samples = 300"),
      ("test_minibatch_size = 1024", "test_minibatch_size = 100")]),
    ("convnet_mnist", "Image/Classification/ConvNet/Python/ConvNet_MNIST.py", [],
     [("epoch_size=60000, minibatch_size=64, max_epochs=40",
       "epoch_size=256, minibatch_size=64, max_epochs=2"),
      ("epoch_size = 10000", "epoch_size = 200"),
      ("minibatch_size = 1024", "minibatch_size = 100")]),
    ("convnet_cifar10", "Image/Classification/ConvNet/Python/ConvNet_CIFAR10.py", [],
     [("epoch_size=50000, minibatch_size=64, max_epochs=30",
       "epoch_size=64, minibatch_size=64, max_epochs=1"),
      ("epoch_size = 10000", "epoch_size = 32")]),
    ("convnet_cifar10_dataaug", "Image/Classification/ConvNet/Python/ConvNet_CIFAR10_DataAug.py",
     [], [("train_model(reader, model, criterion, max_epochs=80)",
           "train_model(reader, model, criterion, max_epochs=1, epoch_size=64)")]),
    ("convnetlrn_cifar10_dataaug",
     "Image/Classification/ConvNet/Python/ConvNetLRN_CIFAR10_DataAug.py", [],
     [("reader_test, epoch_size=50000, max_epochs = 80)",
       "reader_test, epoch_size=64, max_epochs = 1)"),
      ("epoch_size     = 10000", "epoch_size     = 32")]),
    ("resnet20_cifar10", "Image/Classification/ResNet/Python/TrainResNet_CIFAR10.py",
     ["-e", "1", "-es", "64"], [("test_epoch_size = 10000", "test_epoch_size = 16")]),
    ("deconvolution", "Image/GettingStarted/07_Deconvolution_PY.py", [],
     [("def deconv_mnist(max_epochs=3)", "def deconv_mnist(max_epochs=2)"),
      ("epoch_size = 60000", "epoch_size = 256"), ("epoch_size = 10000", "epoch_size = 200"),
      ("minibatch_size = 1024", "minibatch_size = 100")]),
    ("sequence_classification",
     "SequenceClassification/SimpleExample/Python/SequenceClassification.py", [],
     [("for i in range(251):", "for i in range(12):")]),
    ("language_understanding", "LanguageUnderstanding/ATIS/Python/LanguageUnderstanding.py",
     ["-e", "1"],
     [("emb_dim    = 150", "emb_dim    = 20"), ("hidden_dim = 300", "hidden_dim = 30"),
      ("epoch_size = 36000", "epoch_size = 700")]),
    ("char_rnn", "Text/CharacterLM/char_rnn.py", [],
     [("hidden_dim = 256", "hidden_dim = 32"),
      ("def train_and_eval_char_rnn(epochs=50, max_num_minibatches=sys.maxsize)",
       "def train_and_eval_char_rnn(epochs=2, max_num_minibatches=40)")]),
    ("word_rnn", "Text/WordLMWithSampledSoftmax/word_rnn.py", [],
     [("softmax_sample_size = 500", "softmax_sample_size = 5"),
      ("hidden_dim = 200", "hidden_dim = 16"),
      ("num_epochs = 10", "num_epochs = 2"), ("sequence_length = 40", "sequence_length = 8"),
      ("sequences_per_batch = 10", "sequences_per_batch = 4"),
      ("num_samples_between_progress_report = 100000",
       "num_samples_between_progress_report = 50")]),
    # -- sequence to sequence (CMUDict, attention) --
    ("sequence2sequence", "SequenceToSequence/CMUDict/Python/Sequence2Sequence.py", [],
     [("hidden_dim = 512", "hidden_dim = 24"), ("attention_dim = 128", "attention_dim = 12"),
      ("embedding_dim = 200", "embedding_dim = 16"), ("eval_freq = 100", "eval_freq = 4"),
      ("max_epochs=30, epoch_size=908241", "max_epochs=1, epoch_size=800"),
      ("test_epoch = 10", "test_epoch = 1"),
      ("interactive_session(model, vocab, i2w, show_attention=True)",
       "pass")]),          # (reads the keyboard; its translate() fails in CNTK 2.7 too)
    # -- end of sequence to sequence --
    # -- a pretrained ResNet (a small stand-in written by CNTK 2.7); in this order (in the
    # other, CNTK 2.7's process dies of a floating point exception after FeatureExtraction) --
    ("transfer_learning", "Image/TransferLearning/TransferLearning.py", [],
     [("max_epochs = 20", "max_epochs = 2"), ("mb_size = 50", "mb_size = 10"),
      ("_image_height = 224", "_image_height = 32"), ("_image_width = 224", "_image_width = 32"),
      # (CNTK 2.7's CPU build raises ValueError at gpu(0); Stadyn, deliberately, falls back to
      # the CPU with a warning: cntk_misc.py's case gpu0)
      ("try_set_default_device(gpu(0))", "try_set_default_device(C.device.cpu())"),
      ("from PIL import Image", "from pil_standin import Image")]),
    ("feature_extraction", "Image/FeatureExtraction/FeatureExtraction.py", [],
     [("image_height = 224", "image_height = 32"), ("image_width  = 224", "image_width  = 32")]),
    # 3-D convolution on UCF11 video clips: 8 training and 4 test clips (stand-ins) of its 16
    # frames (fewer leave its third block's convolutions a time axis shorter than their
    # kernels, an error in CNTK 2.7), 32x32 crops, 8/16 filters, Dense(32), one epoch
    ("conv3d_ucf11", "Video/GettingStarted/Python/Conv3D_UCF11.py", [],
     [("self.width           = 112", "self.width           = 32"),
      ("self.height          = 112", "self.height          = 32"),
      ("C.layers.Convolution3D((3,3,3), 64, pad=True)",
       "C.layers.Convolution3D((3,3,3), 8, pad=True)"),
      ("[96, 128, 128][i]", "[8, 16, 16][i]"), ("C.layers.Dense(1024)", "C.layers.Dense(32)"),
      ("max_epochs=30", "max_epochs=1"),
      ("from PIL import Image", "from pil_standin import Image")]),
    # BN-Inception on CIFAR-10: one minibatch of 16 images, one of 16 to test
    ("bn_inception_cifar10",
     "Image/Classification/GoogLeNet/BN-Inception/Python/BN_Inception_CIFAR10.py",
     ["-n", "1", "-m", "16", "-e", "16"],
     [("testing_parameters=(10000,128)", "testing_parameters=(16,16)")]),
    # The distributed ConvNet on one worker (last: it calls Communicator.finalize(), after
    # which CNTK 2.7 cannot start MPI again in this process); it takes ``sys`` from
    # ``from cntk.train.training_session import *``
    ("convnet_cifar10_dataaug_distributed",
     "Image/Classification/ConvNet/Python/ConvNet_CIFAR10_DataAug_Distributed.py",
     ["-n", "1", "-e", "64", "-r"], []),
    # Speech (AN4): three LSTM layers of 16, truncated BPTT, one worker; after the distributed
    # ConvNet, and in a CNTK 2.7 process of its own (it calls Communicator.finalize() too)
    ("htk_lstm_truncated", "Speech/AN4/Python/HTK_LSTM_Truncated_Distributed.py",
     ["-n", "2", "-m", "500", "-e", "1000"],
     [("Recurrence(LSTM(256))", "Recurrence(LSTM(16))")]),
    # -- object detection (Grocery, a small AlexNet): the sizes are cut in the configuration
    # files and helpers the program imports (DETECTION_CUTS) --
    ("faster_rcnn", "Image/Detection/FasterRCNN/run_faster_rcnn.py", [], []),
    ("fast_rcnn", "Image/Detection/FastRCNN/run_fast_rcnn.py", [], []),
]

# -- object detection: cuts in the files the detection programs import (under
# Image/Detection), made in the copy before they run, once per file (the runs share some);
# each text must be found --
_DETECTION_SIZES = [
    # Grocery: 4 training and 2 test pictures (of 20 and 5); anchors of 64, 128, 192 pixels
    ("utils/configs/Grocery_config.py",
     [("__C.DATA.NUM_TRAIN_IMAGES = 20", "__C.DATA.NUM_TRAIN_IMAGES = 4"),
      ("__C.DATA.NUM_TEST_IMAGES = 5", "__C.DATA.NUM_TEST_IMAGES = 2")]),
    # the AlexNet stand-in's fully connected layers have 64 outputs (the heads read 4096)
    ("FastRCNN/FastRCNN_train.py",
     [('parameter(shape=(4096, cfg["DATA"].NUM_CLASSES)',
       'parameter(shape=(64, cfg["DATA"].NUM_CLASSES)'),
      ('parameter(shape=(4096, cfg["DATA"].NUM_CLASSES*4)',
       'parameter(shape=(64, cfg["DATA"].NUM_CLASSES*4)')]),
    ("utils/configs/AlexNet_config.py",
     [("__C.MODEL.RPN_NUM_CHANNELS = 256", "__C.MODEL.RPN_NUM_CHANNELS = 32")]),
    # plot_helpers.py's pictures are not drawn (VISUALIZE_RESULTS is False) and CNTK 2.7's
    # environment has no PIL
    ("utils/plot_helpers.py",
     [("from PIL import Image, ImageFont, ImageDraw",
       "Image = ImageFont = ImageDraw = None  # (cut: not drawn)"),
      ("from PIL.ExifTags import TAGS", "TAGS = {}  # (cut)")]),
]
DETECTION_CUTS = {
    "faster_rcnn": _DETECTION_SIZES + [
        # pictures of 160 x 160 (of 850), 2 epochs, 32 ROIs (of 128), RPN batches of 64
        ("FasterRCNN/FasterRCNN_config.py",
         [("__C.IMAGE_WIDTH = 850", "__C.IMAGE_WIDTH = 160"),
          ("__C.IMAGE_HEIGHT = 850", "__C.IMAGE_HEIGHT = 160"),
          ("__C.CNTK.E2E_MAX_EPOCHS = 20", "__C.CNTK.E2E_MAX_EPOCHS = 2"),
          ("__C.NUM_ROI_PROPOSALS = 128", "__C.NUM_ROI_PROPOSALS = 32"),
          ("__C.TRAIN.RPN_BATCHSIZE = 256", "__C.TRAIN.RPN_BATCHSIZE = 64")]),
        # as shipped, CNTK 2.7 stops at the first minibatch: "Metric aggregation did not
        # happen, none of the learners was marked as metric aggregator." (two distributed
        # learners, the biases' and the others', and neither marked)
        ("FasterRCNN/FasterRCNN_train.py",
         [("    trainer = Trainer(None, (loss, pred_error), [learner, bias_learner])",
           "    learner.set_as_metric_aggregator()  # (cut)\n"
           "    trainer = Trainer(None, (loss, pred_error), [learner, bias_learner])")])],
    "fast_rcnn": _DETECTION_SIZES + [
        # pictures of 160 x 160 (of 850), 2 epochs, 32 proposals (of 200); the learning rate's
        # factor 1 (of Grocery's 10, which makes the small AlexNet's losses grow to 1e18)
        ("FastRCNN/FastRCNN_config.py",
         [("__C.CNTK.LR_FACTOR = 10.0", "__C.CNTK.LR_FACTOR = 1.0"),
          ("__C.IMAGE_WIDTH = 850", "__C.IMAGE_WIDTH = 160"),
          ("__C.IMAGE_HEIGHT = 850", "__C.IMAGE_HEIGHT = 160"),
          ("__C.CNTK.MAX_EPOCHS = 20", "__C.CNTK.MAX_EPOCHS = 2"),
          ("__C.NUM_ROI_PROPOSALS = 200", "__C.NUM_ROI_PROPOSALS = 32")])],
}


_CUT_MARK = "# (sizes cut by tests/examples/cntk_examples.py)\n"


def cut_detection(examples, run):
    """Make ``DETECTION_CUTS[run]`` in the copy of ``Image/Detection`` (once: a file cut
    before starts with ``_CUT_MARK``)."""
    for name, cuts in DETECTION_CUTS.get(run, ()):
        path = os.path.join(examples, "Image", "Detection", name)
        with io.open(path, encoding="utf-8-sig") as f:
            source = f.read()
        if source.startswith(_CUT_MARK):
            continue
        for old, new in cuts:
            if old not in source:
                raise SystemExit("%s: not in the file: %r" % (name, old))
            source = source.replace(old, new)
        with io.open(path, "w", encoding="utf-8") as f:
            f.write(_CUT_MARK + source)
# -- end of object detection: cuts --

# what a program writes beside what it prints, kept in the result (relative to its folder)
WRITES = {"feature_extraction": ["layerOutput.txt"],
          "transfer_learning": ["Output/predOutput.txt"]}

N_TRAIN, N_TEST = 600, 300            # MNIST stand-in
N_CIFAR_TRAIN, N_CIFAR_TEST = 256, 64


# -- data stand-ins -------------------------------------------------------------------------

def _digits(n, seed):
    """``n`` synthetic 28x28 'digits' (0..255 integers) and their labels: noise with a bright
    band whose place is the class, so a network learns them within a sweep."""
    rs = np.random.RandomState(seed)
    labels = rs.randint(0, 10, n)
    pixels = (rs.rand(n, 784) * 60).astype(np.int64)
    for i, y in enumerate(labels):
        pixels[i, y * 70:y * 70 + 40] = 255
    return pixels, labels


def write_mnist(folder):
    """``Train-28x28_cntk_text.txt`` and ``Test-28x28_cntk_text.txt`` as ``mnist_utils.py``
    writes them: ``|labels`` one-hot of 10, ``|features`` 784 pixels."""
    os.makedirs(folder, exist_ok=True)
    for name, n, seed in (("Train", N_TRAIN, 0), ("Test", N_TEST, 1)):
        pixels, labels = _digits(n, seed)
        with open(os.path.join(folder, "%s-28x28_cntk_text.txt" % name), "w") as f:
            for x, y in zip(pixels, labels):
                f.write("|labels %s |features %s\n" % (
                    " ".join("1" if k == y else "0" for k in range(10)), " ".join(map(str, x))))


def sklearn_standin():
    """A ``sklearn`` module whose ``datasets.fetch_mldata("MNIST original")`` returns 700 of
    the synthetic digits in the layout of the real one (``data`` (N, 784) 0..255, ``target``
    float labels)."""
    sk = types.ModuleType("sklearn")
    datasets = types.ModuleType("sklearn.datasets")
    for module in (sk, datasets):                         # (torch looks at sklearn's spec)
        module.__spec__ = importlib.machinery.ModuleSpec(module.__name__, None)

    def fetch_mldata(name):
        assert name == "MNIST original", name
        pixels, labels = _digits(700, 2)
        return types.SimpleNamespace(data=pixels.astype(np.uint8), target=labels.astype(float))
    datasets.fetch_mldata = fetch_mldata
    sk.datasets, sk.utils = datasets, types.ModuleType("sklearn.utils")
    return {"sklearn": sk, "sklearn.datasets": datasets, "sklearn.utils": sk.utils}


def write_cifar(folder):
    """CIFAR-10 as ``cifar_utils.py`` leaves it: ``train/%05d.png`` (32x32 padded by 4 pixels of
    128), ``test/%05d.png``, ``train_map.txt``/``test_map.txt`` (path, tab, label),
    ``CIFAR-10_mean.xml`` (the CHW mean of the training images) and ``Train_cntk_text.txt`` /
    ``Test_cntk_text.txt`` (``|labels`` one-hot, ``|features`` the 3072 CHW values); the images
    are noisy colours, one colour per class."""
    rs = np.random.RandomState(2)
    folder = os.path.abspath(folder)
    palette = rs.randint(0, 256, (10, 3))
    mean = np.zeros((3, 32, 32))
    for name, n, pad in (("train", N_CIFAR_TRAIN, 4), ("test", N_CIFAR_TEST, 0)):
        os.makedirs(os.path.join(folder, name), exist_ok=True)
        with open(os.path.join(folder, "%s_map.txt" % name), "w") as map_file, \
                open(os.path.join(folder, "%s_cntk_text.txt" % name.capitalize()), "w") as ctf:
            for i in range(n):
                label = rs.randint(10)
                chw = np.clip(palette[label][:, None, None] + rs.normal(0, 40, (3, 32, 32)),
                              0, 255).astype(np.uint8)
                ctf.write("|labels %s |features %s\n" % (
                    " ".join("1" if k == label else "0" for k in range(10)),
                    " ".join(map(str, chw.ravel()))))
                if pad:
                    mean += chw
                    chw = np.pad(chw, ((0, 0), (pad, pad), (pad, pad)), "constant",
                                 constant_values=128)
                path = os.path.join(folder, name, "%05d.png" % i)
                _png(path, chw.transpose(1, 2, 0).copy())
                map_file.write("%s\t%d\n" % (path, label))
    values = " ".join("%e" % v for v in (mean / N_CIFAR_TRAIN).ravel())
    with open(os.path.join(folder, "CIFAR-10_mean.xml"), "w") as f:
        f.write('<?xml version="1.0" ?>\n<opencv_storage>\n  <Channel>3</Channel>\n'
                "  <Row>32</Row>\n  <Col>32</Col>\n"
                '  <MeanImg type_id="opencv-matrix">\n    <rows>1</rows>\n'
                "    <cols>3072</cols>\n    <dt>f</dt>\n    <data>%s</data>\n"
                "  </MeanImg>\n</opencv_storage>\n" % values)


def write_ptb(examples):
    """``word_rnn.py``'s Penn Treebank folder (``ptb/``, which ``download_data.py`` fills):
    the program's own regression-test corpus (``test/``) as training and validation text."""
    base = os.path.join(examples, "Text", "WordLMWithSampledSoftmax")
    os.makedirs(os.path.join(base, "ptb"), exist_ok=True)
    for src, dst in (("token2id.txt", "token2id.txt"), ("freq.txt", "freq.txt"),
                     ("text.txt", "train.txt"), ("text.txt", "valid.txt")):
        shutil.copy(os.path.join(base, "test", src), os.path.join(base, "ptb", dst))


def cut_atis(examples):
    """ATIS as CNTK ships it, cut to its first 400 training and 60 test queries."""
    for name, n in (("atis.train.ctf", 400), ("atis.test.ctf", 60)):
        path = os.path.join(examples, "LanguageUnderstanding", "ATIS", "Data", name)
        with open(path) as f:
            lines = f.readlines()
        keep = [ln for ln in lines if int(ln.split("\t", 1)[0]) < n]
        with open(path, "w") as f:
            f.writelines(keep)


# -- sequence to sequence (CMUDict): data --
def cut_cmudict(examples, n_train=200, n_test=20):
    """CMUDict as CNTK ships it: the training file ``Sequence2Sequence.py`` reads
    (``cmudict-0.7b.train-dev-20-21.ctf``) as the first ``n_train`` words of
    ``cmudict-0.7b.train-dev-1-21.ctf``, the test file cut to its first ``n_test`` words."""
    data = os.path.join(examples, "SequenceToSequence", "CMUDict", "Data")
    if not os.path.isdir(data):
        return
    for src, dst, n in (("cmudict-0.7b.train-dev-1-21.ctf", "cmudict-0.7b.train-dev-20-21.ctf",
                         n_train), ("cmudict-0.7b.test.ctf", "cmudict-0.7b.test.ctf", n_test)):
        with open(os.path.join(data, src)) as f:
            keep = [ln for ln in f if int(ln.split("\t", 1)[0]) < n]
        with open(os.path.join(data, dst), "w") as f:
            f.writelines(keep)
# -- end of sequence to sequence: data --


def write_standins(examples):
    cut_cmudict(examples)
    cut_atis(examples)
    write_mnist(os.path.join(examples, "Image", "DataSets", "MNIST"))
    write_cifar(os.path.join(examples, "Image", "DataSets", "CIFAR-10"))
    write_ptb(examples)
    write_ucf11(os.path.join(examples, "Video", "DataSets", "UCF11"))
    write_pretrained(examples)
    cut_an4(examples)
    if os.path.isdir(os.path.join(examples, "Image", "Detection")):
        write_grocery_detection(examples)


# -- running --------------------------------------------------------------------------------

class _CntkIsStadyn(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``import cntk[.x]`` and ``import _cntk_py`` give ``stadyn.compat.cntk[.x]``."""

    TARGETS = {"cntk": "stadyn.compat.cntk", "_cntk_py": "stadyn.compat.cntk._cntk_py"}

    def find_spec(self, name, path=None, target=None):
        head = name.split(".")[0]
        if head not in self.TARGETS:
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec):
        head, _, rest = spec.name.partition(".")
        module = importlib.import_module(self.TARGETS[head] + ("." + rest if rest else ""))
        sys.modules[spec.name] = module
        return module

    def exec_module(self, module):
        pass


def run_program(examples, run, program, argv, cuts):
    """Run one program as ``__main__`` in its own folder; returns (error, stdout, the files of
    ``WRITES`` it wrote, seconds)."""
    path = os.path.join(examples, program)
    with io.open(path, encoding="utf-8-sig") as f:        # (some start with a BOM)
        source = f.read()
    for old, new in cuts:
        if old not in source:
            raise SystemExit("%s: not in the program: %r" % (program, old))
        source = source.replace(old, new)
    folder = os.path.dirname(path)
    os.makedirs(os.path.join(folder, "models"), exist_ok=True)     # char_rnn, word_rnn save there
    sys.argv = [path] + list(argv)
    sys.path.insert(0, folder)
    cwd = os.getcwd()
    os.chdir(folder)
    np.random.seed(0)
    import cntk
    cntk.cntk_py.reset_random_seed(0)           # parameters numbered as in a fresh process
    out, error, start = io.StringIO(), None, time.time()
    module = types.ModuleType("__main__")
    module.__file__ = path
    saved_main = sys.modules["__main__"]
    sys.modules["__main__"] = module
    cut_detection(examples, run)
    if run in DETECTION_CUTS:              # (a model an earlier run left is loaded, not trained)
        shutil.rmtree(os.path.join(os.path.dirname(os.path.join(examples, program)), "Output"),
                      ignore_errors=True)
    standins = {"mnist_complex": sklearn_standin, "conv3d_ucf11": image_standins,
                "transfer_learning": image_standins, "faster_rcnn": detection_standins,
                "fast_rcnn": detection_standins}.get(run, dict)()
    saved = {name: sys.modules.get(name) for name in standins}
    sys.modules.update(standins)
    # the detection examples' np.float: NumPy 1's alias of float, which NumPy 1.24 removed
    np_float = run in DETECTION_CUTS and not hasattr(np, "float")
    if np_float:
        np.float = float
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(source, path, "exec"), module.__dict__)
    except SystemExit as exc:
        if exc.code not in (None, 0):
            error = "SystemExit(%r)" % (exc.code,)
    except BaseException as exc:  # noqa: BLE001 - a program's failure is a result
        error = "".join(traceback.format_exception_only(type(exc), exc)).strip()[-800:]
        error += "\n" + "".join(traceback.format_tb(exc.__traceback__)[-4:])[-2000:]
    finally:
        sys.modules["__main__"] = saved_main
        if np_float:
            del np.float
        for name, was in saved.items():                        # (torch looks for sklearn)
            if was is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = was
        os.chdir(cwd)
        sys.path.remove(folder)
        for helper in ("resnet_models", "data_reader", "BN_Inception"):   # each its own helpers
            sys.modules.pop(helper, None)
        detection = os.path.join(examples, "Image", "Detection")      # (its utils package, ...)
        for name, m in list(sys.modules.items()):
            if (getattr(m, "__file__", None) or "").startswith(detection):
                del sys.modules[name]
    written = {}
    for name in WRITES.get(run, ()):
        if os.path.exists(os.path.join(folder, name)):
            with open(os.path.join(folder, name)) as f:
                written[name] = f.read()
    # (paths printed under the copy of Examples/ read the same wherever the copy is)
    stdout = out.getvalue().replace(examples, "EXAMPLES")
    return error, stdout, written, round(time.time() - start, 1)


def main(argv):
    examples, out_path = (os.path.abspath(a) for a in argv[:2])
    stadyn = "--stadyn" in argv
    if stadyn:
        sys.meta_path.insert(0, _CntkIsStadyn())
    write_standins(examples)
    only = [a.split("=", 1)[1].split(",") for a in argv if a.startswith("--only=")]
    results = {}
    for run, program, args, cuts in RUNS:
        if only and run not in only[0]:
            continue
        error, stdout, written, seconds = run_program(examples, run, program, args, cuts)
        results[run] = {"error": error, "stdout": stdout}
        if run in WRITES:
            results[run]["files"] = written
        if stadyn:                              # (the reference file has no timings)
            results[run]["seconds"] = seconds
        sys.stderr.write("%s: %s (%.1f s)\n" % (run, "ok" if error is None else error, seconds))
    with open(out_path, "w") as f:
        json.dump(results, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
