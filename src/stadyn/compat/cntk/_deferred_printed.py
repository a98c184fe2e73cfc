"""How a waiting Function (``_deferred.Deferred``) prints before it is built, as CNTK 2.7
prints a Function over placeholders without a shape: ``str`` (``Plus(p: Sequence[tensor]) ->
Sequence[tensor]``) and ``repr`` (``Composite(Plus): Placeholder('p', [???], [???]) ->
Output('Plus5_Output_0', [???], [???])``), mixed into ``Deferred``.

Example:
    >>> import stadyn.compat.cntk as C
    >>> print(C.plus(C.placeholder(name="p"), 1.0))
    Plus(p: Sequence[tensor]) -> Sequence[tensor]
"""

from __future__ import annotations

from . import _graph as G
from ._deferred_operands import UnknownOutput, _layer_function
from ._printed import (function_repr, makes_block, op_name_of_call, pending_output_text,
                       pending_text, type_text)

__all__ = ["DeferredPrinting"]


class DeferredPrinting:
    """``str`` and ``repr`` of a waiting Function (its ``_fn``, ``_args``, ``_kwargs``,
    ``_typed``, ``name``, ``arguments`` and ``outputs`` are ``Deferred``'s)."""

    def _shown_op(self) -> "tuple[str, str]":
        """``(name, op name)`` CNTK 2.7 prints it with before it is built: a layer's, the
        op's (``Plus``), or ``Composite`` where an operand is a Function, a layer or a
        sequence (the root reads other inputs than the Function's)."""
        composite = []

        def visit(v):
            if isinstance(v, (list, tuple)):
                for u in v:
                    visit(u)
            elif isinstance(v, (DeferredPrinting, UnknownOutput)) or isinstance(
                    v, _layer_function()) or getattr(v, "is_composite", False):
                composite.append(v)
        visit(list(self._args) + list(self._kwargs.values()))
        # (an input of a sequence: CNTK 2.7 reconciles the placeholder's axes with it, ops
        # of its own)
        composite += [a for a in self.arguments
                      if not a.is_placeholder and len(a.dynamic_axes) > 1]
        if isinstance(self._fn, _layer_function()):     # (a layer applied)
            name, op = self._fn._shown_name_and_op()
        else:
            name, op = self.name, op_name_of_call(self._fn)
        return name, "Composite" if composite else op

    def __str__(self) -> str:
        """As CNTK 2.7's ``str``: ``Plus(p: Sequence[tensor]) -> Sequence[tensor]`` before it
        is built (its arguments, the output's type unknown); once built, its graph's."""
        if self._typed is not None:
            return str(self._typed)
        name, op = self._shown_op()
        root = "" if isinstance(self._fn, _layer_function()) else op_name_of_call(self._fn)
        shown = None
        if len(self.outputs) > 1:       # (a combine's: each output's type, in a Tuple)
            shown = [_output_text(o) for o in self.outputs]
        return pending_text(name, op, self.arguments, root, self.shape, shown)

    def _output_text(self) -> str:
        """The type CNTK 2.7 prints for its one output before it is built."""
        if self._typed is not None:
            return type_text(self._typed.output)
        _, op = self._shown_op()
        root = "" if isinstance(self._fn, _layer_function()) else op_name_of_call(self._fn)
        return pending_output_text(op, self.arguments, root, self.shape)

    def _root_op(self) -> str:
        """The op of the root CNTK 2.7 makes of the call (``Plus``; a layer's kind; a named
        ``Sequential``'s ``NoOp``, an unnamed one's last layer's)."""
        if isinstance(self._fn, _layer_function()):
            return self._fn._root_op_name()
        return op_name_of_call(self._fn)

    def _output_uid(self) -> str:
        uid = self.__dict__.get("_uid")
        if uid is None:
            block = self._fn._makes_block() if isinstance(self._fn, _layer_function()) \
                else makes_block(self._fn, self._args, self._kwargs)
            prefix = "Block" if block else self._root_op()
            uid = self.__dict__["_uid"] = G.new_uid(prefix) + "_Output_0"
        return uid

    def __repr__(self) -> str:
        """As CNTK 2.7's ``repr``: ``Composite(Plus): Placeholder('p', [???], [???]) ->
        Output('Plus5_Output_0', [???], [???])`` before it is built; once built, its
        graph's.

        Example:
            >>> import stadyn.compat.cntk as C
            >>> repr(C.plus(C.placeholder(name="p"), 1, name="f"))
            "Composite(Plus): Placeholder('p', [???], [???]) -> Output('f', [???], [???])"
        """
        if self._typed is not None:
            return repr(self._typed)
        return function_repr(self._root_op(), True, self.arguments, self.outputs)


def _output_text(v) -> str:
    """The type CNTK 2.7 prints for ``v``, an output of a waiting Function (its one output:
    that Function's output type before it is built) or of a graph."""
    owner = getattr(v, "owner", None) if isinstance(v, UnknownOutput) else None
    if isinstance(owner, DeferredPrinting) and len(owner.outputs) == 1:
        return owner._output_text()
    return type_text(v)
