"""What CNTK 2.7 shows inside the block of a recurrent step applied to values (``LSTM``,
``GRU``, ``RNNStep`` called on ``h, x``): Stadyn's step (``stadyn.layers``) computes the same
gates with its own ops, which :func:`mark_step_inside` marks, as the step is applied, to show
as CNTK's ops: the bias first in ``Plus(b, Times(x, W))`` (LSTM, GRU); the GRU's ``1 - z`` a
``Minus`` over its constant 1; the ``RNNStep``'s bias added last, ``Plus(Plus(Times(x, W),
Times(h, H)), b)`` (Stadyn adds it in ``x W + b``: ``_graph_views.show_bias_last``).  The op
names are ``_graph_shown``'s (``StableSigmoid``, ``ElementTimes``, ...).  A step with
stabilisers, peepholes or a projection is left as Stadyn computes it.

Example:
    >>> import stadyn.compat.cntk as C
    >>> z = C.layers.RNNStep(3)(C.input_variable(3, name="h"), C.input_variable(2, name="x"))
    >>> root = z.root_function.block_root
    >>> inner = root.inputs[0].owner
    >>> root.op_name, inner.op_name, [i.name for i in inner.inputs]
    ('StableSigmoid', 'Plus', ['', 'b'])
"""

from __future__ import annotations

from ...graph import Variable
from ._graph_shown import show_operands_in_order
from ._graph_views import show_bias_last, walk_between
from ._shown_constants import gru_constant, show_constants

__all__ = ["made_between", "mark_step_inside"]


def mark_step_inside(kind: str, step, outputs: list, arguments: list) -> None:
    """Mark the ops of the step ``step`` (a ``stadyn.layers`` ``LSTM``, ``GRU`` or
    ``RNNStep``; ``kind`` its CNTK name) that made ``outputs`` from ``arguments`` to show as
    CNTK 2.7's block shows them (see the module's text)."""
    if getattr(step, "op_by_op", True) or getattr(step, "use_peepholes", False):
        return
    stop = {id(a) for a in arguments}
    for v in made_between(outputs, stop):
        name = v.parent.spec.name
        if name == "affine" and len(v.parent.inputs) == 3 and kind in ("LSTM", "GRU"):
            show_operands_in_order(v, (v.parent.inputs[2],))     # (CNTK's b + x W)
        elif name == "r_sub_scalar" and kind == "GRU":
            show_constants(v, (gru_constant(list(step.parameters)),))
    if kind == "RNNStep":
        summed = outputs[0].parent.inputs[0]        # (act(x W + b + h H))
        if summed.parent is not None and summed.parent.spec.name == "add2":
            show_bias_last(summed)


def made_between(outputs: list, stop: set) -> list:
    """The values the ops between ``outputs`` and the values in ``stop`` (by id: a step's
    arguments) make, down to the leaves: the ops inside a step's block."""
    return list(walk_between([v for v in outputs if isinstance(v, Variable)], stop))
