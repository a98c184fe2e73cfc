"""CNTK's parameters with an inferred axis: ``C.parameter((C.InferredDimension, 3))``.

CNTK 2.7 makes such a parameter at once, shows its shape with ``-1`` (``[? x 3]``), refuses
its ``value`` until the shape is known, and lets the first op that can infer the axis fix it
(``Times`` from its left operand's trailing axes, most element-wise ops from the other
operand);
the initializer is drawn then, as for a parameter made with the inferred shape.  Here the
parameter holds a stand-in Variable (:func:`pending`) until :func:`infer_elementwise` or
:func:`infer_times` learns its shape; then the real parameter is made and every handle on the
stand-in follows it (:func:`current`).  An op that cannot infer the axis is refused as it is
made with :class:`UnresolvedParameterError` (CNTK's ``ValueError``), which a deferrable op
(``_deferrable``) takes as its cue to wait (``_deferred.Deferred``): CNTK 2.7 builds it, shows
``-1`` for the axes it cannot know, and refuses the graph when it compiles it (an ``eval``,
``forward``, ``grad``), unless another op has inferred the parameter since.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable

import numpy as np

from ...graph import FREE_DIMENSION, Variable
from ...ops import rnnstack_weight_count
from . import _graph as G
from ._mixins import GraphObject, move_variable, moved
from ._variable_text import dims_text

__all__ = ["pending", "pending_shape", "current", "infer_elementwise", "infer_nary",
           "infer_times", "infer_times_transpose", "infer_rnnstack",
           "refuse_pending", "unresolved_value_error", "UnresolvedParameterError"]

# stand-in Variable -> (the shape with -1 on each inferred axis, the maker of the parameter)
_PENDING: "weakref.WeakKeyDictionary[Variable, tuple]" = weakref.WeakKeyDictionary()


def pending(shape: tuple, dtype, make: Callable[[tuple], Variable]) -> Variable:
    """A stand-in for a parameter of ``shape`` (-1 on each axis to infer), which ``make``
    makes given the full shape.

    Example:
        >>> import numpy as np
        >>> v = pending((-1, 3), np.float32, lambda shape: Variable(shape, need_grad=True))
        >>> _PENDING[v][0]
        (-1, 3)
    """
    stand_in = Variable((1,), need_grad=True, dtype=dtype)
    _PENDING[stand_in] = (tuple(shape), make)
    return stand_in


def current(obj: GraphObject) -> Variable:
    """``obj``'s Variable, moved on to the parameter made for it where its stand-in's shape
    was inferred since (through another handle on it).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> p = C.parameter((2,), init=1.0)
        >>> current(p) is p.variable
        True
    """
    obj.variable = moved(obj.variable)
    return obj.variable


def pending_shape(obj: Any) -> "tuple | None":
    """The shape (-1 on each inferred axis) of the parameter ``obj`` while its axes are not
    inferred yet, else ``None``.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> pending_shape(C.parameter((C.InferredDimension, 3))), pending_shape(3.0)
        ((-1, 3), None)
    """
    if not isinstance(obj, GraphObject):
        return None
    entry = _PENDING.get(current(obj))
    return entry[0] if entry is not None else None


def unresolved_value_error(obj: GraphObject) -> ValueError:
    """CNTK 2.7's ValueError for reading the value of a parameter whose shape is not known."""
    return ValueError(f"Cannot create an NDArrayView using a view shape "
                      f"'[{dims_text(pending_shape(obj))}]' that has unknown dimensions for any "
                      "of its axes (the parameter's inferred axes are fixed by the first op that "
                      "uses it: times(x, W), W + x, W * x)")


class UnresolvedParameterError(ValueError):
    """CNTK 2.7's ValueError for a graph that reads a parameter whose inferred axes no op has
    fixed, raised as the graph is built; a deferrable op raising it waits instead (CNTK 2.7
    raises it when the graph is run).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> issubclass(UnresolvedParameterError, ValueError)
        True
    """


def refuse_pending(obj: GraphObject, op: str = "") -> None:
    """CNTK 2.7's ValueError (:class:`UnresolvedParameterError`) for a parameter whose axes are
    still inferred where an op takes its value (CNTK builds the op and refuses the graph as it
    compiles it: a deferrable op waits on it, ``_deferrable``)."""
    shape = pending_shape(obj)
    if shape is None:
        return
    name = G.name_of(obj.variable) or G.uid_of(obj.variable)
    raise UnresolvedParameterError(
        f"Parameter or Constant 'Parameter('{name}', [], [{dims_text(shape)}])' with unresolved "
        f"shape [{dims_text(shape)}] found when compiling the Function graph.\n"
        f"(Stadyn{': ' + op if op else ''}: its inferred axes are fixed only by an op that "
        "meets it with a known shape -- times(x, W) (W the right operand), W + x, W - x, "
        "W * x, a comparison -- so apply one of those first or give the parameter its full "
        "shape)")


def _infer(obj: GraphObject, known: tuple) -> None:
    """Fix the inferred axes of ``obj`` (pending) from ``known`` (aligned with its shape, -1
    where nothing is known); make the parameter once none is left."""
    shape, make = _PENDING[obj.variable]
    full = tuple(k if d == -1 and k > 0 else d for d, k in zip(shape, known))
    if -1 in full:
        _PENDING[obj.variable] = (full, make)
        return
    stand_in = obj.variable
    made = make(full)
    G.set_uid(made, G.uid_of(stand_in))     # (the uid it showed while it waited)
    move_variable(stand_in, made)   # (every handle on the stand-in: equal, hashed as before)
    del _PENDING[stand_in]
    obj.variable = made


def _known_shape(x: Any) -> "tuple | None":
    """The sample shape of an operand (-1 on a parameter's axes still to infer), else
    ``None`` (a number, an operand whose shape is not known)."""
    if isinstance(x, (np.ndarray, list)):
        return tuple(np.shape(x))
    waiting = pending_shape(x)
    if waiting is not None:
        return waiting
    try:        # (a Function of several outputs has no one shape: CNTK's RuntimeError)
        if not (isinstance(x, GraphObject) or hasattr(x, "output")):
            return None
        shape = tuple(int(d) for d in x.shape)
    except (AttributeError, TypeError, ValueError, RuntimeError):
        return None
    return None if shape == (-2,) else shape


def _aligned(lshape: tuple, rshape: tuple, op: str) -> "tuple[list, list]":
    """Both shapes with CNTK 2.7's binary element-wise inference applied (aligned on the
    right): where the left one's axis is inferred it takes the right one's (1 included); else
    where the right one's is, it takes the left one's unless that is 1; an inferred axis
    against a free one (``FreeDimension``) is CNTK's ValueError."""
    lnew, rnew = list(lshape), list(rshape)
    for k in range(1, min(len(lshape), len(rshape)) + 1):
        a, b = lshape[-k], rshape[-k]
        if (a == FREE_DIMENSION and b == -1) or (b == FREE_DIMENSION and a == -1):
            side = "Right" if a == FREE_DIMENSION else "Left"
            raise ValueError(
                f"Binary elementwise operation {op}: {side} operand shape "
                f"'[{dims_text(rshape if a == FREE_DIMENSION else lshape)}]' dimension cannot "
                "be inferred from a free dimension of the other operand, shape "
                f"'[{dims_text(lshape if a == FREE_DIMENSION else rshape)}]' (CNTK 2.7's "
                "ValueError)")
        if a == -1 or a == 1:
            if a == -1:
                lnew[-k] = b
        elif b == -1:
            rnew[-k] = a
    return lnew, rnew


def infer_elementwise(left: Any, right: Any, op: str = "") -> None:
    """CNTK 2.7's binary element-wise ops (``PrimitiveFunction.h``'s
    ``BinaryElementwiseOpOutputShape``), their shapes aligned on the right: where the left
    operand's axis is inferred it takes the right one's (1 included); else where the right
    one's is, it takes the left one's unless that is 1; an inferred axis against a free one
    (``FreeDimension``) is CNTK's ValueError.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> p = C.parameter((C.InferredDimension,), init=1.0)
        >>> infer_elementwise(p, C.input_variable((2, 6))); p.shape
        (6,)
    """
    if pending_shape(left) is None and pending_shape(right) is None:
        return          # (no parameter waits: nothing to read)
    lshape, rshape = _known_shape(left), _known_shape(right)
    if lshape is None or rshape is None:
        return
    lnew, rnew = _aligned(lshape, rshape, op)
    for obj, old, new in ((left, lshape, lnew), (right, rshape, rnew)):
        if pending_shape(obj) is not None and tuple(new) != old:
            _infer(obj, tuple(new))


def infer_nary(operands: tuple, op: str = "") -> None:
    """CNTK 2.7's ``Select`` and ``Clip`` (``PrimitiveFunction.cpp``'s
    ``NaryElementwiseOpOutputShape``): the operands in turn against the shape of those before
    them (of shape ``()`` at first; a number counts as ``()``), each inferred from that as the
    right operand of a binary element-wise op -- so a parameter after an operand of a known
    shape is inferred, one first is not.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> p = C.parameter((C.InferredDimension,), init=1.0)
        >>> x = C.input_variable(4)
        >>> infer_nary((x, p, x)); p.shape
        (4,)
    """
    if all(pending_shape(x) is None for x in operands):
        return          # (no parameter waits: nothing to read)
    before: tuple = ()
    for x in operands:
        shape = () if isinstance(x, (int, float)) else _known_shape(x)
        if shape is None:
            return
        lnew, new = _aligned(before, shape, op)
        if pending_shape(x) is not None and tuple(new) != shape:
            _infer(x, tuple(new))
        n = max(len(lnew), len(new))
        lnew, new = [1] * (n - len(lnew)) + lnew, [1] * (n - len(new)) + new
        before = tuple(a if b == 1 or (a not in (1, -1) and b == -1) else b
                       for a, b in zip(lnew, new))


def infer_times(left: Any, right: Any, output_rank: int = 1) -> None:
    """CNTK 2.7's ``times(left, W)``: the inferred axes among ``W``'s first ``rank(W) -
    output_rank`` (those reduced) take ``left``'s trailing axes; a ``left`` waiting for its
    axes takes ``W``'s leading ones (``_infer_times_left``).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> W = C.parameter((C.InferredDimension, 3), init=0.0)
        >>> infer_times(C.input_variable((2, 4)), W); W.shape
        (4, 3)
    """
    _infer_times_left(left, right, int(output_rank))
    shape = pending_shape(right)
    known = _known_shape(left) if shape is not None else None
    if known is None:
        return
    reduced = len(shape) - int(output_rank)
    if reduced <= 0 or reduced > len(known):
        return
    new = tuple(known[len(known) - reduced:])
    _check_agree(shape[:reduced], new, shape, known)
    _infer(right, new + (-1,) * int(output_rank))


def infer_times_transpose(left: Any, right: Any) -> None:
    """CNTK 2.7's ``times_transpose(W, x)`` (its ``TransposeTimes(x, W)``): ``W``'s last axis,
    the one reduced, where inferred, takes ``x``'s last (``W`` (3, ?) over ``x`` (4,): (3,
    4)); ``W`` as the right operand is left as it is (CNTK 2.7 builds the op and refuses the
    graph when it is run).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> W = C.parameter((3, C.InferredDimension), init=0.0)
        >>> infer_times_transpose(W, C.input_variable(4)); W.shape
        (3, 4)
    """
    shape = pending_shape(left)
    known = _known_shape(right) if shape is not None else None
    if not known or not shape or shape[-1] != -1 or known[-1] <= 0:
        return
    _infer(left, (-1,) * (len(shape) - 1) + (known[-1],))


def _infer_times_left(left: Any, right: Any, output_rank: int) -> None:
    """``times(W, x)``, ``W`` the left operand (CNTK's ``Times(x, W)``, its right one: its
    leading axes are matched with the reduced ones, ``PrimitiveFunction.h``'s
    ``TimesOpOutputShape``): ``W``'s last ``rank(x) - output_rank`` axes, where inferred, take
    ``x``'s first ones (``times(W (3, ?), x (4, 2))``: ``W`` (3, 4)); none where ``x`` has
    no more axes than ``output_rank``."""
    shape = pending_shape(left)
    known = _known_shape(right) if shape is not None else None
    if known is None:
        return
    reduced = len(known) - output_rank
    if reduced <= 0 or reduced > len(shape):
        return
    new = tuple(known[:reduced])
    _check_agree(shape[len(shape) - reduced:], new, shape, known)
    _infer(left, (-1,) * (len(shape) - reduced) + new)


def _check_agree(waiting: tuple, known: tuple, shape: tuple, operand: tuple) -> None:
    """Refuse the product unless a parameter's reduced axes (``waiting``, -1 where
    inferred; the parameter's ``shape``) match the operand's ``known`` ones wherever both
    are given, before any is inferred: CNTK 2.7's ``TimesOpOutputShape``
    (``PrimitiveFunction.cpp``) raises ValueError and leaves the parameter's inferred axes as
    they were (``times(W (3, ?), x (4, 2, 5))``: ``W`` stays (3, -1))."""
    if all(w == -1 or k <= 0 or w == k for w, k in zip(waiting, known)):
        return
    shown = "(" + ", ".join("?" if d == -1 else str(int(d)) for d in shape) + ")"
    raise ValueError(f"Times: the {len(known)} reduced axes {tuple(known)} of the operand of "
                     f"shape {tuple(operand)} do not match those of the parameter of shape "
                     f"{shown} (its inferred axes are left as they were)")


def infer_rnnstack(operand: Any, weights: Any, hidden_size: int, num_layers: int = 1,
                   bidirectional: bool = False, recurrent_op: str = "lstm") -> None:
    """CNTK 2.7's ``optimized_rnnstack`` (``PrimitiveFunction.cpp``'s ``OptimizedRNNStack``,
    ``RNNCommon.h``'s ``GetNumParameters``): weights of rank 2 over an operand of rank 1 and
    a known dimension take the shape ``(count / hidden_size, hidden_size)``, ``count``
    cuDNN's number of weights.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> W = C.parameter((C.InferredDimension, 4), init=0.1)
        >>> infer_rnnstack(C.sequence.input_variable(3), W, 4); W.shape
        (36, 4)
    """
    shape = pending_shape(weights)
    known = _known_shape(operand) if shape is not None else None
    if known is None or len(shape) != 2 or len(known) != 1 or known[0] <= 0:
        return
    hidden = int(hidden_size)
    count = rnnstack_weight_count(known[0], hidden, int(num_layers), bool(bidirectional),
                                  recurrent_op)
    _infer(weights, (count // hidden, hidden))


def infer_batch_norm(operand: Any, parameters: tuple, spatial: bool) -> None:
    """CNTK 2.7's ``BatchNormalization`` of an operand of known shape: its scale, bias and
    running statistics of shape ``(InferredDimension,)`` take one value per channel (the
    operand's first axis) when ``spatial``, else one per value of the sample; of other
    shapes they stay pending (CNTK 2.7 refuses them when the graph compiles).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> s = C.parameter((C.InferredDimension,), init=1.0)
        >>> infer_batch_norm(C.input_variable((4, 3, 3)), (s,), True); s.shape
        (4,)
    """
    known = _known_shape(operand)
    # (spatial: only the channel axis counts; CNTK 2.7 infers (C,) of a (C, Free, Free) image)
    if not known or any(d <= 0 for d in (known[:1] if spatial else known)):
        return
    size = known[0] if spatial else int(np.prod(known))
    for p in parameters:
        if pending_shape(p) == (-1,):
            _infer(p, (size,))
