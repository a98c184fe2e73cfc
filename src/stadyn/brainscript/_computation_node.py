"""``new ComputationNode [...]``, BrainScript's raw node constructor, for
:class:`~._stadyn_library.StadynLibrary` (a mixin: it uses the library's ``lookup``).

CNTK.core.bs defines its nodes this way (``Plus (x, y, tag='') = new ComputationNode [
operation = 'Plus' ; inputs = _AsNodes (x : y) ]``) and configs copy the form for nodes the
library does not name (Image/FCN's ``Crop``).  The record's ``operation`` is the node's CNTK
type name, ``inputs`` one node or an array of them, and the node's ``tag`` is the enclosing
function's argument of that name, as CNTK's "plus the function args".  Stadyn builds it with
its library function of the same name; the form's other settings (a ``Pooling`` node's
``kernelShape = new TensorShape [...]``, ...) are the C++ node's own names, which it does not
translate: such a record (but a ``Crop``'s ``xOffset``/``yOffset`` and an
``EnvironmentInput``'s ``propertyName``, its function's own names), an operation it has no
function for, and one that is no node (a layer such as ``DenseLayer``) are refused by name.
The node is made by the evaluator's checked call at the record's line
(:class:`~._library.NodeCall`): the wrong number of ``inputs`` is an error there, as ``Plus
(x, y, z)`` is.
"""

from __future__ import annotations

import inspect
from typing import Any

from ._layer_library import LayerFunctions
from ._library import NodeCall
from ._values import BSArray, Record, _guarded

__all__ = ["ComputationNodeFunctions"]

_KEYS = ("operation", "inputs")
# the settings of a node's record that its library function takes by the C++ node's name
_SETTINGS = {"Crop": ("xOffset", "yOffset"), "EnvironmentInput": ("propertyName",)}


class ComputationNodeFunctions:
    """``new ComputationNode [ operation = ... ; inputs = ... ]``."""

    def new(self, class_name: str, value: Any) -> Any:
        """``new ComputationNode`` builds the node its record names (the module's
        description); other classes go to the next library in line."""
        if class_name != "ComputationNode":
            return super().new(class_name, value)  # type: ignore[misc]
        what = "new ComputationNode"
        if not isinstance(value, Record) or "operation" not in value:
            raise NotImplementedError(f"{what} takes a record [ operation = '...' ; inputs = "
                                      "... ]")
        operation = value["operation"]
        if not isinstance(operation, str):
            raise NotImplementedError(f"{what}: operation must be a node type's name, got "
                                      f"{operation!r}")
        settings = _SETTINGS.get(operation, ())
        others = [k for k in value if k not in _KEYS and k not in settings]
        function = self.lookup(operation)  # type: ignore[attr-defined]
        if function is None or others:
            why = (f"its settings {', '.join(others)} (the C++ node's names) are not read"
                   if function is not None else "Stadyn has no node of that type")
            raise NotImplementedError(f"{what}: operation '{operation}' is not supported: "
                                      f"{why}")
        inputs = value["inputs"] if "inputs" in value else ()
        args = list(inputs) if isinstance(inputs, (BSArray, tuple, list)) else [inputs]
        if operation.endswith("Layer") or operation in vars(LayerFunctions):
            raise NotImplementedError(f"{what}: operation '{operation}' is not a node type: "
                                      "it is a layer (a function that makes nodes); call it "
                                      f"as {operation} {{...}} (x)")
        names = self.parameter_names(function)  # type: ignore[attr-defined]
        if names is not None and tuple(names) == ("inputs",):
            args = [tuple(args)]        # RowStack, Splice: the node's inputs as one array
        if names is not None and len(args) > len(names) and not _variadic(function):
            raise NotImplementedError(f"{what}: operation '{operation}' takes {len(names)} "
                                      f"input{'s' if len(names) != 1 else ''}, got "
                                      f"{len(args)}")
        tag = value._find("tag")
        given = {k: value[k] for k in settings if k in value}
        if given:                   # (a Crop's offsets)
            node, function = function, lambda *a, tag="": node(*a, tag=tag, **given)
        return NodeCall(operation, function, args, _guarded(tag) if tag is not None else "")


def _variadic(function: Any) -> bool:
    """Whether ``function`` takes any number of positional arguments (``*args``)."""
    try:
        params = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.kind is p.VAR_POSITIONAL for p in params)
