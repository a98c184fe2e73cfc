"""``nnabla.utils.nnp_graph`` on Stadyn: :class:`NnpLoader` builds the networks of an NNabla
``.nnp`` / ``.nntxt`` file as Stadyn graphs (``stadyn.load_nnp``), without NNabla.

As NNabla 1.39's, the loader reads the file's parameters once, into Variables of its own; each
``get_network`` gives the network new parameter Variables that share those values and
gradients (``Variable.unlinked``), each with ``need_grad`` set (as NNabla 1.39 sets it for every
parameter of a network, the running statistics' too; a pass's ``fix_parameters`` clears it), and
publishes them in the current parameter scope (Stadyn's current registry) under the file's
names, replacing what was there.  So a second network of the same loader computes with the
values the first one's training or running statistics left, not the file's, even after
``nn.clear_parameters()``.  A network's inputs are the variables no function writes, its
outputs those no function reads.  ``get_network(..., callback=NnpNetworkPass(...))`` rewrites
the network while building it (``_nnp_pass.py``).

The loader keeps the values in its Variables only (the file's arrays are dropped once read).
``NnpLoader(path, scope=d)`` with a non-empty NNabla parameter-scope dict (nested by scope name,
``{"fc": {"W": Variable}}``) keeps them in ``d``: a parameter ``d`` holds gets the file's values
written into it, the others are added; an empty dict is ignored, as NNabla's test of its truth
ignores it.  A parameter the file names but holds no values for is made from the file's
initializer with the loader's ``RandomState(1223)`` (zeros without one), as NNabla's
(``_file_parameters.py``).
"""

from __future__ import annotations

import dataclasses
import os
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import numpy as np

from ....graph import Variable, topological_nodes
from ....parametric import ParameterRegistry, set_parameter
from ....serialize import (LegacyModel, LegacyNetwork, LegacyParameter, load_nnp,
                           read_legacy_model)
from .._function import as_function
from .._kept_dtypes import keep, kept_across
from .._parameter import kept_file_arrays
from .._variable import Variable as NnablaVariable, as_nnabla
from ._file_parameters import declared_parameters, initial_value
from ._nnp_pass import NnpNetworkPass, apply_pass, substitute

__all__ = ["NnpLoader", "NnpNetwork", "NnpNetworkPass"]


class NnpNetwork:
    """One network of an ``.nnp`` file, built: ``inputs`` and ``outputs`` (ordered dicts name ->
    Variable), ``variables`` (every variable of the file's network -- inputs, the functions'
    outputs, then the parameters it uses, in file order), ``name``, ``batch_size``.  As NNabla
    1.39's, each Variable is an ``nn.Variable`` named by the file (``v.name``, the key it has
    in ``variables``), and a function output's ``parent`` is NNabla's function of that type
    (``parent.name`` is ``'Affine'``, ``'ReLU'``).

    Set ``inputs[...].d`` and call ``outputs[...].forward()``, as with NNabla."""

    def __init__(self, name: str, network: Any, batch_size: int, legacy: LegacyNetwork):
        self.name = name
        self.batch_size = batch_size
        self.network = network
        self.inputs = OrderedDict(network.inputs)
        self.outputs = OrderedDict(network.outputs)
        # NNabla's order: the file's variables (``legacy``: the network as the file has it),
        # then the parameters it uses
        self.variables = _file_names(network, legacy)
        self.variables.update((k, v) for k, v in network.parameters.items()
                              if k not in self.variables)
        for k, v in self.variables.items():
            as_nnabla(v).name = k
        for node in topological_nodes(list(self.variables.values())):
            as_function(node)

    def __repr__(self) -> str:
        return (f"<NnpNetwork {self.name!r} inputs={list(self.inputs)} "
                f"outputs={list(self.outputs)}>")


class NnpLoader:
    """NNabla's ``NnpLoader``: ``get_network_names()`` and ``get_network(name, batch_size)``.

    Example:
        >>> import os, tempfile, numpy as np
        >>> path = os.path.join(tempfile.mkdtemp(), "tiny.nntxt")
        >>> with open(path, "w") as f:
        ...     _ = f.write('network { name: "n" batch_size: 2 '
        ...                 'variable { name: "x" type: "Buffer" shape { dim: -1 dim: 2 } } '
        ...                 'variable { name: "y" type: "Buffer" shape { dim: -1 dim: 2 } } '
        ...                 'function { name: "r" type: "ReLU" input: "x" output: "y" } }')
        >>> nnp = NnpLoader(path)
        >>> nnp.get_network_names()
        ['n']
        >>> net = nnp.get_network("n", batch_size=1)
        >>> net.inputs["x"].d = np.array([[-1.0, 3.0]])
        >>> net.outputs["y"].forward()
        >>> net.outputs["y"].d
        array([[0., 3.]], dtype=float32)
    """

    def __init__(self, filepath: str | os.PathLike, scope: Any = None,
                 extension: str = ".nntxt"):
        model = read_legacy_model(filepath)
        # NNabla tests ``scope`` for truth: an empty dict is left alone
        self._scope = scope if scope else None
        held = _flatten(self._scope) if self._scope is not None else {}
        kept = kept_file_arrays(filepath)       # what NNabla holds in float64, float16 ...
        self._params: "OrderedDict[str, Variable]" = OrderedDict()
        for k, p in model.parameters.items():
            var = held.get(k)
            if var is None:
                var = NnablaVariable.from_numpy_array(p.value, need_grad=bool(p.need_grad))
                if self._scope is not None:
                    _insert(self._scope, k, var)
            elif tuple(var.shape) != p.value.shape:
                raise ValueError(f"{model.path}: the scope's parameter {k!r} has the shape "
                                 f"{tuple(var.shape)}, the file's is {p.value.shape}")
            else:       # written in place, as NNabla's get_parameter_or_create and .d = ...
                var.d = p.value
                var.need_grad = bool(p.need_grad)
            if k in kept:
                keep(var, kept[k])
            self._params[k] = var
        # the loader holds the values in its Variables only: the file's arrays are dropped
        self._model = dataclasses.replace(model, parameters=OrderedDict(
            (k, dataclasses.replace(p, value=np.broadcast_to(np.float32(0), p.value.shape)))
            for k, p in model.parameters.items()))
        self._rng = np.random.RandomState(1223)     # NNabla's, for parameters the file lacks

    def get_network_names(self) -> list[str]:
        """The names of the file's networks, in file order."""
        return list(self._model.networks)

    def get_network(self, name: str, batch_size: int | None = None,
                    callback: Any = None) -> NnpNetwork:
        """The network ``name`` built for ``batch_size`` (default: the file's), rewritten by
        ``callback`` (an :class:`NnpNetworkPass`) if given; its parameters share the loader's
        values (see the module's docstring)."""
        if name not in self._model.networks:
            raise KeyError(name)
        if callback is None:
            network = self._model.networks[name]
            net = self._build(name, network, batch_size, {})
            return NnpNetwork(name, net, int(net.info().details.get("batch_size", 1)), network)
        if not isinstance(callback, NnpNetworkPass):
            raise TypeError(f"get_network(callback=...): an NnpNetworkPass, got "
                            f"{type(callback).__name__}")
        need_grad = {k: bool(p.need_grad) for k, p in self._model.parameters.items()}
        rewritten, replaced, grads = apply_pass(self._model.networks[name], callback,
                                                need_grad)
        net = self._build(name, rewritten, batch_size, grads)
        built = NnpNetwork(name, net, int(net.info().details.get("batch_size", 1)), rewritten)
        for k, var in replaced.items():
            if k in built.inputs:
                substitute(built.inputs[k], var)
                built.inputs[k] = built.variables[k] = var
        return built

    def _build(self, name: str, network: LegacyNetwork, batch_size: int | None, grads: dict) -> Any:
        """``network`` built over new Variables sharing the loader's parameters (``need_grad``
        set unless ``grads`` clears it), which go to the current scope."""
        if self._scope is not None:     # the scope dict may have been given other Variables
            self._params.update((k, v) for k, v in _flatten(self._scope).items()
                                if k in self._params)
        declared = declared_parameters(dataclasses.replace(
            self._model, networks=OrderedDict([(name, network)])))
        for k, (shape, initializer) in declared.items():
            if k not in self._params:   # NNabla makes it from the file's initializer
                var = NnablaVariable.from_numpy_array(
                    initial_value(initializer, shape, self._rng), need_grad=True)
                if self._scope is not None:
                    _insert(self._scope, k, var)
                self._params[k] = var
        read = {i for f in network.all_functions() for i in f.inputs}
        used = [k for k in self._params if k in read]
        registry = ParameterRegistry()
        for k in used:      # NNabla 1.39 gives every parameter of a network need_grad
            registry.set(k, self._params[k].unlinked(need_grad=grads.get(k, True)))
        # the build writes each parameter's value into the registry's Variable: give it the
        # loader's current values (a view of them), so nothing is reset to the file's
        current = OrderedDict(
            (k, LegacyParameter(k, self._params[k].d, bool(self._params[k].need_grad)))
            for k in used)
        model: LegacyModel = dataclasses.replace(
            self._model, networks=OrderedDict([(name, network)]), parameters=current)
        with kept_across(self._params[k] for k in used):
            net = load_nnp(model, network=name, batch_size=batch_size, registry=registry,
                           draws="nnabla")     # random functions draw NNabla 1.39's numbers
        for k, var in registry.items():
            set_parameter(k, var)
        return net


def _file_names(network: Any, legacy: LegacyNetwork) -> "OrderedDict[str, Variable]":
    """The built ``network``'s Variables by the names ``legacy`` (the file's network) gives
    them, in the file's order of variables: inputs, parameters and function outputs (found
    through the origins the build recorded: a function's name and which of its outputs).
    (Also ``graph_def``'s, for the Variables a call of a ``ProtoNetwork`` built.)"""
    outputs = {f.name: f.outputs for f in legacy.all_functions()}
    found: dict[str, Any] = {}
    for var, origin in network.origins:
        if origin.kind == "function":
            names = outputs.get(origin.uid, ())
            if origin.output < len(names):
                found.setdefault(names[origin.output], var)
        elif origin.kind in ("input", "parameter"):
            found.setdefault(origin.uid, var)
    found.update(network.inputs)
    found.update(network.outputs)
    return OrderedDict((k, found[k]) for k in legacy.variables if k in found)


def _flatten(scope: Mapping, prefix: str = "") -> "OrderedDict[str, Any]":
    """NNabla's parameter-scope dict (nested by scope name) as ``{"a/b": Variable}``."""
    flat: "OrderedDict[str, Any]" = OrderedDict()
    for k, v in scope.items():
        if isinstance(v, Mapping):
            flat.update(_flatten(v, f"{prefix}{k}/"))
        else:
            flat[f"{prefix}{k}"] = v
    return flat


def _insert(scope: dict, name: str, var: Any) -> None:
    """Put ``var`` in NNabla's scope dict under ``name`` (``a/b``: ``scope["a"]["b"]``)."""
    *outer, leaf = name.split("/")
    for k in outer:
        scope = scope.setdefault(k, OrderedDict())
    scope[leaf] = var
