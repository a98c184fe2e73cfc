"""What else NNabla 1.39's ``load`` returns: ``global_config`` and ``default_context`` (and the
file's context made the current one), the arguments it keeps (``batch_size``, ...), the
parameter scope, ``prepare_data_iterator=None``; and a loaded network's functions and
variables (``functions``, ``inputs``, ``outputs``, a Sink's ``info``)."""

from compat_cases.nnabla_load_sections import _load
from compat_harness import nnabla_case

L_ = "nnabla.utils.load."

_NET = """network { name: "net" batch_size: 2
 variable { name: "x" type: "Buffer" shape { dim: -1 dim: 3 } }
 variable { name: "fc/W" type: "Parameter" shape { dim: 3 dim: 2 } }
 variable { name: "y" type: "Buffer" shape { dim: -1 dim: 2 } }
 variable { name: "z" type: "Buffer" shape { dim: -1 dim: 2 } }
 variable { name: "s" type: "Buffer" shape { } }
 function { name: "Fc" type: "Affine" input: "x" input: "fc/W" output: "y"
            affine_param { base_axis: 1 } }
 function { name: "T" type: "Tanh" input: "y" output: "z" }
 function { name: "Snk" type: "Sink" input: "y" input: "z" output: "s"
            sink_param { one_input_grad: true } }
}
parameter { variable_name: "fc/W" shape { dim: 3 dim: 2 }
            data: 0.5 data: -0.25 data: 0.125 data: 1 data: 2 data: 3 need_grad: true }
"""

_GLOBAL = ('global_config { default_context { backends: "cpu:float" '
           'array_class: "CpuArray" device_id: "0" } }\n')
_DATASET = 'dataset { name: "d" uri: "nowhere.csv" batch_size: 2 }\n'
_TRAINING = "training_config { max_epoch: %d }\n"


def _ctx(ctx):
    # the first backend: NNabla reads a .nntxt twice, so a file's repeated backends repeat
    return [type(ctx).__name__, ctx.backend[0], ctx.array_class, ctx.device_id]


@nnabla_case(names=[L_ + "load", "nnabla.get_current_context", "nnabla.set_default_context"],
             note="global_config is an object whose default_context is a Context; a file with "
                  "a global_config makes its context the current one (info.default_context), "
                  "one without leaves the current context and gives the CPU extension's; "
                  "context='cpu' is info.default_context while the file's still becomes "
                  "current (without a global_config NNabla's info then has no global_config; "
                  "Stadyn's has the asked context); prepare_data_iterator=None prepares the "
                  "iterators when the training configuration has epochs")
def load_global_config_and_context(nn, r):
    res = {}
    mine = nn.Context(["cpu:float"], "CpuCachedArray", "0")
    for label, text, kwargs in [("no global_config", _NET, {}),
                                ("global_config", _NET + _GLOBAL, {}),
                                ("context='cpu'", _NET + _GLOBAL, {"context": "cpu"})]:
        nn.set_default_context(mine)
        info = _load(nn, r, text, prepare_data_iterator=False, **kwargs)
        current = nn.get_current_context()
        res[label] = [
            _ctx(info.default_context), _ctx(info.global_config.default_context),
            info.global_config.default_context is info.default_context,
            current is mine, current is info.default_context, _ctx(current)]
    res["kept arguments"] = [info.batch_size, info.prepare_data_iterator,
                             info.exclude_parameter, info.parameter_only]
    info = _load(nn, r, _NET, batch_size=4, exclude_parameter=True)
    res["kept arguments 2"] = [info.batch_size, info.prepare_data_iterator,
                               info.exclude_parameter, info.parameter_only]
    res["parameter_scope"] = [[k, sorted(v)] for k, v in info.parameter_scope.items()]
    for epochs in (0, 3):
        info = _load(nn, r, _NET + _DATASET + _TRAINING % epochs, prepare_data_iterator=None)
        res["prepare_data_iterator=None, max_epoch %d" % epochs] = [
            [k, callable(d.data_iterator)] for k, d in info.datasets.items()]
    nn.set_default_context(mine)
    return res


@nnabla_case(names=[L_ + "load", "nnabla.Variable.visit"],
             note="a loaded network's functions by name (type, inputs, outputs, the args the "
                  "file gives, the graph's function), its inputs and outputs, each variable's "
                  "parent and readers; the Variables are nn.Variables whose parent is a "
                  "Function: a Sink's info.type_name is 'Sink' and info.args its fields")
def load_network_functions_and_sink(nn, r):
    info = _load(nn, r, _NET, prepare_data_iterator=False)
    net = info.networks["net"]
    res = {"inputs": list(net.inputs), "outputs": list(net.outputs)}
    res["functions"] = [[k, f.name, f.type, list(f.inputs), list(f.outputs), f.args,
                         f.function_instance.name] for k, f in net.functions.items()]
    res["variables"] = [[k, v.parent, list(v.required), v.type]
                        for k, v in net.variables.items()]
    res["parameters"] = [[k, list(v.required)] for k, v in net.parameters.items()]
    x, s = net.variables["x"].variable_instance, net.variables["s"].variable_instance
    sink = s.parent
    res["sink"] = [sink.name, sink.info.type_name, sink.info.args, len(sink.inputs),
                   type(s.data).__name__, type(x.data).__name__]
    x.d = r.randn(2, 3)
    s.forward()
    res["z"] = net.variables["z"].variable_instance.d.copy()
    visited = []
    s.visit(lambda f: visited.append([f.name, f.info.type_name, f.info.args]))
    r.touch("nnabla.Variable.visit")
    res["visit"] = visited
    return res
