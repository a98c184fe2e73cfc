"""Write the fixture of the NNabla functions whose ``.nnp`` output shape is not the catalog
op's, with the real NNabla 1.39:

    /work/peers/nnabla/bin/python tests/serialize/make_nnp_nnabla_shapes.py

NNabla 1.39's ``GlobalAveragePooling`` gives ``(N, C, 1, 1)`` for an input of any rank and
``KLMultinomial`` gives ``p.shape[:base_axis] + (1,)``; the catalog ops keep the input's rank.
Each case is a network of its own (and an executor of the same name) whose output ``y`` is the
function's output concatenated with itself along its last axis, so a wrong shape shows in the
values too.  Files (in ``nnabla_files/``):

* ``nnabla_shapes.nnp`` -- the networks, inputs ``x0``, ``x1``, no parameters;
* ``nnabla_shapes_reference.npz`` -- ``<case>/x<k>`` the inputs and ``<case>/y`` NNabla's
  output.
"""

import os

import numpy as np

import nnabla as nn
import nnabla.functions as F
from nnabla.utils.save import save

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "nnabla_files")

CASES = [
    ("gap_2d", [(2, 3)], F.global_average_pooling),
    ("gap_3d", [(2, 3, 4)], F.global_average_pooling),
    ("gap_4d", [(2, 3, 4, 5)], F.global_average_pooling),
    ("kl_base1", [(2, 3, 4), (2, 3, 4)], lambda p, q: F.kl_multinomial(p, q, base_axis=1)),
    ("kl_base2", [(2, 3, 4), (2, 3, 4)], lambda p, q: F.kl_multinomial(p, q, base_axis=2)),
]


def main():
    rng = np.random.RandomState(0)
    networks, executors, reference = [], [], {}
    for name, shapes, function in CASES:
        nn.clear_parameters()
        xs = [nn.Variable(s) for s in shapes]
        y = function(*xs)
        out = F.concatenate(y, y, axis=y.ndim - 1)
        for k, x in enumerate(xs):
            x.d = rng.uniform(0.1, 1.1, x.shape).astype(np.float32)
            reference["%s/x%d" % (name, k)] = x.d.copy()
        out.forward()
        reference[name + "/y"] = out.d.copy()
        names = {"x%d" % k: x for k, x in enumerate(xs)}
        networks.append({"name": name, "batch_size": shapes[0][0], "outputs": {"y": out},
                         "names": names})
        executors.append({"name": name, "network": name, "data": sorted(names),
                          "output": ["y"]})
        print(name, y.shape, out.shape)
    save(os.path.join(OUT, "nnabla_shapes.nnp"),
         {"networks": networks, "executors": executors}, variable_batch_size=False)
    np.savez(os.path.join(OUT, "nnabla_shapes_reference.npz"), **reference)


if __name__ == "__main__":
    main()
