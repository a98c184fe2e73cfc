"""Writes the code cells of NNabla 1.39's tutorial notebooks (``sony/nnabla``, ``tutorial/``,
Apache-2.0) as the scripts ``nb_<name>.py`` beside this file, for ``run_cells.py`` (ruff skips them:
they are NNabla's code as written).

    python extract.py NOTEBOOK_DIR

Each cell becomes a block after a ``# ---- cell N`` line.  What changes from the notebook:
shell lines and magics (``!...``, ``%...``) are dropped; statements that plot (``plt.``,
``imshow``, ``plot_stats``, matplotlib, IPython) are dropped (a cell that had one is written
back through ``ast.unparse``, so its comments go); and the literal edits in ``EDITS`` are made
(shorter training and smaller inputs, the CPU context for the CUDA one, NumPy names gone since
1.24, MNIST's download replaced by ``tiny_mnist.py``'s digits, a graph picture saved rather
than opened in a window).  ``ADDED`` cells print what a notebook only plots or shows.  The
``import nnabla`` lines stay: ``run_cells.py`` runs the scripts unchanged on either framework.
"""

import ast
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PLOT = re.compile(r"\bplt\.|matplotlib|imshow|plot_stats|IPython")
HEADER = ("# The code cells of NNabla's tutorial notebook tutorial/{name}.ipynb\n"
          "# (https://github.com/sony/nnabla, Copyright Sony Corporation, Apache License 2.0),\n"
          "# extracted by extract.py beside this file: plots and magics dropped, and the edits\n"
          "{edits}")
EDITS = {
    "python_api": {"num_iter = 2000": "num_iter = 200"},
    "mixed_precision_training": {'get_extension_context("cudnn", type_config="half")':
                                 'None  # the CUDA fp16 context; the added cell runs on the CPU'},
    "by_examples": {"range(1000)": "range(101)", "training(1000,": "training(101,",
                    "training_rnn(1000,": "training_rnn(101,", "training_siamese(2000)":
                    "training_siamese(101)", "get_extension_context('cudnn'":
                    "get_extension_context('cpu'", "np.int)": "int)"},
    "dynamic_and_static_nn": {"get_extension_context('cudnn'": "get_extension_context('cpu'",
                              "range(10):  # unnecessarily deep": "range(2):  # unnecessarily deep",
                              "(h, 128, (3, 3)": "(h, 16, (3, 3)", "(h, 512, (3, 3)":
                              "(h, 32, (3, 3)", "(x, 64, (3, 3)": "(x, 16, (3, 3)",
                              "PF.affine(h, 1024)": "PF.affine(h, 64)",
                              "range(30)": "range(2)"},
    "debugging": {"[4, 3, 128, 128]": "[4, 3, 32, 32]", "[4, 3, 64, 64]": "[4, 3, 32, 32]",
                  "graph.view(pred)": "graph.save(pred, 'graph')  # not a window",
                  'device = "cudnn"': 'device = "cpu"', "n_run=100": "n_run=1"},
    "vae_unsupervised_learning": {
        "from utils.neu.save_nnp import save_nnp": "# (unused nnabla-examples import dropped)",
        "from nnabla.utils.data_source_loader import download":
        "from tiny_mnist import download  # the digits as MNIST",
        "get_extension_context('cudnn')": "get_extension_context('cpu')",
        "max_iter = 60000": "max_iter = 10", "batch_size = 100": "batch_size = 50",
        '"Training loss", monitor, interval=600)': '"Training loss", monitor, interval=2)',
        'M.MonitorSeries("Test loss", monitor, interval=600)':
        'M.MonitorSeries("Test loss", monitor, interval=2)'},
    "vat_semi_supervised_learning": {
        "from utils.neu.save_nnp import save_nnp": "# (unused nnabla-examples import dropped)",
        "from nnabla.utils.data_source_loader import download":
        "from tiny_mnist import download  # the digits as MNIST",
        "get_extension_context('cudnn')": "get_extension_context('cpu')",
        "n_train = 60000": "n_train = 1300", "n_h = 1200": "n_h = 100",
        "max_iter = 24000": "max_iter = 12", "val_interval = 240": "val_interval = 6",
        "val_iter = 100": "val_iter = 2", "iter_per_epoch = 240": "iter_per_epoch = 6",
        'M.MonitorSeries("Test error", monitor, interval=240)':
        'M.MonitorSeries("Test error", monitor, interval=1)',
        # One generator shared by two iterators that reshuffle in their prefetch threads
        # draws in thread order (NNabla 1.39 too prints one of two results): each its own.
        "batchsize_l, shuffle=True, rng=rng,":
        "batchsize_l, shuffle=True, rng=np.random.RandomState(rng.randint(2 ** 31)),",
        "batchsize_u, shuffle=True, rng=rng,":
        "batchsize_u, shuffle=True, rng=np.random.RandomState(rng.randint(2 ** 31)),"},
    "dcgan_image_generation": {
        "from utils.neu.checkpoint_util import save_checkpoint, load_checkpoint":
        "# (unused nnabla-examples import dropped)",
        "from utils.neu.save_nnp import save_nnp": "# (unused nnabla-examples import dropped)",
        "from nnabla.utils.data_source_loader import download":
        "from tiny_mnist import download  # the digits as MNIST",
        "get_extension_context('cudnn')": "get_extension_context('cpu')",
        "batch_size = 64": "batch_size = 16", "max_iter = 20000": "max_iter = 10",
        "monitor, interval=10)": "monitor, interval=2)",
        "display(Image('tmp.monitor.dcgan/Fake-images/{:06d}.png'.format((i+1)*1000-1)))":
        "pass  # the picture"},
    "cifar10_classification": {
        "from utils.neu.checkpoint_util import save_checkpoint, load_checkpoint":
        "from tiny_neu import save_checkpoint, load_checkpoint  # nnabla-examples', stood in",
        "from utils.neu.save_nnp import save_nnp": "from tiny_neu import save_nnp",
        "from nnabla.utils.data_source_loader import download, get_data_home":
        "from nnabla.utils.data_source_loader import get_data_home\n"
        "from tiny_cifar10 import download  # the digits as CIFAR-10",
        "self._size = 50000": "self._size = 1300", "self._size = 10000": "self._size = 497",
        "extension_module = 'cudnn'": "extension_module = 'cpu'",
        "batch_size = 64": "batch_size = 16", "bs_valid = 64": "bs_valid = 16",
        "nmaps=64, act=F.relu)": "nmaps=16, act=F.relu)", "max_iter = 40000": "max_iter = 4",
        "val_iter = 100": "val_iter = 2"},
    "siamese_feature_embedding": {
        "from utils.neu.save_nnp import save_nnp": "# (unused nnabla-examples import dropped)",
        "from nnabla.utils.data_source_loader import download":
        "from tiny_mnist import download  # the digits as MNIST",
        "get_extension_context('cudnn')": "get_extension_context('cpu')", "np.int)": "int)",
        # likewise (siamese_data_iterator's two iterators reshuffle at the same step)
        "train=train, rng=rng, shuffle=True)":
        "train=train, rng=np.random.RandomState(rng.randint(2 ** 31)), shuffle=True)",
        "max_iter = 5000": "max_iter = 20", "val_interval = 100": "val_interval = 10",
        "val_iter = 10": "val_iter = 2",
        'M.MonitorSeries("Test loss", monitor, interval=10)':
        'M.MonitorSeries("Test loss", monitor, interval=1)',
        "range(10000 // batch_size)": "range(1)",
        "display(Image('tmp.monitor.siamese/embed.png'))": "pass  # the plot's picture"},
    "graph_converters": {
        "model = ResNet50()":
        "import tiny_imagenet; tiny_imagenet.install()  # a stand-in Resnet-50.nnp\n"
        "model = ResNet50()"},
}

# Cells added after the notebook's own: what the tutorial shows without printing it.
ADDED = {
    "mixed_precision_training": """\
# (added) The tutorial's DynamicLossScalingUpdater training an MLP on the digits: the scale
# grows every N updates and falls while the scaled gradients overflow.
import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S
import tiny_digits
nn.clear_parameters()
data = tiny_digits.data_iterator_tiny_digits(tiny_digits.load_digits(), batch_size=32)
x, t = nn.Variable((32, 1, 8, 8)), nn.Variable((32, 1))
loss = F.mean(F.softmax_cross_entropy(PF.affine(F.tanh(PF.affine(x / 16, 32, name="fc1")),
                                               10, name="fc2"), t))
solver = S.Momentum(0.05)
solver.set_parameters(nn.get_parameters())
def feed():
    x.d, t.d = data.next()
updater = DynamicLossScalingUpdater(solver, loss, feed, scale=2.0 ** 130, N=3,
                                    weight_decay=1e-4)
for i in range(12):
    updater.update()
    print(i, loss.d, updater.scale)
""",
    "vae_unsupervised_learning": """\
# (added) The loss series the monitors wrote.
for name in ("Training-loss", "Test-loss"):
    print(name)
    print(open(os.path.join(model_save_path, name + ".series.txt")).read())
""",
    "vat_semi_supervised_learning": """\
# (added) The test errors the monitor wrote, and the last losses.
print(open(os.path.join(model_save_path, "Test-error.series.txt")).read())
print(loss_l.d, loss_u.d, solver.learning_rate())
""",
    "dcgan_image_generation": """\
# (added) The loss series the monitors wrote, and the mean and spread of the last fake images
# (single pixels after 10 GAN steps are not stable to float32 rounding).
for name in ("Generator-loss", "Discriminator-loss"):
    print(name)
    print(open(os.path.join(monitor_path, name + ".series.txt")).read())
print(fake.d.mean(), fake.d.std())
""",
    "cifar10_classification": """\
# (added) The test error the monitor wrote (before training: F.image_augmentation draws from
# the framework's own generator) and the files the training wrote.
print(open(os.path.join(model_save_path, "Test-error.series.txt")).read())
print(sorted(os.listdir(model_save_path)))
""",
    "siamese_feature_embedding": """\
# (added) What the tutorial plots: the loss series its monitors wrote (not the times) and
# the first embedded test digits.
for name in ("Training-loss", "Test-loss"):
    print(name)
    print(open(os.path.join(model_save_path, name + ".series.txt")).read())
print(features.shape, labels[:8].ravel())
print(features[:8])
""",
    "graph_converters": """\
# (added) On NNabla 1.39 the conversions above fail on a loaded model built for inference:
# its parameters need no gradient, so nn.get_parameters() leaves them out, the folding finds
# no scope for them and names every folded weight "w-folded" in no scope (the second
# convolution's shape clashes); and ChannelLastModifier hands the first function, a
# convolution reading x, x alone (IndexError).  Built for training (parameters that need
# gradients) and put in test mode, the network folds, and the folded graphs compute what it
# does.
y_train = model(x, training=True)
x.d = np.random.RandomState(1).rand(*x.shape)
y_test = GC.GraphConverter(GC.TestModeModifier()).convert(y_train)
folded = GC.GraphConverter([GC.BatchNormalizationFoldingModifier()]).convert(y_test)
self_folded = GC.GraphConverter([GC.BatchNormalizationSelfFoldingModifier()]).convert(y_test)
for v in (y_test, folded, self_folded):
    v.forward()
print(y_test.d)
print(np.abs(folded.d - y_test.d).max() < 1e-4, np.abs(self_folded.d - y_test.d).max() < 1e-4)
pprint(folded)
""",
}


class _Unplot(ast.NodeTransformer):
    def generic_visit(self, node):
        super().generic_visit(node)
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                kept = [s for s in body if isinstance(s, (ast.FunctionDef, ast.For, ast.With,
                                                           ast.If))
                        or not PLOT.search(ast.unparse(s))]
                setattr(node, field, kept or ([ast.Pass()] if field == "body" else []))
        return node


def cell_source(text):
    lines = [line for line in text.splitlines() if not line.lstrip().startswith(("%", "!"))]
    text = "\n".join(lines).strip("\n")
    if not PLOT.search(text):
        return text
    return ast.unparse(_Unplot().visit(ast.parse(text)))


def main(folder):
    for name, edits in EDITS.items():
        cells = json.load(open(os.path.join(folder, name + ".ipynb")))["cells"]
        out = [HEADER.format(name=name, edits="".join(
            "#   %r -> %r\n" % e for e in edits.items()))]
        code = [c for c in cells if c["cell_type"] == "code"]
        for i, c in enumerate(code):
            text = "".join(c["source"])
            for old, new in edits.items():
                text = text.replace(old, new)
            out.append("# ---- cell %d\n%s\n" % (i, cell_source(text)))
        if name in ADDED:
            out.append("# ---- cell %d\n%s" % (len(code), ADDED[name]))
        with open(os.path.join(HERE, "nb_" + name + ".py"), "w") as f:
            f.write("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1])
