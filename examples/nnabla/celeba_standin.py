"""A synthetic stand-in for CelebA's aligned faces (``img_align_celeba_png``) and their
attributes (``list_attr_celeba.txt``), in their own files, for running nnabla-examples'
``image-generation/pggan`` and ``image-translation/stargan`` without the data set.

    python examples/nnabla/celeba_standin.py FOLDER [--count N] [--attributes]

writes ``000001.png`` ... into FOLDER: 178 x 218 RGB pictures, as CelebA's aligned images are
(PGGAN's loader crops the 128 x 128 square centred at x = 89, y = 121 from each).  With
``--attributes`` (:func:`write_celeba_attributes`) it writes ``FOLDER/images/000001.png`` ...
and ``FOLDER/list_attr_celeba.txt`` instead.  Each is a
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
    >>> path = write_celeba_attributes(folder, 5, distinct=2)
    >>> lines = open(path).read().splitlines()
    >>> lines[0], lines[1].split()[:2], lines[2].split()[0], len(lines[2].split())
    ('5', ['5_o_Clock_Shadow', 'Arched_Eyebrows'], '000001.png', 41)
    >>> os.path.samefile(folder + "/images/000001.png", folder + "/images/000003.png")
    True
"""

import argparse
import os

import numpy as np

WIDTH, HEIGHT = 178, 218
# CelebA's 40 binary attributes, in list_attr_celeba.txt's order
ATTRIBUTES = (
    "5_o_Clock_Shadow Arched_Eyebrows Attractive Bags_Under_Eyes Bald Bangs Big_Lips Big_Nose "
    "Black_Hair Blond_Hair Blurry Brown_Hair Bushy_Eyebrows Chubby Double_Chin Eyeglasses "
    "Goatee Gray_Hair Heavy_Makeup High_Cheekbones Male Mouth_Slightly_Open Mustache "
    "Narrow_Eyes No_Beard Oval_Face Pale_Skin Pointy_Nose Receding_Hairline Rosy_Cheeks "
    "Sideburns Smiling Straight_Hair Wavy_Hair Wearing_Earrings Wearing_Hat Wearing_Lipstick "
    "Wearing_Necklace Wearing_Necktie Young").split()


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


def write_celeba_attributes(folder: str, count: int, distinct: int = 4, seed: int = 0) -> str:
    """Write ``count`` pictures ``folder/images/000001.png`` ... and their attributes
    ``folder/list_attr_celeba.txt`` (the count, the 40 names, then a line a picture: its file
    name and 40 of ``1`` / ``-1``); return the attribute file's path.  Only the first
    ``distinct`` pictures are drawn; the others are hard links to them in turn (StarGAN keeps
    its last 2,000 pictures for testing, so it needs more names than a test has time to draw).
    """
    images = os.path.join(folder, "images")
    firsts = write_celeba(images, min(distinct, count), seed)
    for i in range(len(firsts) + 1, count + 1):
        os.link(firsts[(i - 1) % len(firsts)], os.path.join(images, "%06d.png" % i))
    rng = np.random.RandomState(seed + 1)
    flags = np.where(rng.uniform(size=(count, len(ATTRIBUTES))) < 0.4, 1, -1)
    path = os.path.join(folder, "list_attr_celeba.txt")
    with open(path, "w") as f:
        f.write("%d\n%s\n" % (count, " ".join(ATTRIBUTES)))
        for i, row in enumerate(flags, 1):
            f.write("%06d.png %s\n" % (i, " ".join("%2d" % v for v in row)))
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder")
    parser.add_argument("--count", type=int, default=4)
    parser.add_argument("--attributes", action="store_true")
    args = parser.parse_args(argv)
    if args.attributes:
        print("wrote", write_celeba_attributes(args.folder, args.count))
    else:
        print("wrote", len(write_celeba(args.folder, args.count)), "pictures into", args.folder)


if __name__ == "__main__":
    main()
