"""A synthetic stand-in for a super-resolution data set laid out as nnabla-examples'
``image-superresolution/esrgan`` reads DIV2K and Set14: high-resolution pictures in
``HR/x4/`` and the same pictures shrunk 4 times (bicubic, as the authors'
``generate_mod_LR_bic.py`` makes them) in ``LR/x4/``, one PNG each, by the same name.

    python examples/nnabla/superres_standin.py FOLDER [--count N] [--size PIXELS]

Each picture is smooth colour waves with a few sharp-edged rectangles (detail for the
network to restore), drawn from a seeded generator: the same seed writes the same bytes.

Example:
    >>> import os, tempfile
    >>> from PIL import Image
    >>> folder = tempfile.mkdtemp()
    >>> hr, lr = write_pairs(folder, count=1, size=32)
    >>> Image.open(hr[0]).size, Image.open(lr[0]).size
    ((32, 32), (8, 8))
"""

import argparse
import os

import numpy as np

SCALE = 4


def picture(rng: np.random.RandomState, size: int) -> np.ndarray:
    """One (size, size, 3) uint8 picture."""
    rows, cols = np.mgrid[0:size, 0:size] / float(size)
    img = np.empty((size, size, 3))
    for c in range(3):
        fy, fx, phase = rng.uniform(0.5, 3), rng.uniform(0.5, 3), rng.uniform(0, 2 * np.pi)
        img[..., c] = 128 + 70 * np.sin(2 * np.pi * (fy * rows + fx * cols) + phase)
    for _ in range(3):
        y0, x0 = rng.randint(0, size - 4, size=2)
        h, w = rng.randint(2, size // 2, size=2)
        img[y0:y0 + h, x0:x0 + w] = rng.uniform(0, 255, size=3)
    return np.clip(np.round(img), 0, 255).astype(np.uint8)


def write_pairs(folder: str, count: int = 2, size: int = 32, seed: int = 0):
    """Write ``count`` pictures of ``size`` x ``size`` pixels (a multiple of 4) as
    ``FOLDER/HR/x4/NNNN.png`` and their quarter-size copies as ``FOLDER/LR/x4/NNNN.png``;
    return ``(high-resolution paths, low-resolution paths)``."""
    from PIL import Image
    if size % SCALE:
        raise ValueError(f"size {size} is not a multiple of {SCALE}")
    hr_dir, lr_dir = os.path.join(folder, "HR", "x4"), os.path.join(folder, "LR", "x4")
    os.makedirs(hr_dir, exist_ok=True)
    os.makedirs(lr_dir, exist_ok=True)
    rng = np.random.RandomState(seed)
    hr_paths, lr_paths = [], []
    for i in range(1, count + 1):
        hr = Image.fromarray(picture(rng, size))
        lr = hr.resize((size // SCALE, size // SCALE), Image.BICUBIC)
        hr_paths.append(os.path.join(hr_dir, "%04d.png" % i))
        lr_paths.append(os.path.join(lr_dir, "%04d.png" % i))
        hr.save(hr_paths[-1])
        lr.save(lr_paths[-1])
    return hr_paths, lr_paths


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder")
    parser.add_argument("--count", type=int, default=2)
    parser.add_argument("--size", type=int, default=32)
    args = parser.parse_args(argv)
    hr, _ = write_pairs(args.folder, args.count, args.size)
    print("wrote", len(hr), "pairs into", args.folder)


if __name__ == "__main__":
    main()
