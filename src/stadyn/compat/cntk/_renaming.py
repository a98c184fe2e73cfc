"""CNTK 2.7's rule for ``Function.name = ...``: a Function may be named once; one that has a
name already (given when it was made, set before, or, for an unnamed ``Sequential``, its last
layer's) refuses another (its C++ ``Function::SetName``: a ValueError).

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

__all__ = ["refuse_renaming"]


def refuse_renaming(function) -> None:
    """CNTK 2.7's ValueError for setting the name of ``function`` (a CNTK Function or layer)
    where it has one."""
    name = function.name
    if name:
        raise ValueError(f"Illegal to set name of a Function '{function!r}' with an existing "
                         f"name '{name}'")
