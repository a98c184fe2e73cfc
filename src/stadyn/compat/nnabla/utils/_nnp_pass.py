"""NNabla's ``NnpNetworkPass``: rewriting a network of an ``.nnp`` file while
``NnpLoader.get_network(name, callback=pass)`` builds it (nnabla-examples drop a file's input
augmentation, feed their own Variable instead, cut the network at a feature layer, freeze the
parameters and switch batch normalisation to its running statistics this way).

The pass works on a copy of the file's network (``stadyn.serialize``'s ``LegacyNetwork``),
through the objects NNabla's callbacks get: a *function* (``name``, ``inputs``, ``outputs``,
``disable()``, and ``proto`` -- ``type``, ``input``, ``output`` and the ``<kind>_param``
attributes as the file holds them, a shape's ``dim`` a list one can assign ``dim[:] = ...``) and
a *variable* (``name``, ``proto.shape.dim``, ``proto.name``, ``parent``, ``referrers``,
``need_grad``, ``stop``, ``variable`` -- a Variable to use instead of it -- and
``rewire_on``).  The steps and their order are NNabla 1.39's: variable callbacks, function
callbacks by type then by name, function passes in forward order, ``use_up_to`` stops, then
what a stop or a dropped function leaves unused is removed; the network's inputs are then the
variables no function writes and its outputs those no function reads.

A variable replaced by a Variable computed by ops (``set_variable``) becomes that op's output
in the built graph, so gradients reach what it was computed from; a replaced *leaf* Variable
is read (its value at each run) but gets no gradient from the network.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from typing import Any, Callable

from ....graph import Variable as _Core
from ....graph import read_value_of
from ....parametric import current_registry
from ....serialize import LegacyFunction, LegacyNetwork, LegacyVariable
from .._readers import note_rewired

__all__ = ["NnpNetworkPass", "apply_pass"]


class _Dims:
    """A shape field of a proto (``kernel``, ``pad``, a variable's ``shape``): ``dim`` reads
    and ``dim[:] = [...]`` writes the value in place."""

    def __init__(self, get: Callable[[], Any], set_: Callable[[Any], None]):
        self._get, self._set = get, set_

    @property
    def dim(self) -> "_Dims":
        return self

    def __getitem__(self, index):
        return list(self._get() or ())[index]

    def __setitem__(self, index, value) -> None:
        dims = list(self._get() or ())
        dims[index] = value
        self._set(tuple(int(d) for d in dims))

    def __len__(self) -> int:
        return len(self._get() or ())

    def __iter__(self):
        return iter(list(self._get() or ()))

    def __repr__(self) -> str:
        return f"dim: {list(self._get() or ())}"


class _Param:
    """A function's ``<kind>_param``: its attributes, shapes as :class:`_Dims`."""

    def __init__(self, attrs: dict, where: str):
        object.__setattr__(self, "_attrs", attrs)
        object.__setattr__(self, "_where", where)

    def __getattr__(self, key: str):
        attrs = self._attrs
        if key not in attrs:
            raise AttributeError(f"{self._where}: the file gives no {key!r}; it has "
                                 f"{sorted(attrs)}")
        if isinstance(attrs[key], (tuple, list)):
            return _Dims(lambda: attrs[key], lambda v: attrs.__setitem__(key, v))
        return attrs[key]

    def __setattr__(self, key: str, value) -> None:
        self._attrs[key] = value


class _FunctionProto:
    """``f.proto``: ``name``, ``type``, ``input``, ``output`` and ``<kind>_param``."""

    def __init__(self, fn: "_Fn"):
        self._fn = fn

    name = property(lambda self: self._fn.name)
    type = property(lambda self: self._fn.type)
    input = property(lambda self: list(self._fn.inputs))
    output = property(lambda self: list(self._fn.outputs))

    def __getattr__(self, key: str):
        if key.endswith("_param"):
            return _Param(self._fn.attrs, f"function {self._fn.name!r} ({self._fn.type})")
        raise AttributeError(key)


class _VariableProto:
    """``v.proto``: ``name`` (setting it renames the variable), ``type`` and ``shape.dim``."""

    def __init__(self, var: "_Var"):
        self._var = var

    @property
    def name(self) -> str:
        return self._var.proto_name

    @name.setter
    def name(self, value: str) -> None:
        self._var.proto_name = value

    @property
    def type(self) -> str:
        return "Parameter" if self._var.kind == "parameter" else "Buffer"

    @property
    def shape(self) -> _Dims:
        var = self._var
        return _Dims(lambda: var.shape, lambda v: setattr(var, "shape", v))


class _Fn:
    def __init__(self, f: LegacyFunction):
        self.name, self.type = f.name, f.type
        self.inputs, self.outputs = list(f.inputs), list(f.outputs)
        self.attrs, self.meta = copy.deepcopy(f.attrs), dict(f.meta)
        self.disabled = False


class _Var:
    def __init__(self, v: LegacyVariable, need_grad: bool):
        self.name = self.proto_name = v.name
        self.kind, self.shape, self.dtype, self.meta = v.kind, v.shape, v.dtype, dict(v.meta)
        self.need_grad = need_grad
        self.stop = False
        self.parent: str | None = None
        self.required: list[str] = []
        self.variable: Any = None


class _Work:
    """The network being rewritten and the delegates the callbacks see."""

    def __init__(self, net: LegacyNetwork, need_grad: dict):
        self.name, self.batch_size, self.attrs = net.name, net.batch_size, net.attrs
        self.functions = OrderedDict((f.name, _Fn(f)) for f in net.functions)
        self.vars = OrderedDict((k, _Var(v, need_grad.get(k, False)))
                                for k, v in net.variables.items())
        for fn in self.functions.values():
            for n in fn.inputs + fn.outputs:
                if n not in self.vars:
                    self.vars[n] = _Var(LegacyVariable(n, "buffer", None), need_grad.get(n, False))
            for n in fn.inputs:
                self.vars[n].required.append(fn.name)
            for n in fn.outputs:
                self.vars[n].parent = fn.name
        self.fdel = OrderedDict((k, _FunctionDelegate(f, self)) for k, f in self.functions.items())
        self.vdel = OrderedDict((k, _VariableDelegate(v, self)) for k, v in self.vars.items())
        self.inputs: list[str] = []
        self.outputs: list[str] = []

    def update_ports(self) -> None:
        keep = [v for v in self.vars.values() if v.required or v.parent]
        ordinary = [v for v in keep if v.kind != "parameter"]
        self.inputs = [v.name for v in ordinary if not v.parent and v.required]
        self.outputs = [v.name for v in ordinary if v.parent and not v.required]

    def rename(self, renames: dict) -> None:
        """Apply ``renames`` (old -> new variable name); a variable renamed to another's name
        takes its place (and its readers)."""
        merged: "OrderedDict[str, _Var]" = OrderedDict()
        for v in self.vars.values():
            new = renames.get(v.name, v.name)
            if new in merged:
                old = merged[new]
                v.required = old.required + [r for r in v.required if r not in old.required]
                v.parent = v.parent if v.parent is not None else old.parent
            v.name = v.proto_name = new
            merged[new] = v
        self.vars = merged
        self.vdel = OrderedDict((k, _VariableDelegate(v, self)) for k, v in merged.items())
        for f in self.functions.values():
            f.inputs = [renames.get(n, n) for n in f.inputs]
            f.outputs = [renames.get(n, n) for n in f.outputs]

    def network(self) -> LegacyNetwork:
        live = [f for f in self.functions.values() if not f.disabled]
        used = {n for f in live for n in f.inputs + f.outputs}
        variables = OrderedDict(
            (v.name, LegacyVariable(v.name, v.kind if v.kind == "parameter" or v.parent
                                    else "buffer", None if v.shape is None else tuple(v.shape),
                                    v.dtype, dict(v.meta)))
            for v in self.vars.values() if v.name in used)
        functions = [LegacyFunction(f.name, f.type, tuple(f.inputs), tuple(f.outputs),
                                    f.attrs, None, f.meta) for f in live]
        return LegacyNetwork(self.name, functions, variables, list(self.inputs),
                             list(self.outputs), self.batch_size, dict(self.attrs))


class _VariableDelegate:
    """A variable as NNabla's pass callbacks see it (see the module docstring)."""

    def __init__(self, var: _Var, work: _Work):
        self._v, self._w = var, work

    @property
    def proto(self) -> _VariableProto:
        return _VariableProto(self._v)

    @property
    def name(self) -> str:
        return self._v.name

    @property
    def parent(self) -> "_FunctionDelegate | None":
        return None if self._v.parent is None else self._w.fdel[self._v.parent]

    @parent.setter
    def parent(self, f: "_FunctionDelegate | None") -> None:
        self._v.parent = None if f is None else f.name

    def add_referrer(self, f: "_FunctionDelegate") -> None:
        self._v.required.append(f.name)

    def delete_referrer(self, f: "_FunctionDelegate") -> None:
        self._v.required.remove(f.name)

    @property
    def referrers(self) -> dict:
        return {n: self._w.fdel[n] for n in self._v.required}

    @property
    def num_referrers(self) -> int:
        return len(self._v.required)

    def rewire_on(self, var: "_VariableDelegate") -> None:
        """Take ``var``'s place as its parent's output (this variable's own parent is
        disabled), as NNabla's."""
        parent = var.parent
        if self.parent is not None:
            self.parent.disable()
        self.parent = parent
        var.parent = None
        self.variable = var.variable
        if var.variable is not None:    # a Variable given by set_variable: its shape, too
            self._v.shape = var._v.shape
        if parent is not None:
            parent.outputs = [self if o is var or o.name == var.name else o
                              for o in parent.outputs]

    stop = property(lambda self: self._v.stop, lambda self, s: setattr(self._v, "stop", s))
    need_grad = property(lambda self: self._v.need_grad,
                         lambda self, g: setattr(self._v, "need_grad", g))
    variable = property(lambda self: self._v.variable,
                        lambda self, v: setattr(self._v, "variable", v))

    def __repr__(self) -> str:
        return f"<variable {self._v.name!r}>"


class _FunctionDelegate:
    """A function as NNabla's pass callbacks see it (see the module docstring)."""

    def __init__(self, fn: _Fn, work: _Work):
        self._f, self._w = fn, work

    @property
    def proto(self) -> _FunctionProto:
        return _FunctionProto(self._f)

    @property
    def name(self) -> str:
        return self._f.name

    @property
    def inputs(self) -> list:
        return [self._w.vdel[n] for n in self._f.inputs]

    @inputs.setter
    def inputs(self, inputs: list) -> None:
        self._f.inputs = [v.name for v in inputs]

    @property
    def outputs(self) -> list:
        return [self._w.vdel[n] for n in self._f.outputs]

    @outputs.setter
    def outputs(self, outputs: list) -> None:
        self._f.outputs = [v.name for v in outputs]

    def disable(self) -> None:
        """Take the function out: its inputs forget it, its outputs lose their parent."""
        self._f.disabled = True
        for v in self.inputs:
            if self.name in v._v.required:
                v.delete_referrer(self)
        for v in self.outputs:
            v.parent = None
        self._f.inputs, self._f.outputs = [], []

    @property
    def disabled(self) -> bool:
        return self._f.disabled

    def __repr__(self) -> str:
        return f"<function {self._f.name!r} ({self._f.type})>"


def _shorten(renames: dict) -> dict:
    out = {}
    for k in renames:
        d, seen = renames[k], {k}
        while d in renames and d not in seen:
            seen.add(d)
            d = renames[d]
        out[k] = d
    return out


def apply_pass(net: LegacyNetwork, callback: "NnpNetworkPass", need_grad: dict
               ) -> tuple[LegacyNetwork, dict, dict]:
    """Rewrite (a copy of) ``net`` with ``callback``: the new network, the Variables to use
    in place of some of its variables (name -> Variable) and each variable's ``need_grad``."""
    w = _Work(net, need_grad)
    ordinary = [d for d in w.vdel.values() if d._v.kind != "parameter"]
    params = [d for d in w.vdel.values() if d._v.kind == "parameter"]
    for d in ordinary + params:
        callback._apply_generate_variable(d)
    for d in w.fdel.values():
        callback._apply_generate_function_by_type(d)
        callback._apply_generate_function_by_name(d)
    w.update_ports()
    scope = current_registry()
    variables = ordinary + params
    for k, f in w.functions.items():
        if f.disabled:
            continue
        callback._apply_function_pass_by_type(w.fdel[k], variables, scope)
        callback._apply_function_pass_by_name(w.fdel[k], variables, scope)
    renames = _shorten({v.name: v.proto_name for v in w.vars.values()
                        if v.proto_name != v.name})
    w.update_ports()
    for k, f in w.functions.items():
        if not f.disabled:
            callback._apply_use_up_to(w.fdel[k].inputs)
    w.rename(renames)
    for k, f in w.functions.items():         # what a stop leaves: disabled downstream
        if f.disabled or not any(w.vars[n].stop for n in f.inputs):
            continue
        for n in f.outputs:
            w.vars[n].stop = True
        w.fdel[k].disable()
    w.update_ports()
    replaced = {v.name: v.variable for v in w.vars.values() if v.variable is not None}
    return w.network(), replaced, {v.name: v.need_grad for v in w.vars.values()}


def substitute(built: Any, replacement: Any) -> None:
    """Make the built input ``built`` stand for ``replacement``: its op's output when it has
    one, else a leaf reading its value (either way the functions reading ``built`` are
    ``replacement.function_references``, as after NNabla's ``rewire_on``)."""
    note_rewired(built, replacement)
    if replacement.parent is not None:
        _Core.rewire_on(built, replacement)     # (the user's Variable keeps its parent)
    else:
        read_value_of(built, replacement)


class NnpNetworkPass:
    """NNabla's network pass: rules ``NnpLoader.get_network(..., callback=pass)`` applies while
    it builds a network (see the module docstring).  ``verbose`` 1 prints what the built-in
    rules do, as NNabla's.

    Example:
        >>> import os, tempfile, numpy as np
        >>> from stadyn.compat.nnabla.utils.nnp_graph import NnpLoader, NnpNetworkPass
        >>> path = os.path.join(tempfile.mkdtemp(), "tiny.nntxt")
        >>> with open(path, "w") as f:
        ...     _ = f.write('network { name: "n" batch_size: 1 '
        ...                 'variable { name: "x" type: "Buffer" shape { dim: -1 dim: 2 } } '
        ...                 'variable { name: "h" type: "Buffer" shape { dim: -1 dim: 2 } } '
        ...                 'variable { name: "y" type: "Buffer" shape { dim: -1 dim: 2 } } '
        ...                 'function { name: "r" type: "ReLU" input: "x" output: "h" } '
        ...                 'function { name: "t" type: "Tanh" input: "h" output: "y" } }')
        >>> cut = NnpNetworkPass(1)
        >>> cut.use_up_to("h")
        >>> net = NnpLoader(path).get_network("n", callback=cut)
        Stopping at h.
        >>> list(net.inputs), list(net.outputs)
        (['x'], ['h'])
    """

    def _no_verbose(self, *a: Any, **kw: Any) -> None:
        pass

    def _verbose(self, *a: Any, **kw: Any) -> None:
        print(*a, **kw)

    def __init__(self, verbose: int = 0):
        self._variable_callbacks: dict = {}
        self._function_callbacks_by_name: dict = {}
        self._function_callbacks_by_type: dict = {}
        self._passes_by_name: dict = {}
        self._passes_by_type: dict = {}
        self._fix_parameters = False
        self._use_up_to_variables: set = set()
        self.verbose = self._verbose if verbose else self._no_verbose
        self.verbose2 = self._verbose if verbose > 1 else self._no_verbose

    # -- registering callbacks (decorators) --------------------------------------------------------
    def on_function_pass_by_name(self, name: str) -> Callable:
        """Decorator: ``callback(f, variables, param_scope)`` runs for the function ``name`` in
        the forward pass over the network."""
        def register(callback: Callable) -> Callable:
            def call(f, variables, param_scope):
                return callback(f, variables, param_scope)
            self._passes_by_name[name] = call
            return call
        return register

    def on_function_pass_by_type(self, name: str) -> Callable:
        """Decorator: as :meth:`on_function_pass_by_name`; NNabla 1.39 files the callback under
        the *name* ``name`` too (so it runs for a function named so), and so does this."""
        def register(callback: Callable) -> Callable:
            def call(f, variables, param_scope):
                return callback(f, variables, param_scope)
            self._passes_by_name[name] = call
            return call
        return register

    def on_generate_variable(self, name: str) -> Callable:
        """Decorator: ``callback(v)`` (returning ``v``) runs for the variable ``name`` first."""
        def register(callback: Callable) -> Callable:
            def call(v):
                return callback(v)
            self._variable_callbacks[name] = call
            return call
        return register

    def on_generate_function_by_name(self, name: str) -> Callable:
        """Decorator: ``callback(f)`` (returning ``f``) runs for the function ``name`` (to
        change ``f.proto``'s attributes before the network is built)."""
        def register(callback: Callable) -> Callable:
            def call(f):
                return callback(f)
            self._function_callbacks_by_name[name] = call
            return call
        return register

    def on_generate_function_by_type(self, name: str) -> Callable:
        """Decorator: ``callback(f)`` runs for every function of type ``name``."""
        def register(callback: Callable) -> Callable:
            def call(f):
                return callback(f)
            self._function_callbacks_by_type[name] = call
            return call
        return register

    # -- the built-in rules ------------------------------------------------------------------------
    def drop_function(self, *names: str) -> None:
        """Take out the functions ``names``: their outputs become inputs of the network (and
        what fed only them, outputs)."""
        def callback(f, variables, param_scope):
            self.verbose(f"Pass: Deleting {f.name}.")
            f.disable()
        for name in names:
            self.on_function_pass_by_name(name)(callback)

    def fix_parameters(self) -> None:
        """Build every variable, the parameters too, with ``need_grad=False``."""
        self._fix_parameters = True

    def use_up_to(self, *names: str) -> None:
        """Stop at the variables ``names``: what is computed from them is left out, and they
        become outputs."""
        self._use_up_to_variables.update(set(names))

    def remove_and_rewire(self, name: str, i: int = 0, o: int = 0) -> None:
        """Take out the function ``name``, its ``o``-th output replaced by its ``i``-th input
        (under the input's name)."""
        @self.on_function_pass_by_name(name)
        def on_dr(f, variables, param_scope):
            fi = f.inputs[i]
            fo = f.outputs[o]
            self.verbose(f"Removing {f.name} and rewire input={fi.name} and output={fo.name}.")
            fo.rewire_on(fi)
            fo.proto.name = fi.name

    def set_variable(self, name: str, input_var: Any) -> None:
        """Use the Variable ``input_var`` (its shape too) for the variable ``name``."""
        @self.on_generate_variable(name)
        def on_input_x(v):
            self.verbose(f"Replace {name} by {input_var}.")
            v.proto.shape.dim[:] = input_var.shape
            v.variable = input_var
            input_var.name = v.name
            return v

    def force_average_pooling_global(self, name: str, by_type: bool = False) -> None:
        """Make the average pooling ``name`` (every one of that type with ``by_type``) pool
        its whole input plane: kernel and stride the input's declared spatial shape."""
        dec = self.on_generate_function_by_type if by_type else \
            self.on_generate_function_by_name

        @dec(name)
        def on_avgpool(f):
            pool_shape = f.inputs[0].proto.shape.dim[2:]
            self.verbose(f"Change strides of {f.name} to {pool_shape}.")
            p = f.proto.average_pooling_param
            p.kernel.dim[:] = pool_shape
            p.stride.dim[:] = pool_shape
            return f

    def check_average_pooling_global(self, name: str, by_type: bool = False) -> None:
        """Refuse (``ValueError``) an average pooling ``name`` that does not pool its whole
        input plane."""
        dec = self.on_generate_function_by_type if by_type else \
            self.on_generate_function_by_name

        @dec(name)
        def on_avgpool_check(f):
            pool_shape = f.inputs[0].proto.shape.dim[2:]
            p = f.proto.average_pooling_param
            if p.kernel.dim[:] != pool_shape or p.stride.dim[:] != pool_shape:
                raise ValueError(
                    "Stride configuration of average pooling is not for global pooling."
                    f" Given Image shape is {pool_shape}, whereas pooling window size is "
                    f"{p.kernel.dim[:]} and its stride is {p.stride.dim[:]}."
                    " Consider using force_global_pooling=True")
            return f

    def set_batch_normalization_batch_stat_all(self, batch_stat: bool) -> None:
        """Set ``batch_stat`` of every batch normalisation."""
        @self.on_generate_function_by_type("BatchNormalization")
        def on_bn(f):
            self.verbose(f"Setting batch_stat={batch_stat} at {f.name}.")
            p = f.proto.batch_normalization_param
            p.batch_stat = batch_stat
            return f

    # -- applying them (called by the loader) --------------------------------------------------
    def _apply_function_pass_by_name(self, f, variables, param_scope):
        if f.name not in self._passes_by_name:
            return f
        return self._passes_by_name[f.name](f, variables, param_scope)

    def _apply_function_pass_by_type(self, f, variables, param_scope):
        if f.proto.type not in self._passes_by_type:
            return f
        return self._passes_by_type[f.proto.type](f, variables, param_scope)

    def _apply_generate_variable(self, v):
        if v.name in self._variable_callbacks:
            v = self._variable_callbacks[v.name](v)
        if self._fix_parameters:
            v.need_grad = False
        return v

    def _apply_generate_function_by_name(self, f):
        if f.name not in self._function_callbacks_by_name:
            return f
        return self._function_callbacks_by_name[f.name](f)

    def _apply_generate_function_by_type(self, f):
        if f.proto.type not in self._function_callbacks_by_type:
            return f
        return self._function_callbacks_by_type[f.proto.type](f)

    def _apply_use_up_to(self, variables):
        for v in variables:
            if v.name in self._use_up_to_variables:
                self.verbose(f"Stopping at {v.name}.")
                v.stop = True
