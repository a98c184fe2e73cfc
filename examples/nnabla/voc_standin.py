"""A small synthetic stand-in for PASCAL VOC 2007's detection data, in the files nnabla-examples'
``object-detection/yolov2`` reads (after darknet's ``voc_label.py``, as its training tutorial
prepares them), and a stand-in for the Darknet19 weights its training starts from.

    python examples/nnabla/voc_standin.py [FOLDER] [--train N] [--test N] [--darknet FILE]

writes under FOLDER (by default ``.``) what the tutorial's steps 1-1 to 1-3 leave there:

* ``VOCdevkit/VOC2007/JPEGImages/<id>.jpg``: the pictures, RGB, stored losslessly (PNG bytes,
  which PIL and YOLO's ``get_image_size`` recognise by their content);
* ``VOCdevkit/VOC2007/Annotations/<id>.xml``: VOC's annotation of each picture (its size and
  objects: class name, ``bndbox`` in 1-based pixels);
* ``VOCdevkit/VOC2007/labels/<id>.txt``: one ``class cx cy w h`` line an object, the box
  relative to the picture's size, as ``voc_label.py`` converts the annotation;
* ``2007_train.txt`` and ``2007_test.txt``: the pictures' absolute paths, one a line.

Each picture (96 x 80 pixels) is a noisy background with one to three filled rectangles and
ellipses, each object of one of VOC's 20 classes in its own colour.  With ``--darknet FILE``
it also writes a stand-in for ``darknet19_448.conv.23`` (Darknet's weights file: a header of
version 0.2.0 and ``seen``, then the 18 convolutions' float32 batch-normalisation biases,
scales, means, variances and kernels, in Darknet's order) with random values, which the
program's ``convert_darknet19_448_conv_23_weights_to_nnabla.py`` turns into NNabla's ``.h5``.
The same seed gives the same bytes on every machine.

Example:
    >>> import tempfile
    >>> root = tempfile.mkdtemp()
    >>> write_voc(root, n_train=2, n_test=1)
    >>> open(os.path.join(root, "2007_train.txt")).read().count("\\n")
    2
    >>> sorted(os.listdir(os.path.join(root, "VOCdevkit", "VOC2007")))
    ['Annotations', 'JPEGImages', 'labels']
"""

import argparse
import os
import struct

import numpy as np
from PIL import Image, ImageDraw

WIDTH, HEIGHT = 96, 80
CLASSES = ("aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair",
           "cow", "diningtable", "dog", "horse", "motorbike", "person", "pottedplant", "sheep",
           "sofa", "train", "tvmonitor")
_COLOURS = np.random.RandomState(7).randint(0, 256, (len(CLASSES), 3))
# Darknet19's 18 convolutions before its classifier: (filters, kernel size), input 3 channels
DARKNET19 = ((32, 3), (64, 3), (128, 3), (64, 1), (128, 3), (256, 3), (128, 1), (256, 3),
             (512, 3), (256, 1), (512, 3), (256, 1), (512, 3), (1024, 3), (512, 1), (1024, 3),
             (512, 1), (1024, 3))


def picture(rng: np.random.RandomState):
    """``(image, [(class, xmin, ymin, xmax, ymax) 1-based pixels ...])`` of one picture."""
    background = rng.randint(60, 200, 3) + rng.normal(0, 10, (HEIGHT, WIDTH, 3))
    image = Image.fromarray(np.clip(background, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(image)
    objects = []
    for _ in range(rng.randint(1, 4)):
        cls = int(rng.randint(len(CLASSES)))
        w, h = rng.randint(16, 56), rng.randint(14, 48)
        x0, y0 = rng.randint(0, WIDTH - w), rng.randint(0, HEIGHT - h)
        shape = draw.rectangle if rng.rand() < 0.5 else draw.ellipse
        shape([x0, y0, x0 + w - 1, y0 + h - 1], fill=tuple(int(c) for c in _COLOURS[cls]))
        objects.append((cls, x0 + 1, y0 + 1, x0 + w, y0 + h))
    return image, objects


def annotation(name: str, objects) -> str:
    """VOC's XML annotation of a picture."""
    parts = [f"<annotation><folder>VOC2007</folder><filename>{name}.jpg</filename>"
             f"<size><width>{WIDTH}</width><height>{HEIGHT}</height><depth>3</depth></size>"
             "<segmented>0</segmented>"]
    for cls, x0, y0, x1, y1 in objects:
        parts.append(f"<object><name>{CLASSES[cls]}</name><pose>Unspecified</pose>"
                     "<truncated>0</truncated><difficult>0</difficult>"
                     f"<bndbox><xmin>{x0}</xmin><ymin>{y0}</ymin><xmax>{x1}</xmax>"
                     f"<ymax>{y1}</ymax></bndbox></object>")
    return "".join(parts) + "</annotation>\n"


def yolo_label(objects) -> str:
    """``voc_label.py``'s lines: class, centre and size relative to the picture."""
    lines = []
    for cls, x0, y0, x1, y1 in objects:
        cx, cy = (x0 + x1) / 2.0 - 1, (y0 + y1) / 2.0 - 1
        lines.append(f"{cls} {cx / WIDTH} {cy / HEIGHT} {(x1 - x0) / WIDTH} "
                     f"{(y1 - y0) / HEIGHT}")
    return "\n".join(lines) + "\n"


def write_voc(root: str, n_train: int = 4, n_test: int = 2, seed: int = 0) -> None:
    """Write ``n_train`` + ``n_test`` pictures of VOC 2007 under ``root`` and the two lists."""
    rng = np.random.RandomState(seed)
    base = os.path.join(os.path.abspath(root), "VOCdevkit", "VOC2007")
    for sub in ("JPEGImages", "Annotations", "labels"):
        os.makedirs(os.path.join(base, sub), exist_ok=True)
    number = 0
    for split, n in (("train", n_train), ("test", n_test)):
        paths = []
        for _ in range(n):
            name = f"{number:06d}"
            number += 1
            image, objects = picture(rng)
            path = os.path.join(base, "JPEGImages", name + ".jpg")
            image.save(path, format="PNG")
            with open(os.path.join(base, "Annotations", name + ".xml"), "w") as f:
                f.write(annotation(name, objects))
            with open(os.path.join(base, "labels", name + ".txt"), "w") as f:
                f.write(yolo_label(objects))
            paths.append(path)
        with open(os.path.join(root, f"2007_{split}.txt"), "w") as f:
            f.write("".join(p + "\n" for p in paths))


def write_darknet19_weights(path: str, seed: int = 1) -> None:
    """A ``darknet19_448.conv.23`` stand-in: Darknet's header, then per convolution its
    batch-normalisation biases, scales, rolling means and variances and its kernel (filters x
    inputs x k x k, He-normal), float32."""
    rng = np.random.RandomState(seed)
    with open(path, "wb") as f:
        f.write(struct.pack("<iii", 0, 2, 0) + struct.pack("<Q", 0))
        inputs = 3
        for filters, k in DARKNET19:
            parts = [rng.normal(0, 0.1, filters), rng.uniform(0.8, 1.2, filters),
                     rng.normal(0, 0.1, filters), rng.uniform(0.5, 1.5, filters),
                     rng.normal(0, np.sqrt(2.0 / (inputs * k * k)), filters * inputs * k * k)]
            f.write(np.concatenate(parts).astype("<f4").tobytes())
            inputs = filters


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder", nargs="?", default=".")
    p.add_argument("--train", type=int, default=4)
    p.add_argument("--test", type=int, default=2)
    p.add_argument("--darknet", default=None, help="also write this Darknet19 weights file")
    args = p.parse_args(argv)
    write_voc(args.folder, args.train, args.test)
    if args.darknet:
        write_darknet19_weights(args.darknet)


if __name__ == "__main__":
    main()
