"""cntk.exe's names and inputs of the nodes a BrainScript network makes inside functions, for
:class:`~._stadyn_library.StadynLibrary` (a mixin: it uses the library's ``path``, ``resolve``
and ``operation_of``), so that a model file of a BrainScript network lists them as cntk.exe's
does and MEL can edit it (``SetInput (CE.logits_per_class, 0, labels)``, ``Delete
(pixelwiseError.pixelNorm.z.r)``: Tests/EndToEndTests/Image/FCN).

cntk.exe names a node after the expression path of the ``new ComputationNode`` that made it
(``BrainScriptEvaluator.cpp``; a network member's node is renamed after the member).  A library
function's node is made at the path of its call (``pixelNorm = Reciprocal (ReduceSum (mask))``
inside ``pixelwiseError = PixelError (...)``: ``pixelwiseError.pixelNorm``; its argument at the
path plus the parameter's name, ``pixelwiseError.pixelNorm.z``), plus the member CNTK.core.bs
makes the node in where it wraps it in a record (``ReduceSum (_, axis) = { ... r = new
ComputationNode [...] }.r``: ``pixelwiseError.pixelNorm.z.r``).  A layer's node likewise: a
``ConvolutionalLayer`` without bias makes its ``Convolution`` at ``.c`` of where it is applied,
a ``BatchNormalizationLayer`` its node at that path itself.

The inputs of such a node are the nodes given to the function, in the order of its parameters
(CNTK.core.bs's ``_AsNodes (x : y)``), which MEL's ``SetInput (node, k, input)`` counts in.
Where cntk.exe would make a ``Constant`` node of a number argument of a function (``Clip (0,
1, x)``, ``Plus (x, 1)``; an infix operator's number is one already:
``Library.number_operand``), or the node is not one of the function's (a layer other than
those two: its nodes are CNTK.core.bs's several, not Stadyn's one), the node is left unnamed
(the file does not list it, as before).
"""

from __future__ import annotations

import functools
import numbers
from typing import Any

from .. import layers as L
from ..graph import Variable
from ._layer_library import _identity
from ._library import NODE_OPERATOR_HOOKS
from ._network_library import reached_ids

__all__ = ["NodeNames"]

# CNTK.core.bs's functions that make their node inside a record: the member it is made in
_MEMBER = {"ReduceSum": "r", "ReduceLogSum": "r", "ReduceMean": "r", "ReduceMin": "r",
           "ReduceMax": "r", "Splice": "out"}
# functions (and BrainScript's operator hooks) whose number arguments cntk.exe makes into
# Constant nodes (their inputs would count one more than the nodes given)
_NUMBERS_ARE_NODES = frozenset((
    "Plus", "Minus", "ElementTimes", "ElementDivide", "Reciprocal", "Clip", "LogPlus", "Times",
    "Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual", "Max", "Min", "If",
    "if_then_else", *NODE_OPERATOR_HOOKS.values()))


class NodeNames:
    """The names cntk.exe gives the nodes BrainScript's functions make (the module's
    description)."""

    def _init_node_names(self) -> None:
        # id -> (node, cntk.exe's name, its inputs as given or None where they are not known)
        self._made_names: dict[int, tuple[Variable, str, list[Any] | None]] = {}

    def after_apply(self, fn: Any, args: list[Any], kwargs: dict[str, Any],
                    result: Any) -> None:
        """Note the node ``result`` that ``fn`` made from ``args`` and ``kwargs``: its name is
        the call's path (:attr:`path`) and the member CNTK.core.bs makes it in."""
        if not isinstance(result, Variable) or result.parent is None or not self.path or \
                id(result) in self._made_names:
            return
        given = list(args) + list(kwargs.values())
        if any(result is a for a in given):         # (an argument passed through)
            return
        name = self._function_name(fn)
        if name is not None:
            member = _MEMBER.get(name, "")
            nodes: list[Any] | None = [a for a in given if self.is_node(a)]
            if name in _NUMBERS_ARE_NODES and any(
                    isinstance(a, numbers.Real) and not isinstance(a, bool) for a in args):
                nodes = None
        elif len(args) == 1 and not kwargs:
            member, nodes = self._layer_node(fn, args[0])
            if member is None:
                return
        else:
            return
        self._made_names[id(result)] = (result, f"{self.path}.{member}" if member else
                                        self.path, nodes)

    def _function_name(self, fn: Any) -> str | None:
        """The name of the library function (or operator hook) ``fn``, else None.  The
        library's functions are looked at on each call (a function added to
        ``self.functions`` later counts too): most are the library's own methods, found without
        the look; the rest are ~20 of ~150, a scan of a few microseconds."""
        if isinstance(fn, functools.partial):       # (Equal, Less, ...: one method for all)
            return str(fn.args[0]) if getattr(fn.func, "__self__", None) is self and \
                fn.args else None
        if getattr(fn, "__self__", None) is self or \
                any(f is fn for f in self.functions.values()):
            return getattr(fn, "__name__", "")
        return None

    def _layer_node(self, layer: Any, x: Any) -> tuple[str | None, list[Any] | None]:
        """The member of the call's path a layer's node is made at ("" for the path itself)
        and its inputs in cntk.exe's order, or None where Stadyn's node is not cntk.exe's
        one."""
        params = {p.name.rsplit("/", 1)[-1]: p for p in getattr(layer, "parameters", [])}
        if isinstance(layer, L.BatchNormalization):
            order = ("gamma", "beta", "mean", "var", "count")
            return "", [x] + [params[k] for k in order] if all(k in params for k in order) \
                else None
        if isinstance(layer, L.Convolution) and not getattr(layer, "bias", True) and \
                getattr(layer, "activation", None) is _identity and "W" in params:
            return "c", [params["W"], x]
        return None, None

    def inner_nodes(self, named: dict[str, Any]) -> dict[str, Variable]:
        """cntk.exe's names of the nodes functions made (the module's description) that the
        network's members (``named``) reach and do not name already, a name taken once (a node
        an edit replaced, ``BS.Network.Edit``, is no node of the network)."""
        members = {id(v) for v in named.values()}
        reached = reached_ids([v for v in named.values() if isinstance(v, Variable)])
        found: dict[str, Variable] = {}
        for v, name, _ in self._made_names.values():
            if id(v) in reached and id(v) not in members and name not in named and \
                    name not in found:
                found[name] = v
        return found

    def made_inputs(self, v: Any) -> list[Variable] | None:
        """The inputs of a node a function made, in cntk.exe's order, or None where not
        known."""
        entry = self._made_names.get(id(v))
        if entry is None or entry[0] is not v or entry[2] is None:
            return None
        return [self.resolve(a) for a in entry[2]]
