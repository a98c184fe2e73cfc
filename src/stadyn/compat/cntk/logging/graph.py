"""``cntk.logging.graph``: walking a graph as CNTK does (``depth_first_search``,
``find_by_name``, ``find_all_with_name``, ``find_by_uid``, ``get_node_outputs``) and ``plot``.

Example:
    >>> import stadyn.compat.cntk as C
    >>> x = C.input_variable(3, name="x")
    >>> z = C.layers.Dense(2, name="out")(C.layers.Dense(4, name="hidden")(x))
    >>> C.logging.graph.find_by_name(z, "hidden").op_name
    'Dense'
    >>> [p.name for p in C.logging.graph.find_all_with_name(z, "W", depth=-1)]
    ['W', 'W']
"""

from __future__ import annotations

from typing import Callable

from .. import _graph as G
from .._adapt import wrap
from .._function import Function, wrap_variable
from .._late import bind
from .._mixins import GraphObject
from .._unapplied_layers import UnappliedLayerView
from .._unapplied_walks import applied_copy_walk
from .._variables import Variable

__all__ = ["depth_first_search", "find_all_with_name", "find_by_name", "find_by_uid",
           "get_node_outputs", "plot", "Variable"]


def _root(node) -> list:
    if issubclass(type(node), Function):
        return node._walk_start()
    if isinstance(node, GraphObject) and hasattr(node, "variable"):
        return [G.classify(node.variable)]
    raise TypeError(f"expected a CNTK Function or Variable, got {type(node).__name__}")


def _inside(node):
    """The block whose inside a walk from ``node`` stays in (``node`` a block's
    ``block_root``: the block's arguments met as its placeholders), else None."""
    return node._inside() if issubclass(type(node), Function) else None


def _object(node, as_variable: bool = False):
    kind, v = node
    if kind == "leaf":
        return wrap_variable(v) if as_variable else wrap(v)
    return Function(v, view=kind)


def _is_combine(node) -> bool:
    """``node`` is a ``combine`` (of one output too; a model saved with its criteria, loaded):
    CNTK's walk visits that Combine function first, then each output's graph."""
    return issubclass(type(node), Function) and node.is_composite and \
        node.root_function.op_name == "Combine" and \
        not node.root_function._recurrence_root()   # (its walk starts at that Combine)


def depth_first_search(root, visitor: Callable, depth: int = 0) -> list:
    """The functions and variables of ``root``'s graph for which ``visitor`` is true, in CNTK's
    depth-first order (``depth`` levels into blocks; -1 all; a ``combine`` of several outputs
    first, as CNTK visits its Combine function).  The visitor sees variables as ``Variable``
    objects; what is returned has parameters as ``Parameter`` and constants as ``Constant``,
    as CNTK's."""
    root = _signed(root)
    if _unapplied(root):
        return _unapplied_search(root, visitor, depth)
    first = [root.root_function] if _is_combine(root) and visitor(root.root_function) else []
    return first + [_object(n) for n in G.search(
        _root(root), lambda n: bool(visitor(_object(n, as_variable=True))), depth,
        _inside(root))]


def _signed(node):
    """A layer given its signature (``update_signature``) as its Function, which CNTK 2.7's
    walks enter as they enter an applied layer's; anything else as it is."""
    if isinstance(node, UnappliedLayerView) and getattr(node, "_signature", None) is not None:
        return node.root_function
    return node


def _unapplied(node) -> bool:
    """``node`` is a layer not applied yet (no signature): no graph of Stadyn's yet, its
    Function CNTK 2.7's over its own placeholders (``_unapplied_layers``)."""
    return (isinstance(node, UnappliedLayerView) and getattr(node, "_signature", None) is None
            ) or getattr(type(node), "_operand_is_output", False) or (    # (a root function:
        not issubclass(type(node), Function) and getattr(node, "_cntk_function", False))
    # walked as its layer's, its waiting Function's; CNTK 2.7's walk of a Function starts at
    # its root)


def _unapplied_search(layer, visitor: Callable, depth: int) -> list:
    """CNTK 2.7's depth-first search of a layer not applied yet: its root function, then that
    function's inputs in order, the function that makes an input (the steps before a
    ``Sequential``'s last) walked where it is met; at a ``depth`` other than 0, into its
    blocks, as those of a copy of the layer applied (``_unapplied_walks``), where Stadyn
    declares its parameters (else a ValueError)."""
    walked = applied_copy_walk(layer, depth, depth_first_search) if depth != 0 else None
    if walked is not None:      # (into its blocks: those of a copy applied, mapped back)
        return [n for n in walked if visitor(n)]
    if depth != 0:
        raise ValueError(f"depth_first_search of a layer not applied yet with depth={depth}: "
                         "its blocks hold nothing until it is applied (apply it, or give it a "
                         "signature: update_signature)")
    # (seen holds the nodes themselves, not only their ids: a waiting Function's walk nodes are
    # made as they are asked for, so a node let go would free its id for a later, other node)
    found, seen, stack = [], {}, [layer.root_function]
    while stack:
        node = stack.pop(0)
        if _made_output(node):              # (an output: the function making it, walked)
            node = node.owner.root_function
        if id(node) in seen:
            continue
        seen[id(node)] = node
        if visitor(node):
            found.append(node)
        stack[:0] = list(getattr(node, "inputs", ()))
    return found


def _is_function(node) -> bool:
    """``node`` of a walk is a function (it has inputs), not a variable."""
    return hasattr(node, "inputs") and hasattr(node, "op_name")


def _made_output(node) -> bool:
    """``node`` is the output of a function (not an input, a placeholder, a parameter or a
    constant)."""
    if hasattr(node, "inputs") or any(getattr(node, k, False) for k in (
            "is_input", "is_placeholder", "is_parameter", "is_constant")):
        return False
    return getattr(node, "owner", None) is not None


def find_all_with_name(node, node_name: str, depth: int = 0) -> list:
    """Every function or variable named ``node_name``."""
    node = _signed(node)
    if _unapplied(node):     # (a layer not applied yet, a root function: CNTK 2.7's walk)
        return _unapplied_search(node, lambda n: n.name == node_name, depth)
    first = [node.root_function] if _is_combine(node) and \
        node.root_function.name == node_name else []
    return first + [_object(n) for n in G.search(     # (a view of a step's ops too, as CNTK
        _root(node), lambda n: G.node_name(n) == node_name, depth,      # 2.7 gives them out:
        _inside(node))]
    # over the PastValue views, which no run gives a value, as CNTK's over its PastValues)


def find_by_name(node, node_name: str, depth: int = 0):
    """The function or variable named ``node_name``: None when there is none, a ValueError when
    there are several."""
    if not isinstance(node_name, str):
        raise ValueError(f"node name has to be a string. You gave a {type(node_name)}")
    found = find_all_with_name(node, node_name, depth)
    if len(found) > 1:
        raise ValueError(f'found multiple functions matching "{node_name}". If that was '
                         "expected call find_all_with_name")
    return found[0] if found else None


def find_by_uid(node, node_uid: str, depth: int = 0):
    """The function or variable whose ``uid`` is ``node_uid`` (None when there is none)."""
    if not isinstance(node_uid, str):
        raise ValueError(f"node_uid must be a string, got a {type(node_uid)}")
    found = depth_first_search(node, lambda x: x.uid == node_uid, depth)
    return found[0] if found else None


def get_node_outputs(node, depth: int = 0) -> list:
    """The outputs of every function in ``node``'s graph, as Variables (a ``combine``'s own
    outputs first, as CNTK lists its Combine function's)."""
    node = _signed(node)
    if _unapplied(node):        # (its walk's functions' outputs, as CNTK 2.7 lists them)
        return [o for n in _unapplied_search(node, _is_function, depth)
                for o in n.outputs]
    outs = list(node.outputs) if _is_combine(node) else []
    for kind, v in G.search(_root(node), lambda n: n[0] != "leaf", depth):
        outs += [wrap_variable(o) for o in G.outputs_of(v)]
    return outs


def plot(root, filename: str | None = None) -> str:
    """The graph as CNTK 2.7's ``plot`` returns it: a line ``Op(<input uids>) -> <output
    uid>;`` for each output of each function met by the walk (a block's constants left out,
    as private to it), from the inputs to the root, separated by blank lines; with
    ``filename`` (``.dot``) also written as a Graphviz file.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> x = C.input_variable(2, name="x")
        >>> text = C.logging.graph.plot(C.relu(x) + 1)
        >>> [line.strip().split("(")[0] for line in text.split(";") if line.strip()]
        ['ReLU', 'Plus']
    """
    root = _signed(root)
    if _unapplied(root):        # (a layer not applied yet, a waiting Function: its walk)
        nodes = _unapplied_search(root, _is_function, 0)
    else:
        nodes = [root.root_function] if _is_combine(root) else []
        nodes += [Function(v, view=kind) for kind, v in
                  G.search(_root(root), lambda n: n[0] != "leaf", 0)]
    lines, edges = [], []
    for f in nodes:
        ins = list(f.inputs)
        shown = []
        for k, i in enumerate(ins):
            if f.is_block and i.is_constant:
                continue
            # (CNTK's separator follows every input but the last, shown or not)
            shown.append(i.uid + (", " if k != len(ins) - 1 else ""))
        line = f"{f.op_name}({''.join(shown)}) -> "
        lines += [line + o.uid + ";\n" for o in f.outputs]
        edges += [(i.uid, f.uid) for i in ins]
    text = "\n".join(reversed(lines))
    if filename:
        import os
        if os.path.splitext(filename)[1].lower() != ".dot":
            raise ValueError("plot: Stadyn writes '.dot' files only (render them with Graphviz)")
        with open(filename, "w", encoding="utf-8") as f:
            f.write("digraph network_graph {\n")
            f.writelines(f'  "{a}" -> "{b}";\n' for a, b in edges)
            f.write("}\n")
    return text


bind(find_all_with_name=find_all_with_name,   # an untyped @C.Function's own (_signature)
     find_by_name=find_by_name)
