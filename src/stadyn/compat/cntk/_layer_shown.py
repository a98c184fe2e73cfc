"""How CNTK 2.7 shows a layer before it is applied (``_layers_function.LayerFunction``'s
view): its name, the op its graph shows, its arguments' names and its number of outputs.  An
unnamed ``Sequential`` shows its last step's name (that step's output is its own).

Example:
    >>> import stadyn.compat.cntk as C
    >>> shown_layer(C.layers.Sequential([C.layers.Dense(3), C.layers.Dense(2, name="last")]))
    ('last', 'Composite', ('keep',), 1)
"""

from __future__ import annotations

from typing import Any

from ... import layers as _L

__all__ = ["shown_layer", "shown_name", "LAYER_ARGUMENTS"]


def _is_steps(inner: Any) -> bool:
    """``inner`` (a layer's Stadyn layer) is a ``Sequential``'s steps."""
    return hasattr(getattr(inner, "composite", None), "steps")


def _is_layer(step: Any) -> bool:
    """``step`` is a CNTK layer (a ``LayerFunction``), not an op or a Python function."""
    return hasattr(step, "kind") and hasattr(step, "layer") and hasattr(step, "_shown_steps")


# The arguments CNTK 2.7 names a layer's placeholders (``x`` where not listed), and the op its
# graph shows where that is not the layer's kind
LAYER_ARGUMENTS = {"LSTM": ("dh", "dc", "x"), "GRU": ("dh", "x"), "RNNStep": ("dh", "x"),
                   "MaxUnpooling": ("x", "y"),
                   "AttentionModel": ("encoder_hidden_state", "decoder_hidden_state")}
_SHOWN_AS_COMPOSITE = ("Recurrence", "RecurrenceFrom", "Fold", "AttentionModel")


def shown_layer(layer: Any) -> "tuple | None":
    """``(name, op, argument names, number of outputs)`` as CNTK 2.7 prints ``layer`` before
    it is applied; None for a layer CNTK makes no Function of."""
    op, args, outputs = layer.kind, LAYER_ARGUMENTS.get(layer.kind, ("x",)), 1
    name = layer.own_name
    if op == "LSTM":
        outputs = 2
    if getattr(layer.layer, "return_full_state", False):     # (a full state: every state's)
        outputs = getattr(getattr(layer.layer, "step", None), "n_states", 1)
    if op == "RecurrenceFrom":
        args = ("h", "c", "x") if isinstance(layer.layer.step, _L.LSTM) else ("h", "x")
    if op in _SHOWN_AS_COMPOSITE:
        op = "Composite"
    elif isinstance(layer.layer, _L.Label):
        op = "NoOp"
    elif _is_steps(layer.layer):
        steps = layer.layer.composite.steps
        args = layer.__dict__.get("_argument_names", ("keep",))
        if steps and isinstance(steps[-1], tuple):
            outputs = len(steps[-1])
        elif steps and _is_layer(steps[-1]) and \
                getattr(steps[-1].layer, "return_full_state", False):
            outputs = shown_layer(steps[-1])[3]     # (a recurrence's full state last)
        if not steps:
            op = "Combine"
        elif len(steps) == 1 and _is_layer(steps[0]) and not name:
            # (a name makes CNTK's Sequential a composite over the layer)
            inner = shown_layer(steps[0])
            if inner is None:
                return None
            name = name or inner[0]
            op, outputs = inner[1], inner[3]
        else:
            op = "Composite"
            name = shown_name(layer)
    elif not op:
        return None
    return name, op, tuple(args), outputs


def shown_name(layer: Any) -> str:
    """The name CNTK 2.7 gives ``layer`` before it is applied: its own; an unnamed
    ``Sequential``'s is that of its last step (a layer), whose output is the Sequential's."""
    if layer.own_name or not _is_steps(layer.layer):
        return layer.own_name
    steps = layer._shown_steps()
    last = steps[-1] if steps else None
    return shown_name(last) if _is_layer(last) else ""
