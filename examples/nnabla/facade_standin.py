"""A small synthetic stand-in for the CMP Facade database, in the files nnabla-examples'
``image-translation/pix2pix`` reads, for running it without a network.

    python examples/nnabla/facade_standin.py [FOLDER] [--train N] [--val N] [--test N]

writes ``FOLDER/train``, ``FOLDER/val`` and ``FOLDER/test`` (FOLDER by default
``datasets/facades``, the program's default ``--traindir`` is its ``train``) as pix2pix's
``facade.py`` splits the database into them: each picture a pair of files of one name, the
photograph ``<name>.jpg`` (RGB; stored losslessly, as PNG bytes, which PIL reads by
their content) and its labels ``<name>.png`` (one 8-bit value a pixel, the
database's 12 classes numbered 1 to 12: 1 background, 2 facade, 3 window, 4 door, ...).

Each picture is a wall (class 2) on a background (class 1) with a grid of windows (class 3), a
door (class 4) and a few other rectangles of classes 5 to 12; the photograph paints each class
its own colour with a little noise.  The pictures are 300 x 286 pixels (the program resizes
the shorter side to 286 and crops 256 x 256).  The same seed gives the same bytes on every
machine.

Example:
    >>> import tempfile
    >>> from PIL import Image
    >>> root = tempfile.mkdtemp()
    >>> write_facades(root, n_train=1, n_val=1, n_test=1)
    >>> sorted(os.listdir(root + "/train"))
    ['cmp_x0000.jpg', 'cmp_x0000.png']
    >>> Image.open(root + "/train/cmp_x0000.jpg").size
    (300, 286)
    >>> Image.open(root + "/train/cmp_x0000.png").mode
    'L'
"""

import argparse
import os

import numpy as np
from PIL import Image

WIDTH, HEIGHT = 300, 286
_COLOURS = np.random.RandomState(12).randint(0, 256, (13, 3))


def labels(rng: np.random.RandomState) -> np.ndarray:
    """``(HEIGHT, WIDTH)`` uint8 class numbers 1 to 12 of one facade."""
    lab = np.ones((HEIGHT, WIDTH), np.uint8)
    top, left = rng.randint(10, 40), rng.randint(10, 40)
    lab[top:HEIGHT - 5, left:WIDTH - left] = 2
    rows, cols = rng.randint(2, 5), rng.randint(2, 6)
    h = (HEIGHT - 5 - top) // (rows + 1)
    w = (WIDTH - 2 * left) // cols
    for r in range(rows):
        for c in range(cols):
            y, x = top + 10 + r * h, left + 8 + c * w
            lab[y:y + h // 2, x:x + w // 2] = 3
    door = rng.randint(left + 10, WIDTH - left - 40)
    lab[HEIGHT - 5 - h:HEIGHT - 5, door:door + 30] = 4
    for cls in range(5, 13):
        y, x = rng.randint(0, HEIGHT - 20), rng.randint(0, WIDTH - 20)
        lab[y:y + rng.randint(4, 20), x:x + rng.randint(4, 20)] = cls
    return lab


def photograph(lab: np.ndarray, rng: np.random.RandomState) -> np.ndarray:
    """``(HEIGHT, WIDTH, 3)`` uint8: each class in its colour, with noise."""
    image = _COLOURS[lab] + rng.normal(0, 12, lab.shape + (3,))
    return np.clip(image, 0, 255).astype(np.uint8)


def write_facades(root: str, n_train: int = 2, n_val: int = 1, n_test: int = 1,
                  seed: int = 0) -> None:
    """Write ``n_train``, ``n_val`` and ``n_test`` pictures under ``root/{train,val,test}``."""
    rng = np.random.RandomState(seed)
    number = 0
    for split, n in (("train", n_train), ("val", n_val), ("test", n_test)):
        folder = os.path.join(root, split)
        os.makedirs(folder, exist_ok=True)
        for _ in range(n):
            lab = labels(rng)
            name = os.path.join(folder, f"cmp_x{number:04d}")
            # (PNG bytes under the .jpg name: PIL opens a file by its content, and a lossless
            # photograph decodes to the same pixels whatever JPEG library a machine has)
            Image.fromarray(photograph(lab, rng)).save(name + ".jpg", format="PNG")
            Image.fromarray(lab, mode="L").save(name + ".png")
            number += 1


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", default=os.path.join("datasets", "facades"))
    parser.add_argument("--train", type=int, default=2)
    parser.add_argument("--val", type=int, default=1)
    parser.add_argument("--test", type=int, default=1)
    args = parser.parse_args(argv)
    write_facades(args.folder, args.train, args.val, args.test)


if __name__ == "__main__":
    main()
