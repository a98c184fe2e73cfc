"""A small synthetic stand-in for ShapeNet-part (``shapenetcore_partanno_segmentation_benchmark_v0
_normal``, the part-segmentation data PointNet++'s authors publish), in the files nnabla-examples'
``3d-object-part-segmentation/pointnet2`` (its ``neu.datasets.shapenet_partanno_segmentation``)
reads, for running it without a network.

    python examples/nnabla/shapenet_part_standin.py [FOLDER] [--train N] [--val N] [--test N]

writes under FOLDER (by default ``data/shapenetcore_partanno_segmentation_benchmark_v0_normal``,
the program's default ``--data_dir`` seen from its folder):

* ``synsetoffset2category.txt``: the 16 categories and their ShapeNet synset folders, one
  ``<name>\\t<synset>`` line each, in the data's order (a category's line number is its class);
* ``<synset>/<token>.txt``: one shape, one ``x y z nx ny nz part`` line a point (the part a
  number of the 50 parts of all categories: Airplane 0-3, ..., Laptop 28-29, Mug 36-37, ...);
* ``train_test_split/shuffled_{train,val,test}_file_list.json``: the shapes of each split, as
  ``"shape_data/<synset>/<token>"``.

The shapes are of three categories, each sampled on its parts' surfaces with their normals:
mugs (a cylinder, part 36, and a ring for the handle, 37), laptops (a base plate, 28, and a
tilted screen, 29) and airplanes (a body, 0, wings, 1, a tail fin, 2, two engines, 3), at random
sizes; the other categories' folders are empty.  The same seed gives the same bytes on every
machine.

Example:
    >>> import tempfile
    >>> root = tempfile.mkdtemp()
    >>> write_shapenet_part(root, n_train=2, n_val=1, n_test=2, n_points=50)
    >>> open(os.path.join(root, "synsetoffset2category.txt")).readline().split()
    ['Airplane', '02691156']
    >>> len(json.load(open(os.path.join(root, "train_test_split",
    ...                                  "shuffled_test_file_list.json"))))
    2
"""

import argparse
import json
import os

import numpy as np

CATEGORIES = (("Airplane", "02691156"), ("Bag", "02773838"), ("Cap", "02954340"),
              ("Car", "02958343"), ("Chair", "03001627"), ("Earphone", "03261776"),
              ("Guitar", "03467517"), ("Knife", "03624134"), ("Lamp", "03636649"),
              ("Laptop", "03642806"), ("Motorbike", "03790512"), ("Mug", "03797390"),
              ("Pistol", "03948459"), ("Rocket", "04099429"), ("Skateboard", "04225987"),
              ("Table", "04379243"))


def _box(rng, n, centre, size):
    """``n`` points on a box's surface and their outward normals."""
    axis = rng.randint(3, size=n)
    sign = rng.choice([-1.0, 1.0], size=n)
    u = rng.uniform(-0.5, 0.5, (n, 3))
    u[np.arange(n), axis] = 0.5 * sign
    normals = np.zeros((n, 3))
    normals[np.arange(n), axis] = sign
    return centre + u * size, normals


def _cylinder(rng, n, centre, radius, height, axis=1):
    """``n`` points on a cylinder's side along ``axis`` and their normals."""
    angle = rng.uniform(0, 2 * np.pi, n)
    ring = np.stack([np.cos(angle), np.sin(angle)], 1)
    along = rng.uniform(-height / 2, height / 2, n)
    others = [a for a in range(3) if a != axis]
    points, normals = np.zeros((n, 3)), np.zeros((n, 3))
    points[:, others] = radius * ring
    normals[:, others] = ring
    points[:, axis] = along
    return centre + points, normals


def _ring(rng, n, centre, radius, tube):
    """``n`` points on a torus in the x-y plane and their normals."""
    a, b = rng.uniform(0, 2 * np.pi, n), rng.uniform(0, 2 * np.pi, n)
    direction = np.stack([np.cos(a), np.sin(a), np.zeros(n)], 1)
    normals = direction * np.cos(b)[:, None] + np.array([0, 0, 1.0]) * np.sin(b)[:, None]
    return centre + radius * direction + tube * normals, normals


def shape(category: str, rng: np.random.RandomState, n_points: int) -> np.ndarray:
    """``(n_points, 7)``: x, y, z, normal, part of one shape of ``category``."""
    s = rng.uniform(0.8, 1.2)
    if category == "Mug":
        parts = [(36, _cylinder(rng, n_points * 3 // 4, np.zeros(3), 0.3 * s, 0.8 * s)),
                 (37, _ring(rng, n_points - n_points * 3 // 4, np.array([0.42 * s, 0, 0]),
                            0.15 * s, 0.04))]
    elif category == "Laptop":
        half = n_points // 2
        tilt = rng.uniform(0.2, 0.5)
        screen, normals = _box(rng, n_points - half, np.zeros(3), np.array([1.0, 0.7, 0.03]) * s)
        c, si = np.cos(tilt), np.sin(tilt)
        turn = np.array([[1, 0, 0], [0, c, -si], [0, si, c]])
        parts = [(28, _box(rng, half, np.zeros(3), np.array([1.0, 0.03, 0.7]) * s)),
                 (29, (screen @ turn.T + np.array([0, 0.35, -0.35]) * s, normals @ turn.T))]
    else:                                                     # Airplane
        quarter = n_points // 4
        parts = [(0, _cylinder(rng, quarter, np.zeros(3), 0.08 * s, 1.2 * s, axis=0)),
                 (1, _box(rng, quarter, np.zeros(3), np.array([0.3, 0.02, 1.4]) * s)),
                 (2, _box(rng, quarter, np.array([-0.55, 0.15, 0]) * s,
                          np.array([0.15, 0.3, 0.02]) * s)),
                 (3, _cylinder(rng, n_points - 3 * quarter,
                               np.array([0.1, -0.08, 0.35 * rng.choice([-1, 1])]) * s,
                               0.05 * s, 0.25 * s, axis=0))]
    rows = [np.concatenate([p, nrm, np.full((len(p), 1), label)], 1)
            for label, (p, nrm) in parts]
    return np.concatenate(rows, 0)


def write_shapenet_part(root: str, n_train: int = 4, n_val: int = 0, n_test: int = 6,
                        n_points: int = 256, seed: int = 0) -> None:
    """Write ``n_train``, ``n_val`` and ``n_test`` shapes (mugs, laptops and airplanes in
    turn) under ``root``, with the category list and the three split lists."""
    rng = np.random.RandomState(seed)
    os.makedirs(os.path.join(root, "train_test_split"), exist_ok=True)
    with open(os.path.join(root, "synsetoffset2category.txt"), "w") as f:
        f.write("".join(f"{name}\t{synset}\n" for name, synset in CATEGORIES))
    for _, synset in CATEGORIES:
        os.makedirs(os.path.join(root, synset), exist_ok=True)
    synsets = dict(CATEGORIES)
    number = 0
    for split, n in (("train", n_train), ("val", n_val), ("test", n_test)):
        listed = []
        for _ in range(n):
            category = ("Mug", "Laptop", "Airplane")[number % 3]
            token = f"{rng.randint(16 ** 8):08x}{number:04d}"
            number += 1
            rows = shape(category, rng, n_points)
            np.savetxt(os.path.join(root, synsets[category], token + ".txt"), rows,
                       fmt="%.6f")
            listed.append(f"shape_data/{synsets[category]}/{token}")
        with open(os.path.join(root, "train_test_split", f"shuffled_{split}_file_list.json"),
                  "w") as f:
            json.dump(listed, f)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder", nargs="?",
                   default="data/shapenetcore_partanno_segmentation_benchmark_v0_normal")
    p.add_argument("--train", type=int, default=4)
    p.add_argument("--val", type=int, default=0)
    p.add_argument("--test", type=int, default=6)
    p.add_argument("--points", type=int, default=256)
    args = p.parse_args(argv)
    write_shapenet_part(args.folder, args.train, args.val, args.test, args.points)


if __name__ == "__main__":
    main()
