"""How many functions read a Variable: NNabla's ``function_reference_count``.

NNabla 1.39 counts, on each variable, the function inputs it was given to (one per input slot:
``F.mul2(x, x)`` counts twice), and refuses to let a function write a variable in place when
another function reads it ("In-placing at a branching variable is prohibited":
``CgFunction::check_data_inplace``).  Its count does not go down when a reader is let go (a
``F.add_scalar(x, 1.0)`` whose result was dropped still counts: measured on NNabla 1.39, case
``nnabla_fidelity_18.scatter_nd__out_computed_shares``), so here it is a plain count, kept
while the Variable lives, of the NNabla functions made on it (``_function.Function``).

Example:
    >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
    >>> x = nn.Variable((2,))
    >>> before = reader_count(x); _ = F.mul2(x, x); reader_count(x) - before
    2
"""

from __future__ import annotations

import weakref
from typing import Any, Iterable

__all__ = ["note_readers", "reader_count"]

_COUNTS: "weakref.WeakKeyDictionary[Any, int]" = weakref.WeakKeyDictionary()


def note_readers(inputs: Iterable[Any]) -> None:
    """Count one more reader of each of ``inputs`` (the inputs of a function being made, a
    Variable given twice counted twice).

    Example:
        >>> import stadyn.compat.nnabla as nn
        >>> x = nn.Variable((2,)); note_readers([x, x]); reader_count(x)
        2
    """
    for v in inputs:
        _COUNTS[v] = _COUNTS.get(v, 0) + 1


def reader_count(v: Any) -> int:
    """How many function inputs ``v`` was given to (NNabla's ``function_reference_count``).

    Example:
        >>> import stadyn.compat.nnabla as nn
        >>> reader_count(nn.Variable((2,)))
        0
    """
    return _COUNTS.get(v, 0)
