"""Write the fixture of where NNabla 1.39's own ``save`` writes the batch axis as ``-1``, with
the real NNabla 1.39:

    /work/peers/nnabla/bin/python tests/serialize/make_nnp_nnabla_batch_dims.py

Each network of ``NETWORKS`` (built by NNabla at batch size 2, its input ``x``) is saved with
``nnabla.utils.save.save`` (``variable_batch_size=True``, which runs
``nnabla/core/variable_batch_size.py``); the fixture holds, for every variable of the written
``network`` message, its written dims, and for every Reshape/Broadcast its written ``shape``.
File (in ``nnabla_files/``): ``nnabla_batch_dims.json`` -- ``{network: {"variables":
{name: dims}, "shapes": [[type, shape], ...], "batch_size": n}}``.
"""

import json
import os
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "nnabla_files", "nnabla_batch_dims.json")


def _mlp(nn, F, PF, x):
    return PF.affine(F.relu(PF.affine(x, 4, name="l1")), 2, name="l2")


def _cnn(nn, F, PF, x):
    h = F.max_pooling(F.relu(PF.convolution(x, 2, (3, 3), name="c")), (2, 2))
    return PF.affine(h, 3, name="a")


def _sum_broadcast(nn, F, PF, x):
    return F.mul2(F.broadcast(F.sum(x, 1, True), (2, 3)), x)


def _add_parameter(nn, F, PF, x):
    w = nn.parameter.get_parameter_or_create("W", (2, 3))
    return PF.affine(F.add2(w, x), 2, name="a")


def _reshape(nn, F, PF, x):
    return PF.affine(F.reshape(F.tanh(x), (2, 3, 2)), 2, name="a")


# name -> (input shape, build(nn, F, PF, x)); test_nnp_nnabla_batch_dims.py builds the same
# networks with stadyn.compat.nnabla
NETWORKS = {
    "mlp": ((2, 3), _mlp),
    "cnn": ((2, 1, 6, 6), _cnn),
    "sum_broadcast": ((2, 3), _sum_broadcast),
    "add_parameter": ((2, 3), _add_parameter),
    "reshape": ((2, 6), _reshape),
}


def written(path):
    import google.protobuf.text_format as text_format
    from nnabla.utils import nnabla_pb2

    proto = nnabla_pb2.NNablaProtoBuf()
    text_format.Merge(zipfile.ZipFile(path).read("network.nntxt").decode(), proto)
    net = proto.network[0]
    shapes = []
    for f in net.function:
        if f.type in ("Reshape", "Broadcast"):
            param = f.reshape_param if f.type == "Reshape" else f.broadcast_param
            shapes.append([f.type, list(param.shape.dim)])
    return {"variables": {v.name: list(v.shape.dim) for v in net.variable},
            "shapes": shapes, "batch_size": net.batch_size}


def main():
    import nnabla as nn
    import nnabla.functions as F
    import nnabla.parametric_functions as PF
    from nnabla.utils.save import save

    out = {}
    tmp = tempfile.mkdtemp()
    for name, (shape, build) in NETWORKS.items():
        nn.clear_parameters()
        x = nn.Variable(shape)
        y = build(nn, F, PF, x)
        path = os.path.join(tmp, name + ".nnp")
        save(path, {"networks": [{"name": "network", "batch_size": shape[0],
                                  "outputs": {"y": y}, "names": {"x": x}}],
                    "executors": [{"name": "runtime", "network": "network", "data": ["x"],
                                   "output": ["y"]}]})
        out[name] = written(path)
        print(name, out[name])
    with open(OUT, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
