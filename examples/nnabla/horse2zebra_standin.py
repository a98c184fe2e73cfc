"""A small synthetic stand-in for CycleGAN's ``horse2zebra.zip``, in the file nnabla-examples'
``image-translation/cycle-gan`` downloads, for running it without a network.

    python examples/nnabla/horse2zebra_standin.py [FOLDER] [--train N] [--test N] [--size S]

writes ``FOLDER/horse2zebra.zip`` (FOLDER by default ``~/nnabla_data``, NNabla's download
cache, where ``nnabla.utils.data_source_loader.download`` finds it) holding the folders the
program's ``cycle_gan_data.py`` reads: ``horse2zebra/trainA``, ``trainB``, ``testA`` and
``testB``, each with its pictures ``<name>.jpg``, RGB, ``S x S`` pixels (stored losslessly, as
PNG bytes, which PIL reads by their content: the same pixels whatever JPEG library a machine
has).  Domain A's pictures are brown blobs on green, domain B's black and white stripes on
green, each with a little noise.  The same seed gives the same bytes on every machine.

Example:
    >>> import tempfile, zipfile
    >>> root = tempfile.mkdtemp()
    >>> path = write_horse2zebra(root, n_train=1, n_test=1, size=8)
    >>> sorted(zipfile.ZipFile(path).namelist())[:2]
    ['horse2zebra/testA/n0002.jpg', 'horse2zebra/testB/n0003.jpg']
"""

import argparse
import io
import os
import zipfile

import numpy as np
from PIL import Image


def picture(domain: str, size: int, rng: np.random.RandomState) -> np.ndarray:
    """``(size, size, 3)`` uint8: a blob (A) or stripes (B) on a green ground, with noise."""
    image = np.zeros((size, size, 3)) + [70, 140, 60]
    yy, xx = np.mgrid[:size, :size]
    cy, cx = rng.uniform(0.3, 0.7, 2) * size
    r = size * rng.uniform(0.2, 0.35)
    body = (yy - cy) ** 2 * 2 + (xx - cx) ** 2 < 2 * r ** 2
    if domain == "A":
        image[body] = [120, 80, 40]
    else:
        stripes = ((xx + yy * rng.uniform(0.2, 0.6)) // max(size // 8, 1)) % 2 == 0
        image[body & stripes] = [240, 240, 240]
        image[body & ~stripes] = [20, 20, 20]
    image += rng.normal(0, 10, image.shape)
    return np.clip(image, 0, 255).astype(np.uint8)


def write_horse2zebra(root: str, n_train: int = 2, n_test: int = 1, size: int = 32,
                      seed: int = 0) -> str:
    """Write ``root/horse2zebra.zip`` (``n_train`` and ``n_test`` pictures a domain); returns
    its path."""
    os.makedirs(root, exist_ok=True)
    path = os.path.join(root, "horse2zebra.zip")
    rng = np.random.RandomState(seed)
    number = 0
    with zipfile.ZipFile(path, "w") as zf:
        for split, n in (("train", n_train), ("test", n_test)):
            for domain in ("A", "B"):
                for _ in range(n):
                    data = io.BytesIO()
                    Image.fromarray(picture(domain, size, rng)).save(data, format="PNG")
                    zf.writestr(f"horse2zebra/{split}{domain}/n{number:04d}.jpg",
                                data.getvalue())
                    number += 1
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?",
                        default=os.path.join(os.path.expanduser("~"), "nnabla_data"))
    parser.add_argument("--train", type=int, default=2)
    parser.add_argument("--test", type=int, default=1)
    parser.add_argument("--size", type=int, default=32)
    args = parser.parse_args(argv)
    write_horse2zebra(args.folder, args.train, args.test, args.size)


if __name__ == "__main__":
    main()
