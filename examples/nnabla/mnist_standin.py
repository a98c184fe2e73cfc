"""A small synthetic stand-in for MNIST, in MNIST's own files, for running nnabla-examples'
``mnist-collection`` programs without a network.

    python examples/nnabla/mnist_standin.py [FOLDER] [--train N] [--test N]

writes ``train-images-idx3-ubyte.gz``, ``train-labels-idx1-ubyte.gz``,
``t10k-images-idx3-ubyte.gz`` and ``t10k-labels-idx1-ubyte.gz`` (gzip'd IDX, as
yann.lecun.com serves them) into FOLDER, by default NNabla's data folder ``~/nnabla_data``.
That is where ``nnabla.utils.data_source_loader.download`` looks before it downloads (on
NNabla 1.39 and on Stadyn alike), so the programs' ``mnist_data.py`` reads these files.

The digits are 28x28 uint8 images of seven-segment strokes (one stroke layout per class),
jittered in position, size and thickness, with a little noise: learnable, different from
class to class, and the same bytes for the same seed on every machine.

Example:
    >>> import gzip, struct, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> write_mnist(folder, n_train=20, n_test=10)
    >>> with gzip.open(folder + "/t10k-images-idx3-ubyte.gz") as f:
    ...     struct.unpack(">IIII", f.read(16))
    (2051, 10, 28, 28)
"""

import argparse
import gzip
import os
import struct

import numpy as np

# Segments a..g of a seven-segment digit, as (row0, col0, row1, col1) on a 0..1 square.
_SEGMENTS = {
    "a": (0.0, 0.0, 0.0, 1.0), "b": (0.0, 1.0, 0.5, 1.0), "c": (0.5, 1.0, 1.0, 1.0),
    "d": (1.0, 0.0, 1.0, 1.0), "e": (0.5, 0.0, 1.0, 0.0), "f": (0.0, 0.0, 0.5, 0.0),
    "g": (0.5, 0.0, 0.5, 1.0),
}
_DIGITS = ["abcdef", "bc", "abged", "abgcd", "fgbc", "afgcd", "afgedc", "abc", "abcdefg",
           "abcdfg"]


def digit_image(label: int, rng: np.random.RandomState) -> np.ndarray:
    """One 28x28 uint8 image of ``label`` drawn with ``rng``'s jitter."""
    height, width = rng.uniform(14, 20), rng.uniform(8, 13)
    top, left = rng.uniform(3, 25 - height), rng.uniform(5, 23 - width)
    thickness = rng.uniform(1.0, 2.2)
    rows, cols = np.mgrid[0:28, 0:28].astype(np.float64)
    img = np.zeros((28, 28))
    for seg in _DIGITS[label]:
        r0, c0, r1, c1 = _SEGMENTS[seg]
        r0, r1 = top + r0 * height, top + r1 * height
        c0, c1 = left + c0 * width, left + c1 * width
        # distance of each pixel to the segment
        dr, dc = r1 - r0, c1 - c0
        t = np.clip(((rows - r0) * dr + (cols - c0) * dc) / (dr * dr + dc * dc), 0, 1)
        dist = np.hypot(rows - (r0 + t * dr), cols - (c0 + t * dc))
        img = np.maximum(img, np.clip(thickness + 0.5 - dist, 0, 1))
    img = img * rng.uniform(0.8, 1.0) + rng.uniform(0, 0.08, size=(28, 28))
    return (np.clip(img, 0, 1) * 255).astype(np.uint8)


def digits(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` images (n, 28, 28) uint8 and their labels (n,) uint8, classes in turn."""
    rng = np.random.RandomState(seed)
    labels = (np.arange(n) % 10).astype(np.uint8)
    rng.shuffle(labels)
    return np.stack([digit_image(int(y), rng) for y in labels]), labels


def _write_idx(path: str, array: np.ndarray) -> None:
    magic = 0x0800 | array.ndim                       # unsigned bytes, ndim dimensions
    header = struct.pack(">I" + "I" * array.ndim, magic, *array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


def write_mnist(folder: str, n_train: int = 1000, n_test: int = 500, seed: int = 0) -> None:
    """Write the four MNIST files of ``n_train`` and ``n_test`` synthetic digits into
    ``folder`` (made if missing)."""
    os.makedirs(folder, exist_ok=True)
    for prefix, n, s in (("train", n_train, seed), ("t10k", n_test, seed + 1)):
        images, labels = digits(n, s)
        _write_idx(os.path.join(folder, f"{prefix}-images-idx3-ubyte.gz"), images)
        _write_idx(os.path.join(folder, f"{prefix}-labels-idx1-ubyte.gz"), labels)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", default=os.path.expanduser("~/nnabla_data"))
    parser.add_argument("--train", type=int, default=1000)
    parser.add_argument("--test", type=int, default=500)
    args = parser.parse_args(argv)
    write_mnist(args.folder, args.train, args.test)
    print(f"wrote {args.train} training and {args.test} test digits to {args.folder}")


if __name__ == "__main__":
    main()
