"""A synthetic stand-in for CelebA's aligned faces (``img_align_celeba_png``), in its own
files, for running nnabla-examples' ``image-generation/pggan`` without the data set.

    python examples/nnabla/celeba_standin.py FOLDER [--count N]

writes ``000001.png`` ... into FOLDER: 178 x 218 RGB pictures, as CelebA's aligned images are
(PGGAN's loader crops the 128 x 128 square centred at x = 89, y = 121 from each).  Each is a
face-like pattern: a skin-coloured ellipse on a coloured background, two darker eyes and a
mouth, its colours, size and position drawn from a seeded generator, so the same seed writes
the same bytes on every machine.

Example:
    >>> import os, tempfile
    >>> from PIL import Image
    >>> folder = tempfile.mkdtemp()
    >>> paths = write_celeba(folder, 2)
    >>> [os.path.basename(p) for p in paths], Image.open(paths[0]).size
    (['000001.png', '000002.png'], (178, 218))
"""

import argparse
import os

import numpy as np

WIDTH, HEIGHT = 178, 218


def face(rng: np.random.RandomState) -> np.ndarray:
    """One (218, 178, 3) uint8 picture."""
    rows, cols = np.mgrid[0:HEIGHT, 0:WIDTH].astype(np.float64)
    background = rng.uniform(30, 220, size=3)
    skin = np.array([rng.uniform(150, 240), rng.uniform(100, 190), rng.uniform(70, 160)])
    img = np.zeros((HEIGHT, WIDTH, 3)) + background
    img += 20 * np.sin(cols / rng.uniform(8, 30))[..., None]          # a striped background
    cy, cx = 121 + rng.uniform(-6, 6), 89 + rng.uniform(-6, 6)
    ry, rx = rng.uniform(50, 62), rng.uniform(38, 48)
    inside = ((rows - cy) / ry) ** 2 + ((cols - cx) / rx) ** 2 <= 1
    img[inside] = skin - 25 * ((rows[inside] - cy) / ry)[:, None]
    for dx in (-0.4, 0.4):                                            # the eyes
        eye = ((rows - cy + 0.2 * ry) / 5) ** 2 + ((cols - cx - dx * rx) / 8) ** 2 <= 1
        img[eye] = rng.uniform(10, 70, size=3)
    mouth = ((rows - cy - 0.45 * ry) / 4) ** 2 + ((cols - cx) / (0.35 * rx)) ** 2 <= 1
    img[mouth] = [rng.uniform(120, 200), 40, 50]
    return np.clip(np.round(img), 0, 255).astype(np.uint8)


def write_celeba(folder: str, count: int = 4, seed: int = 0) -> list:
    """Write ``count`` pictures ``000001.png`` ... into ``folder`` (made if missing); return
    their paths."""
    from PIL import Image
    os.makedirs(folder, exist_ok=True)
    rng = np.random.RandomState(seed)
    paths = []
    for i in range(1, count + 1):
        path = os.path.join(folder, "%06d.png" % i)
        Image.fromarray(face(rng)).save(path)
        paths.append(path)
    return paths


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder")
    parser.add_argument("--count", type=int, default=4)
    args = parser.parse_args(argv)
    print("wrote", len(write_celeba(args.folder, args.count)), "pictures into", args.folder)


if __name__ == "__main__":
    main()
