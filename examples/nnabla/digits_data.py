"""The scikit-learn 8x8 digits as NNabla data iterators (a local helper, as nnabla-examples'
``mnist_data.py`` is for MNIST).

The images are read with scikit-learn when it is installed; otherwise from the CSV file
scikit-learn ships (``sklearn/datasets/data/digits.csv.gz``) at the path in ``DIGITS_CSV``:
64 pixel values 0..16 and the label per line.  Images are scaled to [0, 1], shaped
``(1, 8, 8)``; labels are ``(1,)`` int32.  The last 297 of the 1797 images are held out.
"""

import gzip
import os

import numpy as np
from nnabla.utils.data_iterator import data_iterator_simple

N_TRAIN = 1500


def load_digits():
    """``(images (N, 1, 8, 8) float32 in [0, 1], labels (N, 1) int32)``, all 1797 digits."""
    try:
        from sklearn.datasets import load_digits as sklearn_digits
        digits = sklearn_digits()
        pixels, labels = digits.data, digits.target
    except ImportError:
        path = os.environ.get("DIGITS_CSV")
        if not path:
            raise SystemExit("the digits need scikit-learn, or DIGITS_CSV set to the path of "
                             "scikit-learn's sklearn/datasets/data/digits.csv.gz")
        with gzip.open(path, "rt") as f:
            table = np.loadtxt(f, delimiter=",")
        pixels, labels = table[:, :64], table[:, 64]
    images = (pixels / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    return images, labels.astype(np.int32).reshape(-1, 1)


def data_iterator_digits(batch_size, train=True, shuffle=True, rng=None, limit=None):
    """Minibatches ``(images, labels)`` of the training (first 1500) or held-out digits;
    ``limit`` keeps only the first images of the part (tiny runs)."""
    images, labels = load_digits()
    part = slice(0, N_TRAIN) if train else slice(N_TRAIN, None)
    images, labels = images[part][:limit], labels[part][:limit]

    def load(i):
        return images[i], labels[i]

    return data_iterator_simple(load, len(images), batch_size, shuffle=shuffle, rng=rng,
                                with_file_cache=False)
