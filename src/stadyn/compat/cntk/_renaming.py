"""CNTK 2.7's rules for names: ``Function.name = ...`` names a Function once; one that has a
name already (given when it was made, set before, or, for an unnamed ``Sequential``, its last
layer's) refuses another (its C++ ``Function::SetName``: a ValueError); and the ``name`` an op,
a layer or a variable is made with is a ``str`` (:func:`refuse_name`).

Example:
    >>> import stadyn.compat.cntk as C
    >>> d = C.layers.Dense(2)
    >>> d.name = "first"
    >>> d.name = "second"
    Traceback (most recent call last):
      ...
    ValueError: Illegal to set name of a Function 'Composite(Dense): Placeholder('x', [???], \
[???]) -> Output('first', [???], [???])' with an existing name 'first'
"""

from __future__ import annotations

from typing import Any

__all__ = ["refuse_renaming", "refuse_name"]


def refuse_renaming(function) -> None:
    """CNTK 2.7's ValueError for setting the name of ``function`` (a CNTK Function or layer)
    where it has one."""
    name = function.name
    if name:
        raise ValueError(f"Illegal to set name of a Function '{function!r}' with an existing "
                         f"name '{name}'")


def refuse_name(name: Any, op: str | None = None) -> None:
    """CNTK 2.7's refusal of an op's ``name`` that is no ``str`` (SWIG passes it on as a
    ``std::wstring``): ``None`` is its ValueError ('invalid null reference'), anything else
    (a number, bytes, a Variable given in its place: ``C.relu(a, a)``, ``C.minus(a, b, a)``)
    its NotImplementedError ('Wrong number or type of arguments'); ``op`` names the op.

    Example:
        >>> refuse_name("h1", "Times")
        >>> refuse_name(5, "Minus")
        Traceback (most recent call last):
          ...
        NotImplementedError: Wrong number or type of arguments for overloaded function 'Minus'. ...
    """
    if isinstance(name, str):
        return
    what = f"'{op}'" if op else "of an op"
    if name is None:
        raise ValueError(f"invalid null reference in method {what}, argument of type "
                         "'std::wstring const &' (CNTK 2.7 takes name=None as a null "
                         "string: give '' for no name)")
    raise NotImplementedError(f"Wrong number or type of arguments for overloaded function "
                              f"{what}. (its name is a {type(name).__name__}, {name!r:.60}: "
                              "CNTK 2.7 takes a str -- an operand given past the op's "
                              "operands lands in name)")
