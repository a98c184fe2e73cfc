"""A stand-in for CIFAR-10's download, for the CIFAR-10 tutorial: ``download(uri)`` gives the
``cifar-10-python.tar.gz`` layout (``data_batch_1`` .. ``5`` and ``test_batch``, pickled dicts
of ``b"data"`` (N, 3072) uint8 and ``b"labels"``) made from scikit-learn's 8x8 digits: each
pixel 4x4 (32x32), values 0..16 scaled to 0..255, the same in the three colour channels and
shifted per class in the red one; the first 1300 digits in five training batches (260 each),
the other 497 the test batch.  The tutorial's own data source reads it unchanged, on either
framework, once its sizes (50000, 10000) are these.

Example (``run_cells.py`` puts this folder on ``sys.path``):
    >>> import tarfile
    >>> with tarfile.open(fileobj=download("cifar-10-python.tar.gz"), mode="r:gz") as f:
    ...     sorted(m.name for m in f.getmembers())[-2:]
    ['cifar-10-batches-py/data_batch_5', 'cifar-10-batches-py/test_batch']
"""

import io
import pickle
import tarfile

import numpy as np
from sklearn.datasets import load_digits

__all__ = ["download"]

TRAIN, BATCHES = 1300, 5


def _rgb(images, labels):
    big = np.kron(images, np.ones((4, 4))) * (255.0 / 16.0)               # (N, 32, 32)
    rgb = np.repeat(big[:, None], 3, axis=1)
    rgb[:, 0] = np.clip(rgb[:, 0] + 10.0 * labels[:, None, None], 0, 255)
    return np.round(rgb).astype(np.uint8).reshape(len(images), 3 * 32 * 32)


def download(uri):
    """The tar.gz ``uri`` names, made from the digits (see the module docstring)."""
    digits = load_digits()
    data, labels = _rgb(digits.images, digits.target), [int(v) for v in digits.target]
    per = TRAIN // BATCHES
    parts = [("data_batch_%d" % (k + 1), slice(k * per, (k + 1) * per)) for k in range(BATCHES)]
    parts.append(("test_batch", slice(TRAIN, None)))
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, part in parts:
            raw = pickle.dumps({b"data": data[part], b"labels": labels[part]}, protocol=2)
            info = tarfile.TarInfo("cifar-10-batches-py/" + name)
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))
    out.seek(0)
    return out
