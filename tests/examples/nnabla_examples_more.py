"""Run more of nnabla-examples' programs (sony/nnabla-examples: ``language-modeling/word2vec``,
``language-modeling/lstm``, ``meta-learning/maml``, ``image-generation/wgan``), unchanged,
at a tiny size, one after another in this process, and write what their monitors recorded as
JSON.  The same file runs on NNabla 1.39 (which made ``refs/nnabla139_examples_more.json``)
and, with ``--stadyn``, on Stadyn through ``examples/nnabla/on_stadyn.py``'s import hook.

    python tests/examples/nnabla_examples_more.py EXAMPLES WORK OUT.json [--stadyn] [--only=R,..]

The reference file is this, run on NNabla 1.39 (``/work/peers/nnabla/bin/python ... WORK
tests/examples/refs/nnabla139_examples_more.json``; the WGAN runs were added from such a
full run, after the others, whose parameters draw from the same initialiser generator).

EXAMPLES holds the programs' folders and ``utils`` (a checkout or an archive of the
repository); WORK is an empty folder.  The data are stand-ins in the real files: Penn
Treebank's three text files (``examples/nnabla/ptb_standin.py``) in NNabla's download cache
``WORK/home/nnabla_data`` (where word2vec's ``download`` finds ``ptb.train.txt``) and in the
LSTM's working folder (where it looks before it runs ``wget``); Omniglot's ``train.npy`` /
``val.npy`` as ``meta-learning/data/omniglot_data.py`` writes them
(``examples/nnabla/omniglot_standin.py``) under ``WORK/data``; CIFAR-10's
``cifar-10-python.tar.gz`` (``examples/nnabla/cifar10_standin.py``: the original's 50,000 +
10,000 images, which the programs' ``cifar10_data.py`` reshapes to) in the download cache.
Each program writes under ``WORK/<run>``.  Only the harness around the programs differs from a
user's shell: NumPy and ``random`` are seeded 0 before each (and on Stadyn torch's generator,
which ops with ``seed=-1`` draw from: the LSTM's dropout), the process runs with
``PYTHONHASHSEED=0`` (the LSTM numbers its words in the order of a ``set``), and ``np.int``
(gone from NumPy 1.24; MAML's data generator uses it) is put back.
"""

import os
import random
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nnabla_example_runs as record  # noqa: E402
PROGRAMS = ("language-modeling/word2vec", "language-modeling/lstm", "meta-learning/maml",
            "image-generation/wgan", "utils")
N_WORDS = 600            # PTB stand-in: training words (validation and test: a fifth each)
N_LETTERS = 10           # Omniglot stand-in: training letters (validation: two thirds)

# (run, program, arguments); {out} is WORK/<run>, {work} is WORK.
RUNS = [
    ("word2vec", "language-modeling/word2vec/word_embedding.py",
     "-c cpu -m {out}/ -e 16 -b 50 -i 1 -v 1 -mw 3"),
    # the monitor averages the loss.d arrays it was handed over 5 iterations
    ("word2vec_interval", "language-modeling/word2vec/word_embedding.py",
     "-c cpu -m {out}/ -e 16 -b 50 -i 1 -v 5 -mw 0"),
    ("lstm", "language-modeling/lstm/train.py",
     "-c cpu -w {out} -s {out} -b 4 -e 1 -m 1 -n 5 -S 16"),
    ("maml", "meta-learning/maml/train_maml.py",
     "-c cpu --dataset_root {work}/data --logdir {out} --metatrain_iterations 2 "
     "--meta_batch_size 1 --num_filters 8 --print_interval 1 --test_print_interval 100 "
     "--save_interval 1"),
    # WGAN-GP: the gradient penalty differentiates the critic's gradient (nn.grad w.r.t. the
    # mixed images, set need_grad=True); upsampling by deconvolution and by linear interpolation
    ("wgan_deconv", "image-generation/wgan/train.py",
     "-c cpu -b 4 -i 10 --maps 4 --latent 8 --n-critic 1 --up deconv --save-interval 5 "
     "--monitor-path {out}"),
    ("wgan_linear", "image-generation/wgan/train.py",
     "-c cpu -b 4 -i 10 --maps 4 --latent 8 --n-critic 1 --up linear --save-interval 5 "
     "--monitor-path {out}"),
]


def main(argv):
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.execve(sys.executable, [sys.executable, os.path.abspath(__file__), *argv],
                  dict(os.environ, PYTHONHASHSEED="0"))
    examples, work, out_path, stadyn = record.begin(argv, ROOT)
    import cifar10_standin
    import omniglot_standin
    import ptb_standin
    ptb = os.path.join(work, "ptb")
    ptb_standin.write_ptb(ptb, N_WORDS, N_WORDS // 5, N_WORDS // 5)
    os.makedirs(os.path.join(work, "home", "nnabla_data"), exist_ok=True)
    with open(os.path.join(ptb, "ptb.train.txt"), "rb") as src, \
            open(os.path.join(work, "home", "nnabla_data", "ptb.train.txt"), "wb") as dst:
        dst.write(src.read())
    omniglot_standin.write_omniglot(os.path.join(work, "data"), N_LETTERS,
                                    N_LETTERS * 2 // 3)
    only = [a.split("=", 1)[1].split(",") for a in argv if a.startswith("--only=")]
    if not only or any(run.startswith("wgan") for run in only[0]):
        cifar10_standin.write_cifar10(os.path.join(work, "home", "nnabla_data"))
    np.int = int                    # data_generator_maml.py: np.zeros(..., dtype=np.int)
    import nnabla as nn
    results = {}
    for run, program, args, folder in record.selected(RUNS, argv, work):
        if run == "lstm":           # train.py reads ptb.*.txt from its working folder
            for part in ("train", "valid", "test"):
                with open(os.path.join(ptb, f"ptb.{part}.txt"), "rb") as src, \
                        open(os.path.join(folder, f"ptb.{part}.txt"), "wb") as dst:
                    dst.write(src.read())
        np.random.seed(0)
        random.seed(0)
        if stadyn:      # the draws of ops with seed=-1 (the LSTM's dropout): each run the same
            import torch
            torch.manual_seed(0)
        nn.clear_parameters()
        error, seconds = record.run_beside_its_modules(
            os.path.join(examples, program), args.format(out=folder, work=work).split(), folder,
            ("args", "net", "data_generator_maml", "_checkpoint_util", "models", "helpers",
             "cifar10_data"))
        results[run] = record.result(folder, error, seconds, stadyn)
    record.write_results(results, out_path)


if __name__ == "__main__":
    main(sys.argv[1:])
