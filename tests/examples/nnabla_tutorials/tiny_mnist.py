"""A stand-in for MNIST's download, for the tutorials that fetch it (``load_mnist`` of
``vae_unsupervised_learning``, ``siamese_feature_embedding``): ``download(uri)`` gives, for
the four yann.lecun.com URIs, the same gzipped IDX files made from scikit-learn's 8x8 digits
(each pixel 3x3, a 2-pixel border: 28x28, values 0..16 scaled to 0..255); the first 1300
digits are the training set, the other 497 the test set.  The tutorial's own ``load_mnist``
parses them unchanged, on either framework.

Example (``run_cells.py`` puts this folder on ``sys.path``):
    >>> r = download("http://yann.lecun.com/exdb/mnist/t10k-labels-idx1-ubyte.gz")
    >>> import gzip
    >>> len(gzip.decompress(r.read()))        # 8 header bytes and 497 labels
    505
"""

import gzip
import io
import struct

import numpy as np
from sklearn.datasets import load_digits

__all__ = ["download"]

TRAIN = 1300


def _images_and_labels(train):
    digits = load_digits()
    part = slice(None, TRAIN) if train else slice(TRAIN, None)
    images = np.kron(digits.images[part], np.ones((3, 3)))            # (N, 24, 24)
    images = np.pad(images, ((0, 0), (2, 2), (2, 2))) * (255.0 / 16.0)
    return np.round(images).astype(np.uint8), digits.target[part].astype(np.uint8)


def download(uri):
    """The gzipped IDX file ``uri`` names, made from the digits (see the module docstring)."""
    images, labels = _images_and_labels(train="/train-" in uri)
    if "labels" in uri:
        raw = struct.pack(">II", 2049, len(labels)) + labels.tobytes()
    else:
        raw = struct.pack(">IIII", 2051, len(images), 28, 28) + images.tobytes()
    return io.BytesIO(gzip.compress(raw, mtime=0))
