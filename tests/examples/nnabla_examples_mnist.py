"""Run nnabla-examples' MNIST programs (``image-classification/mnist-collection`` of
sony/nnabla-examples), unchanged, at a tiny size, one after another in this process, and write
what their monitors recorded as JSON.  The same file runs on NNabla 1.39 (which made
``refs/nnabla139_examples_mnist.json``) and, with ``--stadyn``, on Stadyn through
``examples/nnabla/on_stadyn.py``'s import hook.

    python tests/examples/nnabla_examples_mnist.py EXAMPLES WORK OUT.json [--stadyn] [--only=R,..]

The reference file is this, run on NNabla 1.39 (``/work/peers/nnabla/bin/python ... WORK
tests/examples/refs/nnabla139_examples_mnist.json``).

EXAMPLES holds ``image-classification/mnist-collection`` and ``utils`` (a checkout or an
archive of the repository); WORK is an empty folder: MNIST's stand-in
(``examples/nnabla/mnist_standin.py``) is written to ``WORK/home/nnabla_data``, where the
programs' ``mnist_data.py`` finds it through NNabla's download cache, and each program writes
under ``WORK/<run>``.  Only the harness around the programs differs from a user's shell: NumPy
is seeded 0 before each (DCGAN and VAT draw their noise from NumPy unseeded), ``np.int`` (gone
from NumPy 1.24; ``siamese.py`` uses it) is put back, and a two-line ``six`` stands in where
the package is not installed.
"""

import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nnabla_example_runs as record  # noqa: E402
N_TRAIN, N_TEST = 300, 200

# (run, program, arguments); every run also gets -o WORK/<run> (and -m where it takes one).
RUNS = [
    ("lenet", "classification.py", "-b 16 --max-iter 20 --val-interval 10 --val-iter 2 -s 10"),
    # resumed from lenet's checkpoint at step 10 (parameters and Adam's states in NNabla's .h5)
    ("lenet_resume", "classification.py", "-b 16 --max-iter 20 --val-interval 10 --val-iter 2 "
                                          "--checkpoint {work}/lenet/checkpoint_10.json"),
    ("resnet", "classification.py", "--net resnet -b 8 --max-iter 10 --val-interval 5 "
                                    "--val-iter 1"),
    ("vae", "vae.py", "-b 16 --max-iter 3"),
    ("dcgan", "dcgan.py", "-b 8 --max-iter 10"),
    ("siamese", "siamese.py", "-b 16 --max-iter 10 --val-interval 5 --val-iter 1"),
    ("vat", "vat.py", "-bl 8 -bu 16 -bv 20 --n_train 300 --n_valid 200 -nu 100 --max-iter 2 "
                      "--val-interval 1 --val-iter 1"),
    ("bincon", "classification_bnn.py", "--net bincon -b 16 --max-iter 10 --val-interval 5 "
                                        "--val-iter 1"),
    ("bwn", "classification_bnn.py", "--net bwn -b 16 --max-iter 10 --val-interval 5 "
                                     "--val-iter 1"),
    ("binnet", "classification_bnn.py", "--net binnet -b 16 --max-iter 10 --val-interval 5 "
                                        "--val-iter 1"),
]
NO_MONITOR_PATH = {"vat.py"}
# VAT's monitors average over 240 iterations and write nothing in 2: its saved parameters are
# compared instead (a digest of each, nnabla_example_runs.parameter_digest)
DIGEST = {"vat"}


def main(argv):
    examples, work, out_path = (os.path.abspath(a) for a in argv[:3])
    programs = os.path.join(examples, "image-classification", "mnist-collection")
    stadyn = "--stadyn" in argv
    if stadyn:
        sys.path.insert(0, os.path.join(ROOT, "examples", "nnabla"))
        import on_stadyn
        on_stadyn.install()
    sys.path.insert(0, os.path.join(ROOT, "examples", "nnabla"))
    import mnist_standin
    os.environ["HOME"] = os.path.join(work, "home")
    mnist_standin.write_mnist(os.path.join(work, "home", "nnabla_data"), N_TRAIN, N_TEST)
    record.six_if_missing(work)
    np.int = int                                   # siamese.py: (l0 == l1).astype(np.int)
    sys.path.insert(0, programs)
    import nnabla as nn
    results = {}
    for run, program, args, folder in record.selected(RUNS, argv, work):
        paths = ["-o", folder] + ([] if program in NO_MONITOR_PATH else ["-m", folder])
        np.random.seed(0)
        nn.clear_parameters()
        error, seconds = record.run_program(os.path.join(programs, program),
                                            args.format(work=work).split() + paths, folder)
        results[run] = record.result(folder, error, seconds, stadyn,
                                     names=sorted(os.listdir(folder)), digest=run in DIGEST)
    record.write_results(results, out_path)


if __name__ == "__main__":
    main(sys.argv[1:])
