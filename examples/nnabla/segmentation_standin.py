"""A small synthetic stand-in for the PASCAL VOC segmentation data as nnabla-examples'
``semantic-segmentation/deeplabv3plus`` reads it, for running its ``train.py`` without the
data set.

    python examples/nnabla/segmentation_standin.py [FOLDER] [--train N] [--val N] [--classes C]

writes under FOLDER (by default ``datasets/voc_standin``) the pictures ``images/<name>.jpg``
(RGB, 80 x 72 pixels; stored losslessly, as PNG bytes, which OpenCV reads by their content),
their labels ``labels/<name>.npy`` (int32 class numbers ``0 .. C-1``, and 255 on a border
band, VOC's "ignore" value) and the four path lists the program takes: ``train_images.txt``,
``train_labels.txt``, ``val_images.txt``, ``val_labels.txt`` (one absolute path a line, as
the program's ``image_preprocess.py`` lists write them).  Each picture is a background (class
0) with a few rectangles of the other classes, each class its own colour with a little noise.
The same seed gives the same bytes on every machine.

Example:
    >>> import tempfile
    >>> root = tempfile.mkdtemp()
    >>> lists = write_segmentation(root, n_train=1, n_val=1, classes=3)
    >>> sorted(lists), open(lists["train_labels"]).read().count("\\n")
    (['train_images', 'train_labels', 'val_images', 'val_labels'], 1)
"""

import argparse
import os

import numpy as np
from PIL import Image

WIDTH, HEIGHT = 80, 72


def labels(classes: int, rng: np.random.RandomState) -> np.ndarray:
    """``(HEIGHT, WIDTH)`` int32 class numbers, 255 on a 3-pixel band at the bottom."""
    lab = np.zeros((HEIGHT, WIDTH), np.int32)
    for _ in range(4):
        y, x = rng.randint(0, HEIGHT - 16), rng.randint(0, WIDTH - 16)
        lab[y:y + rng.randint(8, 30), x:x + rng.randint(8, 30)] = rng.randint(1, classes)
    lab[HEIGHT - 3:] = 255
    return lab


def picture(lab: np.ndarray, colours: np.ndarray, rng: np.random.RandomState) -> np.ndarray:
    """``(HEIGHT, WIDTH, 3)`` uint8: each class in its colour, with noise."""
    image = colours[np.minimum(lab, len(colours) - 1)] + rng.normal(0, 12, lab.shape + (3,))
    return np.clip(image, 0, 255).astype(np.uint8)


def write_segmentation(root: str, n_train: int = 2, n_val: int = 1, classes: int = 3,
                       seed: int = 0) -> dict:
    """Write ``n_train`` and ``n_val`` pictures with their labels and lists under ``root``;
    returns ``{list name: path}``."""
    rng = np.random.RandomState(seed)
    colours = rng.randint(0, 256, (classes + 1, 3))
    for sub in ("images", "labels"):
        os.makedirs(os.path.join(root, sub), exist_ok=True)
    lists, number = {}, 0
    for split, n in (("train", n_train), ("val", n_val)):
        images, labs = [], []
        for _ in range(n):
            name = f"{split}{number:04d}"
            lab = labels(classes, rng)
            images.append(os.path.join(os.path.abspath(root), "images", name + ".jpg"))
            labs.append(os.path.join(os.path.abspath(root), "labels", name + ".npy"))
            Image.fromarray(picture(lab, colours, rng)).save(images[-1], format="PNG")
            np.save(labs[-1], lab)
            number += 1
        for kind, paths in (("images", images), ("labels", labs)):
            lists[f"{split}_{kind}"] = os.path.join(root, f"{split}_{kind}.txt")
            with open(lists[f"{split}_{kind}"], "w") as f:
                f.write("".join(p + "\n" for p in paths))
    return lists


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", default=os.path.join("datasets", "voc_standin"))
    parser.add_argument("--train", type=int, default=2)
    parser.add_argument("--val", type=int, default=1)
    parser.add_argument("--classes", type=int, default=3)
    args = parser.parse_args(argv)
    write_segmentation(args.folder, args.train, args.val, args.classes)


if __name__ == "__main__":
    main()
