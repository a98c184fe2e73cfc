"""NNabla 1.39's loader plumbing programs reach: what ``NnpLoader.get_network`` gives a second
network of the same file, the first-stage file loaders of ``nnabla.utils.load``
(``get_initial_file_loader``, ``load_files``), restoring a solver's saved states
(``restore_optimizer_state``), the identity-removing pass of its protobuf graphs
(``IdentityRemover``) and the proto graphs' placeholder ``nnabla.ProtoVariable``."""

import os

import numpy as np

from compat_harness import nnabla_case

U = "nnabla.utils."
G = U + "nnp_graph."
L_ = U + "load."


def _dims(shape):
    return " ".join("dim: %d" % d for d in shape)


def _shared_nntxt(rng):
    """x -> Affine -> BN (batch statistics) -> y, the parameters inline."""
    params = [("fc/W", (3, 2), "true"), ("fc/b", (2,), "true"), ("bn/beta", (1, 2), "true"),
              ("bn/gamma", (1, 2), "true"), ("bn/mean", (1, 2), "false"),
              ("bn/var", (1, 2), "false")]
    lines = ['network { name: "net" batch_size: 2',
             ' variable { name: "x" type: "Buffer" shape { dim: -1 dim: 3 } }',
             ' variable { name: "h" type: "Buffer" shape { dim: -1 dim: 2 } }',
             ' variable { name: "y" type: "Buffer" shape { dim: -1 dim: 2 } }']
    for n, s, _ in params:
        lines.append(' variable { name: "%s" type: "Parameter" shape { %s } }' % (n, _dims(s)))
    lines += [
        ' function { name: "Fc" type: "Affine" input: "x" input: "fc/W" input: "fc/b" '
        'output: "h" affine_param { base_axis: 1 } }',
        ' function { name: "BN" type: "BatchNormalization" input: "h" input: "bn/beta" '
        'input: "bn/gamma" input: "bn/mean" input: "bn/var" output: "y" '
        'batch_normalization_param { axes: 1 decay_rate: 0.5 eps: 1e-05 batch_stat: true } }',
        '}']
    for n, s, g in params:
        v = rng.uniform(-0.5, 0.5, s)
        if n == "bn/var":
            v = np.abs(v) + 0.5
        lines.append('parameter { variable_name: "%s" shape { %s } %s need_grad: %s }' % (
            n, _dims(s), " ".join("data: %r" % float(np.float32(a)) for a in v.ravel()), g))
    return "\n".join(lines) + "\n"


@nnabla_case(names=[G + "NnpLoader", G + "NnpLoader.get_network"],
             note="a second network of one loader: new parameter Variables sharing values and "
                  "gradients with the first's, not reset to the file's (a solver step and the "
                  "running statistics a forward updated carry over, also after "
                  "clear_parameters); the scope gets the newest network's; need_grad is each "
                  "Variable's own",
             tols={"second y": (1e-4, 1e-5)})  # batch statistics of 3 rows after a step
def nnp_loader_shares_parameters(nn, F, S, r):
    NG = r.module("nnabla.utils.nnp_graph")
    r.touch(G + "NnpLoader.get_network")
    res = {}
    with r.tempdir() as folder:
        path = os.path.join(folder, "net.nntxt")
        with open(path, "w") as f:
            f.write(_shared_nntxt(np.random.RandomState(3)))
        nnp = NG.NnpLoader(path)
        res["scope after loader"] = sorted(nn.get_parameters(grad_only=False))
        n1 = nnp.get_network("net", batch_size=2)
        keys = sorted(k for k in n1.variables if "/" in k)
        p1 = dict((k, n1.variables[k]) for k in keys)
        res["first"] = [[k, p1[k].d.copy(), p1[k].need_grad] for k in keys]
        n1.inputs["x"].d = r.randn(2, 3)
        y1 = n1.outputs["y"]
        y1.forward()
        res["first y"] = y1.d.copy()
        solver = S.Sgd(0.5)
        solver.set_parameters(nn.get_parameters())
        solver.zero_grad()
        y1.backward(r.weights_like(y1.d))
        solver.update()
        res["after step"] = [[k, p1[k].d.copy()] for k in keys]

        n2 = nnp.get_network("net", batch_size=3)
        p2 = dict((k, n2.variables[k]) for k in keys)
        scope = nn.get_parameters(grad_only=False)
        res["second"] = [[k, p2[k] is p1[k], p2[k].d.copy(), scope[k] is p2[k],
                          scope[k] is p1[k]] for k in keys]
        res["grads shared"] = [[k, p2[k].g.copy()] for k in keys if p1[k].need_grad]
        p2["fc/b"].d = np.array([7.0, -7.0], np.float32)
        res["write seen by first"] = p1["fc/b"].d.copy()
        p1["fc/b"].need_grad = False
        res["need_grad own"] = [p2["fc/b"].need_grad, p1["fc/b"].need_grad]
        n2.inputs["x"].d = r.randn(3, 2 + 1)
        n2.outputs["y"].forward()
        res["second y"] = n2.outputs["y"].d.copy()

        nn.clear_parameters()
        n3 = nnp.get_network("net")
        res["after clear"] = [[k, n3.variables[k].d.copy()] for k in keys]
        res["scope after clear"] = sorted(nn.get_parameters(grad_only=False))
        with nn.parameter_scope("s"):
            nnp.get_network("net")
        res["scoped"] = sorted(nn.get_parameters(grad_only=False))
        fresh = NG.NnpLoader(path).get_network("net")
        res["new loader"] = [[k, fresh.variables[k].d.copy()] for k in keys]
    return res
