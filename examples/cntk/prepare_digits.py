# Writes the data the other programs of this folder read, in CNTK's text format (CTF), the way
# CNTK 103A writes MNIST: one sample per line, "|labels" a one-hot row of 10, "|features" the
# 784 pixels of a 28x28 image in 0..255.
#
# The images are scikit-learn's 1,797 handwritten digits (8x8, 0..16, shipped with
# scikit-learn, no download), scaled to 0..255 and resized to MNIST's 28x28 with bilinear
# interpolation.  A seeded permutation puts 1,497 in the training file and 300 in the test file.
# For the transfer-learning program (301) the same split is written again as two 5-class tasks:
# digits 0-4 (the base task) and digits 5-9 (the new task, labels 0-4 standing for 5-9).
#
#   python prepare_digits.py [--out DIR]      (default: data/Digits beside this file)
#
# Runs on Python 3.6 and later; needs NumPy and scikit-learn (CNTK itself is not needed).
from __future__ import print_function
import argparse
import os

import numpy as np
from sklearn.datasets import load_digits

NUM_TEST = 300
SIDE = 28


def resize_bilinear(images, side):
    """(N, h, w) images to (N, side, side), sampling at pixel centres (edges clamped)."""
    n, h, w = images.shape

    def weights(src, dst):
        pos = np.clip((np.arange(dst) + 0.5) * src / dst - 0.5, 0, src - 1)
        lo = np.floor(pos).astype(int)
        hi = np.minimum(lo + 1, src - 1)
        return lo, hi, pos - lo

    r0, r1, fr = weights(h, side)
    c0, c1, fc = weights(w, side)
    rows = images[:, r0, :] * (1 - fr)[None, :, None] + images[:, r1, :] * fr[None, :, None]
    return rows[:, :, c0] * (1 - fc)[None, None, :] + rows[:, :, c1] * fc[None, None, :]


def save_ctf(path, pixels, labels, num_classes):
    """One line per sample: |labels one-hot |features pixel values."""
    with open(path, "w") as f:
        for image, label in zip(pixels, labels):
            one_hot = ["0"] * num_classes
            one_hot[label] = "1"
            f.write("|labels " + " ".join(one_hot) + " |features " +
                    " ".join(str(v) for v in image) + "\n")
    print("Saved %d samples to %s" % (len(labels), path))


def main():
    parser = argparse.ArgumentParser(description="Writes the digits as CNTK text-format files.")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                      "data", "Digits"))
    args = parser.parse_args()
    if not os.path.isdir(args.out):
        os.makedirs(args.out)

    digits = load_digits()
    images = resize_bilinear(digits.images * (255.0 / 16.0), SIDE)
    pixels = np.clip(np.round(images), 0, 255).astype(np.int64).reshape(len(images), -1)
    order = np.random.RandomState(0).permutation(len(pixels))
    test, train = order[:NUM_TEST], order[NUM_TEST:]

    for name, idx in (("Train", train), ("Test", test)):
        save_ctf(os.path.join(args.out, "%s-28x28_cntk_text.txt" % name),
                 pixels[idx], digits.target[idx], 10)
        for task, low in (("0to4", 0), ("5to9", 5)):
            keep = idx[(digits.target[idx] >= low) & (digits.target[idx] < low + 5)]
            save_ctf(os.path.join(args.out, "%s-%s-28x28_cntk_text.txt" % (name, task)),
                     pixels[keep], digits.target[keep] - low, 5)


if __name__ == "__main__":
    main()
