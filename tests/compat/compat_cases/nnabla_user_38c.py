"""An NNabla 1.39 user's own programs, sixth batch, files (nnuser38): checkpoints of
parameters and solver states in NNabla's ``.protobuf`` form resumed mid-training (and a state
file NNabla itself wrote, ``tests/fixtures/nnabla_protobuf_states``), run unchanged on NNabla
1.39 and on ``stadyn.compat.nnabla``.
"""

import os

import numpy as np

from compat_harness import nnabla_case

SV = "nnabla.solvers."
PFN = "nnabla.parametric_functions."
FN = "nnabla.functions."

_PB_STATES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))), "fixtures", "nnabla_protobuf_states")


@nnabla_case(names=["nnabla.save_parameters", "nnabla.load_parameters",
                    "nnabla.clear_parameters", SV + "Adam", SV + "Momentum"],
             tols={"full": (1e-5, 1e-6), "resumed": (1e-5, 1e-6)}, rtol=1e-5, atol=1e-6)
def user38_protobuf_checkpoint_resumed(nn, F, PF, S, r):
    """nnabla-examples' checkpoint as a user writes it with ``.protobuf`` files: after three
    of six Adam steps, ``nn.save_parameters("params_3.protobuf")`` and
    ``solver.save_states("states_3.protobuf")``; a new run (``nn.clear_parameters``, the
    network rebuilt) loads both and takes the last three steps: its losses and parameters
    equal the unbroken run's.  The sizes of the files written (NNabla's ``Optimizer``
    message), and a state file NNabla 1.39 wrote (``momentum.protobuf``, Momentum after three
    steps of fixed gradients) loaded into a new Momentum and resumed for two steps."""
    x_np = r.randn(6, 4)
    t_np = r.randint(0, 3, (6, 1))

    def build():
        x = nn.Variable.from_numpy_array(x_np)
        t = nn.Variable.from_numpy_array(t_np)
        with nn.parameter_scope("ckpt"):
            h = F.relu(PF.affine(x, 5, name="fc1"))
            y = PF.affine(h, 3, name="fc2")
        return F.mean(F.softmax_cross_entropy(y, t))

    def steps(loss, solver, n):
        out = []
        for _ in range(n):
            loss.forward()
            solver.zero_grad()
            loss.backward()
            solver.update()
            out.append(float(loss.d))
        return out

    nn.clear_parameters()
    loss = build()
    listing = r.set_params(nn.get_parameters())
    init = {k: v.d.copy() for k, v in nn.get_parameters().items()}
    solver = S.Adam(0.05)
    solver.set_parameters(nn.get_parameters())
    res = {"params": listing, "full": steps(loss, solver, 6)}
    full = r.param_values(nn.get_parameters())

    nn.clear_parameters()
    loss = build()
    for k, v in nn.get_parameters().items():
        v.d = init[k]
    solver = S.Adam(0.05)
    solver.set_parameters(nn.get_parameters())
    first = steps(loss, solver, 3)
    nn.save_parameters("params_3.protobuf")
    solver.save_states("states_3.protobuf")
    res["file sizes"] = [os.path.getsize("params_3.protobuf"),
                         os.path.getsize("states_3.protobuf")]

    nn.clear_parameters()
    loss = build()
    nn.load_parameters("params_3.protobuf")
    solver = S.Adam(0.05)
    solver.set_parameters(nn.get_parameters())
    solver.load_states("states_3.protobuf")
    res["t after load"] = sorted([k, s.t] for k, s in solver.get_states().items())
    res["resumed"] = first + steps(loss, solver, 3)
    again = r.param_values(nn.get_parameters())
    res["resumed equals full"] = bool(
        np.allclose(res["resumed"], res["full"], rtol=1e-5, atol=1e-6) and
        all(np.allclose(again[k], full[k], rtol=1e-5, atol=1e-6) for k in full))
    res.update(full)

    # a file NNabla 1.39 wrote (make_protobuf_states.py): Momentum resumed from it
    v = np.load(os.path.join(_PB_STATES, "values.npz"))
    w = nn.Variable.from_numpy_array(v["W0"].copy())
    b = nn.Variable.from_numpy_array(v["b0"].copy())
    w.need_grad = b.need_grad = True
    mom = S.Momentum(0.1, 0.9)
    mom.set_parameters({"fc/W": w, "fc/b": b})
    mom.load_states(os.path.join(_PB_STATES, "momentum.protobuf"))
    res["nnabla file t"] = sorted([k, s.t] for k, s in mom.get_states().items())
    res["nnabla file m"] = sorted([k, s.pstate["m"].d.ravel().tolist()]
                                  for k, s in mom.get_states().items())
    for k in (3, 4):
        w.g = v["g_W"][k]
        b.g = v["g_b"][k]
        mom.update()
    res["nnabla file resumed W"] = w.d.copy()
    res["nnabla file resumed b"] = b.d.copy()
    return res
