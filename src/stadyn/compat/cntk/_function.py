"""CNTK's ``Function``: a graph output (or several, made by ``combine``) over Stadyn Variables.

A :class:`Function` wraps the Stadyn :class:`~stadyn.graph.Variable` its root computes.  It
shows the graph as CNTK does (``arguments``, ``parameters``, ``constants``, ``inputs``, blocks
for applied layers, names reached as attributes: ``z.W``, ``model.conv1.b``), evaluates it
(``eval``, ``forward``/``backward``, ``grad``), rebuilds it (``clone``, calling it on other
Functions, ``replace_placeholders``) and saves it.  The evaluation runs Stadyn's static graph;
behaviour lives in Stadyn, this module only maps CNTK's view onto it.
"""

from __future__ import annotations

import enum
from typing import Any

import numpy as np
import torch

from ...graph import Variable, forward_all, is_lengths, topological_nodes, training
from ...train import feed
from . import _graph as G
from ._adapt import unwrap, wrap
from ._assign import apply_assignments, assign_outputs, pending_assignments
from ._late import bind, late
from ._loops import clone_graph, close_loops, split_loops
from ._model_file import ModelFormat, load_roots, restore_parameters, save_roots
from ._mixins import GraphObject, TensorOpsMixin
from ._run_checks import check_runnable
from ._sequence_begin import carrying, function_begins, split_flags
from ._signature import _function_of_callable as function_of_callable, argument_leaves
from ._step_values import step_value
from ._values import Value, output_value, root_gradient

__all__ = ["Function", "CloneMethod", "ModelFormat", "load_model", "combine_outputs"]


class CloneMethod(enum.Enum):
    """How ``Function.clone`` treats parameters: ``share`` them, ``clone`` them (new parameters
    with the same values) or ``freeze`` them (constants with their values)."""

    clone = "clone"
    share = "share"
    freeze = "freeze"


def _as_method(method: Any) -> str:
    if isinstance(method, CloneMethod):
        return method.value
    if isinstance(method, str) and method in ("clone", "share", "freeze"):
        return method
    raise ValueError(f"clone: method must be a CloneMethod, got {method!r}")


_CUSTOM: "dict[int, dict]" = {}


class Function(GraphObject, TensorOpsMixin):
    """A CNTK Function.

    A layer or op applied to inputs gives the *composite* Function of the graph up to its
    output; its ``root_function`` is the op (or, for a layer, the *block*) that made the output.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> x = C.input_variable(3, name="x")
        >>> z = C.layers.Dense(2, name="d")(x)
        >>> z.name, z.W.shape, z.b.shape, [p.name for p in z.parameters]
        ('d', (3, 2), (2,), ['W', 'b'])
        >>> z.W.value = np.ones((3, 2), np.float32)
        >>> z.eval({x: np.ones((1, 3), np.float32)}).tolist()
        [[3.0, 3.0]]
    """

    __slots__ = ("members", "_view")

    def __new__(cls, variable=None, *args, **kwargs):
        if callable(variable) and not isinstance(variable, (Variable, GraphObject)):
            return function_of_callable(variable)      # @C.Function on a Python function
        return super().__new__(cls)

    def __init__(self, variable: Variable, members: "list[Variable] | None" = None,
                 view: str = "composite"):
        if not isinstance(variable, Variable):          # made by __new__ from a Python function
            return
        super().__init__(variable)
        self.members = members
        self._view = view

    @staticmethod
    def with_signature(*types, **named_types):
        """A decorator making a Python function a Function whose arguments have ``types``
        (``Tensor[3]``...: inputs named after the Python arguments)."""
        return lambda f: function_of_callable(f, types, named_types)

    # -- the graph seen from here ------------------------------------------------------------
    def _roots(self) -> list[Variable]:
        return list(self.members) if self.members else [self.variable]

    def _node(self) -> tuple[str, Variable]:
        if self._view == "op":
            return ("op", self.variable)
        return G.classify(self.variable)

    def _walk_start(self) -> "list[tuple[str, Variable]]":
        """Where CNTK's walk starts: the root function, or each output of a ``combine``."""
        if self._view == "composite" and self.members and len(self.members) > 1:
            return [G.classify(v) for v in self.members]
        return [self._node()]

    def _leaves(self) -> list[Variable]:
        return list(G.walk_leaves(self._roots()))

    @property
    def name(self) -> str:
        """The name of the root function (a layer's ``name``, an op's ``name=``; a function of
        several outputs, ``top_k``'s, is named by its first)."""
        if self.members and len(self.members) > 1 and G.function_outputs(self.members) is None:
            return ""                   # (a combine of several functions' outputs)
        kind, v = self._node()
        if kind == "op":
            v = G.outputs_of(v)[0]
        return G.node_name((kind, v)) if kind != "leaf" else G.name_of(v)

    @name.setter
    def name(self, value: str) -> None:
        block = G.BLOCKS.get(self.variable)
        if block is not None and self._view != "op":
            block.name = value
        else:
            self.variable.name = value or None

    @property
    def output(self):
        """The only output, as a Variable (a ValueError when there are several)."""
        if self.members and len(self.members) > 1:
            raise ValueError(f"this Function has {len(self.members)} outputs; use .outputs")
        return wrap_variable(self.variable)

    @property
    def outputs(self) -> list:
        """Every output, as Variables."""
        return [wrap_variable(v) for v in self._roots()]

    @property
    def root_function(self) -> "Function":
        """The op (or block) that made the output; that of all the outputs of a function of
        several (``top_k``, ``sequence.unpack``), with them all."""
        outs = G.outputs_of(self.variable)
        if self.members and len(self.members) > 1 and G.function_outputs(self.members) is None:
            return self                 # (a combine of several functions' outputs)
        view = "op" if self._view == "op" else ("block" if self.variable in G.BLOCKS else "op")
        if len(outs) > 1:
            return Function(outs[0], list(outs), view=view)
        return Function(self.variable, view=view)

    @property
    def is_composite(self) -> bool:
        return self._view == "composite"

    @property
    def is_block(self) -> bool:
        return self._view == "block"

    @property
    def is_primitive(self) -> bool:
        """A root function: an op, or a block (which is one op of its graph)."""
        return self._view in ("op", "block")

    @property
    def block_root(self) -> "Function":
        """Inside a block: the op that makes its output."""
        if not self.is_block:
            raise RuntimeError("block_root: this Function is not a block")
        return Function(self.variable, view="op")

    @property
    def block_arguments_mapping(self) -> list:
        """A block's arguments, each as ``(inner placeholder, actual argument)``; Stadyn's
        blocks use the actual arguments inside, so both are the same Variable."""
        if not self.is_block:
            raise RuntimeError("block_arguments_mapping: this Function is not a block")
        return [(wrap_variable(a), wrap_variable(a)) for a in G.BLOCKS[self.variable].arguments]

    @property
    def op_name(self) -> str:
        """``CompositeFunctionOpName`` for a composite; the op's (``Plus``) or the layer's
        (``Dense``) name for a root function."""
        if self._view == "composite":
            return "CompositeFunctionOpName"
        if self._view == "op":
            known = G.op_name_of(self.variable) if self.variable not in G.BLOCKS else None
            return known or G.primitive_op_name(self.variable)
        return G.op_name_of(self.variable)

    @property
    def uid(self) -> str:
        """A unique id (``CompositeFunction10``, ``Plus9``)."""
        if self._view == "op" and self.variable in G.BLOCKS:
            return G.root_uid_of(self.variable)         # the op inside the block
        base = G.uid_of(self.variable)
        return f"CompositeFunction{base}" if self._view == "composite" else base

    @property
    def inputs(self) -> list:
        """A composite's leaves (arguments, parameters, constants); a root function's own
        inputs (a block's: its parameters, then its arguments)."""
        if self._view == "composite":
            return [wrap_variable(v) for v in self._leaves()]
        return [wrap_variable(v) for v in G.node_inputs(
            self._node() if self._view == "block" else ("op", self.variable))]

    @property
    def arguments(self) -> list:
        """The inputs and placeholders the outputs depend on, in CNTK's order."""
        found = [v for v in G.walk_operands(self._roots(), self._leaves())
                 if G.kind_of(v) in ("input", "placeholder")
                 and not is_lengths(v)]     # a sequence input's lengths come with its data
        return [wrap_variable(v) for v in G.in_argument_order(self.variable, found)]

    @property
    def parameters(self) -> list:
        """The learnable parameters the outputs depend on (the last layer's first)."""
        return [wrap(v) for v in self._leaves() if G.kind_of(v) == "parameter"]

    @property
    def constants(self) -> list:
        """The constants (batch normalisation's statistics among them)."""
        return [wrap(v) for v in self._leaves() if G.kind_of(v) == "constant"]

    @property
    def placeholders(self) -> list:
        """The placeholders not yet replaced."""
        return [wrap_variable(v) for v in self._leaves() if G.kind_of(v) == "placeholder"]

    @property
    def attributes(self) -> dict:
        """A root op's attributes (Stadyn's names: dropout's rate is ``p``); a composite's and a
        block's are empty."""
        if self._view != "op" or self.variable.parent is None:
            return {}
        return dict(self.variable.parent.attrs)

    def set_attribute(self, name: str, value: Any) -> None:
        """Change one attribute of the root op (CNTK's ``dropoutRate`` is dropout's ``p``)."""
        name = {"dropoutRate": "p", "rngSeed": "seed"}.get(name, name)
        parent = self.variable.parent
        if parent is None or name not in parent.spec.attrs:
            raise ValueError(f"set_attribute: the root function has no attribute {name!r}")
        parent.set_attribute(name, value)

    @property
    def custom_attributes(self) -> dict:
        """A dict of the user's own attributes (kept, not used)."""
        return _CUSTOM.setdefault(id(self.variable), {})

    @custom_attributes.setter
    def custom_attributes(self, values: dict) -> None:
        _CUSTOM[id(self.variable)] = dict(values)

    # -- names inside the graph ---------------------------------------------------------------
    def _inside(self) -> Variable | None:
        """The block this Function is the inside of (a block's ``block_root``), if any."""
        return self.variable if self._view == "op" and self.variable in G.BLOCKS else None

    def find_all_with_name(self, name: str, depth: int = 0) -> list:
        """Every function and variable named ``name`` (``depth`` levels into blocks; -1 all)."""
        return [_wrap_node(n) for n in G.search(self._walk_start(),
                                                 lambda n: G.node_name(n) == name,
                                                 depth, self._inside())]

    def find_by_name(self, name: str, depth: int = 0):
        """The function or variable named ``name``; None when there is none, a ValueError when
        there are several.

        Example:
            >>> import stadyn.compat.cntk as C
            >>> x = C.input_variable(3, name="x")
            >>> f = C.tanh(C.plus(x, 1.0, name="p"))
            >>> f.find_by_name("p").op_name, f.find_by_name("x").is_input
            ('Plus', True)
        """
        if not isinstance(name, str):
            raise ValueError(f"node name has to be a string, got a {type(name).__name__}")
        found = self.find_all_with_name(name, depth)
        if len(found) > 1:
            raise ValueError(f'found multiple functions matching "{name}". If that was '
                             "expected call find_all_with_name")
        return found[0] if found else None

    def __getattr__(self, name: str):
        if name.startswith("_") or name in ("members", "variable"):
            raise AttributeError(name)
        start = Function(self.variable, view="op") if self._view == "block" else self
        found = start.find_by_name(name, depth=1)    # else inside a recurrence's step:
        if found is not None or (found := step_value(self._roots(), name)) is not None:
            return found
        if self.members and len(self.members) > 1:
            raise AttributeError(f"Function has no '{name}' and it cannot be looked up in its "
                                 "outputs because it has more than one")
        from ._mixins import VariableMixin
        if hasattr(VariableMixin, name):
            return getattr(self.output, name)
        raise AttributeError(f"neither the Function nor its output has '{name}'")

    # -- evaluation -----------------------------------------------------------------------------
    def _bind(self, arguments: Any) -> list[bool] | None:
        """Feed ``arguments``; returns the sequence-begin flags given with them, or None."""
        if arguments is None:
            return None
        arguments, flags = split_flags(arguments)
        args = self.arguments
        if not isinstance(arguments, dict):
            if len(args) != 1:
                raise ValueError(f"give a dict of {{input: data}} for a Function with "
                                 f"{len(args)} inputs")
            arguments = {args[0]: arguments}
        by_name = {a.name: a for a in args}
        for key, value in arguments.items():
            target = by_name.get(key) if isinstance(key, str) else key
            if target is None:
                raise ValueError(f"no input named {key!r}")
            if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], list):
                value, flags = value[0], [bool(f) for f in value[1]]    # (data, sequence starts)
            if unwrap(target).sequence_lengths is not None and (
                    isinstance(value, list) or getattr(value, "lengths", None) is not None):
                feed(unwrap(target), value)      # one array per sequence, of its own length
                continue
            if isinstance(value, list) and value and not isinstance(value[0], (int, float)):
                value = np.stack([np.asarray(v, dtype=np.dtype(unwrap(target).dtype))
                                  for v in value])
            var = unwrap(target)
            if hasattr(value, "asarray") and not isinstance(value, np.ndarray):
                value = value.asarray()
            arr = np.asarray(value, dtype=np.dtype(var.dtype)) if not isinstance(
                value, torch.Tensor) else value
            if G.BATCH(var) and arr.ndim == var.ndim + 1 and arr.shape[1] == 1 and \
                    tuple(arr.shape[2:]) == tuple(var.shape[1:]):
                arr = arr.reshape((arr.shape[0],) + tuple(var.shape[1:]))   # (N, 1, ...) data
            if G.BATCH(var) and tuple(arr.shape) == tuple(var.shape[1:]):
                arr = arr[None]     # one sample, of the input's very shape (CNTK reads it so)
            feed(var, arr)
        return flags

    def eval(self, arguments: Any = None, outputs=None, device=None, as_numpy: bool = True):
        """The outputs' values for ``arguments`` (``{input: data}``, or the data of the only
        input) in the inference phase: one array, or ``{output: array}`` for several.

        Example:
            >>> import numpy as np, stadyn.compat.cntk as C
            >>> x = C.input_variable(2)
            >>> C.sigmoid(x).eval(np.zeros((1, 2), np.float32)).tolist()
            [[0.5, 0.5]]
        """
        wanted = self.outputs if outputs is None else list(outputs)
        _, values = self.forward(arguments, wanted, device=device, as_numpy=as_numpy)
        return values[wanted[0]] if len(wanted) == 1 else values

    def forward(self, arguments: Any, outputs=None, keep_for_backward=None, device=None,
                as_numpy: bool = True):
        """CNTK's ``forward``: ``(state, {output: value})``.  With ``keep_for_backward`` the
        graph runs in the training phase and ``state`` is what :meth:`backward` takes; without,
        in the inference phase and ``state`` is None.

        Example:
            >>> import numpy as np, stadyn.compat.cntk as C
            >>> x = C.input_variable(2, needs_gradient=True)
            >>> f = C.sigmoid(x)
            >>> state, out = f.forward({x: np.zeros((1, 2), np.float32)}, [f.output], {f.output})
            >>> out[f.output].tolist()
            [[0.5, 0.5]]
            >>> f.backward(state, {f.output: np.ones((1, 2), np.float32)}, {x})[x].tolist()
            [[0.25, 0.25]]
        """
        flags = self._bind(arguments)
        wanted = self.outputs if outputs is None else list(outputs)
        keep = bool(keep_for_backward)
        roots = self._roots()
        begins = function_begins(roots, flags,  # recurrences go on from the last run
                                 "Function.forward" if keep else "Function.eval")
        roots += [unwrap(o) for o in wanted]                  # (forward_all drops repeats)
        roots += [v.sequence_lengths for v in list(roots)          # computed lengths (a slice)
                  if v.sequence_lengths is not None and v.sequence_lengths.parent is not None]
        assigns = assign_outputs(roots)
        roots += assigns
        roots += begins.wanted() if begins is not None else []
        check_runnable(roots)
        with carrying(begins):
            if keep:
                with training(True):
                    forward_all(roots, clear_no_need_grad=True)
            else:
                with training(False), torch.no_grad():
                    forward_all(roots, clear_buffer=True)
        values = {o: output_value(unwrap(o)) for o in wanted}
        if not as_numpy:        # CNTK's Value objects (a dense batch; sequences stay lists)
            values = {o: Value(batch=v) if isinstance(v, np.ndarray) else v
                      for o, v in values.items()}
        pending = pending_assignments(assigns)
        if not keep:
            apply_assignments(pending)      # training: after the backward
        return (_State(self, pending, flags) if keep else None), values

    def backward(self, state, root_gradients: dict, variables, as_numpy: bool = True) -> dict:
        """CNTK's ``backward``: the gradients w.r.t. ``variables`` (inputs made with
        ``needs_gradient=True``, or parameters) of ``sum(output * root_gradient)`` over the
        given outputs, after a :meth:`forward` that kept state.  Parameters' own gradients are
        left as they were."""
        if state is None:
            raise ValueError("backward: the forward() before it kept no intermediate results "
                             "(set keep_for_backward to the outputs in root_gradients)")
        _check_differentiable(variables, "backward")
        roots = [unwrap(root) for root in root_gradients]
        leaves = [v for v in _leaves_of(roots) if v.need_grad]
        saved = [(v, v.grad) for v in leaves]
        for v in leaves:
            v.grad = None
        try:
            for root, seed in root_gradients.items():
                unwrap(root).backward(root_gradient(unwrap(root), seed))
            out = {}
            for v in variables:
                var = unwrap(v)
                out[v] = output_value(var, var.g if var.grad is not None else
                                np.zeros(var.shape, np.float32))     # per sequence, too
            apply_assignments(state.assignments)
            return out
        finally:
            for v, g in saved:
                v.grad = g

    def grad(self, at: Any, wrt=None, outputs=None, device=None, as_numpy: bool = True,
             grad_root=None):
        """The gradient of the sum of this Function's values w.r.t. ``wrt`` (default: the
        arguments made with ``needs_gradient=True``; a ValueError when there are none, or when
        ``wrt`` is empty): one array for one ``wrt``, else a dict; with ``outputs``,
        ``(gradients, values)``.

        Example:
            >>> import numpy as np, stadyn.compat.cntk as C
            >>> x = C.input_variable(1, needs_gradient=True)
            >>> C.sqrt(x).grad({x: np.array([[1.0], [4.0]], np.float32)}).ravel().tolist()
            [0.5, 0.25]
        """
        if wrt is None:
            wrt = [a for a in self.arguments if a.needs_gradient]
            if not wrt:
                raise ValueError(f"None of the Function '{self}' arguments have "
                                 "'needs_gradient == True'")
        wrt = list(wrt)
        if not wrt:
            raise ValueError(f"Function '{self}' Backward: List of inputs to compute gradients "
                             "for, must not be empty.")
        _check_differentiable(wrt, "grad")
        root = self.output if grad_root is None else grad_root
        state, values = self.forward(at, [root] + list(outputs or []), {root})
        if state.flags is not None and not all(state.flags):
            raise ValueError(
                f"Function.grad: sequence-begin flags {state.flags} continue sequences from "
                "the previous run, and CNTK 2.7 refuses to differentiate such a run with grad "
                "(the layout of the gradient it seeds is incompatible with the one computed "
                "during the forward call); begin every sequence, or call forward and backward")
        ones = values[root]
        ones = [np.ones_like(o) for o in ones] if isinstance(ones, list) else np.ones_like(ones)
        grads = self.backward(state, {root: ones}, wrt)
        grads = grads[wrt[0]] if len(wrt) == 1 else grads
        if not outputs:
            return grads
        values = {o: values[o] for o in outputs}
        return grads, (next(iter(values.values())) if len(values) == 1 else values)

    def train(self, minibatch_source, *args, **kwargs):
        """CNTK's ``Function.train``: a Trainer on this criterion (loss, or ``(loss, metric)``)
        run by a training session over a reader or a tuple of arrays; ``callbacks``: progress
        writers and configs.  Returns ``epoch_summaries``, ``updates`` (, ``test_summary``);
        the arguments and an example: ``stadyn.compat.cntk._training.train_function``."""
        return late("train_function")(self, minibatch_source, *args, **kwargs)

    def test(self, minibatch_source, minibatch_size: int = 32, streams=None,
             model_inputs_to_streams=None, callbacks=None):
        """The average of this criterion Function (a metric, or ``(loss, metric)`` combined)
        over one sweep of ``minibatch_source``: a ``TestSummary`` with ``metric`` and
        ``samples``."""
        return late("evaluate_function")(self, minibatch_source, minibatch_size, streams,
                                 model_inputs_to_streams, callbacks)

    # -- rebuilding -----------------------------------------------------------------------------
    def clone(self, method, substitutions: dict | None = None) -> "Function":
        """A copy of the graph: parameters shared, cloned or frozen (:class:`CloneMethod`);
        ``substitutions`` (``{variable: new}``) replaces variables on the way (a placeholder
        without a shape takes the shape of what it replaces).  Inputs are cloned unless
        substituted.

        Example:
            >>> import numpy as np, stadyn.compat.cntk as C
            >>> x, y = C.input_variable(2), C.input_variable(2)
            >>> f = C.layers.Dense(2)(x)
            >>> g = f.clone(C.CloneMethod.freeze, {x: y})
            >>> g.arguments == [y], len(g.parameters), len(g.constants)
            (True, 0, 2)
        """
        method = _as_method(method)
        if substitutions is not None and not isinstance(substitutions, dict):
            raise TypeError("clone: the substitutions must be a dict")
        subs = {}
        for old, new in (substitutions or {}).items():
            if old is None or new is None:
                raise AttributeError(f"clone: cannot replace {old!r} with {new!r}")
            subs[unwrap(old)] = _bound_placeholder(unwrap(new), unwrap(old))
        roots = clone_graph(self._roots(), subs, method)
        if len(roots) == 1:
            return Function(roots[0])
        return Function(roots[0], roots)

    def __call__(self, *args, **kwargs):
        """Apply this Function to other Functions (its arguments replaced; parameters shared),
        or evaluate it on data (one array, or a tuple for several outputs)."""
        mapping = self.argument_map(*args, **kwargs)
        symbolic = any(isinstance(v, GraphObject) for v in mapping.values())
        if symbolic:
            for a in self.arguments:
                mapping.setdefault(a, a)
            applied = self.clone(CloneMethod.share, mapping)
            if self.variable in G.ARGUMENT_ORDER:       # the signature's order, substituted
                G.ARGUMENT_ORDER[applied.variable] = argument_leaves(
                    [mapping[a] for a in self.arguments])
            return applied
        values = self.eval(mapping, self.outputs)
        if isinstance(values, dict):
            return tuple(values[o] for o in self.outputs)
        return values

    def argument_map(self, *args, **kwargs) -> dict:
        """``{argument: value}`` from positional values (in the order of ``arguments``) and
        keyword values (by argument name)."""
        params = self.arguments
        if len(args) > len(params):
            raise TypeError(f"this Function takes {len(params)} arguments, {len(args)} given")
        mapping = dict(zip(params, args))
        by_name = {p.name: p for p in params}
        for key, value in kwargs.items():
            if key not in by_name:
                raise TypeError(f"this Function has no argument named {key!r}")
            mapping[by_name[key]] = value
        return mapping

    def replace_placeholders(self, substitutions: dict) -> "Function":
        """Replace placeholders in place (``{placeholder: variable}``); returns this Function."""
        if not isinstance(substitutions, dict):
            raise TypeError("replace_placeholders: the substitutions must be a dict")
        plain, loops = split_loops({unwrap(ph): unwrap(new) for ph, new in substitutions.items()})
        for ph, new in plain.items():
            G.replace_placeholder(ph, new)
        if loops:           # a cycle through past_value / future_value: a recurrence
            for ph in loops:
                if ph not in G.PLACEHOLDERS:
                    raise ValueError("replace_placeholders: only placeholders can be replaced")
            close_loops(loops)
        return self

    def replace_placeholder(self, substitution) -> "Function":
        """Replace the only placeholder in place."""
        placeholders = self.placeholders
        if len(placeholders) != 1:
            raise ValueError(f"replace_placeholder: the Function has {len(placeholders)} "
                             "placeholders, not one")
        return self.replace_placeholders({placeholders[0]: substitution})

    def __rshift__(self, other):
        if isinstance(other, tuple):
            outs = self.outputs
            return combine_outputs([g(outs[i] if len(outs) > 1 else self)
                                    for i, g in enumerate(other)])
        if self.members and len(self.members) > 1:
            return other(*self.outputs)
        return other(self)

    def __lshift__(self, other):
        return self(other)

    # -- files ----------------------------------------------------------------------------------
    def save(self, filename, format=ModelFormat.CNTKv2,
             use_external_files_to_store_parameters: bool = False) -> None:
        """Save the graph of the outputs (a Stadyn model file keeping CNTK's names; ONNX with
        ``ModelFormat.ONNX``)."""
        save_roots(self._roots(), self.arguments, filename, format)

    save_model = save  # the 2017 betas' name

    def restore(self, filename) -> None:
        """Set this Function's parameters to those saved in ``filename`` (by a Function of the
        same architecture), in order."""
        restore_parameters(self.parameters, filename)

    @staticmethod
    def load(model, device=None, format=ModelFormat.CNTKv2) -> "Function":
        """The Function saved in ``model`` (a file name, or the file's bytes)."""
        return load_model(model, device, format)

    def print_node_timing(self) -> None:
        """Accepted for compatibility: Stadyn keeps no per-node timings."""

    def __repr__(self) -> str:
        args = ", ".join(f"{a.name or a.uid}: Tensor{list(a.shape)}" for a in self.arguments)
        label = f"{self.name}: " if self.name else ""
        shapes = ", ".join(f"Tensor{list(o.shape)}" for o in self.outputs)
        return f"{label}{self.op_name}({args}) -> {shapes}"


def _check_differentiable(variables, what: str) -> None:
    """CNTK 2.7 differentiates w.r.t. parameters and inputs made with ``needs_gradient=True``
    only; asking for another Variable's gradient is its ValueError."""
    for v in variables:
        var = unwrap(v)
        kind = G.kind_of(var)
        if kind == "output":
            raise ValueError(f"Function.{what}: a gradient asked for {v!r}, which the graph "
                             "computes: CNTK gives gradients w.r.t. the graph's leaves (inputs "
                             "and parameters) only")
        if not var.need_grad:
            made = "a constant" if kind == "constant" else \
                "an input made without needs_gradient=True"
            raise ValueError(f"Function.{what}: a gradient asked for {v!r}, {made}: CNTK gives "
                             "gradients w.r.t. parameters and inputs made with "
                             "needs_gradient=True only")


def _leaves_of(roots: list[Variable]) -> list[Variable]:
    """The leaves the roots depend on, each once."""
    seen: dict[int, Variable] = {id(r): r for r in roots if r.parent is None}
    for node in topological_nodes(roots):
        for v in node.inputs:
            if v.parent is None:
                seen.setdefault(id(v), v)
    return list(seen.values())


class _State:
    """What ``forward(keep_for_backward=...)`` hands to ``backward``."""

    __slots__ = ("function", "assignments", "flags")

    def __init__(self, function: Function, assignments: list, flags: list[bool] | None):
        self.function = function
        self.assignments = assignments       # assign ops' writes, made after the backward
        self.flags = flags                   # the run's sequence-begin flags, if given


def wrap_variable(v: Variable):
    """``v`` as a CNTK Variable (an output shown as a Variable, not as a Function)."""
    from ._variables import of
    return of(v, as_variable=True)


def _wrap_node(node: tuple[str, Variable]):
    kind, v = node
    if kind == "leaf":
        return wrap(v)
    return Function(v, view=kind)


def _bound_placeholder(new: Variable, old: Variable) -> Variable:
    """A placeholder without a shape given as a substitute takes ``old``'s shape (and batch
    axis)."""
    if new in G.SHAPELESS:
        G.bind_placeholder(new, old.shape, G.BATCH(old))
    return new


def combine_outputs(functions: list) -> Function:
    """Several Functions' outputs as one Function."""
    flat: list[Variable] = []
    for f in functions:
        if isinstance(f, Function):
            flat.extend(f._roots())
        else:
            flat.append(unwrap(f))
    if len(flat) > 1:
        G.mark_combine(flat)       # a Combine function: graph walks list its outputs first
    return Function(flat[0], flat if len(flat) > 1 else None)


def load_model(model, device=None, format=ModelFormat.CNTKv2) -> Function:
    """Load a Function saved by :meth:`Function.save` (a file name, or the file's bytes).

    Example:
        >>> import os, tempfile, numpy as np, stadyn.compat.cntk as C
        >>> x = C.input_variable(2, name="x")
        >>> z = C.layers.Dense(3, name="d")(x)
        >>> path = os.path.join(tempfile.mkdtemp(), "z.model")
        >>> z.save(path)
        >>> m = C.load_model(path)
        >>> m.arguments[0].name, m.find_by_name("d").shape
        ('x', (3,))
    """
    return combine_outputs(load_roots(model, format))


bind(Function=Function,      # Variable.owner and the wrapping of outputs (_mixins, _variables)
     combine_outputs=combine_outputs)   # a Sequential ending in a tuple (_layers)

