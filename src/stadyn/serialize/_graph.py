"""What a saved or exported graph consists of: named inputs and outputs, parameters, constants and
the op nodes in between, gathered from the output Variables.

Both model files and ONNX export start here, so they agree on which leaf is what — the roles of
the graph's :class:`~stadyn.graph.Subgraph`:

* the **inputs** are the Variables passed as ``inputs``; without ``inputs``, every leaf that has
  no name (parameters get theirs from the registry: ``cnn/conv1/conv/W``);
* the **parameters** are the named leaves (and frozen views of them, ``as_need_grad=False``);
* any other leaf is a **constant** (saved with its value);
* with ``sequences=True`` (model files), the **lengths** of a sequence input (its
  ``sequence_lengths`` leaf) are neither an input nor a constant: they come with the input's
  sequences.  In a format with no sequence axis (ONNX, ``.nnp``) they are never a constant
  (that would fix them to the minibatch the graph last ran): given as an input of their own,
  they are one; otherwise ``lengths="input"`` makes them one, named ``<input>_lengths``
  (ONNX), and ``lengths="refuse"`` raises an :class:`ExportError` that says how to give them
  (``.nnp``, whose readers would run with whatever the unfed input holds).

An op whose declaration says a file cannot hold it (``OpSpec.unstorable``: ``grad``) is refused.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..graph import (PARAMETER, VIEW, FunctionNode, Subgraph, Variable, is_lengths,
                     refresh_shapes)
from ._onnx_api import ExportError
from .op_rules import kept_in_model_files

__all__ = ["GraphParts", "collect_graph", "named_variables"]


def named_variables(what: Any, default: str, role: str) -> "OrderedDict[str, Variable]":
    """``what`` (a Variable, a sequence or a mapping of Variables) as an ordered name -> Variable
    mapping: a single Variable is called ``default``, a sequence ``default0``, ``default1``..."""
    if isinstance(what, Variable):
        return OrderedDict([(default, what)])
    if isinstance(what, Mapping):
        out: OrderedDict[str, Variable] = OrderedDict()
        for name, var in what.items():
            if not isinstance(name, str) or not name:
                raise ExportError(f"{role} names must be non-empty strings, got {name!r}")
            if not isinstance(var, Variable):
                raise ExportError(f"{role} {name!r} is a {type(var).__name__}, not a Variable")
            out[name] = var
        return out
    if isinstance(what, Sequence) and not isinstance(what, (str, bytes)):
        items = list(what)
        if len(items) == 1:
            return named_variables(items[0], default, role)
        return named_variables({f"{default}{i}": v for i, v in enumerate(items)}, default, role)
    raise ExportError(f"{role}: expected a Variable, a list or a dict of Variables, got "
                      f"{type(what).__name__}")


@dataclass
class GraphParts:
    """The pieces of one graph (see the module docstring)."""

    inputs: "OrderedDict[str, Variable]"
    outputs: "OrderedDict[str, Variable]"
    nodes: list[FunctionNode]
    parameters: "OrderedDict[str, Variable]" = field(default_factory=OrderedDict)
    views: list[tuple[str, Variable]] = field(default_factory=list)  # (parameter name, view)
    constants: list[Variable] = field(default_factory=list)
    lengths: list[tuple[str, Variable]] = field(default_factory=list)  # (input name, lengths)


def _unwrap(outputs: Any, inputs: Any) -> tuple[Any, Any, bool]:
    # A Network (loaded or imported) stands for its outputs and inputs; inputs its outputs do
    # not use (an ONNX model may declare some) are left out.
    if hasattr(outputs, "outputs") and hasattr(outputs, "inputs") and not isinstance(
            outputs, Variable):
        return outputs.outputs, outputs.inputs if inputs is None else inputs, inputs is None
    return outputs, inputs, False


def collect_graph(outputs: Any, inputs: Any = None, *, sequences: bool = False,
                  lengths: str = "refuse", fmt: str = "this format",
                  own_rules: bool = False) -> GraphParts:
    """Gather the graph that computes ``outputs`` (see the module docstring; ``lengths``,
    ``"input"`` or ``"refuse"``, says what becomes of sequence lengths the inputs leave out when
    not ``sequences``; ``fmt`` names the format in its error; ``own_rules``: Stadyn's model
    file, which holds an op declared unstorable that its own rules store, as a CNTK
    user function's module, class and state)."""
    outputs, inputs, lenient = _unwrap(outputs, inputs)
    outs = named_variables(outputs, "y", "output")
    if not outs:
        raise ExportError("no outputs given: a saved or exported graph computes at least one")
    given = None if inputs is None else named_variables(inputs, "x", "input")
    sub = Subgraph(list(outs.values()), None if given is None else list(given.values()))
    nodes, leaves = sub.nodes, sub.leaves
    refresh_shapes(nodes, leaves)       # inputs may have been resized since the graph was built
    for node in nodes:
        if node.spec.unstorable and not (own_rules and kept_in_model_files(node.spec)):
            where = f" in scope '{node.scope}'" if node.scope else ""
            raise ExportError(f"the graph holds a '{node.spec.name}' node{where}: "
                              f"{node.spec.unstorable}")
    owned = {}          # id(lengths leaf) -> its sequence input
    if sequences:
        candidates = list(sub.inputs if given is None else given.values())
        explicit = set() if given is None else {id(v) for v in candidates}
        for v in candidates:
            lengths = v.sequence_lengths    # given as an input itself, it stays one
            if lengths is not None and lengths.parent is None and id(lengths) not in explicit:
                owned[id(lengths)] = v
    if given is None:
        ins = OrderedDict()
        unnamed = [v for v in sub.inputs if id(v) not in owned
                   and (sequences or not is_lengths(v))]
        for i, v in enumerate(unnamed):
            ins["x" if len(unnamed) == 1 else f"x{i}"] = v
    else:
        ins = given
        used = {id(v) for v in leaves}
        if lenient:
            ins = OrderedDict((n, v) for n, v in ins.items() if id(v) in used)
        for name, v in ins.items():
            if id(v) not in used:
                raise ExportError(f"input {name!r} is not used by the outputs")
            if v.parent is not None:
                raise ExportError(f"input {name!r} is computed by an op ({v.parent.spec.name}); "
                                  "inputs must be leaf Variables")
    if not sequences:
        ins = _with_lengths(ins, leaves, lengths, given is None, fmt)
    clash = set(ins) & set(outs)
    if clash:
        raise ExportError(f"names used for both an input and an output: {sorted(clash)}")
    parts = GraphParts(ins, outs, nodes)
    input_ids = {id(v) for v in ins.values()}
    views = dict((id(v), target) for v, target in sub.views)
    name_of = {id(v): n for n, v in ins.items()}
    for v in leaves:
        if id(v) in input_ids and id(v) not in owned:
            continue
        if id(v) in owned and id(owned[id(v)]) in name_of:
            parts.lengths.append((name_of[id(owned[id(v)])], v))
            continue
        role = sub.role(v)
        if role == VIEW:
            target = views[id(v)]
            _add_parameter(parts, target)
            parts.views.append((target.graph_name, v))
        elif role == PARAMETER:
            _add_parameter(parts, v)
        else:
            parts.constants.append(v)
    return parts


def _with_lengths(ins: "OrderedDict[str, Variable]", leaves: list[Variable], mode: str,
                  automatic: bool, fmt: str) -> "OrderedDict[str, Variable]":
    """``ins`` with the lengths leaves the graph reads and ``ins`` leaves out, for a format with
    no sequence axis: each after its sequence input as ``<input>_lengths`` (``mode="input"``,
    or inputs chosen automatically), else an :class:`ExportError`."""
    given = {id(v) for v in ins.values()}
    missing = [v for v in leaves if is_lengths(v) and id(v) not in given]
    if not missing:
        return ins
    owner = {id(v.sequence_lengths): n for n, v in ins.items()
             if v.sequence_lengths is not None}
    out: OrderedDict[str, Variable] = OrderedDict()
    for v in missing:
        name = owner.get(id(v))
        if name is None:
            raise ExportError("the graph reads the sequence lengths of an input that is not one "
                              "of the inputs; give that sequence input (and its lengths) as inputs")
        if mode != "input" and not automatic:
            raise ExportError(
                f"input {name!r} is a sequence input, and {fmt} has no sequence axis: its lengths "
                f"would be stored as a constant, right only for the minibatch last fed; "
                f"give them as an input of their own, e.g. inputs={{{name!r}: x, "
                f"'{name}_lengths': x.sequence_lengths}}, and feed them with the padded values")
    for name, v in ins.items():
        out[name] = v
        lengths = v.sequence_lengths
        if lengths is not None and any(m is lengths for m in missing):
            extra = f"{name}_lengths"
            if extra in ins or extra in out:
                raise ExportError(f"the lengths of sequence input {name!r} become the input "
                                  f"{extra!r}, but another input has that name; give the "
                                  "lengths as an input under a name of your own")
            out[extra] = lengths
    return out


def _add_parameter(parts: GraphParts, v: Variable) -> None:
    have = parts.parameters.get(v.graph_name)
    if have is None:
        parts.parameters[v.graph_name] = v
    elif have is not v:
        raise ExportError(f"two different parameters are both named {v.graph_name!r} (from two "
                          "parameter registries?)")
