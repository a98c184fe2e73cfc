"""Run CNTK 2.x's own tutorial notebooks on Stadyn and on CNTK 2.7, side by side, at tiny sizes.

The notebooks are not part of Stadyn (they are CNTK's); point this at a CNTK checkout:

    python tools/cntk_notebooks.py --notebooks /path/to/CNTK/Tutorials --out /tmp/nb \\
        --cntk-python "/path/to/cntk27/venv36/bin/python" [NAME ...]

For each notebook NAME (``106A_LSTM_Timeseries_with_Simulated_Data``...) it takes the code
cells, drops notebook magics, IPython and plotting (``plt``/``matplotlib`` become an object that
swallows every call), applies the size cuts of ``SETTINGS`` below, writes a tiny stand-in for the
data the notebook would download (``DATA``; the speech files and images of 208 and 301 in
``cntk_notebook_standins.py``, gym's CartPole-v0 for 203 in ``cntk_gym_standin.py``) and
for a pretrained model it loads (``MODELS``: written by CNTK 2.7 itself with
``cntk_resnet_standin.py``), and writes two scripts, ``cntk_NAME.py`` and
``stadyn_NAME.py``, which differ only in their imports (``import cntk as C`` becomes
``import stadyn.compat.cntk as C``).  It runs each in its own folder and prints the tail of both
outputs (each side's whole output goes to ``output.txt`` in its folder).
CNTK_LD_LIBRARY_PATH sets CNTK's library path, CNTK_PYTHONPATH the path of CNTK's Python
(where packages a notebook needs beside CNTK 2.7 lie: h5py for 205, pandas for 104); the
Stadyn side runs with ``src`` before the tool's own PYTHONPATH (pandas for 104).

CNTK's ``Manual/Manual_How_to_*.ipynb`` run the same way (``--notebooks`` the Manual folder,
names as the files are: ``Manual_How_to_feed_data``...); the notebooks of ``CELL_BY_CELL``
run a cell at a time, a cell's exception printed and the next cell run, as a notebook does.
``Manual_How_to_use_network_optimizations`` starts from the models CNTK 102 and 103D train:
their steps, cut small (``NETOPT_FEEDFORWARD``, ``NETOPT_CONVNET`` in
``cntk_notebook_standins.py``), go before the cells that use them.

What running them found is in docs/cntk-notebooks.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
from cntk_notebook_standins import NETOPT_CONVNET, NETOPT_FEEDFORWARD, png, write_an4_speech, \
    write_bsds_images, write_resnet_standin, write_stock_standin, write_style_transfer, \
    write_superres_image, write_superres_standins, write_transfer_images

PRELUDE = '''
class _Null:
    def __getattr__(self, n): return self
    def __call__(self, *a, **k): return self
    def __iter__(self): return iter([self, self])
    def __getitem__(self, k): return self
    def __setitem__(self, k, v): pass
plt = matplotlib = Image = display = _Null()
'''

# a stand-in for the few pandas calls CNTK 106A makes (DataFrame of columns, .iloc, .values)
PANDAS_STANDIN = '''
import numpy as np
class Series:
    def __init__(self, v): self.values = np.asarray(v)
    @property
    def iloc(self): return _Iloc(self.values)
    def as_matrix(self): return self.values
class _Iloc:
    def __init__(self, v): self.v = v
    def __getitem__(self, k): return Series(self.v[k])
class DataFrame:
    def __init__(self, d): self.d = {k: np.asarray(v) for k, v in d.items()}
    def __getitem__(self, k): return Series(self.d[k])
    def __len__(self): return len(next(iter(self.d.values())))
    def as_matrix(self): return np.stack([self.d[k] for k in sorted(self.d)], 1)
def read_csv(f, engine=None, dtype=None, header=None):    # Manual_How_to_write_a_custom_des.
    rows = [ln.replace(b'"', b"").split(b",") for ln in f.read().splitlines() if ln.strip()]
    m = np.array(rows, dtype=dtype or np.float64)
    return DataFrame({i: m[:, i] for i in range(m.shape[1])})
'''

# size cuts: (text in the notebook, replacement); each text must be found
SETTINGS = {
    "101_LogisticRegression": [("num_samples_to_train = 20000", "num_samples_to_train = 2000")],
    "102_FeedForward": [("num_samples = 20000", "num_samples = 2500")],
    "103B_MNIST_LogisticRegression": "mnist",
    "103C_MNIST_MultiLayerPerceptron": "mnist",
    "106A_LSTM_Timeseries_with_Simulated_Data": [
        ("import pandas as pd", "import pandas_standin as pd"),
        ("np.linspace(0, 100, 10000", "np.linspace(0, 100, 2000"),
        ("EPOCHS = 10 if", "EPOCHS = 2 if")],
    "200_GuidedTour": [
        ('    from sklearn import datasets, utils\n    mnist = datasets.fetch_mldata("MNIST '
         'original")\n    X, Y = mnist.data / 255.0, mnist.target',
         "    rs = np.random.RandomState(3); Y = rs.randint(0, 10, 700)\n"
         "    X = rs.rand(700, 784) * 0.1; X[np.arange(700), Y * 70 + 100] = 1.0"),
        ("X[:60000].reshape((-1,28,28)), X[60000:]", "X[:600].reshape((-1,28,28)), X[600:]"),
        ("Y[:60000].astype(int), Y[60000:]", "Y[:600].astype(int), Y[600:]"),
        ("X_train_mn[:54000], X_train_mn[54000:]", "X_train_mn[:540], X_train_mn[540:]"),
        ("Y_train_mn[:54000], Y_train_mn[54000:]", "Y_train_mn[:540], Y_train_mn[540:]"),
        ("generate_synthetic_data(20000)", "generate_synthetic_data(2000)"),
        ("max_epochs=40", "max_epochs=2"), ("max_epochs=50", "max_epochs=3"),
        ("X_test_mn[8345]", "X_test_mn[83]")],
    "206A_Basic_GAN": [("num_minibatches = 300 if isFast", "num_minibatches = 20 if isFast")],
    "206B_DCGAN": [("num_minibatches = 5000 if isFast", "num_minibatches = 10 if isFast")],
    "207_Training_with_Sampled_Softmax": [
        ("    num_minbatches = 100\n    test_set_size = 1000",
         "    num_minbatches = 30\n    test_set_size = 200"),
        ("    num_classes = 50000", "    num_classes = 2000"),
        ("sample_sizes = [5, 10, 100, 1000]", "sample_sizes = [5, 100]"),
        ("    num_minbatches = 100\n    test_set_size = 1 #",
         "    num_minbatches = 10\n    test_set_size = 1 #")],
    # image notebooks (103D, 105, 201B, 206C) and the IOT time series (106B)
    "103D_MNIST_ConvolutionalNeuralNetwork": [
        ("num_samples_per_sweep = 60000", "num_samples_per_sweep = 600"),
        ("num_sweeps_to_train_with=10", "num_sweeps_to_train_with=1"),
        ("num_samples = 10000", "num_samples = 300"),
        ("test_minibatch_size = 512", "test_minibatch_size = 100")],
    "105_Basic_Autoencoder_for_Dimensionality_Reduction": [
        ("epoch_size = 30000", "epoch_size = 300"),
        ("num_sweeps_to_train_with = 5 if isFast", "num_sweeps_to_train_with = 2 if isFast"),
        ("num_samples_per_sweep = 60000", "num_samples_per_sweep = 600"),
        ("num_samples = 10000", "num_samples = 300")],
    "201B_CIFAR-10_ImageHandsOn": [
        ("import PIL\n", "\n"),
        ("epoch_size     = 50000", "epoch_size     = 256"),
        ("epoch_size     = 10000", "epoch_size     = 64"),
        ("max_epochs=5", "max_epochs=2"), ("max_epochs=10", "max_epochs=2"),
        ("myimg = np.array(PIL.Image.open(urlopen(url)), dtype=np.float32)",
         "myimg = np.random.RandomState(5).randint(0, 256, (32, 32, 3)).astype(np.float32)")],
    "106B_LSTM_Timeseries_with_IOT_Data": [
        ("import pandas as pd", "import pandas_iot as pd"), ("EPOCHS = 100 if", "EPOCHS = 10 if")],
    "206C_WGAN_LSGAN": [("num_minibatches = 500 if isFast", "num_minibatches = 25 if isFast"),
                        ("num_minibatches = 1000 if isFast", "num_minibatches = 25 if isFast"),
                        ("minibatch_size = 64", "minibatch_size = 16")],
    "303_Deep_Structured_Semantic_Modeling_with_LSTM_Networks": [
        ("import requests\n", "\n"), ("MAX_EPOCHS = 5", "MAX_EPOCHS = 2"),
        ("EPOCH_SIZE = 10000", "EPOCH_SIZE = 400")],
    # -- sequence notebooks (202, 204, 599A): cuts --
    "202_Language_Understanding": [
        ("import requests\n", "\n"), ("emb_dim    = 150", "emb_dim    = 20"),
        ("hidden_dim = 300", "hidden_dim = 40"), ("epoch_size = 18000", "epoch_size = 700")],
    "204_Sequence_To_Sequence": [
        ("import requests\n", "\n"), ("import seaborn as sns\nimport pandas as pd",
                                       "sns = pd = _Null()"),
        ("hidden_dim = 512", "hidden_dim = 24"), ("attention_dim = 128", "attention_dim = 12"),
        ("embedding_dim = 200", "embedding_dim = 16"), ("eval_freq = 100", "eval_freq = 10"),
        ("max_epochs=1, epoch_size=25000)", "max_epochs=1, epoch_size=1500)"),
        ("    minibatch_size = 512\n", "    minibatch_size = 64\n"),
        ("        if isTest():", "        if True:")],
    "599A_Sequence_To_Sequence": [
        ("import requests\n", "\n"), ("hidden_dim = 128", "hidden_dim = 24"),
        ("max_num_minibatch = 100 if isFast", "max_num_minibatch = 30 if isFast"),
        ("training_progress_output_freq = 100", "training_progress_output_freq = 10"),
        ("epoch_size = 5000 if isFast", "epoch_size = 1500 if isFast")],
    # -- end of the sequence notebooks' cuts --
    "208_Speech_Connectionist_Temporal_Classification": [
        ("C.layers.LSTM(1024)", "C.layers.LSTM(64)"), ("mbsize = 1024", "mbsize = 256"),
        ("mbs_per_epoch = 10", "mbs_per_epoch = 4"), ("max_epochs = 5", "max_epochs = 3"),
        ("round(test_result / num_test_minibatches,2)",
         "print(round(test_result / num_test_minibatches,2))")],
    "301_Image_Recognition_with_Deep_Transfer_Learning": [
        ("import IPython.display as D", "D = _Null()"), ("from PIL import Image",
                                                         "import pil_standin as Image"),
        ("isFast = True\nC.device.try_set_default_device(C.device.gpu(0))", "isFast = True"),
        ("data_root = os.path.join('..', 'Examples', 'Image')",
         "data_root = os.path.join('.', 'Examples', 'Image')"),
        ("'image_dims': (3, 224, 224)", "'image_dims': (3, 32, 32)"),
        ("max_training_epochs = 5 if isFast", "max_training_epochs = 2 if isFast")],
    # CNTK 203: gym's CartPole-v0 from cntk_gym_standin.py (as gym.py); seeded, episodes cut
    "203_Reinforcement_Learning_Basics": [
        ("import pandas as pd\nimport seaborn as sns", "sns = _Null()"),
        ("style.use('ggplot')", ""),
        ("except:\n    !pip install gym\n    import gym", "except ImportError:\n    raise"),
        ("import random\n", "import random\nrandom.seed(3); np.random.seed(3)\n"),
        ("\nSTATE_COUNT, ACTION_COUNT\n", "\nprint(STATE_COUNT, ACTION_COUNT)\n"),
        ("TOTAL_EPISODES = 2000 if isFast else 3000", "TOTAL_EPISODES = 100 if isFast else 3000"),
        ("agent.brain.model.save('dqn.mod')",
         "agent.brain.model.save('dqn.mod')\nprint('DQN W1, W2 sums: %.6f %.6f' % ("
         "agent.brain.params['W1'].value.sum(), agent.brain.params['W2'].value.sum()))"),
        ("    print(i_episode)\n", "    print(i_episode, end=' ')\n"),     # the actions taken:
        ("observation, reward, done, info  = env.step(action)",      # the loaded model's
         "observation, reward, done, info  = env.step(action); print(int(action), end='')"),
        ("TOTAL_EPISODES = 2000 if isFast else 10000", "TOTAL_EPISODES = 60 if isFast else 10000"),
        ("probability.save('pg.mod')",
         "probability.save('pg.mod')\nprint('\\nPG W1, W2 sums: %.6f %.6f' % (W1.value.sum(), "
         "W2.value.sum()))"),
        ("W1.shape, b1.shape, W2.shape, b2.shape, model.shape",
         "print(W1.shape, b1.shape, W2.shape, b2.shape, model.shape)"),
        ("model.layer1.W.shape, model.layer1.b.shape, model.layer2.W.shape, "
         "model.layer2.b.shape, model.shape",
         "print(model.layer1.W.shape, model.layer1.b.shape, model.layer2.W.shape, "
         "model.layer2.b.shape, model.shape)")],
    # CNTK 205: a VGG16 of widths cut by 8 (cntk_notebook_standins.write_style_transfer)
    "205_Artistic_Style_Transfer": [
        ("import requests\n", "\n"), ("from PIL import Image", "import pil_standin as Image"),
        ("    outer = 10\n    inner = 20\n    SIZE = 300",
         "    outer = 2\n    inner = 5\n    SIZE = 64"),
        # SciPy 1.11 on gives the objective as a float, 1.5 (beside CNTK 2.7) as fun's array
        ("print('objective : %s' % s.fun[0])",
         "print('objective : %s' % np.float32(np.ravel(s.fun)[0]))"),
        ("objfun(xstar, loss)[0][0]", "print(objfun(xstar, loss)[0][0])")],
    # CNTK 104: pandas on both sides; the frame from cntk_stock_standin.py (MODELS)
    "104_Finance_Timeseries_Basic_with_Pandas_Numpy": [
        ("try:\n    from  pandas_datareader import data\nexcept ImportError:\n"
         "    !pip install pandas_datareader\n    from  pandas_datareader import data \n",
         "data = None\n"),
        ("data.head(10)\n", "print(data.head(10))\n"),
        # pandas' own plots (no matplotlib beside CNTK 2.7 here)
        (".hist(bins=20, alpha=0.4)", ""), ("*100).plot()", "*100)")],
    # CNTK 302A: models from cntk_superres_standin.py (MODELS), patches of 16 and 32 pixels
    "302A_Evaluation_of_Pretrained_Super-resolution_Models": [
        ("from PIL import Image", "import pil_standin as Image"),
        ("from scipy.misc import imsave",                  # gone from SciPy since 1.2
         "imsave = lambda path, rgb: Image.fromarray(rgb).save(path)"),
        ("output_dims = [64, 64, 224, 224]", "output_dims = [16, 16, 32, 32]"),
        ("    imsave(outfile, result.astype(np.uint8))",  # what each model made, in numbers
         "    imsave(outfile, result.astype(np.uint8))\n    print('  %d x %d, sum %d' % ("
         "result.shape[1], result.shape[0], result.astype(np.uint8).sum()))"),
        ("Image(url = ", "_Null()(url = ")],
    # CNTK 302B: patches of 16 (VDSR, DRNN) and 24 -> 48 (SRResNet, the GAN: the VGG19
    # stand-in's input), the networks' depths and widths cut, 20 minibatches each
    "302B_Image_Super-resolution_Using_CNNs_and_GANs": [
        ("from PIL import Image", "import pil_standin as Image"),
        ("    download_data(images_dir, link)", "    pass  # the stand-in's pictures are there"),
        ("prep_64(images_dir, 64, 64,", "prep_64(images_dir, 16, 16,"),
        ("prep_224(images_dir, 224, 224,", "prep_224(images_dir, 48, 48,"),
        ("x = x + 42", "x = x + 10"), ("y = y + 42", "y = y + 10"),
        ("x = x + 64", "x = x + 16"), ("y = y + 64", "y = y + 16"),
        ("IMG_H, IMG_W = 64, 64", "IMG_H, IMG_W = 16, 16"),
        ("NUM_MINIBATCHES = 200 if isFast", "NUM_MINIBATCHES = 20 if isFast"),
        ("print_frequency_mbsize = 50", "print_frequency_mbsize = 5"),
        ("C.layers.For(range(18), lambda :\n                C.layers.Convolution((3, 3), 64,",
         "C.layers.For(range(3), lambda :\n                C.layers.Convolution((3, 3), 8,"),
        ("Convolution((3, 3), 128, pad = True)(h0)", "Convolution((3, 3), 16, pad = True)(h0)"),
        ("(h1, 128)", "(h1, 16)"), ("(h2, 128)", "(h2, 16)"), ("(h4, 128)", "(h4, 16)"),
        ("        for _ in range(8):", "        for _ in range(1):"),
        ("LR_H, LR_W, HR_H, HR_W = 112, 112, 224, 224", "LR_H, LR_W, HR_H, HR_W = 24, 24, 48, 48"),
        ("Convolution((9, 9), 64, pad = True)", "Convolution((9, 9), 16, pad = True)"),
        ("resblock_basic_stack(h1, 16, 64)", "resblock_basic_stack(h1, 2, 16)"),
        ("Convolution((3, 3), 64, activation = None, pad = True)(h2)",
         "Convolution((3, 3), 16, activation = None, pad = True)(h2)"),
        ("ConvolutionTranspose2D((3, 3), 64, pad = True, strides = (2, 2), output_shape = (224, "
         "224))", "ConvolutionTranspose2D((3, 3), 16, pad = True, strides = (2, 2), "
         "output_shape = (48, 48))"),
        ("Convolution((3, 3), 64, pad = True)(h0)", "Convolution((3, 3), 8, pad = True)(h0)"),
        ("(h1, (3, 3), 64,", "(h1, (3, 3), 8,"), ("(3, 3), 128)", "(3, 3), 16)"),
        ("(3, 3), 128,", "(3, 3), 16,"), ("(3, 3), 256", "(3, 3), 16"),
        ("(3, 3), 512", "(3, 3), 32"), ("Dense(1024)", "Dense(32)"),
        ('urlretrieve("https://www.cntk.ai/Models/Caffe_Converted/VGG19_ImageNet_Caffe.model",\n'
         '            os.path.join(models_dir, "VGG19_ImageNet_Caffe.model"))', "pass"),
        ("Image(url = ", "_Null()(url = ")],
    # -- CNTK's Manual/ how-to notebooks (Manual_How_to_*.ipynb) --
    "Manual_How_to_feed_data": [
        ("import requests\n", "\n"), ("import cntk.tests.test_utils\n", "import cntk\n"),
        ("generate_synthetic_data(20000)", "generate_synthetic_data(2000)"),
        ("num_samples_per_sweep = 60000", "num_samples_per_sweep = 600"),
        ("num_sweeps_to_train_with = 10", "num_sweeps_to_train_with = 2"),
        ('data_dir = os.path.join("..", "Tests"', 'data_dir = os.path.join(".", "Tests"')],
    "Manual_How_to_use_learners": [],
    "Manual_How_to_train_using_declarative_and_imperative_API": [],
    "Manual_How_to_create_user_minibatch_sources": [],
    "Manual_How_to_write_a_custom_deserializer": [
        ("import pandas as pd", "import pandas_standin as pd"),
        ("for i in range(200000):", "for i in range(3000):"),
        ("if i % 20000 == 0:", "if i % 1000 == 0:"),     # its CSV: 3000 rows, 3.4 MB
        ("chunksize = 32*1024*1024", "chunksize = 1024*1024")],   # 4 chunks (CNTK's 32 MB: 37)
    "Manual_How_to_debug": [
        # CNTK 2.7's CPU build raises "Specified GPU device id (0) is invalid." at C.gpu(0)
        ("success=C.try_set_default_device(C.gpu(0))", "success=False"),
        # no pydot_ng beside CNTK 2.7 here: the graph as text, no SVG file
        ('svg = C.logging.graph.plot(model, "tmp.svg")', "svg = C.logging.graph.plot(model)"),
        ('display(SVG(filename="tmp.svg"))', "pass")],
    "Manual_How_to_use_network_optimizations": [
        # the notebook starts from CNTK 102's and 103D's trained models: their steps, cut
        # small (cntk_notebook_standins.py), before the cells that use them
        ("# import netopt module\n", NETOPT_FEEDFORWARD + "# import netopt module\n"),
        ("import cntk.contrib.netopt.quantization as cq\n",
         NETOPT_CONVNET + "import cntk.contrib.netopt.quantization as cq\n")],
}
MNIST_CUTS = [("num_samples_per_sweep = 60000", "num_samples_per_sweep = 600"),
              ("num_sweeps_to_train_with = 10", "num_sweeps_to_train_with = 2"),
              ("num_samples = 10000", "num_samples = 300"),
              ("test_minibatch_size = 512", "test_minibatch_size = 100")]


# notebooks run a cell at a time, an exception printed and the next cell run, as a notebook
# does: the how-to notebooks show errors on purpose (Manual_How_to_debug)
CELL_BY_CELL = {"Manual_How_to_debug", "Manual_How_to_use_network_optimizations"}
CELL_MARK = "# ~~ next cell ~~"


def code_of(notebook: str, marked: bool = False) -> str:
    """The notebook's code cells, magics and shell lines (at column 0) left out; ``marked``
    puts ``CELL_MARK`` between them."""
    cells = json.load(open(notebook, encoding="utf-8"))["cells"]
    out = []
    for cell in cells:
        if cell["cell_type"] == "code":
            lines = "".join(cell["source"]).splitlines()
            out.append("\n".join(ln for ln in lines if not ln.startswith(("%", "!"))))
    return ("\n%s\n" % CELL_MARK if marked else "\n").join(out) + "\n"


def cell_by_cell(code: str) -> str:
    """Each cell of marked ``code`` run by ``exec``; an exception prints ``cell N raised
    TYPE: first line of its message`` and the next cell runs."""
    out = []
    for n, cell in enumerate(code.split(CELL_MARK)):
        out.append(f"try:\n    exec(compile({cell!r}, 'cell {n}', 'exec'))\n"
                   f"except Exception as e:\n    print('cell {n} raised %s: %s' % "
                   f"(type(e).__name__, (str(e).strip().splitlines() or [''])[0]))\n")
    return "".join(out)


_DROP = re.compile(r"(from IPython|from matplotlib|import matplotlib|import cntk\.tests|"
                   r"cntk\.tests\.test_utils|from __future__|from PIL|C\.cntk_py\.set_fixed)")


def script(code: str, cuts, stadyn: bool, by_cell: bool = False) -> str:
    for old, new in cuts:
        if old not in code:
            raise SystemExit(f"not in the notebook: {old!r}")
        code = code.replace(old, new)
    code = "\n".join(ln for ln in code.splitlines() if not _DROP.match(ln.strip()))
    if stadyn:
        code = re.sub(r"^(\s*)import cntk as C\s*$", r"\1import stadyn.compat.cntk as C", code,
                      flags=re.M)
        code = re.sub(r"^(\s*)import cntk\s*$", r"\1import stadyn.compat.cntk as cntk", code,
                      flags=re.M)
        code = re.sub(r"^(\s*)from cntk(\.\S+)? import", r"\1from stadyn.compat.cntk\2 import",
                      code, flags=re.M)
        code = re.sub(r"^(\s*)import cntk(\.\S+) as", r"\1import stadyn.compat.cntk\2 as", code,
                      flags=re.M)                      # 201B: import cntk.io.transforms as x
        code = re.sub(r"^(\s*)import cntk(\.[\w.]+)\s*$",           # Manual: import cntk.ops
                      r"\1import stadyn.compat.cntk\2; import stadyn.compat.cntk as cntk", code,
                      flags=re.M)
    return PRELUDE + (cell_by_cell(code) if by_cell else code) + "\n"


def write_mnist(folder: str) -> None:
    """Synthetic 28x28 'digits' in CNTK's text format, as CNTK 103A writes MNIST."""
    rs = np.random.RandomState(0)
    os.makedirs(os.path.join(folder, "data", "MNIST"), exist_ok=True)
    for name, n in (("Train", 600), ("Test", 300)):
        with open(os.path.join(folder, "data", "MNIST", f"{name}-28x28_cntk_text.txt"), "w") as f:
            for _ in range(n):
                y = rs.randint(10)
                x = (rs.rand(784) * 60).astype(int)
                x[y * 70:y * 70 + 40] = 255
                label = " ".join("1" if k == y else "0" for k in range(10))
                f.write(f"|labels {label} |features {' '.join(map(str, x))}\n")


def write_dssm(folder: str) -> None:
    """Query/answer word sequences in CNTK 303's CTF format, with its vocabularies."""
    rs = np.random.RandomState(1)
    d = os.path.join(folder, "data", "DSSM")
    os.makedirs(d, exist_ok=True)
    qwords = "BOS what contribution did e1 made to science in 1665 EOS".split()
    awords = "BOS book author book_editions_published EOS language human_language " \
             "main_country".split()
    for name, words, size in (("vocab_Q.wl", qwords, 1204), ("vocab_A.wl", awords, 1019)):
        with open(os.path.join(d, name), "w") as f:
            f.writelines((words[i] if i < len(words) else f"w{i}") + " \n" for i in range(size))
    for name, n in (("train.pair.tok.ctf", 300), ("valid.pair.tok.ctf", 60)):
        with open(os.path.join(d, name), "w") as f:
            for s in range(n):
                topic, lq, la = rs.randint(20), rs.randint(2, 7), rs.randint(2, 6)
                for t in range(max(lq, la)):
                    parts = [str(s)]
                    if t < lq:
                        parts.append("|S0 %d:1" % (topic * 50 + rs.randint(40)))
                    if t < la:
                        parts.append("|S1 %d:1" % (topic * 45 + rs.randint(40)))
                    f.write("\t".join(parts) + "\n")


def write_cifar_images(folder: str) -> None:
    """CIFAR-10 as CNTK 201A leaves it: ``train/%05d.png`` (32x32 padded by 4 pixels of 128),
    ``test/%05d.png``, ``train_map.txt``/``test_map.txt`` (absolute path, tab, label) and
    ``CIFAR-10_mean.xml`` (201A's OpenCV XML, pretty-printed, its 3072 values the CHW mean of
    the training images); the images are noisy colours, one per class."""
    rs = np.random.RandomState(2)
    d = os.path.abspath(os.path.join(folder, "data", "CIFAR-10"))
    palette = rs.randint(0, 256, (10, 3))
    mean = np.zeros((3, 32, 32))
    for name, n, pad in (("train", 256, 4), ("test", 64, 0)):
        os.makedirs(os.path.join(d, name), exist_ok=True)
        with open(os.path.join(d, f"{name}_map.txt"), "w") as map_file:
            for i in range(n):
                label = rs.randint(10)
                chw = np.clip(palette[label][:, None, None] + rs.normal(0, 40, (3, 32, 32)),
                              0, 255).astype(np.uint8)
                if pad:
                    mean += chw
                    chw = np.pad(chw, ((0, 0), (pad, pad), (pad, pad)), constant_values=128)
                path = os.path.join(d, name, "%05d.png" % i)
                png(path, chw.transpose(1, 2, 0).copy())
                map_file.write("%s\t%d\n" % (path, label))
    values = " ".join("%e" % v for v in (mean / 256).ravel())
    with open(os.path.join(d, "CIFAR-10_mean.xml"), "w") as f:
        f.write('<?xml version="1.0" ?>\n<opencv_storage>\n  <Channel>3</Channel>\n'
                "  <Row>32</Row>\n  <Col>32</Col>\n"
                '  <MeanImg type_id="opencv-matrix">\n    <rows>1</rows>\n'
                f"    <cols>3072</cols>\n    <dt>f</dt>\n    <data>{values}</data>\n"
                "  </MeanImg>\n</opencv_storage>\n")


# a stand-in for the pandas calls CNTK 106B makes on its solar-panel CSV: read_csv with a
# datetime index, columns, .index.date, groupby(...).max() and iteration, merge on the index
PANDAS_IOT_STANDIN = '''
import csv
import datetime
import numpy as np


class _Index(list):
    @property
    def date(self):
        return np.array([t.date() if hasattr(t, "date") else t for t in self], dtype=object)


class Series:
    def __init__(self, values):
        self.values = np.asarray(values)

    def __itruediv__(self, k):
        return Series(self.values / k)


class DataFrame:
    def __init__(self, columns, index):
        self._c, self.index = dict(columns), _Index(index)

    @property
    def columns(self):
        return list(self._c)

    @columns.setter
    def columns(self, names):
        self._c = dict(zip(names, self._c.values()))

    def __len__(self):
        return len(self.index)

    def __getitem__(self, key):
        if isinstance(key, list):
            return DataFrame([(k, self._c[k]) for k in key], self.index)
        return Series(self._c[key])

    def __setitem__(self, key, value):
        self._c[key] = value.values if isinstance(value, Series) else np.asarray(value)

    def _rows(self, rows):
        return DataFrame([(k, v[rows]) for k, v in self._c.items()], [self.index[i] for i in rows])

    def groupby(self, keys):
        return _GroupBy(self, np.asarray(keys))


class _GroupBy:
    def __init__(self, frame, keys):
        self.frame, self.keys = frame, keys

    def __iter__(self):
        for key in sorted(set(self.keys)):
            yield key, self.frame._rows([i for i, k in enumerate(self.keys) if k == key])

    def max(self):
        groups = list(self)
        return DataFrame([(c, np.array([g._c[c].max() for _, g in groups]))
                          for c in self.frame.columns], [k for k, _ in groups])


def read_csv(path, index_col, parse_dates, dtype):
    with open(path) as f:
        rows = list(csv.reader(f))
    head, body = rows[0], rows[1:]
    at = head.index(index_col)
    index = [datetime.datetime.strptime(r[at], "%Y-%m-%d %H:%M") for r in body]
    return DataFrame([(h, np.array([r[i] for r in body], dtype=dtype))
                      for i, h in enumerate(head) if i != at], index)


def merge(left, right, right_index, on):
    where = {k: i for i, k in enumerate(right.index)}
    rows = [where[k] for k in left._c[on]]
    columns = list(left._c.items()) + [(c, v[rows]) for c, v in right._c.items()
                                        if c not in left._c]
    return DataFrame(columns, left.index)
'''


def write_solar(folder: str) -> None:
    """CNTK 106B's ``data/iot/solar.csv`` (``time,solar.current,solar.total``: readings every
    half hour from about 7:00 to 19:00 for 60 days, the total the day's production so far in
    Wh; one day has only 5 readings, which the notebook skips) and the pandas stand-in."""
    rs = np.random.RandomState(4)
    os.makedirs(os.path.join(folder, "data", "iot"), exist_ok=True)
    with open(os.path.join(folder, "pandas_iot.py"), "w") as f:
        f.write(PANDAS_IOT_STANDIN)
    with open(os.path.join(folder, "data", "iot", "solar.csv"), "w") as f:
        f.write("time,solar.current,solar.total\n")
        for day in range(60):
            date = datetime.date(2013, 12, 1) + datetime.timedelta(days=day)
            peak, total = rs.uniform(800, 3500), 0.0
            for slot in range(14, 19 if day == 17 else 39):
                current = max(0.0, peak * np.sin(np.pi * (slot - 13) / 26) + rs.normal(0, 40))
                total += current / 2
                f.write(f"{date} {slot // 2}:{slot % 2 * 30:02d},{current:.1f},{total:.1f}\n")


# -- sequence notebooks (202, 204, 599A): data stand-ins --
def _ctf_line(sid, fields):
    """One CTF line: the sequence id, then each (stream, index, word) or None (an empty
    column), as CNTK's ATIS and CMUDict files write them: ``|S0 178:1 |# BOS``."""
    cols = ["" if f is None else "|%s %d:1 |# %s" % f for f in fields]
    return "\t".join([str(sid)] + cols).rstrip("\t") + "\n"


def write_atis(folder: str) -> None:
    """ATIS in CNTK 202's format: queries (S0, 943 words), the intent on a query's first
    line (S1, 26), a slot label per word (S2, 129), with query.wl/slots.wl/intent.wl."""
    rs = np.random.RandomState(2)
    words = "BOS EOS flights from new york to seattle boston denver i want fly at am " \
            "and arrive in show me".split()
    query = words + ["w%d" % i for i in range(943 - len(words))]
    slots = ["B-slot%d" % i for i in range(64)] + ["I-slot%d" % i for i in range(64)] + ["O"]
    intents = ["flight", "airfare", "ground_service"] + ["intent%d" % i for i in range(23)]
    for name, items in (("query.wl", query), ("slots.wl", slots), ("intent.wl", intents)):
        with open(os.path.join(folder, name), "w") as f:
            f.writelines(w + "\n" for w in items)
    for name, n in (("atis.train.ctf", 300), ("atis.test.ctf", 60)):
        with open(os.path.join(folder, name), "w") as f:
            for s in range(n):
                topic = rs.randint(6)
                ids = [0] + [topic * 150 + 2 + rs.randint(150) for _ in range(rs.randint(3, 9))]
                ids.append(1)
                for t, w in enumerate(ids):
                    slot = 128 if w < 2 or w % 3 else (w // 3) % 128
                    intent = ("S1", topic, intents[topic]) if t == 0 else None
                    f.write(_ctf_line(s, [("S0", w, query[w]), intent,
                                          ("S2", slot, slots[slot])]))


CMUDICT_MAPPING = (["'", "</s>", "<s/>", "<s>"] + [chr(65 + i) for i in range(26)] + [
    "~" + p for p in "AA AE AH AO AW AY B CH D DH EH ER EY F G HH IH IY JH K L M N NG OW OY P R "
    "S SH T TH UH UW V W Y Z ZH".split()])


def write_cmudict(folder: str) -> None:
    """CMUDict in CNTK 204's/599A's format: letters (S0) and phonemes (S1), each sequence
    between <s> and </s>, both over cmudict-0.7b.mapping's 69 symbols."""
    rs = np.random.RandomState(3)
    with open(os.path.join(folder, "cmudict-0.7b.mapping"), "w") as f:
        f.writelines(w + "\n" for w in CMUDICT_MAPPING)
    for name, n in (("cmudict-0.7b.train-dev-20-21.ctf", 400), ("tiny.ctf", 3),
                    ("cmudict-0.7b.test.ctf", 40)):
        with open(os.path.join(folder, name), "w") as f:
            for s in range(n):
                letters = [4 + rs.randint(26) for _ in range(rs.randint(2, 8))]
                # a phoneme per letter, a letter >= 'T' sounds twice: the lengths differ
                phones = [p for c in letters for p in ([30 + c % 39] * (1 + (c >= 23)))]
                src, dst = [3] + letters + [1], [3] + phones + [1]
                for t in range(max(len(src), len(dst))):
                    f.write(_ctf_line(s, [
                        ("S0", src[t], CMUDICT_MAPPING[src[t]]) if t < len(src) else None,
                        ("S1", dst[t], CMUDICT_MAPPING[dst[t]]) if t < len(dst) else None]))
# -- end of the sequence notebooks' data stand-ins --


DATA = {"103B_MNIST_LogisticRegression": write_mnist, "103C_MNIST_MultiLayerPerceptron":
        write_mnist, "206A_Basic_GAN": write_mnist, "206B_DCGAN": write_mnist,
        "103D_MNIST_ConvolutionalNeuralNetwork": write_mnist,
        "105_Basic_Autoencoder_for_Dimensionality_Reduction": write_mnist,
        "106B_LSTM_Timeseries_with_IOT_Data": write_solar,
        "201B_CIFAR-10_ImageHandsOn": write_cifar_images, "206C_WGAN_LSGAN": write_cifar_images,
        "303_Deep_Structured_Semantic_Modeling_with_LSTM_Networks": write_dssm,
        # sequence notebooks
        "202_Language_Understanding": write_atis, "204_Sequence_To_Sequence": write_cmudict,
        "599A_Sequence_To_Sequence": write_cmudict,
        "208_Speech_Connectionist_Temporal_Classification": write_an4_speech,
        "301_Image_Recognition_with_Deep_Transfer_Learning": write_transfer_images}


def write_feed_data(folder: str) -> None:
    """What CNTK's Manual_How_to_feed_data reads: 103A's MNIST (``write_mnist``), 201A's
    CIFAR-10 (``write_cifar_images``) and AN4 speech (``write_an4_speech``) in
    ``Tests/EndToEndTests/Speech/Data`` (the notebook's ``..`` cut to ``.``)."""
    write_mnist(folder)
    write_cifar_images(folder)
    write_an4_speech(os.path.join(folder, "Tests", "EndToEndTests", "Speech", "Data"))


DATA["Manual_How_to_feed_data"] = write_feed_data
DATA["Manual_How_to_use_network_optimizations"] = write_mnist


def write_gym(folder: str) -> None:
    """CNTK 203's ``import gym``: ``cntk_gym_standin.py`` (CartPole-v0) as ``gym.py``."""
    shutil.copyfile(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                 "cntk_gym_standin.py"), os.path.join(folder, "gym.py"))


DATA["203_Reinforcement_Learning_Basics"] = write_gym
DATA["205_Artistic_Style_Transfer"] = write_style_transfer
DATA["302A_Evaluation_of_Pretrained_Super-resolution_Models"] = write_superres_image
DATA["302B_Image_Super-resolution_Using_CNNs_and_GANs"] = write_bsds_images
# notebooks that load a pretrained model: a stand-in CNTK 2.7 writes (its python, its env)
MODELS = {"301_Image_Recognition_with_Deep_Transfer_Learning": write_resnet_standin,
          "104_Finance_Timeseries_Basic_with_Pandas_Numpy": write_stock_standin,
          "302A_Evaluation_of_Pretrained_Super-resolution_Models": write_superres_standins,
          "302B_Image_Super-resolution_Using_CNNs_and_GANs": write_superres_standins}


def run(name: str, args) -> None:
    cuts = SETTINGS[name]
    cuts = MNIST_CUTS if cuts == "mnist" else cuts
    file = f"{name}.ipynb" if name.startswith("Manual_") else f"CNTK_{name}.ipynb"
    code = code_of(os.path.join(args.notebooks, file), name in CELL_BY_CELL)
    src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cntk_env = {"LD_LIBRARY_PATH": os.environ.get("CNTK_LD_LIBRARY_PATH", ""),
                "PYTHONPATH": os.environ.get("CNTK_PYTHONPATH", "")}
    stadyn_path = [os.path.join(src, "src")] + [p for p in os.environ.get(
        "PYTHONPATH", "").split(os.pathsep) if p]
    for side, python, env in (
            ("cntk", args.cntk_python.split(), cntk_env),
            ("stadyn", [sys.executable], {"PYTHONPATH": os.pathsep.join(stadyn_path)})):
        folder = os.path.join(args.out, side, name)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "pandas_standin.py"), "w") as f:
            f.write(PANDAS_STANDIN)
        if name in DATA:
            DATA[name](folder)
        if name in MODELS:
            MODELS[name](folder, args.cntk_python.split(), cntk_env)
        path = os.path.join(folder, f"{side}_{name}.py")
        with open(path, "w") as f:
            f.write(script(code, cuts, side == "stadyn", name in CELL_BY_CELL))
        proc = subprocess.run(python + ["-W", "ignore", path], cwd=folder, capture_output=True,
                              text=True, env=dict(os.environ, **env), timeout=args.timeout)
        lines = [ln for ln in (proc.stdout + proc.stderr).splitlines()
                 if ln.strip() and not ln.startswith(("\t", "-", "Build info"))]
        with open(os.path.join(folder, "output.txt"), "w") as f:
            f.write(proc.stdout + proc.stderr)                   # the whole output, to compare
        print(f"== {name} on {side}: exit {proc.returncode}")
        print("\n".join(lines[-args.tail:]))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", help=f"default: all of {sorted(SETTINGS)}")
    p.add_argument("--notebooks", required=True,
                   help="CNTK's Tutorials (or Manual) folder")
    p.add_argument("--out", required=True, help="where the scripts run")
    p.add_argument("--cntk-python", required=True, help="CNTK 2.7's python")
    p.add_argument("--tail", type=int, default=20)
    p.add_argument("--timeout", type=int, default=900)
    args = p.parse_args()
    for name in args.names or sorted(SETTINGS):
        run(name, args)


if __name__ == "__main__":
    main()
