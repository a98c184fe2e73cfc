"""Run an .nnp file in the real NNabla 1.39 (called by test_nnp_export.py in NNabla's venv):

    /work/peers/nnabla/bin/python nnabla_run_nnp.py FILE.nnp NETWORK INPUTS.npz OUTPUTS.npz [NAMES]

Loads FILE with ``nnabla.utils.nnp_graph.NnpLoader``, builds NETWORK at the inputs' batch size,
sets each input from INPUTS.npz, runs forward and writes every output (and the variables
named in the comma-separated NAMES, which other functions may read) to OUTPUTS.npz; also
checks ``nnabla.utils.load.load`` reads the file (executors, optimizers, datasets, monitors)
and writes what it reports to OUTPUTS.npz as ``info/...`` strings.
"""

import sys

import numpy as np

import nnabla as nn
from nnabla.utils.load import load
from nnabla.utils.nnp_graph import NnpLoader


def main(path, network, inputs_path, outputs_path, names=""):
    inputs = dict(np.load(inputs_path))
    batch = next(iter(inputs.values())).shape[0]
    nn.clear_parameters()
    nnp = NnpLoader(path)
    net = nnp.get_network(network, batch_size=batch)
    for name, value in inputs.items():
        net.inputs[name].d = value
    wanted = dict(net.outputs)
    wanted.update((n, net.variables[n]) for n in names.split(",") if n)
    nn.forward_all(list(net.outputs.values()))
    result = {f"out/{k}": np.array(v.d) for k, v in wanted.items()}
    nn.clear_parameters()
    info = load([path], prepare_data_iterator=False, batch_size=batch)
    result["info/networks"] = np.array(sorted(info.networks))
    result["info/executors"] = np.array(sorted(info.executors))
    result["info/optimizers"] = np.array(sorted(getattr(info, "optimizers", {})))
    result["info/datasets"] = np.array(sorted(getattr(info, "datasets", {})))
    result["info/monitors"] = np.array(sorted(getattr(info, "monitors", {})))
    result["info/parameters"] = np.array(sorted(nn.get_parameters(grad_only=False)))
    np.savez(outputs_path, **result)


if __name__ == "__main__":
    main(*sys.argv[1:6])
