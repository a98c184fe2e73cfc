"""Train nnabla-examples' capsule network (``image-classification/capsulenet`` of
sony/nnabla-examples: ``model.py``'s ``capsule_net``, ``capsule_reconstruction`` and
``capsule_loss``, unchanged, with dynamic routing) for a few steps at a tiny size, the way its
``train.py`` does (Adam over ``nn.get_parameters()``, ``forward(clear_no_need_grad=True)``,
``backward(clear_buffer=True)``), and write the losses and a digest of the parameters as JSON.
``train.py`` itself is not run: it trains ``60000 / batch_size`` steps an epoch on the full
network, minutes even at its smallest.  The same file runs on NNabla 1.39 (which made
``refs/nnabla139_capsulenet.json``) and, with ``--stadyn``, on Stadyn through
``examples/nnabla/on_stadyn.py``'s import hook.

    python tests/examples/nnabla_capsulenet.py EXAMPLES WORK OUT.json [--stadyn]

The reference file is this, run on NNabla 1.39 (``/work/peers/nnabla/bin/python
tests/examples/nnabla_capsulenet.py EXAMPLES WORK tests/examples/refs/nnabla139_capsulenet.json``).
EXAMPLES holds ``image-classification/capsulenet`` (a checkout or an archive of the
repository).  The images and labels are NumPy's, seeded; every parameter starts from a value
drawn from its name's order, so both sides start equal.
"""

import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nnabla_example_runs as record  # noqa: E402

PROGRAMS = ("image-classification/capsulenet",)
BATCH, STEPS = 2, 3


def run(examples):
    sys.path.insert(0, os.path.join(examples, "image-classification", "capsulenet"))
    import nnabla as nn
    import nnabla.functions as F
    import nnabla.solvers as S
    import model
    nn.clear_parameters()
    image = nn.Variable([BATCH, 1, 28, 28])
    label = nn.Variable([BATCH, 1])
    x = image / 255.0
    t_onehot = F.one_hot(label, (10,))
    with nn.parameter_scope("capsnet"):
        _, _, _, caps, pred = model.capsule_net(x, test=False, aug=False,
                                                grad_dynamic_routing=False)
    with nn.parameter_scope("capsnet_reconst"):
        recon = model.capsule_reconstruction(caps, t_onehot)
    loss_margin, loss_reconst, loss = model.capsule_loss(pred, t_onehot, recon, x)
    pred.persistent = True
    params = nn.get_parameters()
    rng = np.random.RandomState(1)
    for name in sorted(params):
        params[name].d = rng.uniform(-0.05, 0.05, params[name].shape)
    solver = S.Adam(1e-3)
    solver.set_parameters(params)
    out = {"parameters": sorted([k, list(v.shape)] for k, v in params.items()),
           "loss": [], "margin loss": [], "reconstruction loss": [], "prediction": []}
    for _ in range(STEPS):
        image.d = rng.randint(0, 256, (BATCH, 1, 28, 28))
        label.d = rng.randint(0, 10, (BATCH, 1))
        solver.zero_grad()
        loss.forward(clear_no_need_grad=True)
        loss.backward(clear_buffer=True)
        solver.update()
        out["loss"].append(float(loss.d))
        out["margin loss"].append(float(loss_margin.d))
        out["reconstruction loss"].append(float(loss_reconst.d))
        out["prediction"].append(np.asarray(pred.d, np.float64).ravel().tolist())
    out["digest"] = {k: np.asarray(v.d, np.float64).ravel()[:8].tolist()
                     for k, v in sorted(params.items())}
    return out


def main(argv):
    examples, work, out_path, _ = record.begin(argv, ROOT)
    with open(out_path, "w") as f:
        json.dump({"capsulenet": run(examples)}, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
