"""Write the NNabla parameter files ``test_nnabla_h5.py`` reads, with the real NNabla 1.39:

    /work/peers/nnabla/bin/python tests/serialize/make_nnabla_files.py

Files (in ``nnabla_files/``):

* ``small_cnn.h5`` -- ``nnabla.save_parameters`` of a small CNN built with NNabla's parametric
  functions (the scopes of ``stadyn.models.digits_cnn``: ``cnn/conv1``, ``cnn/conv2`` (conv 3x3
  pad 1 + batch norm + tanh), ``cnn/fc`` (affine + tanh), ``cnn/classifier`` (affine)) after two
  Adam steps on seeded data, so the batch-norm running statistics are not their initial values.
* ``small_cnn.nnp`` -- the same network saved by ``nnabla.utils.save.save`` (its
  ``parameter.h5`` inside the archive).
* ``small_cnn_reference.npz`` -- what NNabla holds: ``param/<name>`` (values), the names in
  ``nn.get_parameters(grad_only=False)`` order (``names``), their ``need_grad`` flags
  (``need_grad``), a seeded input ``x`` and NNabla's inference output ``y`` (batch_stat=False).
"""

import os

import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S
from nnabla.utils.save import save

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "nnabla_files")


def small_cnn(x, test):
    def block(h, maps):
        return F.tanh(PF.batch_normalization(PF.convolution(h, maps, (3, 3), pad=(1, 1)),
                                             batch_stat=not test))

    with nn.parameter_scope("cnn"):
        with nn.parameter_scope("conv1"):
            h = block(x, 4)
        with nn.parameter_scope("conv2"):
            h = block(h, 6)
            h = F.average_pooling(h, (2, 2))
        with nn.parameter_scope("fc"):
            h = F.tanh(PF.affine(h, 16))
        with nn.parameter_scope("classifier"):
            h = PF.affine(h, 10)
    return h


def main():
    os.makedirs(OUT, exist_ok=True)
    nn.clear_parameters()
    nn.seed(0)
    rng = np.random.RandomState(0)
    x = nn.Variable((8, 1, 8, 8))
    t = nn.Variable((8, 1))
    loss = F.mean(F.softmax_cross_entropy(small_cnn(x, test=False), t))
    solver = S.Adam(0.01)
    solver.set_parameters(nn.get_parameters())
    for _ in range(2):
        x.d = rng.randn(*x.shape)
        t.d = rng.randint(0, 10, size=t.shape)
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.update()
    nn.save_parameters(os.path.join(OUT, "small_cnn.h5"))

    xt = nn.Variable((3, 1, 8, 8))
    yt = small_cnn(xt, test=True)
    xt.d = rng.randn(*xt.shape)
    yt.forward()
    params = nn.get_parameters(grad_only=False)
    ref = {"param/" + k: v.d.copy() for k, v in params.items()}
    ref["names"] = np.array(list(params))
    ref["need_grad"] = np.array([v.need_grad for v in params.values()])
    ref["x"] = xt.d.copy()
    ref["y"] = yt.d.copy()
    np.savez_compressed(os.path.join(OUT, "small_cnn_reference.npz"), **ref)

    contents = {
        "networks": [{"name": "runtime", "batch_size": 3, "outputs": {"y": yt},
                      "names": {"x": xt}}],
        "executors": [{"name": "runtime", "network": "runtime", "data": ["x"],
                       "output": ["y"]}],
    }
    save(os.path.join(OUT, "small_cnn.nnp"), contents)
    print("wrote", sorted(os.listdir(OUT)))


if __name__ == "__main__":
    main()
