"""What NNabla 1.39's ``load`` makes of a file's executors, monitors, datasets and training
configuration (``info.executors``, ``info.monitors``, ``info.datasets``,
``info.training_config``): the attributes programs read, the sinks they run
(``forward_target``, ``backward_target``, a monitor's ``target``) and the initializers of
generator variables; and a file's parameter meeting a registered one of another shape."""

import os

import numpy as np

from compat_harness import nnabla_case

L_ = "nnabla.utils.load."

# x (+ a generated n) -> Affine -> y; squared error with t -> e; its mean -> loss.
_NET = """network { name: "net" batch_size: 2
 variable { name: "x" type: "Buffer" shape { dim: -1 dim: 3 } }
 variable { name: "t" type: "Buffer" shape { dim: -1 dim: 1 } }
 variable { name: "n" type: "Buffer" shape { dim: -1 dim: 3 } }
 variable { name: "fc/W" type: "Parameter" shape { dim: 3 dim: 1 } }
 variable { name: "fc/b" type: "Parameter" shape { dim: 1 } }
 variable { name: "xn" type: "Buffer" shape { dim: -1 dim: 3 } }
 variable { name: "y" type: "Buffer" shape { dim: -1 dim: 1 } }
 variable { name: "e" type: "Buffer" shape { dim: -1 dim: 1 } }
 variable { name: "loss" type: "Buffer" shape { } }
 function { name: "Add" type: "Add2" input: "x" input: "n" output: "xn" }
 function { name: "Fc" type: "Affine" input: "xn" input: "fc/W" input: "fc/b" output: "y"
            affine_param { base_axis: 1 } }
 function { name: "Err" type: "SquaredError" input: "y" input: "t" output: "e" }
 function { name: "Mean" type: "Mean" input: "e" output: "loss"
            mean_param { axes: 0 axes: 1 keep_dims: false } }
}
parameter { variable_name: "fc/W" shape { dim: 3 dim: 1 } data: 0.5 data: -0.25 data: 0.125
            need_grad: true }
parameter { variable_name: "fc/b" shape { dim: 1 } data: 0.1 need_grad: true }
"""

_SECTIONS = """executor { name: "run" network_name: "net" num_evaluations: 3
 repeat_evaluation_type: "mean" need_back_propagation: true
 data_variable { variable_name: "x" data_name: "x" }
 data_variable { variable_name: "t" data_name: "t" }
 generator_variable { variable_name: "n" type: "Normal" multiplier: 0.5 }
 loss_variable { variable_name: "loss" }
 output_variable { variable_name: "y" data_name: "y" type: "float" }
 output_variable { variable_name: "e" data_name: "e" }
 parameter_variable { variable_name: "fc/W" learning_rate_multiplier: 1.0 }
 parameter_variable { variable_name: "fc/b" learning_rate_multiplier: 0.0 }
}
executor { name: "plain" network_name: "net"
 data_variable { variable_name: "x" data_name: "x" }
 generator_variable { variable_name: "n" type: "Constant" multiplier: 0.0 }
 output_variable { variable_name: "y" data_name: "y" }
}
monitor { name: "valid" network_name: "net" dataset_name: "d"
 data_variable { variable_name: "x" data_name: "x" }
 data_variable { variable_name: "t" data_name: "t" }
 generator_variable { variable_name: "n" type: "Uniform" multiplier: 0.25 }
 monitor_variable { type: "Error" variable_name: "loss" }
 monitor_variable { type: "Error" variable_name: "e" }
}
monitor { name: "rng" network_name: "net"
 generator_variable { variable_name: "n" type: "Range" multiplier: 2.0 }
 monitor_variable { type: "Error" variable_name: "y" }
}
dataset { name: "d" uri: "nowhere.csv" batch_size: 2 shuffle: true
          no_image_normalization: true }
dataset { name: "e" uri: "elsewhere.csv" batch_size: 4 }
training_config { max_epoch: 3 iter_per_epoch: 5 save_best: true }
"""

_EXECUTOR_ATTRS = ("network", "num_evaluations", "repeat_evaluation_type",
                   "need_back_propagation", "no_image_normalization", "dataset_assign",
                   "generator_assign", "output_assign", "parameters", "forward_target",
                   "loss_variables", "parameter_learning_rate_multipliers", "backward_target")
_MONITOR_ATTRS = ("network", "data_iterators", "dataset_assign", "generator_assign",
                  "monitor_variables", "target")
_GENERATOR_ATTRS = ("sigma", "lim", "value", "start", "step")


def _generator(g):
    return [type(g).__name__] + [[a, getattr(g, a)] for a in _GENERATOR_ATTRS if hasattr(g, a)]


def _load(nn, r, text, before=None, **kwargs):
    """``load`` of ``text`` written to a file, the parameters cleared and ``before()`` run
    first."""
    L = r.module("nnabla.utils.load")
    with r.tempdir() as folder:
        path = os.path.join(folder, "net.nntxt")
        with open(path, "w") as f:
            f.write(text)
        nn.clear_parameters()
        if before is not None:
            before()
        return L.load([path], **kwargs)


def _feed(r, assign, generators):
    """Seeded data for the data variables; the generator variables get their initializer's
    values where those are certain (Constant, Range), zeros where they are random draws."""
    for v in assign:
        v.variable_instance.d = r.randn(*v.variable_instance.shape).astype(np.float32)
    shapes = []
    for v, g in generators.items():
        value = np.asarray(g(v.variable_instance.shape))
        shapes.append(list(value.shape))
        random = type(g).__name__ in ("NormalInitializer", "UniformInitializer")
        v.variable_instance.d = np.zeros(value.shape) if random else value
    return shapes


@nnabla_case(names=[L_ + "load"],
             note="info.executors: NNabla's attributes, with parameters (variable -> name), "
                  "forward_target (a sink of the outputs; forwarding it computes them), and "
                  "with need_back_propagation the loss variables, learning-rate multipliers "
                  "and backward_target (a sink of the losses: backward gives d loss / d W); "
                  "generator_assign holds NNabla's initializers")
def load_executor_attributes(nn, r):
    info = _load(nn, r, _NET + _SECTIONS, prepare_data_iterator=False)
    res = {"executors": sorted(info.executors)}
    for name, ex in info.executors.items():
        res[name] = [
            [a for a in _EXECUTOR_ATTRS if hasattr(ex, a)],
            ex.network is info.networks["net"], ex.num_evaluations, ex.repeat_evaluation_type,
            ex.need_back_propagation, ex.no_image_normalization,
            [[v.name, d] for v, d in ex.dataset_assign.items()],
            [[v.name] + _generator(g) for v, g in ex.generator_assign.items()],
            [[v.name, o] for v, o in ex.output_assign.items()],
            [[v.name, p, v.type] for v, p in ex.parameters.items()],
            ex.proto.network_name]
        res[name + " generated"] = _feed(r, ex.dataset_assign, ex.generator_assign)
        ex.forward_target.forward()
        res[name + " outputs"] = [v.variable_instance.d.copy() for v in ex.output_assign]
        if ex.need_back_propagation:
            res[name + " losses"] = [v.name for v in ex.loss_variables]
            res[name + " multipliers"] = [
                [v.name, m] for v, m in ex.parameter_learning_rate_multipliers.items()]
            params = nn.get_parameters(grad_only=False)
            for p in params.values():
                p.grad.zero()
            ex.backward_target.forward()
            ex.backward_target.backward()
            res[name + " loss"] = ex.loss_variables[0].variable_instance.d.copy()
            res[name + " gradients"] = sorted([k, p.g.copy()] for k, p in params.items())
    return res


@nnabla_case(names=[L_ + "load"],
             note="info.monitors: NNabla's objects (network, data_iterators, dataset_assign, "
                  "generator_assign of initializers, monitor_variables and target, a sink: "
                  "forwarding it computes them); info.datasets (uri, cache_dir, normalize, "
                  "data_iterator: a function with prepare_data_iterator, else None) and "
                  "info.training_config (monitor_interval 10 when the file sets none)")
def load_monitor_attributes(nn, r):
    res = {}
    for prepare in (False, True):
        info = _load(nn, r, _NET + _SECTIONS, prepare_data_iterator=prepare)
        res["datasets %s" % prepare] = [
            [k, d.uri, d.cache_dir, d.normalize, callable(d.data_iterator)]
            for k, d in info.datasets.items()]
        res["iterators %s" % prepare] = [
            [m, [[k, callable(i)] for k, i in o.data_iterators.items()]]
            for m, o in list(info.monitors.items()) + list(info.optimizers.items())]
    c = info.training_config
    res["training config"] = [c.max_epoch, c.iter_per_epoch, c.save_best, c.monitor_interval]
    res["monitors"] = sorted(info.monitors)
    for name, m in info.monitors.items():
        res[name] = [
            [a for a in _MONITOR_ATTRS if hasattr(m, a)], m.network is info.networks["net"],
            [[v.name, d] for v, d in m.dataset_assign.items()],
            [[v.name] + _generator(g) for v, g in m.generator_assign.items()],
            [v.name for v in m.monitor_variables], m.proto.network_name]
        res[name + " generated"] = _feed(r, m.dataset_assign, m.generator_assign)
        m.target.forward()
        res[name + " values"] = [v.variable_instance.d.copy() for v in m.monitor_variables]
    return res


@nnabla_case(names=[L_ + "load"],
             note="a file's parameter meets a registered one: of another shape, load raises "
                  "ValueError naming both shapes; of its shape, the file's values and need_grad "
                  "go into it")
def load_parameter_of_another_shape(nn, r):
    res = {}
    gpoc = nn.parameter.get_parameter_or_create
    try:
        _load(nn, r, _NET, lambda: gpoc("fc/W", (2, 2)), prepare_data_iterator=False)
        res["other shape"] = ["loaded", nn.get_parameters()["fc/W"].shape]
    except ValueError as e:
        res["other shape"] = ["ValueError", "(2, 2)" in str(e), "(3, 1)" in str(e),
                              "W" in str(e)]
    made = []
    _load(nn, r, _NET, lambda: made.append(gpoc("fc/W", (3, 1), need_grad=False)),
          prepare_data_iterator=False)
    params = nn.get_parameters(grad_only=False)
    res["same shape"] = [params["fc/W"].need_grad, params["fc/W"].d.copy(), made[0].d.copy()]
    return res
