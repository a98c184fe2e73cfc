"""The functions that read a Variable: NNabla's ``function_reference_count`` and
``function_references``.

NNabla 1.39 counts, on each variable, the function inputs it was given to (one per input slot:
``F.mul2(x, x)`` counts twice), and refuses to let a function write a variable in place when
another function reads it ("In-placing at a branching variable is prohibited":
``CgFunction::check_data_inplace``).  Its count does not go down when a reader is let go (a
``F.add_scalar(x, 1.0)`` whose result was dropped still counts: measured on NNabla 1.39, case
``nnabla_fidelity_18.scatter_nd__out_computed_shares``), so here it is a plain count, kept
while the Variable lives, of the NNabla functions made on it (``_function.Function``).

``Variable.function_references`` is NNabla's list of the functions still alive that take the
Variable as an input, each once (``F.mul2(x, x)`` is listed once), a function gone once its
outputs are (measured on NNabla 1.39: ``del y`` drops ``y``'s parent from the list).  NNabla
keeps them in a hash map keyed by address: up to a few functions it lists the newest first;
past that its order changes from run to run.  Here the order is always newest first.  The
graph keeps no list of a Variable's consumers (a node holds its inputs, not the other way
round), so the functions are noted here, by weak reference, as they are made.

Example:
    >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
    >>> x = nn.Variable((2,))
    >>> before = reader_count(x); _ = F.mul2(x, x); reader_count(x) - before
    2
"""

from __future__ import annotations

import weakref
from typing import Any, Iterable
from ...graph import IdentityKeyDict

__all__ = ["note_readers", "note_reader_function", "note_rewired", "reader_count",
           "reader_functions"]

_COUNTS: "IdentityKeyDict[Any, int]" = IdentityKeyDict()
_FUNCTIONS: "IdentityKeyDict[Any, list]" = IdentityKeyDict()
_REWIRED: "IdentityKeyDict[Any, list]" = IdentityKeyDict()


def note_readers(inputs: Iterable[Any], function: Any = None) -> None:
    """Count one more reader of each of ``inputs`` (the inputs of a function being made, a
    Variable given twice counted twice); ``function``, when given, is noted (weakly) as a
    reader of each of them (:func:`reader_functions`).

    Example:
        >>> import stadyn.compat.nnabla as nn
        >>> x = nn.Variable((2,)); note_readers([x, x]); reader_count(x)
        2
    """
    for v in inputs:
        _COUNTS[v] = _COUNTS.get(v, 0) + 1
    if function is not None:
        note_reader_function(function)


def note_reader_function(function: Any) -> None:
    """Note (weakly) that ``function`` reads each of its inputs, for :func:`reader_functions`
    only (no count: a graph Stadyn's own ops made, then seen as NNabla's).

    Example:
        >>> import stadyn as sd, stadyn.functions as SF
        >>> x = sd.Variable((2,)); y = SF.tanh(x)
        >>> note_reader_function(y.parent); reader_functions(x) == [y.parent], reader_count(x)
        (True, 0)
    """
    for v in function.inputs:
        refs = _FUNCTIONS.setdefault(v, [])
        if refs and refs[-1]() is function:         # (an input given twice: listed once)
            continue
        n = len(refs)
        if n >= 16 and not n & (n - 1):             # the dead dropped at 16, 32, 64, ...
            refs[:] = [r for r in refs if r() is not None]
        refs.append(weakref.ref(function))


def note_rewired(old: Any, new: Any) -> None:
    """Note that the functions reading ``old`` read ``new`` from now on (NNabla's
    ``old.rewire_on(new)``: a loaded network's input given the user's Variable, which Stadyn's
    graph keeps as ``old`` reading ``new``'s value or op).  As NNabla's, the readers move over
    one by one in the order ``old`` lists them, each listed first: ``new`` lists them the
    other way round.

    Example:
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> old, new = nn.Variable((2,)), nn.Variable((2,))
        >>> a, b = F.relu(old), F.sigmoid(old)
        >>> note_rewired(old, new); reader_functions(new)
        [ReLU, Sigmoid]
    """
    olds = _REWIRED.setdefault(new, [])
    if not any(r() is old for r in olds):
        olds.append(weakref.ref(old))
    refs = _FUNCTIONS.setdefault(new, [])
    for f in reader_functions(old):
        refs.append(weakref.ref(f))


def reader_functions(v: Any) -> list:
    """The functions still alive that take ``v`` as an input (NNabla's
    ``v.function_references``), each once, the newest first (a Variable rewired onto ``v``,
    :func:`note_rewired`, counts as ``v``).

    Example:
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> x = nn.Variable((2,)); a = F.relu(x); b = F.mul2(x, x)
        >>> reader_functions(x)
        [Mul2, ReLU]
    """
    same = [v] + [o for o in (r() for r in _REWIRED.get(v, ())) if o is not None]
    out: list = []
    for r in reversed(_FUNCTIONS.get(v, ())):
        f = r()
        if f is not None and all(f is not g for g in out) and \
                any(i is u for i in f.inputs for u in same):
            out.append(f)
    return out


def reader_count(v: Any) -> int:
    """How many function inputs ``v`` was given to (NNabla's ``function_reference_count``).

    Example:
        >>> import stadyn.compat.nnabla as nn
        >>> reader_count(nn.Variable((2,)))
        0
    """
    return _COUNTS.get(v, 0)
