"""Runs the NNabla tutorial scripts of tests/examples/nnabla_tutorials on NNabla 1.39 and
writes what each printed, cell by cell, to nnabla139_tutorial_<name>.txt beside this script
(object addresses dropped).

    DIGITS_CSV=.../sklearn/datasets/data/digits.csv.gz OMP_NUM_THREADS=1 \\
        /work/peers/nnabla/bin/python make_nnabla_tutorial_refs.py [NAME ...]

(``DIGITS_CSV`` only where scikit-learn is not installed: run_cells.py reads its CSV then.)
"""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TUTORIALS = os.path.join(HERE, "..", "nnabla_tutorials")
NAMES = ["python_api", "by_examples", "mixed_precision_training", "dynamic_and_static_nn",
         "debugging", "vae_unsupervised_learning", "vat_semi_supervised_learning",
         "siamese_feature_embedding", "dcgan_image_generation", "cifar10_classification",
         "graph_converters"]


def main(names):
    for name in names or NAMES:
        out = subprocess.run([sys.executable, os.path.join(TUTORIALS, "run_cells.py"),
                              os.path.join(TUTORIALS, "nb_" + name + ".py"), "nnabla"],
                             capture_output=True, text=True, check=True,
                             cwd=tempfile.mkdtemp()).stdout
        with open(os.path.join(HERE, "nnabla139_tutorial_%s.txt" % name), "w") as f:
            f.write(re.sub(r" at 0x[0-9a-f]+", "", out))   # addresses: stable files


if __name__ == "__main__":
    main(sys.argv[1:])
