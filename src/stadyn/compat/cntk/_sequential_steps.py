"""The steps of a CNTK ``Sequential`` layer as CNTK 2.7's graph holds them
(:class:`SequentialSteps`, mixed into ``_layers_function.LayerFunction``).

CNTK 2.7 makes no Function of a ``Sequential`` without a name: it is only its steps applied in
turn, so a ``Sequential`` ending in an unnamed one ends in that one's steps, and its root is
their last op (``[Dense(3), Sequential([Dense(2), relu])]`` has ``ReLU``); a named one is an
alias (``NoOp``) of its output.

Example:
    >>> import stadyn.compat.cntk as C
    >>> inner = C.layers.Sequential([C.layers.Dense(2), C.relu])
    >>> outer = C.layers.Sequential([C.layers.Dense(3), inner])
    >>> len(outer._shown_steps()), outer.root_function.op_name
    (3, 'ReLU')
"""

from __future__ import annotations

from typing import Any

__all__ = ["SequentialSteps", "named_sequential", "unnamed_sequential"]


class SequentialSteps:
    """A layer's steps as CNTK 2.7 shows a ``Sequential`` (see the module's text); the layer
    says what its own steps are (:meth:`_composite_steps`)."""

    name: str
    kind: str

    def _composite_steps(self) -> "list | None":
        """The steps of this ``Sequential`` as written (None for another layer)."""
        raise NotImplementedError

    def _shown_steps(self) -> "list | None":
        """A ``Sequential``'s steps as CNTK 2.7's graph holds them (None for another layer):
        an unnamed ``Sequential`` last among them is replaced by its own steps."""
        steps = self._composite_steps()
        if steps is None:
            return None
        steps = list(steps)
        while not self.own_name and steps and unnamed_sequential(steps[-1]):
            steps[-1:] = steps[-1]._composite_steps()
        return steps

    def _root_is_last_op(self) -> bool:
        """Whether this is an unnamed ``Sequential`` whose last step is no layer (an op, a
        Python function), whose root CNTK 2.7 makes that step's."""
        steps = self._shown_steps()
        return not self.own_name and bool(steps) and \
            not isinstance(steps[-1], SequentialSteps)


def unnamed_sequential(step: Any) -> bool:
    """``step`` is a ``Sequential`` without a name: CNTK 2.7 makes no function of it."""
    return isinstance(step, SequentialSteps) and step._composite_steps() is not None and \
        not step.own_name and not step.kind


def named_sequential(step: Any) -> bool:
    """``step`` is a ``Sequential`` with a name: CNTK 2.7's alias (``NoOp``) of its output."""
    return isinstance(step, SequentialSteps) and step._composite_steps() is not None and \
        bool(step.own_name) and not step.kind
