"""Write the NNabla-made references of ``test_nnp_ops.py`` with the real NNabla 1.39:

    /work/peers/nnabla/bin/python tests/serialize/make_nnp_op_refs.py [--show CASE ...]

For every case of ``nnp_op_cases.py``, NNabla builds the op with
``nnabla.functions`` on seeded inputs, runs it forward and saves the graph with
``nnabla.utils.save.save`` as one network named after the case.  Files (in ``nnabla_files/``):

* ``ops.nnp`` -- every case's network (inputs ``x0``, ``x1``, ..., outputs ``y0``, ``y1``, ...),
  no parameters;
* ``ops_reference.npz`` -- ``<case>/x<k>`` the inputs and ``<case>/y<k>`` NNabla's outputs.

A case NNabla refuses is reported and left out (the test then says it has no reference).
``--show CASE ...`` builds only the cases named and prints the functions NNabla writes for
them, writing no file.
"""

import os
import sys

import numpy as np

import nnabla as nn
import nnabla.functions as F
from nnabla.utils.save import save

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from nnp_op_cases import CASES  # noqa: E402

OUT = os.path.join(HERE, "nnabla_files")


def draw(rng, shape, kind):
    """One input of ``kind`` (see ``nnp_op_cases.py``)."""
    if kind == "n":
        return rng.randn(*shape)
    if kind == "u":
        return rng.uniform(-0.9, 0.9, shape)
    if kind == "p":
        return rng.uniform(0.5, 2.0, shape)
    if kind == "g":
        return rng.uniform(1.1, 3.0, shape)
    if kind == "b":
        return rng.randint(0, 2, shape)
    if kind.startswith("i"):
        return rng.randint(0, int(kind[1:]), shape)
    if kind == "s":
        return np.sort(rng.randn(*shape), axis=-1)
    if kind == "spd":
        a = rng.randn(*shape)
        return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])
    if kind == "roi":         # rows (b, x1, y1, x2, y2) of boxes inside an 8x8 image
        b = rng.randint(0, 2, shape[:-1] + (1,))
        lo = rng.uniform(0, 3, shape[:-1] + (2,))
        return np.concatenate([b, lo, lo + rng.uniform(1, 4, lo.shape)], axis=-1)
    if kind == "roi4":        # boxes (y1, x1, y2, x2), some overlapping
        lo = rng.uniform(0, 3, shape[:-1] + (2,))
        return np.concatenate([lo, lo + rng.uniform(1, 4, lo.shape)], axis=-1)
    if kind.startswith("w:"):
        return np.full(shape, float(kind[2:]))
    raise ValueError(kind)


def build(name, rng):
    fname, inputs, kwargs = CASES[name][:3]
    if len(CASES[name]) > 3:            # NNabla spells the call otherwise
        fname, kwargs = CASES[name][3]
    xs, args = [], []
    for shape, kind in inputs:
        if kind == "none":
            args.append(None)
            continue
        v = nn.Variable(shape)
        v.d = np.asarray(draw(rng, shape, kind), dtype=np.float32)   # NNabla computes in float32
        xs.append(v)
        args.append(v)
    ys = getattr(F, fname)(*args, **kwargs)
    ys = list(ys) if isinstance(ys, (tuple, list)) else [ys]
    nn.forward_all(ys)
    return xs, ys


def show(names):
    for name in names:
        nn.clear_parameters()
        xs, ys = build(name, np.random.RandomState(sum(map(ord, name))))
        path = os.path.join("/tmp", f"nnp_op_{os.getpid()}.nntxt")
        save(path, {"networks": [{"name": name, "batch_size": 1,
                                  "outputs": {f"y{k}": y for k, y in enumerate(ys)},
                                  "names": {f"x{k}": x for k, x in enumerate(xs)}}]})
        with open(path) as f:
            print(f.read())
        os.remove(path)


def main(names):
    os.makedirs(OUT, exist_ok=True)
    networks, ref = [], {}
    for name in names:
        nn.clear_parameters()
        rng = np.random.RandomState(sum(map(ord, name)))
        try:
            xs, ys = build(name, rng)
        except Exception as exc:  # noqa: BLE001 - report and go on with the others
            print(f"{name}: NNabla refuses it: {type(exc).__name__}: {exc}")
            continue
        for k, x in enumerate(xs):
            ref[f"{name}/x{k}"] = x.d.copy()
        for k, y in enumerate(ys):
            ref[f"{name}/y{k}"] = y.d.copy()
        batch = xs[0].shape[0] if xs and xs[0].shape else 1
        networks.append({"name": name, "batch_size": batch,
                         "outputs": {f"y{k}": y for k, y in enumerate(ys)},
                         "names": {f"x{k}": x for k, x in enumerate(xs)}})
    save(os.path.join(OUT, "ops.nnp"), {"networks": networks}, variable_batch_size=False)
    np.savez_compressed(os.path.join(OUT, "ops_reference.npz"), **ref)
    print(f"wrote {len(networks)} networks of {len(names)} cases")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--show"]:
        show(sys.argv[2:])
    else:
        main(list(CASES))
