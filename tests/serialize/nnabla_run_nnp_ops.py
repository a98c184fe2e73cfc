"""Run every network of an .nnp file in the real NNabla 1.39 (called by ``test_nnp_ops.py`` in
NNabla's venv, one process for all the cases):

    /work/peers/nnabla/bin/python nnabla_run_nnp_ops.py FILE.nnp INPUTS.npz OUTPUTS.npz

INPUTS.npz holds ``<network>/x<k>``; each network is built with
``nnabla.utils.nnp_graph.NnpLoader`` at its inputs' batch size, its inputs ``x<k>`` set, run
forward, and its outputs written to OUTPUTS.npz as ``<network>/<output name>``; a network NNabla
cannot load or run is written as ``<network>/error`` (the message) instead.
"""

import sys

import numpy as np

import nnabla as nn
from nnabla.utils.nnp_graph import NnpLoader


def main(path, inputs_path, outputs_path):
    inputs = dict(np.load(inputs_path))
    nnp = NnpLoader(path)
    result = {}
    for network in nnp.get_network_names():
        mine = {k.split("/", 1)[1]: v for k, v in inputs.items()
                if k.split("/", 1)[0] == network}
        try:
            nn.clear_parameters()
            first = mine.get("x0")
            batch = first.shape[0] if first is not None and first.ndim else 1
            net = nnp.get_network(network, batch_size=batch)
            for name, value in mine.items():
                net.inputs[name].d = value
            nn.forward_all(list(net.outputs.values()))
            for name, v in net.outputs.items():
                result[f"{network}/{name}"] = np.array(v.d)
        except Exception as exc:  # noqa: BLE001 - the test reports it for its case
            result[f"{network}/error"] = np.array(f"{type(exc).__name__}: {exc}")
    np.savez(outputs_path, **result)


if __name__ == "__main__":
    main(*sys.argv[1:4])
