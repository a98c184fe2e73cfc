"""Write the fixture of NNabla's batch placeholder (``-1``) in the first size of a ``Reshape``
and a ``Broadcast``, with the real NNabla 1.39:

    /work/peers/nnabla/bin/python tests/serialize/make_nnp_batch_placeholder.py

NNabla builds one network at batch size 2 from ``x`` (2, 2) -- ``y``: ``x`` transposed and
Reshaped to (2, 2, 1); ``m``: the mean over the batch Broadcast to (2, 2); ``a``: an Affine --
and saves it with ``nnabla.utils.save.save``.  The Affine (a function with a ``base_axis``) makes
NNabla's ``variable_batch_size`` write every first size 2 as ``-1``: the Reshape's (-1, 2, 1)
and the Broadcast's (-1, 2).  NNabla's ``NnpLoader`` then puts the batch size it builds the
network with in their place: at batch size 4, ``y`` is the (2, 4) transpose reshaped to
(4, 2, 1) and ``m`` the mean broadcast to (4, 2).  Files (in ``nnabla_files/``):

* ``batch_placeholder.nnp`` -- the network ``network`` (input ``x``, parameters
  ``fc/affine/W``, ``fc/affine/b``);
* ``batch_placeholder_reference.npz`` -- ``nntxt`` the network text, ``x`` the input at batch
  size 4 and ``y``, ``m``, ``a`` what ``NnpLoader`` computed from it.
"""

import os
import zipfile

import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
from nnabla.utils.nnp_graph import NnpLoader
from nnabla.utils.save import save

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "nnabla_files")
PATH = os.path.join(OUT, "batch_placeholder.nnp")


def main():
    rng = np.random.RandomState(5)
    nn.clear_parameters()
    x = nn.Variable((2, 2))
    outputs = {"y": F.reshape(F.transpose(x, (1, 0)), (2, 2, 1)),
               "m": F.broadcast(F.mean(x, axis=0, keepdims=True), (2, 2)),
               "a": PF.affine(x, 3, name="fc")}
    for p in nn.get_parameters(grad_only=False).values():
        p.d = rng.uniform(-1, 1, p.shape)
    save(PATH, {"networks": [{"name": "network", "batch_size": 2, "outputs": outputs,
                              "names": {"x": x}}],
                "executors": [{"name": "runtime", "network": "network", "data": ["x"],
                               "output": sorted(outputs)}]})
    reference = {"nntxt": np.array(zipfile.ZipFile(PATH).read("network.nntxt").decode()),
                 "x": rng.randn(4, 2).astype(np.float32)}
    nn.clear_parameters()
    net = NnpLoader(PATH).get_network("network", batch_size=4)
    net.inputs["x"].d = reference["x"]
    nn.forward_all(list(net.outputs.values()))
    for name, v in net.outputs.items():
        reference[name] = v.d.copy()
        print(name, v.shape)
    np.savez(os.path.join(OUT, "batch_placeholder_reference.npz"), **reference)


if __name__ == "__main__":
    main()
