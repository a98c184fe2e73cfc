"""The scripts ``tools/cntk_notebooks.py`` makes of a notebook: its code cells (``code_of``;
cell by cell, each cell's exception printed, for ``CELL_BY_CELL``), the size cuts of
``SETTINGS`` applied, notebook-only lines dropped, plotting swallowed (``PRELUDE``), and for
Stadyn's side ``import cntk`` turned into ``import stadyn.compat.cntk`` (``script``).
"""

from __future__ import annotations

import json
import re

from cntk_notebook_standins import NETOPT_CONVNET, NETOPT_FEEDFORWARD

PRELUDE = '''
class _Null:
    def __getattr__(self, n): return self
    def __call__(self, *a, **k): return self
    def __iter__(self): return iter([self, self])
    def __getitem__(self, k): return self
    def __setitem__(self, k, v): pass
plt = matplotlib = Image = display = _Null()
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
