"""BrainScript's operators and ``if``, as a mixin of the evaluator.

Numbers follow C's double arithmetic (``x/0`` is inf, invalid results are nan); strings concatenate
and compare; node operands go to the library's hooks (``NODE_OPERATOR_HOOKS``): node ``*`` node is
``times`` (matrix product), a scalar ``*`` node and ``.*`` are ``element_times``, ``x / number`` is
``x .* (1/number)``, ``1/x`` is ``reciprocal``; ``f >> g`` composes (``g(f(x))``), ``array << n``
drops the first n items, ``r with s`` edits a record (:func:`with_record`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from stadyn._errors import ConfigError, StadynError
from stadyn.graph import source_location

from . import _ast as A
from ._ast import line_of
from ._library import NODE_OPERATOR_HOOKS
from ._values import BSArray, CycleError, Record, _err, _is_number, _num

__all__ = ["OperatorsMixin", "with_record"]


class OperatorsMixin:
    """The evaluator's operator methods.  The class that mixes it in provides ``library``,
    ``eval``, ``eval_at``, ``_type``, ``_int`` and ``_is_function``
    (:class:`._evaluator.Evaluator`)."""

    def _unary(self, e: A.Unary, scope):
        v = self.eval_at(e.operand, scope, {"-": "_negate", "!": "_not"}.get(e.op, ""))
        if e.op == "!":
            if isinstance(v, bool):
                return not v
            if self.library.is_node(v):
                return self._hook("minus", (1, v), e.loc, "!")
        elif _is_number(v):
            return -v if e.op == "-" else v
        elif self.library.is_node(v):
            return self._hook("negate", (v,), e.loc, "-") if e.op == "-" else v
        raise _err(f"operator '{e.op}' cannot be applied to {self._type(v)}", e.loc)

    def _if(self, e: A.If, scope):
        cond = self.eval_at(e.cond, scope, "if")
        if isinstance(cond, bool):
            return self.eval(e.then if cond else e.orelse, scope)
        if self.library.is_node(cond):
            return self._hook("if_then_else", (cond, self.eval_at(e.then, scope, "then"),
                                               self.eval_at(e.orelse, scope, "else")),
                              e.loc, "if")
        raise _err(f"the condition of 'if' must be a boolean, got {self._type(cond)}", e.cond.loc)

    def _binary(self, e: A.Binary, scope):
        # cntk.exe evaluates each operand at the path plus '<Name>Args[k]' (z.PlusArgs[1])
        prefix = _PRETTY.get(e.op, e.op)
        left = self.eval_at(e.left, scope, f"{prefix}Args[0]")
        if e.op in ("&&", "||") and isinstance(left, bool):
            if left == (e.op == "||"):
                return left  # short circuit
            right = self.eval_at(e.right, scope, f"{prefix}Args[1]")
            if isinstance(right, bool):
                return right
            raise _err(f"operator '{e.op}' cannot be applied to boolean and "
                       f"{self._type(right)}", e.loc)
        right = self.eval_at(e.right, scope, f"{prefix}Args[1]")
        return self.binary(e.op, left, right, e.loc)

    def binary(self, op: str, a: Any, b: Any, loc: A.SourceLocation | None) -> Any:
        """Apply infix operator ``op`` to two values, as BrainScript does."""
        if _is_number(a) and _is_number(b):
            return _number_op(op, a, b, loc)
        if isinstance(a, str) and isinstance(b, str):
            if op == "+":
                return a + b
            if op in _COMPARE:
                return _COMPARE[op](a, b)
        elif isinstance(a, bool) and isinstance(b, bool):
            if op in _COMPARE:
                return _COMPARE[op](a, b)
            if op in ("&&", "||"):
                return (a and b) if op == "&&" else (a or b)
        elif self.library.is_node(a) or self.library.is_node(b):
            return self._node_op(op, a, b, loc)
        elif op == ">>" and self._is_function(a) and self._is_function(b):
            return self.library.compose(a, b)
        elif op == "<<" and isinstance(a, (BSArray, tuple, list)) and _is_number(b):
            n = self._int(b, loc, "shift count")
            return BSArray.of_values([a[k] for k in range(max(n, 0), len(a))], loc)
        elif op == "with" and isinstance(a, Record) and isinstance(b, Record):
            return with_record(a, b)
        raise _err(f"operator '{op}' cannot be applied to {self._type(a)} and {self._type(b)}", loc)

    def _node_op(self, op: str, a: Any, b: Any, loc):
        for v in (a, b):
            if not (self.library.is_node(v) or _is_number(v)):
                raise _err(f"operator '{op}' cannot be applied to {self._type(a)} and "
                           f"{self._type(b)}", loc)
        if op == "*" and (_is_number(a) or _is_number(b)):
            return self._hook("element_times", (a, b), loc, op)
        if op == "/":
            if _is_number(b):
                inverse = math.inf if b == 0 else 1 / b
                return self._hook("element_times", (a, _num(inverse)), loc, op)
            if _is_number(a):
                if a != 1:
                    raise _err("a number divided by a node is only supported as 1/x", loc)
                return self._hook("reciprocal", (b,), loc, op)
            raise _err("division of a node by a node is not supported (use ElementDivide)", loc)
        if op == "&&":  # as CNTK: element-wise product of 0/1 values
            return self._hook("element_times", (a, b), loc, op)
        hook = NODE_OPERATOR_HOOKS.get(op)
        if hook is None:
            raise _err(f"operator '{op}' is not supported on nodes", loc)
        return self._hook(hook, (a, b), loc, op)

    def _hook(self, hook: str, args: tuple, loc, op: str) -> Any:
        try:
            with source_location(line_of(loc)):
                values = list(args)
                self.library.prepare_args(values, {})
                self.library.path = self._path        # (the node's name: the expression's)
                # (a number operand: cntk.exe's constant node, made in the operands' order)
                values = [self.library.number_operand(v) if _is_number(v) else v
                          for v in values]
                fn = getattr(self.library, hook)
                result = fn(*values)
                self.library.after_apply(fn, values, {}, result)
                return result
        except CycleError:
            raise
        except NotImplementedError as err:
            raise _err(f"operator '{op}' on nodes: {err}", loc) from None
        except ConfigError as err:
            if err.line is not None:
                raise
            raise _err(f"operator '{op}': {err.reason}", loc) from err
        except StadynError as err:
            raise _err(f"operator '{op}': {err}", loc) from err


# the operator names of cntk.exe's expression paths (BrainScriptEvaluator.cpp's infixOps)
_PRETTY = {"with": "With", "*": "Times", "/": "Div", ".*": "ElementTimes", "**": "Pow",
           "%": "Mod", "+": "Plus", "-": "Minus", "<": "LT", "==": "Equal", ">": "GT",
           ">=": "GT", "!=": "NotEqual", "<=": "LE", "&&": "And", "||": "Or", ">>": "Before",
           "<<": "Shift"}

_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
}


def _number_op(op: str, a: int | float, b: int | float, loc: A.SourceLocation | None) -> Any:
    """Double arithmetic as C does it (x/0 is inf, invalid results are nan)."""
    if op in _COMPARE:
        return _COMPARE[op](a, b)
    if op == "+":
        return _num(a + b)
    if op == "-":
        return _num(a - b)
    if op == "*":
        return _num(a * b)
    if op == "/":
        if b == 0:
            return math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, a)
        return _num(a / b)
    if op == "%":
        return math.nan if b == 0 or math.isinf(a) else _num(math.fmod(a, b))
    if op == "**":
        try:
            return _num(math.pow(a, b))
        except OverflowError:
            return math.inf
        except ValueError:
            return math.nan
    raise _err(f"operator '{op}' cannot be applied to a number and a number", loc)


def with_record(a: Record, b: Record) -> Record:
    """``a with b``: ``a``'s members re-bound to the new record, ``b``'s members on top."""
    rec = Record(a._parent, b.loc)
    for name, rebind in a._rebind.items():
        if name not in b._members:
            rec._define(name, rebind(rec), rebind)
    for name, thunk in b._members.items():
        rec._define(name, thunk)
    return rec
