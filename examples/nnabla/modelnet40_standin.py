"""A small synthetic stand-in for ModelNet40 (its "normal resampled" release), in the files
nnabla-examples' ``3d-object-classification`` programs read, for running them without a
network.

    python examples/nnabla/modelnet40_standin.py [FOLDER] [--train N] [--test N] [--points N]

writes, under FOLDER (by default ``data/modelnet40_normal_resampled``, the programs'
``--data_dir``), what ``utils/neu/datasets/modelnet40_normal_resampled.py`` reads:
``modelnet40_shape_names.txt`` (one class a line), ``modelnet40_train.txt`` and
``modelnet40_test.txt`` (one shape a line, ``<class>_<4 digits>``) and each shape's points,
``<class>/<class>_<4 digits>.txt``: one point a line, ``x,y,z,nx,ny,nz`` (position and unit
normal, comma-separated).

The classes are four simple solids (a sphere, a cube, a cylinder, a cone) at random sizes and
turns, their points drawn on the surface with a little noise; shapes alternate between the
classes, so the first ``4 k`` shapes of a split hold ``k`` of each.  The same seed gives the
same bytes on every machine.

Example:
    >>> import tempfile
    >>> root = tempfile.mkdtemp()
    >>> write_modelnet40(root, n_train=4, n_test=4, n_points=16)
    >>> open(root + "/modelnet40_train.txt").read().split()
    ['sphere_0001', 'cube_0001', 'cylinder_0001', 'cone_0001']
    >>> np.loadtxt(root + "/cube/cube_0001.txt", delimiter=",").shape
    (16, 6)
"""

import argparse
import os

import numpy as np

CLASSES = ("sphere", "cube", "cylinder", "cone")


def _rotation(rng: np.random.RandomState) -> np.ndarray:
    """A random 3 x 3 rotation (the Q of a Gaussian matrix's QR, signs fixed)."""
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    return q if np.linalg.det(q) > 0 else -q


def _surface(kind: str, n: int, rng: np.random.RandomState):
    """``(points, normals)``, each ``(n, 3)``, on the unit solid ``kind``."""
    if kind == "sphere":
        p = rng.normal(size=(n, 3))
        p /= np.linalg.norm(p, axis=1, keepdims=True)
        return p, p.copy()
    if kind == "cube":
        axis, side = rng.randint(0, 3, n), rng.choice([-1.0, 1.0], n)
        p = rng.uniform(-1, 1, (n, 3))
        p[np.arange(n), axis] = side
        normal = np.zeros((n, 3))
        normal[np.arange(n), axis] = side
        return p, normal
    angle = rng.uniform(0, 2 * np.pi, n)
    z = rng.uniform(-1, 1, n)
    radius = 1.0 if kind == "cylinder" else (1 - z) / 2      # the cone's apex at z = 1
    p = np.stack([radius * np.cos(angle), radius * np.sin(angle), z], axis=1)
    slope = 0.0 if kind == "cylinder" else 0.5
    normal = np.stack([np.cos(angle), np.sin(angle), np.full(n, slope)], axis=1)
    return p, normal / np.linalg.norm(normal, axis=1, keepdims=True)


def shape(kind: str, n_points: int, rng: np.random.RandomState) -> np.ndarray:
    """``(n_points, 6)`` float32: a ``kind`` solid's surface points and normals, scaled by
    0.5 to 2, turned at random and moved a little."""
    p, normal = _surface(kind, n_points, rng)
    turn = _rotation(rng)
    p = (p * rng.uniform(0.5, 2.0) + rng.normal(0, 0.02, p.shape)) @ turn.T + rng.normal(0, 0.3, 3)
    return np.concatenate([p, normal @ turn.T], axis=1).astype(np.float32)


def write_modelnet40(root: str, n_train: int = 20, n_test: int = 8, n_points: int = 64,
                     seed: int = 0) -> None:
    """Write ``n_train`` training and ``n_test`` test shapes of ``n_points`` points under
    ``root``, the classes in turn."""
    rng = np.random.RandomState(seed)
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "modelnet40_shape_names.txt"), "w") as f:
        f.write("".join(name + "\n" for name in CLASSES))
    counts = dict.fromkeys(CLASSES, 0)
    for split, n in (("train", n_train), ("test", n_test)):
        names = []
        for i in range(n):
            kind = CLASSES[i % len(CLASSES)]
            counts[kind] += 1
            name = f"{kind}_{counts[kind]:04d}"
            os.makedirs(os.path.join(root, kind), exist_ok=True)
            np.savetxt(os.path.join(root, kind, name + ".txt"), shape(kind, n_points, rng),
                       fmt="%.6f", delimiter=",")
            names.append(name)
        with open(os.path.join(root, f"modelnet40_{split}.txt"), "w") as f:
            f.write("".join(name + "\n" for name in names))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", default=os.path.join("data",
                                                                 "modelnet40_normal_resampled"))
    parser.add_argument("--train", type=int, default=20)
    parser.add_argument("--test", type=int, default=8)
    parser.add_argument("--points", type=int, default=64)
    args = parser.parse_args(argv)
    write_modelnet40(args.folder, args.train, args.test, args.points)


if __name__ == "__main__":
    main()
