"""One training step of the real NNabla 1.39 on a network of an .nnp file (called by
test_nnp_cntk_bn_training.py in NNabla's venv):

    /work/peers/nnabla/bin/python nnabla_train_step_nnp.py FILE.nnp INPUTS.npz OUTPUTS.npz RATE

Loads FILE with ``nnabla.utils.nnp_graph.NnpLoader`` and builds its network ``training`` at
the batch size of INPUTS.npz (one input), sets the input, takes the loss ``sum(y * w) / B`` of
its one output ``y`` (``w`` evenly spaced from -1 to 1), and makes one plain SGD step of RATE
over the parameters that need a gradient.  Writes the training forward's output (``train_out``),
every parameter after the step (``after/<name>``: batch normalisation's running statistics
moved on by NNabla) and the output of the network ``runtime`` (inference) after the step
(``eval_out``) to OUTPUTS.npz.
"""

import sys

import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.solvers as S
from nnabla.utils.nnp_graph import NnpLoader


def main(path, inputs_path, outputs_path, rate):
    (name, value), = dict(np.load(inputs_path)).items()
    batch = value.shape[0]
    nn.clear_parameters()
    nnp = NnpLoader(path)
    net = nnp.get_network("training", batch_size=batch)
    net.inputs[name].d = value
    (y,) = net.outputs.values()
    w = nn.Variable.from_numpy_array(np.linspace(-1.0, 1.0, y.shape[1]).astype(np.float32))
    loss = F.sum(y * F.reshape(w, (1, -1))) / batch
    solver = S.Sgd(float(rate))
    solver.set_parameters(nn.get_parameters(grad_only=True))
    loss.forward()
    train_out = np.array(y.d)
    solver.zero_grad()
    loss.backward()
    solver.update()
    result = {"train_out": train_out, "loss": np.array(loss.d)}
    for k, p in nn.get_parameters(grad_only=False).items():
        result["after/" + k] = np.array(p.d)
    runtime = nnp.get_network("runtime", batch_size=batch)
    runtime.inputs[name].d = value
    (z,) = runtime.outputs.values()
    z.forward()
    result["eval_out"] = np.array(z.d)
    np.savez(outputs_path, **result)


if __name__ == "__main__":
    main(*sys.argv[1:5])
