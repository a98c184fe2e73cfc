"""NNabla 1.39's ``nn.graph_def`` (``nnabla.core.graph_def``), the part a graph of ``nn.Variable``
reaches: :func:`create_graph_from_variable` describes the network computing some variables as a
:class:`ProtoGraph` (its :class:`ProtoNetwork` s of :class:`ProtoFunction` s and
``ProtoVariable`` s, named as NNabla names them), which is saved (``g.save("net.nnp")``),
loaded back (:func:`load`) and called on new inputs (``y = g(x)``) to build the network again
over the graph's parameters.

Stadyn writes the description with its own ``.nnp`` writer and reads it back with its ``.nnp``
reader (``stadyn.serialize``), so a graph holds what a saved file holds.  NNabla's proto graphs
recorded from ``nn.ProtoVariable`` inputs are here too: inside ``with nn.graph_def.graph() as
g:`` (or outside any, in the default graph, :func:`get_default_graph`), ``F`` and ``PF``
functions given a ``ProtoVariable`` record themselves (``_proto_variable.py``,
``_proto_recording.py``) and the recorded network becomes one of ``g.networks`` (``model``, or
the ``name`` given) at the end of the block, described, saved and called as one made by
:func:`create_graph_from_variable` (it is made by it, from the Variables the recording stood
the ``ProtoVariable`` s for).

Example:
    >>> import numpy as np
    >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
    >>> import stadyn.compat.nnabla.parametric_functions as PF
    >>> x = nn.Variable((2, 3))
    >>> with nn.parameter_scope("doc_graph_def"):
    ...     y = F.tanh(PF.affine(x, 4, name="fc"))
    >>> g = nn.graph_def.create_graph_from_variable("net", y, names={"x": x, "y": y})
    >>> net = g.networks["net"]
    >>> net.inputs, net.outputs, list(net.functions)
    (['x'], ['y'], ['@net/Affine', '@net/Tanh'])
    >>> g(nn.Variable((5, 3))).shape
    (5, 4)
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
from collections import OrderedDict
from contextlib import contextmanager
from typing import Any, Iterator, Sequence


from ..._errors import ModelFileError, ShapeError
from ._graph_def_batch import as_saved, broadcast_at, check_batch, fed_at
from ._graph_def_names import (described_as, named_functions, nnabla_names,
                               recorded_parameter_names, take_arguments)
from ._proto_recording import Recorder, current_recorder, set_current_recorder
from ._proto_variable import ProtoVariable
from ._variable import Variable, as_nnabla

__all__ = ["ProtoGraph", "ProtoNetwork", "ProtoFunction", "ProtoVariable",
           "create_graph_from_variable", "load", "get_default_graph", "reset_default_graph",
           "get_default_graph_by_variable", "graph"]

# a ProtoGraph's attributes that are its default network's (NNabla's __graph_members__)
_NETWORK_MEMBERS = ("inputs", "outputs", "parameters", "functions", "variables")


class ProtoFunction:
    """A function of a :class:`ProtoNetwork`: its ``name`` (``'@net/Affine'``), ``type``
    (``'Affine'``), ``inputs`` and ``outputs`` (variable names) and ``args`` (its arguments:
    NNabla's ``f.info.args``, every argument with the defaults filled, ``{'inplace': False}``;
    of a loaded network, the file's ``-1`` kept).

    Example:
        >>> f = ProtoFunction("@n/ReLU", "ReLU", ["x"], ["y"], {"inplace": False})
        >>> f.type, f.inputs, f.outputs
        ('ReLU', ['x'], ['y'])
    """

    def __init__(self, name: str, type: str, inputs: Sequence[str],  # noqa: A002 - NNabla's
                 outputs: Sequence[str], args: dict | None = None):
        self.name = name
        self.type = type
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.args = dict(args or {})

    def __repr__(self) -> str:
        return f"<ProtoFunction {self.name!r} {self.type} {self.inputs} -> {self.outputs}>"


class ProtoNetwork:
    """One network of a :class:`ProtoGraph`: ``name``, ``batch_size``, ``variables`` (the
    buffers: name -> ``ProtoVariable`` of the file's shape, ``-1`` for the batch axis),
    ``parameters`` (name -> ``ProtoVariable`` of type ``'Parameter'``), ``functions`` (name ->
    :class:`ProtoFunction`, in order), ``inputs`` and ``outputs`` (names).  Called, it builds
    the network over the given input Variables (see :meth:`ProtoGraph.__call__`).

    Example:
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> x = nn.Variable((2, 3))
        >>> net = nn.graph_def.create_graph_from_variable("n", F.relu(x)).default_graph()
        >>> net.inputs, net.outputs, net.variables[net.inputs[0]].shape
        (['@n/ReLU_in'], ['@n/ReLU_out'], (2, 3))
    """

    def __init__(self, owner: "ProtoGraph", legacy: Any, from_variables: bool = False):
        self._owner = owner
        self._legacy = legacy
        self.name: str = legacy.name
        # made from Variables (NNabla 1.39's create_graph_from_variable): no batch size, the
        # Variables' own shapes, parameters described without need_grad; read from a file:
        # the file's batch size and shapes (-1), parameters with need_grad
        batch = int(legacy.batch_size or 1)
        self.batch_size: int | None = None if from_variables else batch
        self.variables: "OrderedDict[str, ProtoVariable]" = OrderedDict()
        self.parameters: "OrderedDict[str, ProtoVariable]" = OrderedDict()
        for vname, v in legacy.variables.items():
            shape = tuple(int(d) for d in (v.shape or ()))
            if from_variables and shape and shape[0] < 0:
                shape = (batch,) + shape[1:]
            if v.kind in ("parameter", "constant"):
                self.parameters[vname] = ProtoVariable(shape, vname, not from_variables,
                                                       "Parameter")
            else:
                self.variables[vname] = ProtoVariable(shape, vname, False, "Buffer")
        self.functions: "OrderedDict[str, ProtoFunction]" = OrderedDict(
            (f.name, ProtoFunction(f.name, f.type, f.inputs, f.outputs, f.attrs))
            for f in legacy.functions)
        self.inputs: list[str] = list(legacy.inputs)
        self.outputs: list[str] = list(legacy.outputs)
        self._instances: list | None = None      # the inputs of the last call
        self._built: "OrderedDict[str, Any]" = OrderedDict()    # its buffers, by name

    def __call__(self, *args: Any, batch_size: int | None = None) -> Any:
        """The network built over ``args`` (its inputs, in order; none: the inputs of the last
        call, as NNabla 1.39 keeps them, or at the first new input Variables of the network's
        shape, at ``batch_size`` or the network's), computing with the graph's parameters: the
        output Variable, or a tuple of them.  The network's ``ProtoVariable`` s (inputs,
        intermediate buffers, outputs, parameters) hold the call's Variables as
        ``variable_instance``.  A Reshape or Broadcast to a shape of the batch axis stays at the
        network's batch size, as NNabla's: a call at another that it cannot take raises
        NNabla's ``RuntimeError``, a Broadcast of a batch of 1 gives the network's batch."""
        if not args and self._instances is not None:
            args, batch_size = tuple(self._instances), None   # (their batch size)
        elif len(args) == len(self.inputs):
            self._instances = list(args)     # NNabla's, kept even when the call then fails
        inputs, outputs = self._owner._build(self, args, batch_size)
        self._instances = list(inputs)
        # NNabla's: the Variables of the call, on the network's ProtoVariables
        # (g.networks[n].variables["x"].variable_instance.d = ... feeds a g() call)
        for name, pv in self.variables.items():
            v = self._built.get(name)
            if v is not None:
                pv.variable_instance = as_nnabla(v)
        for name, p in self.parameters.items():
            p.variable_instance = self._owner._parameters.get(name)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def __repr__(self) -> str:
        return f"<ProtoNetwork {self.name!r} inputs={self.inputs} outputs={self.outputs}>"


class ProtoGraph:
    """Networks described as NNabla's file describes them: ``networks`` (name ->
    :class:`ProtoNetwork`) and the parameters they compute with (:meth:`get_parameters`).
    Calling the graph calls its first network; :meth:`save` writes an ``.nnp`` / ``.nntxt``.

    Example:
        >>> import stadyn.compat.nnabla as nn
        >>> g = nn.graph_def.get_default_graph()
        >>> type(g).__name__, list(g.networks)
        ('ProtoGraph', [])
    """

    def __init__(self, model: Any = None, parameters: "OrderedDict[str, Any] | None" = None,
                 from_variables: bool = False):
        self._model = model
        self._parameters: "OrderedDict[str, Any]" = OrderedDict(parameters or {})
        self.networks: "OrderedDict[str, ProtoNetwork]" = OrderedDict(
            (name, ProtoNetwork(self, net, from_variables))
            for name, net in (model.networks.items() if model is not None else ()))

    def __getattr__(self, item: str) -> Any:
        # NNabla's: g.variables (...) are the default network's, g.NAME the network NAME
        networks = self.__dict__.get("networks") or {}
        if item in _NETWORK_MEMBERS:
            return getattr(self.default_graph(), item)
        if item in networks:
            return networks[item]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {item!r}")

    def __getitem__(self, item: str) -> Any:
        return getattr(self, item)

    def _adopt(self, graph: "ProtoGraph") -> None:
        """Take ``graph``'s networks (and the parameters they compute with) as this graph's."""
        if self._model is None:
            self._model = graph._model
        self._parameters.update(graph._parameters)
        for name, network in graph.networks.items():
            network._owner = self
            self.networks[name] = network

    def default_graph(self) -> ProtoNetwork:
        """The first network (NNabla's "default" one)."""
        if not self.networks:
            raise ValueError("ProtoGraph.default_graph: the graph has no network")
        return next(iter(self.networks.values()))

    def __call__(self, *args: Any, batch_size: int | None = None) -> Any:
        """``default_graph()(*args)``: the first network built over ``args``."""
        return self.default_graph()(*args, batch_size=batch_size)

    def get_parameters(self, grad_only: bool = False) -> "OrderedDict[str, Any]":
        """The graph's parameters, name -> ``nn.Variable`` (those with ``need_grad`` only, with
        ``grad_only``): the scope's own Variables for a graph made from a network of them, the
        file's values for a loaded one."""
        return OrderedDict((k, v) for k, v in self._parameters.items()
                           if v.need_grad or not grad_only)

    def save(self, filename: str | os.PathLike, include_parameter: bool = False,
             variable_batch_size: bool = True, executors: Any = None) -> None:
        """Write the networks and their parameters as an NNabla file (``.nnp``: the network
        and ``parameter.h5``; ``.nntxt``: the network, the parameters too with
        ``include_parameter``), executors as ``nnabla.utils.save.save`` takes them."""
        from .utils.save import (FileHandlerContext, create_proto, get_default_file_savers,
                                 save_files)
        nets = []
        for network in self.networks.values():
            built = self._build(network, (), None)
            nets.append({"name": network.name, "batch_size": network._legacy.batch_size,
                         "outputs": OrderedDict(zip(network.outputs, built[1])),
                         "names": OrderedDict(zip(network.inputs, built[0]))})
        contents: dict = {"networks": nets}
        if executors:
            contents["executors"] = list(executors)
        filename = os.fspath(filename)
        ext = os.path.splitext(filename)[1] or ".nnp"     # (NNabla's extension='.nnp')
        ctx = FileHandlerContext()
        # the writer names a parameter by its graph_name; the graph's own name is written (a
        # recording's BatchNormalization_3 for a batch normalisation's mean, an nn.Module's
        # @inner/fc/affine/W where two submodules both hold an fc/affine/W)
        with _written_as(self._parameters):
            ctx.proto = create_proto(contents, include_parameter and ext != ".nnp",
                                     variable_batch_size)
        ctx.parameters = None
        described_as(ctx.proto, list(self.networks.values()))
        save_files(ctx, get_default_file_savers(), filename, ext)
        if variable_batch_size:     # NNabla's save rewrites the networks it writes
            for network in self.networks.values():
                as_saved(network)

    def _build(self, network: ProtoNetwork, args: Sequence[Any], batch_size: int | None
               ) -> tuple[list, list]:
        """``network`` built over ``args`` (new input Variables for those not given): its
        inputs and outputs, as ``nn.Variable`` s."""
        from ...parametric import ParameterRegistry
        from ...serialize import LegacyParameter, load_nnp
        from .utils._nnp_pass import substitute
        from .utils.nnp_graph import _file_names
        if len(args) > len(network.inputs):
            raise ValueError(f"network {network.name!r} takes {len(network.inputs)} inputs "
                             f"({network.inputs}), not {len(args)}")
        read = {i for f in network._legacy.all_functions() for i in f.inputs}
        used = [k for k in self._parameters if k in read]
        registry = ParameterRegistry()
        for k in used:
            registry.set(k, self._parameters[k].unlinked(need_grad=self._parameters[k].need_grad))
        current = OrderedDict((k, LegacyParameter(k, self._parameters[k].d,
                                                  bool(self._parameters[k].need_grad)))
                              for k in used)
        model = dataclasses.replace(self._model, parameters=current, networks=OrderedDict(
            [(network.name, network._legacy)]))
        legacy, fed = fed_at(network._legacy, network.inputs, args)
        if batch_size is None and args and network.inputs:     # the given input's batch
            first = legacy.variables.get(network.inputs[0])
            if first is not None and first.shape and first.shape[0] < 0 and args[0].shape:
                batch_size = int(args[0].shape[0])
        check_batch(legacy, batch_size)
        own = int(legacy.batch_size or 1)
        if batch_size is not None and batch_size != own:
            legacy = broadcast_at(legacy, own)
        if legacy is not network._legacy:
            model = dataclasses.replace(model, networks=OrderedDict([(network.name, legacy)]))
        try:
            built = load_nnp(model, network=network.name, batch_size=batch_size,
                             registry=registry, draws="nnabla")
        except ModelFileError as e:
            if not isinstance(e.__cause__, ShapeError):
                raise
            # a function NNabla 1.39 cannot set up on the inputs' shapes (a Reshape or
            # Broadcast kept at the network's batch size): its setup's RuntimeError
            raise RuntimeError(f"value error in setup_impl\n{network.name} (built at batch "
                               f"size {batch_size or own}, the network's {own}): {e}") from e
        inputs = [as_nnabla(built.inputs[k]) for k in network.inputs]
        for k, given in enumerate(args):
            substitute(inputs[k], given)
            inputs[k] = given
        outputs = [as_nnabla(built.outputs[k]) for k in network.outputs]
        # every buffer the build made, by the file's names (NNabla's graph_call sets each
        # ProtoVariable's variable_instance, intermediate ones too)
        network._built = _file_names(built, legacy)
        network._built.update(zip(network.inputs, inputs))
        network._built.update(zip(network.outputs, outputs))
        return inputs, outputs


@contextmanager
def _written_as(parameters: "dict[str, Any]") -> Iterator[None]:
    """Inside the block the writer names each of ``parameters`` (name -> ``nn.Variable``) by
    its name there (the writer reads a parameter's ``graph_name``, its registry name)."""
    kept = [(v, v.graph_name) for v in parameters.values()]
    try:
        for key, v in parameters.items():
            v.graph_name = key
        yield
    finally:
        for v, graph_name in kept:
            v.graph_name = graph_name


def _graph_of(recorder: Recorder) -> ProtoGraph:
    if recorder.graph is None:
        recorder.graph = ProtoGraph()
    return recorder.graph


def _commit(recorder: Recorder) -> ProtoGraph:
    """The recorder's graph, with the network recorded since the last commit added to it (as
    NNabla 1.39's ``ProtoNetwork.commit``: its inputs the variables no function of it made,
    its outputs those none of it reads; parameters named by the current scope, their
    ``need_grad`` the Variables')."""
    graph = _graph_of(recorder)
    if not recorder.dirty:
        return graph
    name = recorder.network_name()
    recorded = list(recorder.variables.values())
    functions = set(recorder.functions)
    for pv in recorded:
        if pv.parent not in functions:
            pv.parent = None
    outputs = [pv for pv in recorded if pv.parent is not None and not pv.required]
    if not outputs:
        recorder.start_network()
        return graph
    # an nn.Module's network names its parameters by the module's get_parameters() (NNabla's
    # commit: ``@inner/fc/affine/W`` in ``@outer``), the writer by their graph_name
    module_parameters = getattr(recorder.module, "get_parameters", None)
    scope = module_parameters(grad_only=False) if module_parameters is not None else None
    with _written_as(scope or {}):
        made = _from_variables(name, [pv._stand_in for pv in outputs],
                               OrderedDict((pv.name, pv._stand_in) for pv in recorded), scope,
                               recorder)
    named_functions(made.networks[name], recorder.functions, list(recorder.variables))
    recorder.start_network()
    network = made.networks[name]
    for k, p in network.parameters.items():
        p.need_grad = bool(made._parameters[k].need_grad)
    for pv in recorded:             # NNabla's network holds the recorded ProtoVariables
        if pv.name in network.variables:
            network.variables[pv.name] = pv
    graph._adopt(made)
    return graph


@contextmanager
def graph(**kwargs: Any) -> Iterator[ProtoGraph]:
    """Record the functions given ``nn.ProtoVariable`` s inside the block in a new
    :class:`ProtoGraph` (the one the block binds), as NNabla 1.39's: its network is ``name``
    (default ``model``; functions and outputs named ``@name/ReLU``, ``@name/ReLU_out``),
    committed when the block ends.  ``parameter_scope`` is accepted as NNabla's.

    Example:
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> import stadyn.compat.nnabla.parametric_functions as PF
        >>> with nn.graph_def.graph() as g:
        ...     x = nn.ProtoVariable((1, 3))
        ...     y = F.relu(PF.affine(x, 2, name="doc_graph"))
        >>> net = g.default_graph()
        >>> net.name, net.inputs, net.outputs, list(net.functions)
        ('model', ['Affine_in'], ['ReLU_out'], ['Affine', 'ReLU'])
        >>> g(nn.Variable((4, 3))).shape
        (4, 2)
    """
    recorder = Recorder(name=kwargs.get("name"), parameter_scope=kwargs.get("parameter_scope"))
    previous = set_current_recorder(recorder)
    try:
        yield _graph_of(recorder)
        _commit(recorder)
    finally:
        set_current_recorder(previous)


def get_default_graph(*args: Any, **kwargs: Any) -> Any:
    """The graph functions given ``nn.ProtoVariable`` s outside a ``graph()`` block record in
    (inside one: the block's), the network recorded last committed to it; with a network
    name (the first argument, or ``name=``) that network, or ``None``."""
    name = (args[0] if isinstance(args[0], str) else None) if args else kwargs.get("name")
    g = _commit(current_recorder())
    return g if name is None else g.networks.get(name)


def reset_default_graph() -> None:
    """Start a new, empty default graph (inside a ``graph()`` block: the block's recording)."""
    set_current_recorder(Recorder())


def get_default_graph_by_variable(proto_variable: Any) -> ProtoNetwork:
    """The network of the default graph whose output ``proto_variable`` is (the network
    recorded last committed first); NNabla's ``ValueError`` (``NAME is not the output variable
    of any network``) if none is, as for an ``nn.Variable``."""
    g = _commit(current_recorder())
    name = getattr(proto_variable, "name", "") or ""
    for network in g.networks.values():
        if name in network.outputs:
            return network
    raise ValueError(f"{name} is not the output variable of any network")


def _read(path: str) -> Any:
    from ...serialize import read_legacy_model
    return read_legacy_model(path)


def load(filename: str | os.PathLike, batch_size: int | None = None) -> ProtoGraph:
    """The networks of an NNabla ``.nnp`` / ``.nntxt`` file as a :class:`ProtoGraph` holding
    the file's parameters (new ``nn.Variable`` s: the current parameter scope is left alone,
    as NNabla 1.39's); ``batch_size`` replaces the networks' own."""
    model = _read(os.fspath(filename))
    if batch_size is not None:
        model = dataclasses.replace(model, networks=OrderedDict(
            (k, dataclasses.replace(n, batch_size=int(batch_size)))
            for k, n in model.networks.items()))
    params = OrderedDict((k, Variable.from_numpy_array(p.value, need_grad=bool(p.need_grad)))
                         for k, p in model.parameters.items())
    g = ProtoGraph(model, params)
    for network in g.networks.values():     # NNabla's args: those of the functions built
        try:
            take_arguments(network, g._build(network, (), None)[1], built=True)
        except Exception:  # noqa: BLE001 - a network built only when called keeps the file's
            pass
    return g


def create_graph_from_variable(name: str, variables: Any, names: dict | None = None,
                               parameter_scope: Any = None) -> ProtoGraph:
    """The :class:`ProtoGraph` of the network ``name`` computing ``variables`` (one
    ``nn.Variable`` or several: those no other of them reads are the outputs), its buffers
    named by ``names`` (name -> Variable) where it names them and as NNabla names them
    otherwise, its parameters by their scope names (of ``parameter_scope``, a parameter
    dict, when given).  The graph computes with those parameter Variables themselves."""
    return _from_variables(name, variables, names, parameter_scope)


def _from_variables(name: str, variables: Any, names: dict | None, parameter_scope: Any,
                    recorder: Recorder | None = None) -> ProtoGraph:
    """:func:`create_graph_from_variable`; of a network ``recorder`` recorded, its
    parameters named as that recording names them (``recorded_parameter_names``)."""
    from ._parameter import get_parameters
    from .utils.save import create_proto
    outs = list(variables) if isinstance(variables, (list, tuple)) else [variables]
    names = dict(names or {})
    by_id = {id(v): k for k, v in names.items()}
    outputs: "OrderedDict[str, Any]" = OrderedDict()
    unnamed_outputs: dict[str, int] = {}
    for k, v in enumerate(outs):
        key = by_id.get(id(v))
        if key is None:
            key = f"stadyn_graph_def_output_{k}"
            unnamed_outputs[key] = k
        outputs[key] = v
    batch = outs[0].shape[0] if outs and outs[0].shape else 1
    proto = create_proto({"networks": [{"name": name, "batch_size": batch, "outputs": outputs,
                                        "names": names}]})
    folder = tempfile.mkdtemp(prefix="stadyn_graph_def_")
    try:
        path = os.path.join(folder, "network.nntxt")
        proto.include_params = True
        text = proto.text()
        first = _read_text(text, path)
        net = first.networks[name]
        unnamed_inputs = {i for i in net.inputs if i not in names}
        text = nnabla_names(text, name, unnamed_outputs, unnamed_inputs)
        renamed = recorded_parameter_names(text, recorder) if recorder is not None else {}
        for new, old in renamed.items():
            text = text.replace(f'"{old}"', f'"{new}"')
        model = _read_text(text, path)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    net = model.networks[name]
    read = {i for f in net.all_functions() for i in f.inputs}
    net.outputs[:] = [o for o in net.outputs if o not in read] or net.outputs
    if parameter_scope is not None:
        from .utils.nnp_graph import _flatten
        scope = _flatten(parameter_scope) if parameter_scope else {}
    else:
        scope = get_parameters(grad_only=False)
    if recorder is not None and recorder.parameters:    # nn.Variables the recording was given
        scope = {**scope, **recorder.parameters}
    params: "OrderedDict[str, Any]" = OrderedDict()
    for k, p in model.parameters.items():
        held = scope.get(renamed.get(k, k))
        if held is not None and tuple(held.shape) == tuple(p.value.shape):
            params[k] = held
        else:
            params[k] = Variable.from_numpy_array(p.value, need_grad=bool(p.need_grad))
    made = ProtoGraph(model, params, from_variables=True)
    take_arguments(made.networks[name], outs)
    return made


def _read_text(text: str, path: str) -> Any:
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return _read(path)
