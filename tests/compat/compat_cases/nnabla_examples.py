"""What nnabla-examples' MNIST programs (``image-classification/mnist-collection``) need beyond
the tutorials: ``neu.checkpoint_util``'s checkpoints (``isinstance(s, nn.solver.Solver)``,
``nn.parameter.save_parameters`` / ``load_parameters``, ``solver.save_states("states_N.h5")``
in NNabla's HDF5 layout and back), ``PF.convolution(x, C / 2, ...)`` (a float unit count),
``get_unlinked_variable`` (DCGAN, VAT), and ``.nnp`` files of their networks
(``F.greater_equal_scalar`` in the VAE, the binarised layers of ``classification_bnn.py``,
``save_nnp(..., batch_size=1)`` on a network built for another batch size)."""

import os

import numpy as np

from compat_harness import nnabla_case

P_ = "nnabla.parameter."


def _h5_layout(path):
    """``[[path, shape, dtype]]`` of every dataset of an HDF5 file, sorted."""
    import h5py
    out = []
    with h5py.File(path, "r") as f:
        f.visititems(lambda k, o: out.append([k, list(o.shape), str(o.dtype)])
                     if isinstance(o, h5py.Dataset) else None)
    return sorted(out)


@nnabla_case(names=["nnabla.parameter", P_ + "get_parameter", P_ + "set_parameter",
                    P_ + "save_parameters", P_ + "load_parameters", "nnabla.solver.Solver",
                    "nnabla.solvers.Adam.save_states", "nnabla.solvers.Adam.load_states",
                    "nnabla.solvers.Adam.get_states"],
             note="neu.checkpoint_util's save_checkpoint / load_checkpoint, step by step: the "
                  "states file's datasets (per parameter its states and 't'), the states and "
                  "parameters a fresh solver resumes with, and its next update")
def examples_checkpoint(nn, F, PF, S, r):
    P = r.module("nnabla.parameter")
    nn.clear_parameters()
    x = nn.Variable.from_numpy_array(r.randn(4, 3))
    loss = F.mean(PF.affine(F.tanh(PF.affine(x, 5, name="fc1")), 2, name="fc2") ** 2)
    listing = r.set_params(nn.get_parameters())
    solver = S.Adam(0.05)
    solver.set_parameters(nn.get_parameters())
    r.touch("nnabla.solvers.Adam.save_states", "nnabla.solvers.Adam.load_states",
            "nnabla.solvers.Adam.get_states")
    out = {"params": listing, "is_solver": isinstance(solver, nn.solver.Solver)}

    def step(s):
        s.zero_grad()
        loss.forward()
        loss.backward()
        s.update()
    for _ in range(3):
        step(solver)
    with r.tempdir() as folder:
        P.save_parameters(os.path.join(folder, "params_3.h5"))
        solver.save_states(os.path.join(folder, "states_3.h5"))
        out["states_file"] = _h5_layout(os.path.join(folder, "states_3.h5"))
        for v in nn.get_parameters().values():
            v.d = 0.0
        P.load_parameters(os.path.join(folder, "params_3.h5"))
        resumed = S.Adam(0.05)
        resumed.set_parameters(nn.get_parameters())
        resumed.load_states(os.path.join(folder, "states_3.h5"))
    states = resumed.get_states()
    for k in sorted(states):
        out["t " + k] = int(states[k].t)
        for name in sorted(states[k].pstate):
            out[name + " " + k] = states[k].pstate[name].d.copy()
    step(resumed)
    for k, v in nn.get_parameters().items():
        out["after " + k] = v.d.copy()
    with nn.parameter_scope("fc1"):
        out["get W"] = P.get_parameter("affine/W").d.copy()
        out["get missing"] = P.get_parameter("affine/nothing") is None
        P.set_parameter("extra", nn.Variable.from_numpy_array(r.randn(2)))
    out["names after set"] = sorted(nn.get_parameters())
    nn.clear_parameters()
    return out


@nnabla_case(names=["nnabla.parametric_functions.convolution",
                    "nnabla.parametric_functions.deconvolution",
                    "nnabla.parametric_functions.affine"],
             note="nnabla-examples' MNIST ResNet writes PF.convolution(x, C / 2, ...): NNabla "
                  "truncates a float unit count (2.5 -> 2)")
def examples_float_unit_counts(nn, F, PF, r):
    nn.clear_parameters()
    x = nn.Variable.from_numpy_array(r.randn(2, 6, 4, 4))
    c = x.shape[1]
    y1 = PF.convolution(x, c / 2, (1, 1), with_bias=False, name="half")
    y2 = PF.convolution(x, 2.5, (3, 3), pad=(1, 1), name="trunc")
    y3 = PF.deconvolution(x, np.float32(4.0), (2, 2), name="up")
    y4 = PF.affine(x, 7.9, name="fc")
    y5 = PF.affine(x, (2.0, 3), name="fc2")
    listing = r.set_params(nn.get_parameters())
    out = {"params": listing}
    for k, y in (("half", y1), ("trunc", y2), ("up", y3), ("fc", y4), ("fc2", y5)):
        y.forward()
        out[k] = y.d.copy()
    nn.clear_parameters()
    return out


@nnabla_case(names=["nnabla.Variable.get_unlinked_variable", "nnabla.Variable.unlinked"],
             note="DCGAN's fake.get_unlinked_variable(need_grad=True): the discriminator's "
                  "loss trains its own parameters only; need_grad=None keeps the original's")
def examples_unlinked(nn, F, PF, r):
    nn.clear_parameters()
    z = nn.Variable.from_numpy_array(r.randn(3, 2))
    with nn.parameter_scope("gen"):
        fake = F.tanh(PF.affine(z, 4))
    out = {"flags": []}
    r.touch("nnabla.Variable.get_unlinked_variable", "nnabla.Variable.unlinked")
    for v in (fake, z):
        for u in (v.get_unlinked_variable(), v.get_unlinked_variable(need_grad=True),
                  v.get_unlinked_variable(need_grad=False), v.unlinked()):
            out["flags"].append([bool(u.need_grad), u.parent is None, list(u.shape)])
    fake_dis = fake.get_unlinked_variable(need_grad=True)
    with nn.parameter_scope("dis"):
        loss = F.mean(F.sigmoid(PF.affine(fake_dis, 1)))
    r.set_params(nn.get_parameters())
    for v in nn.get_parameters().values():
        v.grad.zero()
    fake.forward()
    loss.forward()
    loss.backward()
    out["value"] = fake_dis.d.copy()
    for k, v in sorted(nn.get_parameters().items()):
        out["grad " + k] = v.g.copy()
    out["grad through unlinked"] = fake_dis.g.copy()
    nn.clear_parameters()
    return out


@nnabla_case(names=["nnabla.utils.save.save", "nnabla.functions.greater_equal_scalar",
                    "nnabla.functions.binary_tanh", "nnabla.functions.binary_sigmoid",
                    "nnabla.parametric_functions.binary_connect_convolution",
                    "nnabla.parametric_functions.binary_weight_convolution",
                    "nnabla.parametric_functions.binary_connect_affine",
                    "nnabla.parametric_functions.binary_weight_affine"],
             note="save_nnp({'x': x}, {'y': y}, 1) as vat.py calls it (the network built for "
                  "4 images, the file's batch_size 1), the binarised layers of "
                  "classification_bnn.py and the VAE's binarisation: read back with NnpLoader "
                  "for 3 images on the same side")
def examples_nnp(nn, F, PF, r):
    SV = r.module("nnabla.utils.save")
    NG = r.module("nnabla.utils.nnp_graph")
    nn.clear_parameters()
    x = nn.Variable((4, 1, 6, 6))
    with nn.parameter_scope("c1"):
        h = F.binary_tanh(PF.binary_connect_convolution(x, 3, (3, 3), pad=(1, 1)))
    with nn.parameter_scope("c2"):
        h = F.binary_sigmoid(PF.binary_weight_convolution(h, 2, (3, 3), stride=(2, 2)))
    with nn.parameter_scope("f3"):
        h = PF.binary_connect_affine(h, 5)
    with nn.parameter_scope("f4"):
        y = PF.binary_weight_affine(F.greater_equal_scalar(h, 0.25), 3)
    listing = r.set_params(nn.get_parameters(grad_only=False))
    contents = {"networks": [{"name": "Validation", "batch_size": 1, "outputs": {"y": y},
                              "names": {"x": x}}],
                "executors": [{"name": "Runtime", "network": "Validation", "data": ["x"],
                               "output": ["y"]}]}
    xv = r.randn(3, 1, 6, 6)
    out = {"params": listing}
    with r.tempdir() as folder:
        SV.save(os.path.join(folder, "result.nnp"), contents)
        nn.clear_parameters()
        nnp = NG.NnpLoader(os.path.join(folder, "result.nnp"))
        net = nnp.get_network("Validation", batch_size=3)
        net.inputs["x"].d = xv
        net.outputs["y"].forward()
        out["input shape"] = list(net.inputs["x"].shape)
        out["y"] = net.outputs["y"].d.copy()
    nn.clear_parameters()
    return out
