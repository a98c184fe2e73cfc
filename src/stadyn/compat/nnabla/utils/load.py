"""``nnabla.utils.load`` on Stadyn: :func:`load` reads NNabla ``.nnp`` / ``.nntxt`` files into
the object NNabla's ``load`` returns -- ``networks``, ``executors``, ``optimizers``,
``datasets``, ``monitors``, ``training_config`` and ``global_config`` -- with each network built
as a Stadyn graph (``stadyn.load_nnp``) over parameters in the current registry, without NNabla.
A file's parameter goes into the registry's parameter of that name (its ``need_grad`` becomes
the file's); one of another shape there is a ``ValueError``, as NNabla's.

Each optimizer is NNabla's object (``_optimizers.py``): a solver of the file's type and
hyper-parameters (``nnabla.solvers``), its scheduler, and -- tied to its network -- the network's
parameters set on the solver and the states saved with it (an ``.nnp``'s ``*.optimizer``
members, or the file's ``solver.states``) restored.  The executors, monitors, datasets and
training configuration are NNabla's objects too (``_load_sections.py``: an executor's
``forward_target``, ``parameters``, ``backward_target`` ..., a monitor's ``monitor_variables``
and ``target``, a dataset's ``data_iterator``).  ``global_config.default_context`` and
``default_context`` are NNabla's contexts, and a file's ``global_config`` becomes the current
context, as NNabla's ``load`` makes it (``_load_config.py``).  A network's ``functions`` are
NNabla's proto functions (``type``, ``args``, ``function_instance``) and its Variables
``nn.Variable``s, so ``variable_instance.parent.info.type_name`` is ``"Sink"`` for a sink.
``info.parameter_scope`` is ``nn.get_current_parameter_scope()`` after loading (NNabla's is
the live scope dict; this is a snapshot).  NNabla's ``proto``, ``proto_graph`` (its protobuf
message and ``nnabla.core.graph_def`` objects) and ``renamed_variables`` (the identities
named ``$EC$/...`` it removes; Stadyn keeps them as ops) are not here.

As NNabla's module, it also holds the names its loader is built from: the initializers and
learning-rate schedulers a file's parameters and optimizers name, ``data_iterator_csv_dataset``
and ``data_iterator_cache`` (and ``CreateCache``, which writes a cache folder),
``current_communicator`` / ``single_or_rankzero``, the first-stage file loaders
(``get_initial_file_loader``, ``load_files``) and ``restore_optimizer_state``
(``_file_loaders.py``), and the proto graphs' ``IdentityRemover`` (``_identity_remover.py``).
"""

from __future__ import annotations

import dataclasses
import os
from collections import OrderedDict
from types import SimpleNamespace
from typing import Any, Iterable

import numpy as np

from ...._errors import ModelFileError
from ....graph import Variable, topological_nodes
from ....parametric import current_registry
from ....serialize import load_nnp, read_legacy_model

from .._function import as_function
from .._kept_dtypes import keep, kept_across
from .._parameter import get_current_parameter_scope, kept_file_arrays
from .._variable import as_nnabla
from ..initializer import (ConstantInitializer, NormalInitializer, RangeInitializer,
                           UniformInitializer)
from .communicator_util import current_communicator, single_or_rankzero
from .create_cache import CreateCache
from ._file_loaders import (_Fields, get_initial_file_loader, load_files,
                            optimizer_checkpoints, restore_optimizer_state)
from ._file_parameters import scope_parameters
from ._load_config import load_contexts
from ._load_sections import NnpExecutor, NnpMonitor, make_datasets, make_training_config
from ._optimizers import link_optimizer, make_optimizer
from ._identity_remover import IdentityRemover
from .data_iterator import data_iterator_cache, data_iterator_csv_dataset
from .learning_rate_scheduler import (CosineScheduler, ExponentialScheduler,
                                      LinearWarmupScheduler, PolynomialScheduler, StepScheduler)

__all__ = ["load", "base_load", "link_components"]
# NNabla's module imports these for its loader; programs reach them through it.
__all__ += ["ConstantInitializer", "NormalInitializer", "RangeInitializer", "UniformInitializer",
            "CosineScheduler", "ExponentialScheduler", "LinearWarmupScheduler",
            "PolynomialScheduler", "StepScheduler", "data_iterator_csv_dataset",
            "data_iterator_cache", "current_communicator", "single_or_rankzero", "CreateCache",
            "get_initial_file_loader", "load_files", "restore_optimizer_state", "IdentityRemover"]


class _NnpVariable:
    """A variable of a loaded network as NNabla's ``load`` shows it (its proto variable):
    ``name``, ``shape`` as the file declares it (``-1`` for the batch), ``type``
    (``"Buffer"`` or ``"Parameter"``), ``need_grad``, ``parent`` (the name of the function
    writing it, or None), ``required`` (the names of the functions reading it) and the
    Variable as ``variable_instance`` (an ``nn.Variable``; None for a buffer no output depends
    on)."""

    def __init__(self, name: str, variable: Any, shape: Any, parameter: bool = False,
                 parent: str | None = None, required: list | None = None):
        self.name = name
        self.variable_instance = variable
        self.shape = list(shape if shape is not None else getattr(variable, "shape", ()))
        self.type = "Parameter" if parameter else "Buffer"
        self.need_grad = parameter
        self.parent = parent
        self.required = list(required or [])

    def __repr__(self) -> str:
        return f"<_NnpVariable {self.name!r} {self.shape}>"


class _NnpFunction:
    """A function of a loaded network as NNabla's ``load`` shows it (its proto function):
    ``name``, ``type`` (``"Affine"``, ``"Sink"``), ``inputs`` and ``outputs`` (variable names),
    ``args`` (the fields the file gives it: NNabla also lists those the file leaves at their
    defaults) and ``function_instance``, the function of the built graph (``info.type_name``,
    ``info.args``; None where no output depends on it)."""

    def __init__(self, f: Any, instance: Any):
        self.name, self.type = f.name, f.type
        self.inputs, self.outputs = list(f.inputs), list(f.outputs)
        self.args = {k: _listed(v) for k, v in f.attrs.items()}
        self.function_instance = instance

    def __repr__(self) -> str:
        return f"<_NnpFunction {self.name!r} {self.type}>"


def _listed(value: Any) -> Any:
    return [_listed(v) for v in value] if isinstance(value, tuple) else value


class _NnpInfo(SimpleNamespace):
    """What :func:`load` returns (attributes as NNabla names them)."""


def _built_buffers(model: Any, network: Any, net: Any) -> dict:
    """The Variables ``net`` (``network`` of ``model``, built) holds for the file's buffers:
    its inputs and every function output the build made."""
    outputs = {f.name: f.outputs for f in network.all_functions()}
    found = {}
    for var, origin in net.origins:
        if origin.kind == "input":
            found.setdefault(origin.uid, var)
        elif origin.kind == "function" and origin.uid in outputs:
            found.setdefault(outputs[origin.uid][origin.output], var)
    return found


def _network(model: Any, name: str, batch_size: int | None) -> SimpleNamespace:
    """Network ``name`` of ``model`` built over the current registry, as NNabla's ``load``
    shows it: ``variables`` (every buffer, in the file's order), ``parameters`` (those its
    functions read, ``need_grad`` set as NNabla sets it), ``functions`` (by name, in the
    file's order), ``inputs`` and ``outputs`` (variable names), ``name``, ``batch_size`` (the
    file's) and Stadyn's :class:`stadyn.Network` as ``network``.  Its Variables are
    ``nn.Variable``s and its functions NNabla's (``parent.info.type_name``)."""
    registry = current_registry()
    net = load_nnp(model, network=name, batch_size=batch_size, registry=registry,
                   draws="nnabla")     # random functions draw NNabla 1.39's numbers
    network = model.networks[name]
    built = as_nnabla(_built_buffers(model, network, net))
    for node in topological_nodes(list(built.values())):
        as_function(node)           # a function of the graph: NNabla's info.type_name, args
    parents, readers = {}, {}
    functions = OrderedDict()
    for f in network.all_functions():
        out = built.get(f.outputs[0]) if f.outputs else None
        functions[f.name] = _NnpFunction(f, None if out is None else out.parent)
        for o in f.outputs:
            parents[o] = f.name
        for i in f.inputs:
            readers.setdefault(i, []).append(f.name)
    variables, parameters = OrderedDict(), OrderedDict()
    for k, v in network.variables.items():
        if v.kind == "parameter":
            if k in readers and registry.get(k) is not None:
                var = as_nnabla(registry.get(k))
                var.need_grad = True        # NNabla's get_parameter_or_create sets it
                parameters[k] = _NnpVariable(k, var, v.shape, True, None, readers[k])
        else:
            variables[k] = _NnpVariable(k, built.get(k), v.shape, False, parents.get(k),
                                        readers.get(k))
    return SimpleNamespace(name=name, batch_size=network.batch_size, variables=variables,
                           parameters=parameters, functions=functions,
                           inputs=list(network.inputs), outputs=list(network.outputs),
                           network=net)


def load(filenames: str | os.PathLike | Iterable[str | os.PathLike],
         prepare_data_iterator: bool = True, batch_size: int | None = None,
         exclude_parameter: bool = False, parameter_only: bool = False,
         extension: str = ".nntxt", context: Any = None) -> _NnpInfo:
    """Load NNabla files (one path or several; later files add networks and parameters).

    Example:
        >>> import os, tempfile, numpy as np
        >>> path = os.path.join(tempfile.mkdtemp(), "tiny.nntxt")
        >>> with open(path, "w") as f:
        ...     _ = f.write('network { name: "n" batch_size: 1 '
        ...                 'variable { name: "x" type: "Buffer" shape { dim: -1 dim: 2 } } '
        ...                 'variable { name: "y" type: "Buffer" shape { dim: -1 dim: 2 } } '
        ...                 'function { name: "t" type: "Tanh" input: "x" output: "y" } } '
        ...                 'executor { name: "run" network_name: "n" '
        ...                 'data_variable { variable_name: "x" data_name: "x" } '
        ...                 'output_variable { variable_name: "y" data_name: "y" } }')
        >>> info = load([path], prepare_data_iterator=False)
        >>> ex = info.executors["run"]
        >>> (x,), (y,) = ex.dataset_assign, ex.output_assign
        >>> x.variable_instance.d = np.zeros((1, 2))
        >>> y.variable_instance.forward()
        >>> y.variable_instance.d
        array([[0., 0.]], dtype=float32)
    """
    info = base_load(filenames, prepare_data_iterator, batch_size, exclude_parameter,
                     parameter_only, extension, context)
    link_components(info)
    return info


def base_load(filenames: str | os.PathLike | Iterable[str | os.PathLike],
              prepare_data_iterator: bool = True, batch_size: int | None = None,
              exclude_parameter: bool = False, parameter_only: bool = False,
              extension: str = ".nntxt", context: Any = None) -> _NnpInfo:
    """The first half of :func:`load` (NNabla's): the files read, parameters set and networks
    built, the executors and optimizers (their solvers) made but not yet tied to their networks
    (``network`` None, no ``dataset_assign`` ...); :func:`link_components` ties them.

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "tiny.nntxt")
        >>> with open(path, "w") as f:
        ...     _ = f.write('network { name: "n" batch_size: 1 '
        ...                 'variable { name: "x" type: "Buffer" shape { dim: -1 dim: 2 } } '
        ...                 'variable { name: "y" type: "Buffer" shape { dim: -1 dim: 2 } } '
        ...                 'function { name: "t" type: "Tanh" input: "x" output: "y" } } '
        ...                 'executor { name: "run" network_name: "n" '
        ...                 'data_variable { variable_name: "x" data_name: "x" } '
        ...                 'output_variable { variable_name: "y" data_name: "y" } }')
        >>> info = base_load([path], prepare_data_iterator=False)
        >>> info.executors["run"].network is None
        True
        >>> link_components(info)
        >>> [v.name for v in info.executors["run"].dataset_assign]
        ['x']
    """
    paths = [filenames] if isinstance(filenames, (str, os.PathLike)) else list(filenames)
    info = _NnpInfo(networks=OrderedDict(), executors=OrderedDict(), optimizers=OrderedDict(),
                    datasets=OrderedDict(), monitors=OrderedDict(), training_config=None,
                    global_config=None, default_context=None, batch_size=batch_size,
                    prepare_data_iterator=prepare_data_iterator,
                    exclude_parameter=exclude_parameter, parameter_only=parameter_only,
                    parameter_scope=None)
    registry = current_registry()
    rng = np.random.RandomState(0)      # NNabla's, for parameters made from initializers
    models = [read_legacy_model(path) for path in paths]
    # the file's context is the current one before the networks are built, as NNabla's
    global_fields = None
    for model in models:
        global_fields = model.extras.get("global_config", global_fields)
    info.global_config, info.default_context = load_contexts(global_fields, context)
    dataset_sections, config = OrderedDict(), None
    for path, model in zip(paths, models):
        if exclude_parameter and parameter_only:
            continue
        kept = {} if exclude_parameter else kept_file_arrays(path)   # NNabla's float64 ...
        for name, p in () if exclude_parameter else model.parameters.items():
            existing = registry.get(name)
            if existing is not None:
                # NNabla's get_parameter_or_create: the values go into the parameter there,
                # its need_grad becomes the file's, and another shape is refused
                if tuple(existing.shape) != p.value.shape:
                    raise ModelFileError(
                        f"{path}: the size of existing parameter {name!r} "
                        f"{tuple(existing.shape)} is different from the size of new parameter "
                        f"{p.value.shape} in the file (to clear all parameters, call "
                        "nn.clear_parameters())")
                existing.need_grad = bool(p.need_grad)
                existing.d = p.value
            else:
                existing = Variable(p.value.shape, need_grad=p.need_grad)
                existing.d = p.value
                registry.set(name, existing)
            if name in kept:
                keep(existing, kept[name])
        if parameter_only:
            continue
        # the networks read the scope's parameters (the file's, unless excluded) or make them
        # from the file's initializers, as NNabla's get_parameter_or_create does
        model = dataclasses.replace(model, parameters=scope_parameters(model, registry, rng))
        with kept_across(v for v in map(registry.get, model.parameters) if v is not None):
            for name in model.networks:     # (the build writes the values again)
                info.networks[name] = _network(model, name, batch_size)
        for name, proto in (model.extras.get("executors") or {}).items():
            info.executors[name] = NnpExecutor(name, proto)
        for name, fields in (model.extras.get("monitors") or {}).items():
            info.monitors[name] = NnpMonitor(name, fields)
        checkpoints = optimizer_checkpoints(path)
        for name, fields in (model.extras.get("optimizers") or {}).items():
            info.optimizers[name] = make_optimizer(fields, _Fields(fields),
                                                   checkpoints.get(name), str(path))
        dataset_sections.update(model.extras.get("datasets") or {})
        config = model.extras.get("training_config", config)
    info.training_config = make_training_config(config)
    if prepare_data_iterator is None:       # NNabla's: as the configuration trains
        prepare_data_iterator = info.training_config is not None and \
            info.training_config.max_epoch > 0
    info.datasets = make_datasets(dataset_sections, bool(prepare_data_iterator))
    info.parameter_scope = get_current_parameter_scope()
    return info


def link_components(info: _NnpInfo) -> None:
    """The second half of :func:`load`, in NNabla's order: tie each optimizer of ``info`` (what
    :func:`base_load` returned) to its network (parameters set on its solver, saved states
    restored) and datasets, each monitor to its network, datasets and monitored variables, and
    each executor to its network and its data, generator, output, parameter and loss variables
    (``forward_target``, ``backward_target``).

    Example:
        >>> link_components(_NnpInfo(executors={}, optimizers={}, monitors={}, networks={},
        ...                          datasets={}))
    """
    for o in info.optimizers.values():
        link_optimizer(o, info.networks, info.datasets, restore_optimizer_state)
    for monitor in info.monitors.values():
        monitor._link(info.networks, info.datasets)
    for executor in info.executors.values():
        executor._link(info.networks)
