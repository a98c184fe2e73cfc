"""The ops CNTK 2.7 builds on a sparse input (``input_variable(..., is_sparse=True)``) but
refuses to run: every tensor operation (``plus``, ``relu``, ``reduce_sum``, ``slice``,
``splice``, ``past_value``, ...) raises ``RuntimeError: TensorOp: Tensor operations are
currently not supported for sparse matrices`` (a few, ``reshape``, ``softmax``, ``hardmax``,
``one_hot``: ``Feature Not Implemented``) at the first ``eval``, ``forward`` or
``train_minibatch``.  A ``reshape`` that keeps the sample's last axis runs (CNTK holds sparse
data as a matrix of that axis' rows, Matrix.cpp:1882-1891 reshapes a sparse one only to the
same rows and columns) and gives dense data.  What takes sparse data is a product with it
(``times``, ``Dense``, ``Embedding``), ``alias``, ``combine``, ``stop_gradient``, the labels of
``cross_entropy_with_softmax`` and ``classification_error``, and the sequence ops that pick
steps (``sequence.first``, ``last``, ``gather``, ``is_first``, ``unpack``).

Stadyn holds sparse data dense, so it could compute these; it refuses them as CNTK does, when
the graph runs (:func:`._run_checks.refuse_when_run`), with one :class:`SparseOperandError`
naming the op, the input and the line that built the op.  Likewise feeding dense data (a NumPy
array, a dense ``Value``) to a sparse input is CNTK's ``ValueError: Dense input data supplied
for sparse input Variable``: :func:`refuse_dense_feed`.

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> s = C.input_variable(3, is_sparse=True, name="s")
    >>> (s + 1).eval({s: C.Value.one_hot([[1]], 3)})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    stadyn.compat.cntk._sparse_operands.SparseOperandError: plus: its operand Input('s', ...
"""

from __future__ import annotations

import contextlib
import functools
import types
import weakref
from typing import Any

import numpy as np

from ...graph import Variable
from . import _graph as G
from ._adapt import wrap
from ._mixins import GraphObject
from ._run_checks import refuse_copies_when, refuse_when_run

__all__ = ["SparseOperandError", "refuse_sparse_operands", "refuse_sparse_run", "pass_sparse_on",
           "refuse_dense_feed", "sparse_taken", "computes_sparse", "sparse_computed"]


class SparseOperandError(RuntimeError):
    """An op CNTK 2.7 does not run on a sparse input (its RuntimeError)."""


# The outputs of ops that pass sparse data on as it is (``alias`` of a sparse input): CNTK 2.7
# refuses a tensor operation on them as on the input
_SPARSE_DATA: "weakref.WeakSet" = weakref.WeakSet()
# the outputs of the ops passing sparse data on (``alias``), of sparse data or not: an op
# refusing sparse operands whose output is one of them (``splice`` of one operand, CNTK 2.7's
# ``combine``) passes it on too
_PASSED_ON: "weakref.WeakSet" = weakref.WeakSet()
# the outputs of ops that compute sparse data (``one_hot(..., sparse_output=True)``)
_COMPUTED: "weakref.WeakSet" = weakref.WeakSet()


def computes_sparse(out):
    """Mark ``out`` (a CNTK object) as sparse data an op computes, as CNTK 2.7's
    ``one_hot(x, n, sparse_output=True)``: the ops refusing a sparse input refuse it (its
    ``TensorOp`` RuntimeError when run), a product with it (``times``, ``Embedding``) gives
    its weight a row-sparse gradient (:func:`sparse_computed`; its value is kept after a
    run, ``persistent``, for the rows it holds to be read).  Its ``is_sparse`` stays False
    and ``eval`` gives a dense array, as CNTK 2.7's do.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> x = C.input_variable(1)
        >>> oh = C.one_hot(x, 3, sparse_output=True)
        >>> sparse_computed(oh.variable), oh.is_sparse
        (True, False)
        >>> (oh + 1).eval({x: np.float32([[1]])})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        stadyn.compat.cntk._sparse_operands.SparseOperandError: plus: its operand ...
    """
    _SPARSE_DATA.add(out.variable)
    _COMPUTED.add(out.variable)
    out.variable.persistent = True
    return out


def sparse_computed(variable: Variable) -> bool:
    """Whether ``variable`` is sparse data an op computes (:func:`computes_sparse`)."""
    return variable in _COMPUTED


def _sparse_inputs(values) -> list:
    """The sparse inputs (or sparse data passed on) among ``values`` (CNTK objects or the
    Variables a clone calls an op again over; inside lists too), as CNTK objects."""
    found = []
    for v in values:
        u = v.variable if isinstance(v, GraphObject) else v
        if isinstance(u, Variable) and (u in G.SPARSE or u in _SPARSE_DATA):
            found.append(v if isinstance(v, GraphObject) else wrap(u))
        elif isinstance(v, (list, tuple)):
            found.extend(_sparse_inputs(v))
    return found


# Set while an op runs that is made of others (they do not refuse on their own: the op does,
# or takes sparse data, as ``times_transpose`` does, :func:`sparse_taken`)
_INSIDE = [0]


@contextlib.contextmanager
def sparse_taken():
    """Within it, the ops refusing sparse inputs do not: an op that takes sparse data
    (``times_transpose``) made of ones that do not (``reshape``)."""
    _INSIDE[0] += 1
    try:
        yield
    finally:
        _INSIDE[0] -= 1


def _refusing(fn, operands: "tuple[int, ...] | None", unless=None):
    """``fn`` whose output, when one of its ``operands`` (positions; None: all) is a sparse
    input, is refused when its graph runs, except for a call whose ``(args, kwargs, output)``
    ``unless`` holds for."""
    name = fn.__name__
    # (the wrapper runs with ``fn``'s globals, so that its module's doctests still find it:
    # what it calls here is in its closure)
    refuse, inside = refuse_sparse_run, _INSIDE

    def wrapper(*args, **kwargs):
        if inside[0]:               # (an op another op is made of: that op decides)
            return fn(*args, **kwargs)
        inside[0] += 1
        try:
            out = fn(*args, **kwargs)
        finally:
            inside[0] -= 1
        if unless is not None and unless(args, kwargs, out):
            return out
        picked = list(args) + list(kwargs.values()) if operands is None else [
            a for k, a in enumerate(args) if k in operands] + [
            v for k, v in enumerate(kwargs.values()) if len(args) + k in operands]
        refuse(name, picked, out)
        return out
    new = types.FunctionType(wrapper.__code__, fn.__globals__, name, None, wrapper.__closure__)
    functools.update_wrapper(new, fn)
    return new


def refuse_sparse_run(name: str, operands: list, out: Any) -> None:
    """Refuse ``out`` (the output of the op or layer ``name``), when its graph runs, where one
    of ``operands`` is a sparse input (or sparse data passed on): CNTK 2.7 builds such an op
    (``LayerNormalization`` of a sparse input) and raises at its first run.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> s = C.input_variable(3, is_sparse=True, name="s")
        >>> z = C.layers.LayerNormalization()(s)        # built, as in CNTK 2.7
        >>> z.eval({s: C.Value.one_hot([[1]], 3)})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        stadyn.compat.cntk._sparse_operands.SparseOperandError: LayerNormalization: its ...
    """
    sparse = _sparse_inputs(operands)
    variable = getattr(out, "variable", out)
    if not isinstance(variable, Variable) or variable in _PASSED_ON:
        return      # (an op whose output is an alias of its operand passes it on, as CNTK's)
    if sparse:
        _refuse(name, sparse[0], variable)
    # a clone of it is refused where a copy of one of its operands is a sparse input (onto a
    # dense one, the refusal is not carried), as CNTK 2.7's
    old = _variables(operands)
    if old:
        refuse_copies_when(variable, _copies_refused(name, old), instead=bool(sparse))


def _refuse(name: str, sparse: Any, variable: Variable) -> None:
    what = "sparse data (one_hot(..., sparse_output=True))" if sparse_computed(
        getattr(sparse, "variable", sparse)) else "a sparse input (is_sparse=True)"
    refuse_when_run(variable, (
        f"{name}: its operand {sparse!r} is {what}, "
        "and CNTK 2.7 runs no tensor operation on sparse data "
        "(TensorOp: Tensor operations are currently not supported for sparse "
        "matrices): multiply it by a weight first (times, Dense, Embedding)"),
        SparseOperandError)


def _flat(values) -> list:
    out: list = []
    for v in values:
        out.extend(_flat(v) if isinstance(v, (list, tuple)) else [v])
    return out


def _variables(operands: list) -> list:
    """The Variables among ``operands`` (CNTK objects or Variables; inside lists too)."""
    return [u for u in (o.variable if isinstance(o, GraphObject) else o
                        for o in _flat(operands)) if isinstance(u, Variable)]


def _copies_passing(variable: Variable, operands: list) -> None:
    """Have a clone's copy of ``variable`` (the output of an op passing sparse data on) pass
    it on where a copy of one of its ``operands`` is a sparse input (or such data)."""
    _PASSED_ON.add(variable)
    old = _variables(operands)
    held = _weakly(old)

    def decide(new: Variable, copy_of) -> None:
        copies = [copy_of(v) for v in _alive(held)]
        if _sparse_inputs(copies):
            _SPARSE_DATA.add(new)
        _copies_passing(new, copies)
    if old:
        refuse_copies_when(variable, decide)


def _weakly(operands: list) -> list:
    """Weak references to ``operands`` (Variables): a decision registered for an op's output
    (kept while the output lives) must not keep the graph below it alive -- the output's op
    holds its operands while it is alive, so none is dead when a clone asks."""
    return [weakref.ref(v) for v in operands]


def _alive(held: list) -> list:
    return [v for v in (r() for r in held) if v is not None]


def _copies_refused(name: str, operands: list):
    """What decides whether a clone's copy of an op refusing sparse inputs, made over the
    copies of its ``operands``, is refused (one of them a sparse input), or hands the
    decision on to its own copies."""
    held = _weakly(operands)

    def decide(new: Variable, copy_of) -> None:
        copies = [copy_of(v) for v in _alive(held)]
        sparse = _sparse_inputs(copies)
        if sparse:
            _refuse(name, sparse[0], new)
        refuse_copies_when(new, _copies_refused(name, copies), instead=bool(sparse))
    return decide


def refuse_sparse_operands(namespace: dict, names, operands: "dict[str, tuple] | None" = None,
                           unless: "dict[str, Any] | None" = None) -> None:
    """Make the ops ``names`` of a module (its ``globals()``) refuse, when run, a sparse input
    among their operands (``operands[name]``: only those positions), except for the calls
    ``unless[name](args, kwargs, output)`` holds for (a ``reshape`` that keeps the last axis,
    which CNTK 2.7 runs on sparse data)."""
    for n in names:
        f = namespace.get(n)
        if isinstance(f, types.FunctionType):
            namespace[n] = _refusing(f, (operands or {}).get(n), (unless or {}).get(n))


def pass_sparse_on(namespace: dict, names) -> None:
    """Make the ops ``names`` of a module (its ``globals()``) pass sparse data on: their output,
    when their operand is a sparse input (or such an output), is refused by the ops that
    refuse a sparse input (``sigmoid(alias(s))``, as CNTK 2.7)."""
    for n in names:
        f = namespace.get(n)
        if isinstance(f, types.FunctionType):
            namespace[n] = _passing(f)


def _passing(fn):
    sparse_inputs, marked, passed = _sparse_inputs, _SPARSE_DATA, _copies_passing

    def wrapper(*args, **kwargs):
        out = fn(*args, **kwargs)
        variable = getattr(out, "variable", None)
        operands = list(args) + list(kwargs.values())
        if variable is not None:        # (and a clone of it onto a sparse input passes it on)
            if sparse_inputs(operands):
                marked.add(variable)
            passed(variable, operands)
        return out
    new = types.FunctionType(wrapper.__code__, fn.__globals__, fn.__name__, None,
                             wrapper.__closure__)
    functools.update_wrapper(new, fn)
    return new


def refuse_dense_feed(variable, value: Any) -> None:
    """CNTK 2.7's ValueError for dense data (a NumPy array, a list of them, a dense
    ``Value``) fed to ``variable`` where it is a sparse input; SciPy sparse matrices, one-hot
    and readers' Values and readers' minibatches are taken."""
    if variable not in G.SPARSE or not _dense(value):
        return
    shown = getattr(value, "__class__", type(value)).__name__
    raise ValueError(
        f"Dense input data supplied for sparse input Variable '{_shown(variable)}' "
        f"(a {shown}): feed a scipy.sparse matrix or C.Value.one_hot(...), as CNTK 2.7 takes "
        "for an input made with is_sparse=True")


def _dense(value) -> bool:
    if isinstance(value, np.ndarray) or type(value).__module__.startswith("torch"):
        return True
    if type(value).__name__ == "Value":
        return not value.is_sparse
    if isinstance(value, list) and value:
        return any(_dense(v) or isinstance(v, (list, int, float)) for v in value)
    return False


def _shown(variable) -> str:
    return repr(wrap(variable))
