"""What a ``@C.Function``'s body returned, as ``_signature`` and its waiting Functions
(``_waiting_function``) take it: a Function (a tuple combined, a leaf in a Combine of its own),
whether it waits for its placeholders' shapes, which placeholders it still reads, and the
order of its arguments (the Python function's, as CNTK's Tuple block keeps them).

Example:
    >>> import stadyn.compat.cntk as C
    >>> a, b = C.placeholder(name="a"), C.placeholder(name="b")
    >>> waits(a + b), waits(a), of_graph(a), of_graph(2.0)
    (True, False, True, False)
    >>> as_function((a * 2, b)).root_function.op_name
    'Combine'
"""

from __future__ import annotations

from ...graph import Variable
from . import _graph as G
from ._adapt import unwrap, wrap
from ._deferred import Deferred
from ._deferred_operands import waiting_of
from ._late import late
from ._mixins import GraphObject

__all__ = ["waits", "reads_any", "of_graph", "argument_leaves", "in_signature_order",
           "as_function", "unapplied_output"]


def reads_any(built, placeholders) -> bool:
    """Whether the graph ``built`` still reads one of ``placeholders`` (those a replay put
    operands in the place of)."""
    own = {id(unwrap(p)) for p in placeholders}
    return any(id(unwrap(p)) in own for p in as_function(built).placeholders)


def of_graph(value) -> bool:
    """Whether a body's result (or a part of a tuple it returned) is of a graph: a Function,
    a Variable, a waiting op."""
    return hasattr(value, "outputs") or isinstance(wrap(value), (GraphObject, Deferred))


def waits(out) -> bool:
    """Whether what a body returned over its untyped arguments waits for their shapes: an op
    made on them (a waiting Function or its output), not a placeholder returned as it is."""
    if isinstance(out, (tuple, list)):
        return any(waits(o) for o in out)
    return isinstance(out, Deferred) or getattr(out, "_waiting_function", False) or \
        isinstance(getattr(out, "waiting", None), Deferred)


def argument_leaves(values: list) -> list[Variable]:
    """The inputs and placeholders of ``values`` (Variables or Functions), in order: what a
    Function applied to them takes as its arguments, in its signature's order."""
    leaves: list[Variable] = []
    for value in values:
        v = value.variable if isinstance(value, GraphObject) else value
        if isinstance(v, Variable) and G.kind_of(v) in ("input", "placeholder"):
            leaves.append(v)
        elif hasattr(value, "arguments"):
            leaves.extend(unwrap(a) for a in value.arguments)
    return leaves


def in_signature_order(function, values: list):
    """``function`` with its arguments recorded in the order of ``values`` (the Python
    function's), as CNTK's Tuple block keeps them."""
    variable = getattr(function, "variable", None)
    if variable is not None:
        G.record_argument_order(variable, argument_leaves(values))
    return function


def as_function(out):
    """What a Python function under ``@C.Function`` returned, as a Function: a tuple or list
    combined; a leaf (an input, placeholder, Parameter or Constant: a function of no
    arguments returning a Constant) in a Combine of its own, as CNTK 2.7 makes it."""
    if isinstance(out, (tuple, list)):
        return late("ops").combine(list(out))
    if hasattr(out, "outputs"):
        return out
    out = wrap(out)
    return out if hasattr(out, "outputs") else late("ops").combine([out])


def unapplied_output(value):
    """A value given to an untyped Function's argument, as CNTK 2.7 takes it: a layer not
    applied yet (``Dense(4)``, a ``Sequential``; no Variable, but a CNTK Function over a
    placeholder of its own) is its output, of unknown shape, so the Function applied to it
    is a Function over that placeholder, applied later (a layer of several outputs, an
    ``LSTM``, has none: CNTK 2.7's RuntimeError; ``ResNetBlock`` and ``SequentialClique``,
    Python functions in CNTK 2.7, are no Functions: left as they are)."""
    if (getattr(value, "_cntk_function", False) and hasattr(value, "_first_output")
            and not isinstance(value, (GraphObject, Deferred))):
        return waiting_of(value.output)     # (the Deferred of the layer over its placeholder)
    return value
