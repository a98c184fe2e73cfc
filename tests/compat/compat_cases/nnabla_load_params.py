"""Where NNabla 1.39's loaders take a network's parameters from: ``load(...,
exclude_parameter=True)`` (the current scope's, or new ones from the file's initializers drawn
with ``RandomState(0)``, or zeros), ``NnpLoader(path, scope=dict)`` (the file's parameters
written into that parameter-scope dict), and what ``load``'s ``info.networks[name]`` lists as
``variables`` (every buffer, intermediates too, never a parameter) and ``parameters``."""

import os
from collections import OrderedDict

import numpy as np

from compat_harness import nnabla_case

U = "nnabla.utils."
G = U + "nnp_graph."
L_ = U + "load."


def _data(values):
    return " ".join("data: %r" % float(np.float32(a)) for a in np.ravel(values))


def _nntxt(with_values=True):
    """x -> Affine (fc) -> h -> Tanh -> y; a second network reads h2 -> Affine (out) -> z.

    ``fc/W`` has a Uniform initializer, ``out/W`` a NormalAffineHe one, the biases none;
    ``fc/b`` is saved with ``need_grad: false``."""
    lines = [
        'network { name: "net" batch_size: 2',
        ' variable { name: "x" type: "Buffer" shape { dim: -1 dim: 3 } }',
        ' variable { name: "fc/W" type: "Parameter" shape { dim: 3 dim: 2 } '
        'initializer { type: "Uniform" multiplier: 0.5 } }',
        ' variable { name: "fc/b" type: "Parameter" shape { dim: 2 } }',
        ' variable { name: "h" type: "Buffer" shape { dim: -1 dim: 2 } }',
        ' variable { name: "y" type: "Buffer" shape { dim: -1 dim: 2 } }',
        ' function { name: "Fc" type: "Affine" input: "x" input: "fc/W" input: "fc/b" '
        'output: "h" affine_param { base_axis: 1 } }',
        ' function { name: "T" type: "Tanh" input: "h" output: "y" }',
        '}',
        'network { name: "head" batch_size: 2',
        ' variable { name: "h2" type: "Buffer" shape { dim: -1 dim: 2 } }',
        ' variable { name: "out/W" type: "Parameter" shape { dim: 2 dim: 4 } '
        'initializer { type: "NormalAffineHe" multiplier: 2.0 } }',
        ' variable { name: "out/b" type: "Parameter" shape { dim: 4 } }',
        ' variable { name: "z" type: "Buffer" shape { dim: -1 dim: 4 } }',
        ' function { name: "Out" type: "Affine" input: "h2" input: "out/W" input: "out/b" '
        'output: "z" affine_param { base_axis: 1 } }',
        '}',
        'executor { name: "run" network_name: "net" '
        'data_variable { variable_name: "x" data_name: "x" } '
        'output_variable { variable_name: "y" data_name: "y" } }']
    if with_values:
        rng = np.random.RandomState(11)
        for name, shape, grad in [("fc/W", (3, 2), "true"), ("fc/b", (2,), "false"),
                                  ("out/W", (2, 4), "true"), ("out/b", (4,), "true")]:
            lines.append('parameter { variable_name: "%s" shape { %s } %s need_grad: %s }' % (
                name, " ".join("dim: %d" % d for d in shape), _data(rng.uniform(-1, 1, shape)),
                grad))
    return "\n".join(lines) + "\n"


def _write(folder, text, name="net.nntxt"):
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def _scope(nn):
    return [[k, v.d.astype(np.float32), v.need_grad]
            for k, v in sorted(nn.get_parameters(grad_only=False).items())]


def _net_params(net):
    return [[k, v.variable_instance.d.astype(np.float32), v.variable_instance.need_grad]
            for k, v in net.parameters.items()]


@nnabla_case(names=[L_ + "load", L_ + "base_load"],
             note="exclude_parameter=True: the file's values are not read; a parameter the "
                  "current scope holds is used (its values, need_grad set), the others are "
                  "made from the file's initializers (Uniform, NormalAffineHe) with NNabla's "
                  "RandomState(0) in build order, or zeros where the file names none; the "
                  "network computes with them; a scope parameter of another shape is refused",
             tols={"fresh": (1e-6, 1e-6)})
def load__exclude_parameter(nn, r):
    L = r.module("nnabla.utils.load")
    res = {}
    xv = r.randn(2, 3)
    with r.tempdir() as folder:
        path = _write(folder, _nntxt())
        nn.clear_parameters()
        info = L.base_load([path], prepare_data_iterator=False, exclude_parameter=True)
        L.link_components(info)
        res["fresh"] = _scope(nn)
        res["fresh networks"] = [[n, _net_params(info.networks[n])] for n in info.networks]

        nn.clear_parameters()
        w = nn.parameter.get_parameter_or_create("fc/W", (3, 2), need_grad=False)
        w.d = r.randn(3, 2)
        b = nn.parameter.get_parameter_or_create("fc/b", (2,), need_grad=False)
        b.d = r.randn(2)
        info = L.load([path], prepare_data_iterator=False, exclude_parameter=True)
        net = info.networks["net"]
        res["from scope"] = _scope(nn)
        res["from scope network"] = _net_params(net)
        ex = info.executors["run"]
        (x,), (y,) = list(ex.dataset_assign), list(ex.output_assign)
        x.variable_instance.d = xv
        y.variable_instance.forward()
        res["y"] = y.variable_instance.d.copy()
        w.d = w.d * 2.0
        y.variable_instance.forward()
        res["y after the scope's W doubled"] = y.variable_instance.d.copy()

        nn.clear_parameters()
        nn.parameter.get_parameter_or_create("fc/W", (2, 2))
        try:
            L.load([path], prepare_data_iterator=False, exclude_parameter=True)
            res["other shape"] = "loaded"
        except ValueError:
            res["other shape"] = "ValueError"
        nn.clear_parameters()
        L.load([path], prepare_data_iterator=False)
        res["not excluded"] = _scope(nn)
    return res


@nnabla_case(names=[L_ + "load"],
             note="info.networks[name]: variables are the network's buffers (inputs, "
                  "intermediates, outputs) in the file's order, each with the file's shape "
                  "(-1 for the batch) and its Variable; parameters are the network's own, "
                  "need_grad set on every one; the executor's network is the same object")
def load__network_variables(nn, r):
    L = r.module("nnabla.utils.load")
    res = {}
    with r.tempdir() as folder:
        path = _write(folder, _nntxt())
        nn.clear_parameters()
        info = L.load([path], prepare_data_iterator=False, batch_size=3)
        for name, net in info.networks.items():
            res[name] = [net.name, net.batch_size, list(net.variables), list(net.parameters),
                         [[k, list(v.shape), list(v.variable_instance.shape)]
                          for k, v in net.variables.items()],
                         _net_params(net)]
        res["scope"] = _scope(nn)
        net = info.networks["net"]
        net.variables["x"].variable_instance.d = r.randn(3, 3)
        net.variables["y"].variable_instance.forward()
        res["h"] = net.variables["h"].variable_instance.d.copy()
        res["y"] = net.variables["y"].variable_instance.d.copy()
        res["executor network"] = info.executors["run"].network is net
    return res


def _nested(scope):
    out = []
    for k, v in scope.items():
        if isinstance(v, dict):
            out.append([k, _nested(v)])
        else:
            out.append([k, v.d.astype(np.float32)])
    return out


@nnabla_case(names=[G + "NnpLoader", G + "NnpLoader.get_network"],
             note="NnpLoader(path, scope=d): a non-empty parameter-scope dict (nested by "
                  "'/') gets the file's parameters -- one it holds has the file's values "
                  "written into it, the others are added -- and the networks share them; an "
                  "empty dict is ignored (NNabla tests it for truth); get_network still "
                  "publishes to the current scope; parameters a file names without values "
                  "are drawn from its initializers with the loader's RandomState(1223) in "
                  "the order the networks are got")
def nnp_loader__scope(nn, r):
    NG = r.module("nnabla.utils.nnp_graph")
    r.touch(G + "NnpLoader.get_network")
    res = {}
    xv = r.randn(2, 3)
    with r.tempdir() as folder:
        path = _write(folder, _nntxt())
        nn.clear_parameters()
        empty = OrderedDict()
        net = NG.NnpLoader(path, scope=empty).get_network("net")
        res["empty"] = [len(empty), _scope(nn)]

        nn.clear_parameters()
        mine = nn.Variable.from_numpy_array(np.zeros((3, 2), np.float32))
        other = nn.Variable.from_numpy_array(np.ones((5,), np.float32))
        scope = OrderedDict([("fc", OrderedDict([("W", mine)])),
                             ("other", OrderedDict([("p", other)]))])
        nnp = NG.NnpLoader(path, scope=scope)
        res["scope after loader"] = _nested(scope)
        res["same W object"] = scope["fc"]["W"] is mine
        res["global scope after loader"] = _scope(nn)
        net = nnp.get_network("net", batch_size=2)
        res["global scope after get_network"] = _scope(nn)
        net.inputs["x"].d = xv
        y = net.outputs["y"]
        y.forward()
        res["y"] = y.d.copy()
        mine.d = np.full((3, 2), 0.25, np.float32)
        y.forward()
        res["y after the scope's W set"] = y.d.copy()

        bare = _write(folder, _nntxt(with_values=False), "bare.nntxt")
        nn.clear_parameters()
        nnp = NG.NnpLoader(bare)
        head = nnp.get_network("head")
        net = nnp.get_network("net")
        res["no values in the file"] = [
            [k, v.d.astype(np.float32), v.need_grad]
            for k, v in sorted(list(head.variables.items()) + list(net.variables.items()))
            if "/" in k]
    return res
