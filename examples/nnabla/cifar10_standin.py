"""A synthetic stand-in for CIFAR-10, in CIFAR-10's own file, for running nnabla-examples'
CIFAR-10 programs (``image-generation/wgan``, ``image-classification/cifar10-100``,
``data_augmentation``) without a network.

    python examples/nnabla/cifar10_standin.py [FOLDER]

writes ``cifar-10-python.tar.gz`` into FOLDER, by default NNabla's data folder
``~/nnabla_data``, where ``nnabla.utils.data_source_loader.download`` looks before it
downloads (on NNabla 1.39 and on Stadyn alike).  As the original, the archive holds
``cifar-10-batches-py/data_batch_1`` .. ``data_batch_5`` and ``test_batch``, each a pickled
dict with byte-string keys: ``b"data"``, ``(10000, 3072)`` uint8 rows (the 32x32 red, green
and blue planes one after another), ``b"labels"``, a list of 10,000 ints in 0..9,
``b"batch_label"`` and ``b"filenames"``; and ``batches.meta`` with ``b"label_names"``.  The
programs fix the sizes in their code (they reshape to 50,000 and 10,000 images), so the
stand-in has the original's counts.

Each class is a smooth colour pattern of its own; an image is its class's pattern shifted by
up to 7 pixels each way and brightened by up to 31 levels: learnable, different from class to
class, quick to write, and the same bytes for the same seed on every machine.

Example:
    >>> import tarfile, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> path = write_cifar10(folder, per_batch=20)
    >>> with tarfile.open(path, "r:gz") as f:
    ...     batch = np.load(f.extractfile("cifar-10-batches-py/data_batch_1"),
    ...                     encoding="bytes", allow_pickle=True)
    >>> batch[b"data"].shape, batch[b"data"].dtype, len(batch[b"labels"])
    ((20, 3072), dtype('uint8'), 20)
"""

import argparse
import io
import os
import pickle
import tarfile

import numpy as np

NAMES = [b"airplane", b"automobile", b"bird", b"cat", b"deer", b"dog", b"frog", b"horse",
         b"ship", b"truck"]
_SHIFTS = 8


def _patterns(rng: np.random.RandomState) -> np.ndarray:
    """(10, 8, 8, 3, 32, 32) int16: each class's pattern, rolled by each (dy, dx) shift."""
    rows, cols = np.mgrid[0:32, 0:32] / 32.0
    base = np.empty((10, 3, 32, 32))
    for k in range(10):
        freq, phase = rng.uniform(0.5, 3.0, size=(3, 2)), rng.uniform(0, 2 * np.pi, size=3)
        colour = rng.uniform(40, 200, size=3)
        for c in range(3):
            wave = np.sin(2 * np.pi * (freq[c, 0] * rows + freq[c, 1] * cols) + phase[c])
            base[k, c] = colour[c] + 50 * wave
    rolled = [[np.roll(base, (dy, dx), axis=(2, 3)) for dx in range(_SHIFTS)]
              for dy in range(_SHIFTS)]
    return np.round(np.stack([np.stack(r, axis=1) for r in rolled], axis=1)).astype(np.int16)


def images(n: int, rng: np.random.RandomState, patterns: np.ndarray):
    """``n`` images as (n, 3072) uint8 rows and their labels (n,), classes in turn."""
    labels = np.arange(n) % 10
    rng.shuffle(labels)
    dy, dx = rng.randint(0, _SHIFTS, size=n), rng.randint(0, _SHIFTS, size=n)
    light = rng.randint(0, 32, size=n)
    x = patterns[labels, dy, dx] + light[:, None, None, None].astype(np.int16)
    return np.clip(x, 0, 255).astype(np.uint8).reshape(n, 3072), labels


def _add(tar: tarfile.TarFile, name: str, obj) -> None:
    data = pickle.dumps(obj, protocol=2)
    info = tarfile.TarInfo("cifar-10-batches-py/" + name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def write_cifar10(folder: str, per_batch: int = 10000, seed: int = 0,
                  compresslevel: int = 1) -> str:
    """Write ``cifar-10-python.tar.gz`` (five training batches and a test batch of
    ``per_batch`` images each) into ``folder`` (made if missing); return its path.
    ``compresslevel`` is gzip's (0 stores the 184 MB unpacked inside the gzip stream: quicker
    to write and to read, twice per run, where the disk is not the bottleneck)."""
    os.makedirs(folder, exist_ok=True)
    rng = np.random.RandomState(seed)
    patterns = _patterns(rng)
    path = os.path.join(folder, "cifar-10-python.tar.gz")
    with tarfile.open(path, "w:gz", compresslevel=compresslevel) as tar:
        names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
        for name in names:
            data, labels = images(per_batch, rng, patterns)
            _add(tar, name, {b"batch_label": name.encode(), b"labels": labels.tolist(),
                             b"data": data,
                             b"filenames": [b"%s_%d.png" % (name.encode(), i)
                                            for i in range(per_batch)]})
        _add(tar, "batches.meta", {b"label_names": NAMES, b"num_cases_per_batch": per_batch,
                                   b"num_vis": 3072})
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", default=os.path.expanduser("~/nnabla_data"))
    args = parser.parse_args(argv)
    print("wrote", write_cifar10(args.folder))


if __name__ == "__main__":
    main()
