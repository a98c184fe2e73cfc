"""CNTK 2.7's rank rule of ``Times`` where a layer that multiplies its input by a weight meets
that input (``Dense``, ``Embedding``, the steps ``RNNStep``, ``GRU``, ``LSTM``, a ``Recurrence`` or
``Fold`` of one of those): CNTK refuses
the layer as it is applied where the input's rank (its axes after the dynamic ones) cannot give
the weight its axes, where Stadyn's layers would have read a batch or sequence axis as one.
The ``times`` op checks its operands by the same rule (:func:`check_times_op`).

CNTK's ``TimesOpOutputShape`` (``Source/CNTKv2LibraryDll/PrimitiveFunction.h``, its shapes
reversed: the input is its "right" operand, shown as the left one) checks, in this order:

* an ``infer_input_rank_to_map`` ``m >= 0`` (a ``Dense`` given no ``input_rank``: its
  ``map_rank``, else 0) must be below the input's rank ``r``, else ValueError
  ``Times: Input map rank (m) must be < rank (r) ...`` -- so a ``Dense`` over a scalar
  (``reduce_sum`` of a step) and ``Dense(3, map_rank=1)`` over a ``(5,)`` are refused;
* the input's rank must be at least the weight's axes reduced over (``input_rank`` of a
  ``Dense``, 1 for an ``Embedding``'s and a step's ``W`` and ``H``), else RuntimeError
  ``Times: The left operand ... rank (r) must be >= #axes (n) being reduced over.``

Example:
    >>> import stadyn.compat.cntk as C
    >>> s = C.reduce_sum(C.sequence.input_variable(4))
    >>> C.layers.Dense(3)(s)
    Traceback (most recent call last):
    ...
    stadyn._errors.ShapeError: Times: Input map rank (0) must be < rank (0) of the left ...
"""

from __future__ import annotations

from typing import Any

from ... import layers as _L
from ..._errors import ShapeError
from ...graph import format_location, user_location
from ._deferred import Deferred, UnknownOutput
from ._mixins import GraphObject

__all__ = ["TimesRankError", "check_times_op", "check_times_ranks", "dense_ranks"]


class TimesRankError(RuntimeError, ShapeError):
    """An input of lower rank than the axes a layer's weight reduces over (CNTK 2.7's
    RuntimeError as the layer is applied; a ValueError too, as Stadyn's other shape errors)."""


def _rank(value: Any) -> "int | None":
    """The rank CNTK shows of an operand (its axes after the dynamic ones); None where its
    shape is unknown."""
    if not isinstance(value, (Deferred, UnknownOutput, GraphObject)):
        return None
    shape = tuple(int(d) for d in value.shape)
    return None if -2 in shape else len(shape)


def _reduced(layer: Any, args: tuple) -> "list[tuple[Any, int, int]]":
    """The operands of ``layer`` that a ``Times`` takes as its input, each with its map rank
    (-1 for none) and the number of the weight's axes it reduces over."""
    if isinstance(layer, _L.Dense) and args:
        return [(args[0], *dense_ranks(layer))]
    if isinstance(layer, _L.Embedding) and args:
        return [(args[0], -1, 1)]
    if isinstance(layer, (_L.RNNStep, _L.GRU, _L.LSTM)) and len(args) >= 2:
        return [(args[-1], -1, 1), (args[0], -1, 1)]     # (x W first, then h H)
    if isinstance(layer, _L.Recurrence) and args and \
            isinstance(layer.step, (_L.RNNStep, _L.GRU, _L.LSTM)):
        return [(args[-1], -1, 1)]      # (a Recurrence, a Fold of a step: its input's x W)
    return []


def dense_ranks(dense: Any) -> "tuple[int, int]":
    """The ranks of the ``Times`` of a ``Dense`` (Stadyn's layer), as CNTK 2.7's Dense makes
    it: its ``inferInputRankToMap`` (-1 with ``input_rank``, else its ``map_rank`` or 0: all
    of the input's axes but those) and the number of the weight's axes reduced over
    (``input_rank``, else 1: the weight's input axes are inferred).

    Example:
        >>> import stadyn.layers as L
        >>> dense_ranks(L.Dense(3)), dense_ranks(L.Dense(3, input_rank=2))
        ((0, 1), (-1, 2))
    """
    if dense.input_rank is not None:
        return -1, int(dense.input_rank)
    return int(dense.map_rank or 0), 1


def _described(value: Any) -> str:
    return _shown(getattr(value, "name", "") or "", tuple(value.shape))


def check_times_ranks(layer: Any, args: tuple, kind: str) -> None:
    """Refuse ``layer`` (a Stadyn layer, shown as ``kind``) applied to ``args`` as CNTK 2.7's
    ``Times`` refuses its input (see the module's text); operands of unknown shape pass.

    Example:
        >>> import stadyn.layers as L, stadyn.compat.cntk as C
        >>> check_times_ranks(L.Dense(3, map_rank=1), (C.input_variable((5, 2)),), "Dense")
        >>> check_times_ranks(L.Embedding(3), (C.input_variable(()),), "Embedding")
        Traceback (most recent call last):
        ...
        stadyn.compat.cntk._times_ranks.TimesRankError: Times: The left operand ...
    """
    for value, map_rank, reduced in _reduced(layer, args):
        rank = _rank(value)
        if rank is not None:
            _refuse(rank, map_rank, reduced, _described(value), _at(kind or "the layer"))


def check_times_op(left_shape: tuple, right_shape: tuple, output_rank: int,
                   infer_input_rank_to_map: int, left: str = "", right: str = "") -> None:
    """Refuse the op ``times(left, right, output_rank, infer_input_rank_to_map)`` of operands
    of these sample shapes as CNTK 2.7's ``Times`` does as it is made: ``output_rank`` 0 or
    above the right operand's rank (ValueError), then the module's two rules for the left
    operand, the right one reducing over its axes but its last ``output_rank``
    (``left``, ``right``: the operands' names, for the message).

    Example:
        >>> check_times_op((4,), (4, 3), 1, -1)
        >>> check_times_op((), (1, 3), 1, -1)
        Traceback (most recent call last):
        ...
        stadyn.compat.cntk._times_ranks.TimesRankError: Times: The left operand of shape () ...
    """
    at, out, rank = _at("times"), int(output_rank), len(right_shape)
    if out == 0:
        raise ShapeError(f"Times: Output rank (0) must be > 0.{at}")
    if out > rank:
        raise ShapeError(f"Times: Output rank ({out}) must be <= rank ({rank}) of the right "
                         f"operand {_shown(right, right_shape)}.{at}")
    _refuse(len(left_shape), int(infer_input_rank_to_map), rank - out,
            _shown(left, left_shape), at)


def _shown(name: str, shape: tuple) -> str:
    return f"{name + ' ' if name else ''}of shape {tuple(int(d) for d in shape)}"


def _at(kind: str) -> str:
    """Where the user applied ``kind`` (a layer, ``times``), for the messages."""
    line = format_location(user_location())
    return f" ({kind} applied at {line})" if line else f" ({kind} applied)"


def _refuse(rank: int, map_rank: int, reduced: int, described: str, at: str) -> None:
    """CNTK 2.7's two rules for ``Times``' input of ``rank`` (see the module's text):
    ``map_rank`` -1 for none, ``reduced`` the weight's axes reduced over."""
    if map_rank >= 0 and map_rank >= rank:
        raise ShapeError(f"Times: Input map rank ({map_rank}) must be < rank ({rank}) of "
                         f"the left operand {described}.{at}")
    if rank < reduced:
        raise TimesRankError(f"Times: The left operand {described} rank ({rank}) "
                             f"must be >= #axes ({reduced}) being reduced over.{at}")
