"""NNabla 1.39's ``Variable.function_references`` of a Variable a loaded network was given as
its input (``NnpNetworkPass.set_variable``: NNabla rewires the network's input onto it, so the
network's first functions read it), a leaf and an op's output; and of the network's own
Variables.  What is compared: the type names of the functions listed.
"""

import os

from compat_harness import nnabla_case

_NNTXT = "\n".join([
    'network { name: "net" batch_size: 2',
    ' variable { name: "x" type: "Buffer" shape { dim: -1 dim: 3 } }',
    ' variable { name: "h" type: "Buffer" shape { dim: -1 dim: 3 } }',
    ' variable { name: "s" type: "Buffer" shape { dim: -1 dim: 3 } }',
    ' variable { name: "y" type: "Buffer" shape { dim: -1 dim: 3 } }',
    ' function { name: "Relu" type: "ReLU" input: "x" output: "h" }',
    ' function { name: "Sig" type: "Sigmoid" input: "x" output: "s" }',
    ' function { name: "Add" type: "Add2" input: "h" input: "s" output: "y" }',
    '}', ""])


@nnabla_case(names=["nnabla.Variable.function_references",
                    "nnabla.utils.nnp_graph.NnpNetworkPass.set_variable"],
             note="the network's two readers of x are listed in the order NNabla's hash map "
                  "gives two: the newest first")
def variable__function_references_of_a_fed_input(nn, F, r):
    NG = r.module("nnabla.utils.nnp_graph")
    r.touch("nnabla.Variable.function_references",
            "nnabla.utils.nnp_graph.NnpNetworkPass.set_variable")

    def names(v):
        return [f.info.type_name for f in v.function_references]

    res = {}
    with r.tempdir() as folder:
        path = os.path.join(folder, "net.nntxt")
        with open(path, "w") as f:
            f.write(_NNTXT)
        for kind in ("leaf", "output"):
            z = nn.Variable.from_numpy_array(r.randn(2, 3))
            fed = z if kind == "leaf" else F.tanh(z)
            p = NG.NnpNetworkPass(0)
            p.set_variable("x", fed)
            net = NG.NnpLoader(path).get_network("net", batch_size=2, callback=p)
            res[kind + " fed"] = names(fed)
            res[kind + " z"] = names(z)
            y = net.outputs["y"]
            res[kind + " y"] = names(y)
            res[kind + " readers of the ReLU's output"] = names(y.parent.inputs[0])
            y.forward()
            res[kind + " value"] = y.d.copy()
    return res
