"""Write the fixture of shapes that hold the batch size (``Reshape``, ``Broadcast``), with the
real NNabla 1.39:

    /work/peers/nnabla/bin/python tests/serialize/make_nnp_batch_shapes.py

NNabla builds one network at batch size 2 -- ``y``: a Reshape of ``x`` (2, 3, 4) to (2, 12)
and an Affine; ``z``: the Sum of each sample Reshaped to (2, 1) and Broadcast to (2, 7);
``w``: a Reshape to (2, -1, 2) -- and saves it with ``nnabla.utils.save.save`` (its default
``variable_batch_size=True``), which writes the first size of each of those shapes as ``-1``.
It then runs the file with ``NnpLoader`` at batch sizes 2 and 4 and with
``nnabla.utils.load.load`` at 4.  Files (in ``nnabla_files/``):

* ``batch_shapes.nnp`` -- the network ``network`` (input ``x``, parameters ``fc/affine/W``,
  ``fc/affine/b``) and its executor ``runtime``;
* ``batch_shapes_reference.npz`` -- ``param/<name>`` the parameters, ``b<n>/x`` the input at
  batch size n, ``b<n>/<output>`` what ``NnpLoader`` computed and ``load<n>/<output>`` what
  ``nnabla.utils.load`` computed.
"""

import os

import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
from nnabla.utils.load import load
from nnabla.utils.nnp_graph import NnpLoader
from nnabla.utils.save import save

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "nnabla_files")
PATH = os.path.join(OUT, "batch_shapes.nnp")


def build(x):
    y = PF.affine(F.reshape(x, (2, 12)), 5, name="fc")
    z = F.broadcast(F.reshape(F.sum(x, axis=(1, 2)), (2, 1)), (2, 7))
    w = F.reshape(x, (2, -1, 2))
    return {"y": y, "z": z, "w": w}


def main():
    rng = np.random.RandomState(11)
    nn.clear_parameters()
    x = nn.Variable((2, 3, 4))
    outputs = build(x)
    reference = {}
    for name, p in nn.get_parameters(grad_only=False).items():
        p.d = rng.uniform(-1, 1, p.shape)
        reference["param/" + name] = p.d.copy()
    save(PATH, {"networks": [{"name": "network", "batch_size": 2, "outputs": outputs,
                              "names": {"x": x}}],
                "executors": [{"name": "runtime", "network": "network", "data": ["x"],
                               "output": sorted(outputs)}]})
    for batch in (2, 4):
        xd = rng.randn(batch, 3, 4).astype(np.float32)
        reference["b%d/x" % batch] = xd
        nn.clear_parameters()
        net = NnpLoader(PATH).get_network("network", batch_size=batch)
        net.inputs["x"].d = xd
        nn.forward_all(list(net.outputs.values()))
        for name, v in net.outputs.items():
            reference["b%d/%s" % (batch, name)] = v.d.copy()
            print(batch, name, v.shape)
    nn.clear_parameters()
    info = load([PATH], prepare_data_iterator=False, batch_size=4)
    network = info.networks["network"]
    network.variables["x"].variable_instance.d = reference["b4/x"]
    info.executors["runtime"].forward_target.forward()
    for name in sorted(outputs):
        reference["load4/" + name] = network.variables[name].variable_instance.d.copy()
    np.savez(os.path.join(OUT, "batch_shapes_reference.npz"), **reference)


if __name__ == "__main__":
    main()
