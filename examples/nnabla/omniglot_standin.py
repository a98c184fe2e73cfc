"""A small synthetic stand-in for Omniglot, in the files nnabla-examples' ``meta-learning``
programs read, for running them without a network.

    python examples/nnabla/omniglot_standin.py [FOLDER] [--letters N]

writes ``FOLDER/omniglot/data/train.npy`` and ``val.npy`` (FOLDER by default ``../data``, the
programs' ``--dataset_root``) as ``meta-learning/data/omniglot_data.py`` writes them from
Omniglot's ``images_background.zip`` and ``images_evaluation.zip``: each file is NumPy's
pickle of the pair ``(x, alphabets)``, ``x`` the ``(letters, 20, 105, 105)`` uint8 images (20
drawings of each letter, ink 0 on paper 255) and ``alphabets`` ``{alphabet: [first letter,
last letter]}``.

Each letter is a few random strokes; its 20 drawings move them a little and vary their
width, so a letter's drawings are alike and unlike other letters'.  The same seed gives the
same bytes on every machine.

Example:
    >>> import tempfile
    >>> root = tempfile.mkdtemp()
    >>> write_omniglot(root, n_train=3, n_val=2)
    >>> x, alphabets = np.load(root + "/omniglot/data/train.npy", allow_pickle=True)
    >>> x.shape, x.dtype, alphabets
    ((3, 20, 105, 105), dtype('uint8'), {'Alphabet_of_the_Magi': [0, 2]})
"""

import argparse
import os

import numpy as np

_SIZE, _DRAWINGS = 105, 20


def _letter(rng: np.random.RandomState) -> np.ndarray:
    """A letter: 2 to 4 strokes, each (4,) = row0, col0, row1, col1 on a 0..1 square."""
    return rng.uniform(0.15, 0.85, size=(rng.randint(2, 5), 4))


def _draw(strokes: np.ndarray, rng: np.random.RandomState) -> np.ndarray:
    rows, cols = np.mgrid[0:_SIZE, 0:_SIZE].astype(np.float64)
    ink = np.zeros((_SIZE, _SIZE), dtype=bool)
    width = rng.uniform(2.0, 4.0)
    for r0, c0, r1, c1 in (strokes + rng.normal(0, 0.03, strokes.shape)) * _SIZE:
        dr, dc = r1 - r0, c1 - c0
        t = np.clip(((rows - r0) * dr + (cols - c0) * dc) / max(dr * dr + dc * dc, 1e-9), 0, 1)
        ink |= np.hypot(rows - (r0 + t * dr), cols - (c0 + t * dc)) < width
    return np.where(ink, 0, 255).astype(np.uint8)


def letters(n: int, seed: int) -> np.ndarray:
    """``(n, 20, 105, 105)`` uint8 drawings of ``n`` letters."""
    rng = np.random.RandomState(seed)
    return np.stack([np.stack([_draw(strokes, rng) for _ in range(_DRAWINGS)])
                     for strokes in (_letter(rng) for _ in range(n))])


def _save(path: str, x: np.ndarray, alphabet: str) -> None:
    pair = np.empty(2, dtype=object)
    pair[0], pair[1] = x, {alphabet: [0, len(x) - 1]}
    with open(path, "wb") as f:
        np.save(f, pair)


def write_omniglot(root: str, n_train: int = 12, n_val: int = 8, seed: int = 0) -> None:
    """Write ``omniglot/data/train.npy`` (``n_train`` letters) and ``val.npy`` (``n_val``)
    under ``root``."""
    folder = os.path.join(root, "omniglot", "data")
    os.makedirs(folder, exist_ok=True)
    _save(os.path.join(folder, "train.npy"), letters(n_train, seed), "Alphabet_of_the_Magi")
    _save(os.path.join(folder, "val.npy"), letters(n_val, seed + 1), "Angelic")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", nargs="?", default=os.path.join("..", "data"))
    parser.add_argument("--letters", type=int, default=12)
    args = parser.parse_args(argv)
    write_omniglot(args.root, args.letters, max(args.letters * 2 // 3, 1))
    print(f"wrote {args.letters} training letters' drawings under {args.root}/omniglot/data")


if __name__ == "__main__":
    main()
