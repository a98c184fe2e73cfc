"""NNabla 1.39's ``nn.graph_def`` (``nnabla.core.graph_def``), the part a graph of ``nn.Variable``
reaches: :func:`create_graph_from_variable` describes the network computing some variables as a
:class:`ProtoGraph` (its :class:`ProtoNetwork` s of :class:`ProtoFunction` s and
``ProtoVariable`` s, named as NNabla names them), which is saved (``g.save("net.nnp")``),
loaded back (:func:`load`) and called on new inputs (``y = g(x)``) to build the network again
over the graph's parameters.

Stadyn writes the description with its own ``.nnp`` writer and reads it back with its ``.nnp``
reader (``stadyn.serialize``), so a graph holds what a saved file holds.  NNabla's proto graphs
recorded from ``nn.ProtoVariable`` inputs (``with nn.graph_def.graph(): ...``) are not here:
a function given a ``ProtoVariable`` raises the ``TypeError`` saying so, and
:func:`get_default_graph` is the empty graph they would fill.

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
import re
import shutil
import tempfile
from collections import OrderedDict
from typing import Any, Sequence

import numpy as np

from ..._errors import ModelFileError, ShapeError
from ._proto_variable import ProtoVariable
from ._variable import Variable, as_nnabla

__all__ = ["ProtoGraph", "ProtoNetwork", "ProtoFunction", "ProtoVariable",
           "create_graph_from_variable", "load", "get_default_graph", "reset_default_graph",
           "get_default_graph_by_variable"]


class ProtoFunction:
    """A function of a :class:`ProtoNetwork`: its ``name`` (``'@net/Affine'``), ``type``
    (``'Affine'``), ``inputs`` and ``outputs`` (variable names) and ``args`` (its arguments:
    of a network made from Variables, NNabla's ``f.info.args``, every argument with the
    defaults filled, ``{'inplace': False}``; of a loaded one, those the file holds).

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

    def __call__(self, *args: Any, batch_size: int | None = None) -> Any:
        """The network built over ``args`` (its inputs, in order; none: the inputs of the last
        call, as NNabla 1.39 keeps them, or at the first new input Variables of the network's
        shape, at ``batch_size`` or the network's), computing with the graph's parameters: the
        output Variable, or a tuple of them.  A Reshape or Broadcast to a shape of the batch
        axis stays at the network's batch size, as NNabla's: a call at another that it cannot
        take raises NNabla's ``RuntimeError``, a Broadcast of a batch of 1 gives the network's
        batch."""
        if not args and self._instances is not None:
            args, batch_size = tuple(self._instances), None   # (their batch size)
        elif len(args) == len(self.inputs):
            self._instances = list(args)     # NNabla's, kept even when the call then fails
        inputs, outputs = self._owner._build(self, args, batch_size)
        self._instances = list(inputs)
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
        from .utils.save import save
        nets = []
        for network in self.networks.values():
            built = self._build(network, (), None)
            nets.append({"name": network.name, "batch_size": network._legacy.batch_size,
                         "outputs": OrderedDict(zip(network.outputs, built[1])),
                         "names": OrderedDict(zip(network.inputs, built[0]))})
        contents: dict = {"networks": nets}
        if executors:
            contents["executors"] = list(executors)
        save(os.fspath(filename), contents, include_params=include_parameter,
             variable_batch_size=variable_batch_size)

    def _build(self, network: ProtoNetwork, args: Sequence[Any], batch_size: int | None
               ) -> tuple[list, list]:
        """``network`` built over ``args`` (new input Variables for those not given): its
        inputs and outputs, as ``nn.Variable`` s."""
        from ...parametric import ParameterRegistry
        from ...serialize import LegacyParameter, load_nnp
        from .utils._nnp_pass import substitute
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
        if batch_size is None and args and network.inputs:     # the given input's batch
            first = network._legacy.variables.get(network.inputs[0])
            if first is not None and first.shape and first.shape[0] < 0 and args[0].shape:
                batch_size = int(args[0].shape[0])
        _check_batch(network, batch_size)
        own = int(network._legacy.batch_size or 1)
        if batch_size is not None and batch_size != own:
            model = dataclasses.replace(model, networks=OrderedDict(
                [(network.name, _broadcast_at(network._legacy, own))]))
        try:
            built = load_nnp(model, network=network.name, batch_size=batch_size,
                             registry=registry, draws="nnabla")
        except ModelFileError as e:
            if batch_size is None or batch_size == own or not isinstance(e.__cause__,
                                                                         ShapeError):
                raise
            # a function NNabla 1.39 sets up with the network's Broadcast at its batch size
            # and an input at the call's: its setup's RuntimeError
            raise RuntimeError(f"value error in setup_impl\n{network.name} (called at batch "
                               f"size {batch_size}; NNabla 1.39's graph_def broadcasts to "
                               f"the network's {own}): {e}") from e
        inputs = [as_nnabla(built.inputs[k]) for k in network.inputs]
        for k, given in enumerate(args):
            substitute(inputs[k], given)
            inputs[k] = given
        outputs = [as_nnabla(built.outputs[k]) for k in network.outputs]
        return inputs, outputs


def _at(shape: Sequence[int], batch: int) -> tuple[int, ...]:
    return tuple(batch if k == 0 and d < 0 else int(d) for k, d in enumerate(shape))


def _broadcast_at(legacy: Any, batch: int) -> Any:
    """``legacy`` (a network) whose Broadcasts to a shape of the batch axis (``-1`` first)
    broadcast to ``batch``: NNabla 1.39's ``graph_call`` makes them at the network's batch
    size whatever the inputs' (a Broadcast of a batch of 1 gives the network's batch)."""
    def fixed(f: Any) -> Any:
        shape = f.attrs.get("shape") if f.type == "Broadcast" else None
        if not shape or int(shape[0]) >= 0:
            return f
        return dataclasses.replace(f, attrs={**f.attrs, "shape": _at(shape, batch)})
    return dataclasses.replace(legacy, functions=[fixed(f) for f in legacy.functions])


def _check_batch(network: ProtoNetwork, batch: int | None) -> None:
    """NNabla 1.39's ``RuntimeError`` for a network called at a batch size its Reshape or
    Broadcast cannot take: its graph_def builds them at the network's batch size (the recorded
    one, or ``load``'s ``batch_size``) whatever the inputs' (Stadyn's ``.nnp`` loader follows
    the inputs), so that a Reshape whose input has another size, or a Broadcast from another
    batch than 1 or its own, fails in setup (``reshape.cpp:56``, ``broadcast.cpp:54``)."""
    legacy = network._legacy
    own = int(legacy.batch_size or 1)
    if batch is None or batch == own:
        return
    shapes = {k: tuple(v.shape or ()) for k, v in legacy.variables.items()}
    for f in legacy.all_functions():
        if f.type not in ("Reshape", "Broadcast") or not f.inputs or \
                f.inputs[0] not in shapes or "shape" not in f.attrs:
            continue
        given = _at(shapes[f.inputs[0]], batch)
        if f.type == "Reshape":
            target = _at(f.attrs["shape"], own)
            size, target_size = int(np.prod(given)), int(np.prod(target))
            if size != target_size:
                raise RuntimeError(
                    f"value error in setup_impl\n{f.name} (called at batch size {batch}; "
                    f"NNabla 1.39's graph_def reshapes at the network's {target}): "
                    f"reshape.cpp:56\nFailed `tsize == tsize2`: Product of dimensions of "
                    f"inputs and outputs must be same. Inputs: {size} != Outputs: "
                    f"{target_size}.")
            continue
        target = _at(f.attrs["shape"], own)
        lead = len(target) - len(given)
        if lead < 0 or all(e in (t, 1) for e, t in zip(given, target[lead:])):
            continue
        raise RuntimeError(
            f"value error in setup_impl\n{f.name} (called at batch size {batch}; NNabla "
            f"1.39's graph_def broadcasts to the network's {target}): broadcast.cpp:54\n"
            f"Failed `eshape[d] == shape_[d] || eshape[d] == 1`: Trailing shapes must be "
            f"same or dimension of trailing shape of input has 1.Input shpae = {given}, "
            f"Target shape = {target}")


_DEFAULT: list[ProtoGraph] = [ProtoGraph()]


def get_default_graph(*args: Any, **kwargs: Any) -> ProtoGraph:
    """The graph ``with nn.graph_def.graph():`` blocks fill in NNabla (empty here: Stadyn
    records no graphs of ``nn.ProtoVariable``; see the module's docstring)."""
    return _DEFAULT[0]


def reset_default_graph() -> None:
    """Start a new, empty default graph."""
    _DEFAULT[0] = ProtoGraph()


def get_default_graph_by_variable(proto_variable: Any) -> ProtoGraph:
    """The default graph holding the network whose output ``proto_variable`` is: NNabla's
    ``ValueError`` (``NAME is not the output variable of any network``) for any variable here,
    as NNabla 1.39 gives it for an ``nn.Variable``, since Stadyn records no proto graphs."""
    raise ValueError(f"{getattr(proto_variable, 'name', '') or ''} is not the output variable "
                     f"of any network")


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
    return ProtoGraph(model, params)


def _nnabla_names(text: str, network: str, unnamed_outputs: dict[str, int],
                  unnamed_inputs: set[str]) -> str:
    """``text`` (one network's ``.nntxt``) with the buffers ``create_graph_from_variable`` was
    given no name for named as NNabla 1.39 names them: an output after its function
    (``@net/Affine_1`` writes ``@net/Affine_out_1``), an input after the first function
    reading it (``@net/Affine_in``)."""
    functions = re.findall(r'function \{\s*name: "([^"]*)"\s*type: "([^"]*)"((?:\s*input: '
                           r'"[^"]*")*)((?:\s*output: "[^"]*")*)', text)
    renames: dict[str, str] = {}
    for fname, ftype, ins, outs in functions:
        for position, out in enumerate(re.findall(r'output: "([^"]*)"', outs)):
            if out in unnamed_outputs:
                m = re.fullmatch(r"(.*)_(\d+)", fname)
                stem, count = (m.group(1), m.group(2)) if m and m.group(1).endswith(ftype) \
                    else (fname, None)
                new = f"{stem}_out" + (f"_{count}" if count else "")
                renames[out] = new if position == 0 else f"{new}_{position}"
        for inp in re.findall(r'input: "([^"]*)"', ins):
            if inp in unnamed_inputs and inp not in renames:
                renames[inp] = f"{fname}_in"
    for old, new in renames.items():
        text = text.replace(f'"{old}"', f'"{new}"')
    return text


def create_graph_from_variable(name: str, variables: Any, names: dict | None = None,
                               parameter_scope: Any = None) -> ProtoGraph:
    """The :class:`ProtoGraph` of the network ``name`` computing ``variables`` (one
    ``nn.Variable`` or several: those no other of them reads are the outputs), its buffers
    named by ``names`` (name -> Variable) where it names them and as NNabla names them
    otherwise, its parameters by their scope names (of ``parameter_scope``, a parameter
    dict, when given).  The graph computes with those parameter Variables themselves."""
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
        text = _nnabla_names(text, name, unnamed_outputs, unnamed_inputs)
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
    params: "OrderedDict[str, Any]" = OrderedDict()
    for k, p in model.parameters.items():
        held = scope.get(k)
        if held is not None and tuple(held.shape) == tuple(p.value.shape):
            params[k] = held
        else:
            params[k] = Variable.from_numpy_array(p.value, need_grad=bool(p.need_grad))
    made = ProtoGraph(model, params, from_variables=True)
    _take_arguments(made.networks[name], outs)
    return made


def _take_arguments(network: ProtoNetwork, outputs: Sequence[Any]) -> None:
    """Give each function of ``network`` (made from the graph computing ``outputs``) NNabla
    1.39's ``args``: its ``Function``'s arguments (``f.info.args``: every argument, defaults
    filled, lists, float32 values), where the file holds only those the writer writes.  The
    written functions are matched to the graph's in order, by type."""
    from ...graph import topological_nodes
    from ._function import Function
    nodes = [n for n in topological_nodes([v for v in outputs if isinstance(v, Variable)])
             if isinstance(n, Function)]
    taken: set[int] = set()
    for f in network.functions.values():
        for k, node in enumerate(nodes):
            if k not in taken and node.name == f.type:
                taken.add(k)
                f.args = dict(node.arguments)
                break


def _read_text(text: str, path: str) -> Any:
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return _read(path)
