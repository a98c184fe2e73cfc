"""The constants CNTK 2.7's graph holds where Stadyn computes without them, shown by the walks
(``Function.inputs``, ``constants``) as CNTK lists them.

* A ``Fold`` takes each state's last (first) step by a ``Sequence::Slice``, whose scalars 0
  and 1 (float32) are inputs of the op: kept on the op's output (:func:`show_constants`);
  so are those of ``sequence.first``'s and ``last``'s ``Sequence::Slice`` block
  (:func:`show_slice_scalars`), and the 1 of ``classification_error``'s block.
* A CNTK v1 file's top-N ``ClassificationError`` reads N from a constant node, its third
  input, which Stadyn's op takes as a number: shown last, after the prediction and labels;
  so is CNTK 2.7's top-N ``classification_error``'s N (float32), made, cloned or loaded
  from a file (:func:`show_topn_constant`).
* A GRU cell's ``1 - z`` holds the constant 1 (of the cell's type), listed before the cell's
  parameters: made the first time a walk asks, kept on each of the cell's parameters.
* A stabilizer's softplus of steepness k, ``log_add_exp(0, k * alpha) / k``, holds 0, k and k
  (float32), listed right before its ``alpha``; a ``Stabilizer`` layer notes its steepness
  when applied (4 otherwise, a recurrent cell's ``dh_stabilizer``...).

* A float32 constant in a float64 op: CNTK clones it as a float64 constant (of the same name)
  when the graph first runs, and its graph holds the clone from then on (the constant the
  user made stays float32); Stadyn casts it.  The clone is kept on the cast
  (:func:`show_clone`) and shown in the cast's place (:func:`shown_as`).  A Fold's two scalars
  in a float64 Fold are likewise float64 after its first run.

Kept on Variables (``graph.keep_with``), they live as long as what holds them and are the same
Variables in every walk.
"""

from __future__ import annotations

import itertools
import re
import weakref
from typing import Callable

import numpy as np

from ...graph import Variable, keep_with, kept_with

__all__ = ["scalar_constant", "show_constants", "shown_constants", "show_slice_scalars",
           "show_topn_constant",
           "float64_scalars", "show_clone", "shown_as",
           "gru_constant", "note_steepness", "with_stabilizer_constants"]

_SHOWN = "compat.cntk: the constants CNTK shows among the op's inputs"
_SHOWN_LAST = "compat.cntk: the constants CNTK shows after the op's inputs"
_CLONE = "compat.cntk: the constant CNTK's first run cloned in the op's type"
_GRU_ONE = "compat.cntk: the GRU cell's constant 1"
_STABILIZER = "compat.cntk: the stabilizer's softplus constants"
_STABILIZER_ALPHA = re.compile(r"^(?:.*/)?[A-Za-z]*_?stabilizer(?:_\d+)?/alpha$")
_STEEPNESS: "weakref.WeakKeyDictionary[Variable, float]" = weakref.WeakKeyDictionary()
_ids = itertools.count()


def scalar_constant(value: float, dtype) -> Variable:
    """A scalar constant leaf without a CNTK name, as CNTK makes of a number in an expression."""
    v = Variable.from_numpy_array(np.asarray(value, dtype=dtype), need_grad=False, dtype=dtype)
    v.name = f"constant{next(_ids)}"
    return v


def show_constants(v: Variable, constants: tuple, last: bool = False) -> None:
    """Show ``constants`` first among the inputs of the op that made ``v`` (``last``: after
    them, as a loaded CNTK v1 top-5 ``ClassificationError``'s N)."""
    keep_with(v, _SHOWN_LAST if last else _SHOWN, tuple(constants))


def show_topn_constant(v: Variable) -> None:
    """Show N (a float32 constant) after the inputs of a top-N ``classification_error`` made
    ``v`` (its op, or the sum of its samples' errors), as CNTK 2.7 lists it: its primitive
    ``ClassificationError`` reads N from a constant, its last input, made, cloned or loaded
    from a file; nothing for another op, or top 1 (whose block holds its own constant).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> x, y = C.input_variable(3), C.input_variable(3)
        >>> f = C.classification_error(x, y, topN=2)
        >>> show_topn_constant(f.variable)
        >>> [float(c.value) for c in f.constants]
        [2.0]
    """
    node = v.parent
    if node is not None and node.spec.name == "sum" and node.inputs:
        node = node.inputs[0].parent
    if node is None or node.spec.name != "classification_error":
        return
    top = int(node.attrs.get("topN", 1))
    if top > 1 and not shown_constants(v, last=True):
        show_constants(v, (scalar_constant(float(top), np.float32),), last=True)


def show_slice_scalars(v: Variable) -> None:
    """Show the two scalar constants (0 and 1, float32) of CNTK 2.7's ``Sequence::Slice``
    among the inputs of the op that made ``v`` (``sequence.first``'s, ``last``'s, a
    ``Fold``'s)."""
    show_constants(v, (scalar_constant(0.0, np.float32), scalar_constant(1.0, np.float32)))


def float64_scalars(v: Variable) -> None:
    """The constants shown for ``v``'s op as CNTK 2.7's first run of a float64 graph clones
    them: float64, of the same values."""
    show_constants(v, tuple(scalar_constant(float(c.d), np.float64) for c in shown_constants(v)))


def shown_constants(v: Variable, last: bool = False) -> tuple:
    """The constants :func:`show_constants` recorded for ``v``'s op to be shown first (``last``:
    after its inputs; none: ``()``)."""
    return kept_with(v, _SHOWN_LAST if last else _SHOWN) or ()


def show_clone(cast: Variable, clone: Variable) -> None:
    """Show ``clone`` (the constant CNTK's first run made of the one ``cast`` casts) in the
    place of ``cast``."""
    keep_with(cast, _CLONE, clone)


def shown_as(v: Variable) -> Variable:
    """What the walks show in the place of ``v``: a clone :func:`show_clone` recorded, else
    ``v``."""
    if v.parent is None:
        return v
    clone = kept_with(v, _CLONE)
    return clone if clone is not None else v


def gru_constant(params: list[Variable]) -> Variable:
    """The constant 1 of the ``1 - z`` of the GRU cell whose parameters are ``params``."""
    one = next((c for c in (kept_with(p, _GRU_ONE) for p in params) if c is not None), None)
    if one is None:
        one = scalar_constant(1.0, params[0].dtype)
    for p in params:
        keep_with(p, _GRU_ONE, one)
    return one


def note_steepness(alpha: Variable, steepness: float) -> None:
    """Record the steepness of the stabilizer whose parameter is ``alpha``."""
    _STEEPNESS[alpha] = float(steepness)


def with_stabilizer_constants(leaves: list[Variable], present: set[int],
                              is_parameter: Callable[[Variable], bool]) -> list[Variable]:
    """``leaves`` with each stabilizer's constants right before its ``alpha`` (those not
    ``present`` already)."""
    out = []
    for v in leaves:
        if is_parameter(v) and (v in _STEEPNESS or _STABILIZER_ALPHA.match(v.name or "")):
            constants = kept_with(v, _STABILIZER)
            if constants is None:
                k = _STEEPNESS.get(v, 4.0)
                constants = tuple(scalar_constant(c, np.float32) for c in (0.0, k, k))
                keep_with(v, _STABILIZER, constants)
            out.extend(c for c in constants if id(c) not in present)
        out.append(v)
    return out
