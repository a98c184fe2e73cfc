"""The shape CNTK 2.7 shows for an op waiting on placeholders whose shapes have inferred axes
(``C.placeholder((C.InferredDimension, 3))``): the known axes carried through, ``-1`` for the
rest (``-3`` where the placeholders' open axes are free ones, ``FreeDimension``), where
Stadyn's recorded op (``_deferred.Deferred``) had only "unknown" (``(-2,)``); over
placeholders of a known shape and no dynamic axes, the op's shape.

It is found by building the op twice on stand-in inputs, each inferred axis of a placeholder
of a different length the second time (once, where the placeholders' shapes are known; an
operand already probed so is a stand-in of its shape, so that a chain's probes do not each
build the chain below): an output axis that keeps its length is known, one
that follows the stand-ins is ``-1``.  Lengths the op refuses are passed over for those of the
axes of the constants and parameters it reads (``times(q, W)`` over ``q`` of ``(2, ?)``
builds with ``W``'s input length only: its output is known whole).  An op that applies a layer
is not probed (that would make its parameters), nor one over a placeholder of no shape at all;
one no stand-ins build stays unknown (CNTK may refuse it when it is made); a random op built on
the stand-ins takes no seed from the program's count.

Example:
    >>> import stadyn.compat.cntk as C
    >>> p = C.placeholder((C.InferredDimension, 3), name="p")
    >>> C.plus(p, 1).shape, C.reduce_sum(p, axis=1).shape
    ((-1, 3), (-1, 1))
    >>> C.times(C.placeholder((2, C.InferredDimension)), C.parameter((4, 5))).shape
    (2, 5)
    >>> C.plus(C.placeholder(name="q"), 1).shape
    (-2,)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._random import auto_seeds_kept
from ...graph import FREE_DIMENSION
from ._deferred_operands import _layer_function
from ._mixins import GraphObject

__all__ = ["probed_shape", "probed_dynamic_axes", "placeholder_stand_ins"]

UNKNOWN = (-2,)
_OPEN = (-1, FREE_DIMENSION)    # InferredDimension, FreeDimension: the stand-ins give lengths
# the lengths the stand-ins give an inferred axis, one build each
_PROBE_LENGTHS = (7, 11)


def probed_shape(deferred: Any) -> tuple:
    """``deferred``'s output shape as CNTK 2.7 infers it before the placeholders are bound
    (kept once found); ``(-2,)`` where it cannot be known."""
    found = deferred.__dict__.get("_probed_shape")
    if found is None:
        try:
            found = _probe(deferred)
        except Exception:       # (an op that cannot be built on the stand-ins: unknown)
            found = None
        if found is None:
            found = _elementwise(deferred)[0]
        if found is None:
            found = _over_known_operands(deferred)[0]
        found = deferred.__dict__["_probed_shape"] = UNKNOWN if found is None else found
    return found


def placeholder_stand_ins(args: tuple) -> "list | None":
    """Inputs standing for ``args`` where each is a placeholder waiting with a known shape (no
    inferred, free or unknown axis), of its shape and dynamic axes (none for one made with
    ``dynamic_axes=[]``), or an op waiting on placeholders whose shape and dynamic axes CNTK
    2.7 knows already (``plus(placeholder(), x)``: ``x``'s), on which a layer applied to them
    makes its parameters at the call, as CNTK 2.7's; else None.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> [v.shape for v in placeholder_stand_ins((C.placeholder((3,), dynamic_axes=[]),))]
        [(3,)]
        >>> [v.shape for v in placeholder_stand_ins((C.placeholder() + C.input_variable(3),))]
        [(3,)]
        >>> placeholder_stand_ins((C.placeholder(),)) is None
        True
    """
    from ._graph_records import INFERRED_SHAPES, SHAPELESS
    from ._variables import input_variable, without_dynamic_axes
    found = []
    for a in args:
        if hasattr(a, "_replay"):       # (a waiting op)
            stand_in = _waiting_stand_in(a)
            if stand_in is None:
                return None
            found.append(stand_in)
            continue
        v = a.variable if isinstance(a, GraphObject) else None
        shape = INFERRED_SHAPES.get(v) if v is not None else None
        if shape is None or v not in SHAPELESS or any(d < 0 for d in shape):
            return None
        found.append(input_variable(shape, dynamic_axes=[] if without_dynamic_axes(a) else None))
    return found


def probed_dynamic_axes(deferred: Any) -> "tuple | None":
    """``deferred``'s dynamic axes as CNTK 2.7 knows them before the placeholders are bound,
    where every placeholder it reads was made without dynamic axes (``dynamic_axes=[]``): those
    of the op built on stand-in inputs without dynamic axes (``reduce_sum(p * 2)``: none;
    ``sequence.input_variable(2) + p``: the sequence's); None (unknown) otherwise (kept once
    found)."""
    found = deferred.__dict__.get("_probed_axes", False)
    if found is False:
        try:
            found = _probe_axes(deferred)
        except Exception:       # (an op that cannot be built on the stand-ins: unknown)
            found = None
        if found is None:
            found = _elementwise(deferred)[1]
        if found is None:
            found = _over_known_operands(deferred)[1]
        deferred.__dict__["_probed_axes"] = found
    return found


def _waiting_stand_in(v: Any) -> Any:
    """An input standing for the waiting op ``v`` (of its shape, type and dynamic axes) where
    they are known; None where ``v`` is typed since it was made (CNTK keeps it unknown), of a
    shape not yet known, or of unknown dynamic axes."""
    from ._variables import input_variable
    if v._typed is not None:
        return None
    shape, axes = tuple(int(d) for d in v.shape), _known_axes(v)
    if any(d < 0 for d in shape) or axes is None:
        return None
    return input_variable(shape, dtype=getattr(v, "dtype", None) or "float32",
                          dynamic_axes=list(axes))


def _known_axes(v: Any) -> "tuple | None":
    """``v``'s dynamic axes where they are known and there are some; else None."""
    axes = tuple(getattr(v, "dynamic_axes", ()) or ())
    if not axes or any(getattr(a, "name", "") == "UnknownAxes" for a in axes):
        return None
    return axes


def _elementwise(deferred: Any) -> tuple:
    """``(shape, dynamic axes)`` CNTK 2.7 gives an element-wise binary op (``plus``) one of
    whose operands is of unknown shape (a placeholder without one, an op over it), where
    another has a known shape and dynamic axes (``C.input_variable(3) * 2``): that operand's,
    broadcast with the data among them (a number, a constant); ``(None, None)`` otherwise (an
    op of placeholders, of placeholders and data: unknown).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> f = C.plus(C.input_variable(3) * 2, C.placeholder())
        >>> f.shape, len(f.dynamic_axes), C.plus(C.placeholder(), 1).shape
        ((3,), 1, (-2,))
    """
    from ._printed import ELEMENTWISE_OPS, op_name_of_call
    if op_name_of_call(deferred._fn) not in ELEMENTWISE_OPS:
        return None, None
    shapes, axes = [], None
    # (placeholders bound by replace_placeholders, of its graph's root)
    bound = deferred.__dict__.get("_bound_for_shape") or {}
    for v in deferred._operands():
        if isinstance(v, str):          # (its name)
            continue
        if isinstance(v, GraphObject):
            v = bound.get(id(v.variable), v)
        shape = tuple(int(d) for d in getattr(v, "shape", np.shape(v)))
        if not isinstance(v, GraphObject) and not hasattr(v, "_fn"):
            shapes.append(shape)        # (data: a number, an array)
        elif -2 in shape or any(d < 0 for d in shape) or getattr(v, "_typed", None) is not None:
            continue    # (unknown: the placeholder the op waits on; a waiting op given its
            # types since, unknown as this op was made: CNTK 2.7 does not infer it again)
        elif _known_axes(v) is not None:
            axes = axes if axes is not None and len(axes) >= len(_known_axes(v)) else \
                _known_axes(v)
            shapes.append(shape)
        elif getattr(v, "dynamic_axes", None) == ():
            shapes.append(shape)        # (a constant, a parameter)
    if axes is None:
        return None, None
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*shapes)), axes
    except ValueError:
        return None, None


def _over_known_operands(deferred: Any) -> tuple:
    """:func:`_built_over_known_operands`, built once for both (kept on ``deferred``)."""
    found = deferred.__dict__.get("_over_known")
    if found is None:
        found = deferred.__dict__["_over_known"] = _built_over_known_operands(deferred)
    return found


def _built_over_known_operands(deferred: Any) -> tuple:
    """``(shape, dynamic axes)`` of an op over waiting ops whose shapes and dynamic axes CNTK
    2.7 knows already (``relu(plus(p, x))``, ``times(p + x, W)``: that of ``p + x`` is
    ``x``'s): the op built on stand-in inputs of those, as CNTK infers each op as it is made;
    ``(None, None)`` where one of its operands is a placeholder or of unknown shape or axes,
    or the op applies a layer (that would make its parameters) or cannot be built so.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> f = C.relu(C.plus(C.placeholder(), C.input_variable(3)))
        >>> f.shape, len(f.dynamic_axes), C.relu(C.placeholder()).shape
        ((3,), 1, (-2,))
    """
    if isinstance(deferred._fn, _layer_function()):
        return None, None
    memo: dict = {}
    for v in deferred._operands():
        if hasattr(v, "_replay"):       # (a waiting op)
            stand_in = _waiting_stand_in(v)
            if stand_in is None:
                return None, None
            memo[id(v)] = stand_in
        elif getattr(v, "is_placeholder", False):
            return None, None
    if not memo:
        return None, None
    try:
        with auto_seeds_kept():     # (a random op built here draws no seed of the program's)
            out = deferred._replay({}, memo)
    except Exception:       # (CNTK refuses it when it is made, or keeps it unknown)
        return None, None
    shape = tuple(int(d) for d in getattr(out, "shape", UNKNOWN))
    if any(d < 0 for d in shape):
        return None, None
    return shape, tuple(out.dynamic_axes)


def _probed_placeholders(deferred: Any) -> "tuple[list, list] | None":
    """``deferred``'s placeholders and their shapes where a probe may build it on stand-ins
    of them (it reads some, applies no layer, and none has an axis of unknown length), else
    None."""
    holders = list(deferred.placeholders)
    if not holders or _applies_a_layer(deferred):
        return None
    shapes = [tuple(int(d) for d in h.shape) for h in holders]
    if any(-2 in s for s in shapes):
        return None
    return holders, shapes


def _probe_axes(deferred: Any) -> "tuple | None":
    from ._axis import Axis
    from ._variables import batch_axis_only, without_dynamic_axes
    found = _probed_placeholders(deferred)
    if found is None:
        return None
    holders, shapes = found
    if all(without_dynamic_axes(h) for h in holders):
        axes = []
    elif all(batch_axis_only(h) for h in holders):      # (made with [batch axis])
        axes = [Axis.default_batch_axis()]
    else:
        return None
    for out in _built(deferred, holders, shapes, dynamic_axes=axes):
        return tuple(out.dynamic_axes)
    return None


def _built(deferred: Any, holders: list, shapes: list, sequence: bool = False, **axes):
    """``deferred`` built on stand-in inputs (``input_variable(..., **axes)``; sequences with
    ``sequence``) of its placeholders' ``shapes``, their inferred axes of each of
    :func:`_lengths` in turn: the outputs of the lengths it builds at."""
    from ._variables import input_variable
    if sequence:
        from ._axis import Axis
        axes = {"dynamic_axes": Axis.default_input_variable_dynamic_axes()}
    # (the parts below it probed already on plain stand-ins, of known shapes: stand-ins of
    # theirs, so that a chain's probes do not each replay the chain below)
    known = {} if sequence or axes or any(d in _OPEN for s in shapes for d in s) else {
        id(part): part.__dict__["_probed_shape"] for part in deferred._operands()
        if getattr(part, "__dict__", {}).get("_probed_plain") and part._typed is None}
    for length in _lengths(deferred):
        bound = {id(h.variable): input_variable(tuple(length if d in _OPEN else d for d in s),
                                                dtype=getattr(h, "dtype", None) or "float32",
                                                **axes)
                 for h, s in zip(holders, shapes)}
        memo = {key: input_variable(shape) for key, shape in known.items()}
        try:
            with auto_seeds_kept():     # (a random op built here draws no seed of the program's)
                out = deferred._replay(bound, memo)
        except Exception:       # (not this length: the op fixes the inferred axes)
            continue
        yield out


def _applies_a_layer(deferred: Any) -> bool:
    """Whether building ``deferred`` would apply a layer (and so make parameters)."""
    LayerFunction = _layer_function()
    return any(isinstance(v, LayerFunction) for part in deferred._parts()
               for v in [part._fn] + part._operands())


def _probe(deferred: Any) -> "tuple | None":
    from ._variables import without_dynamic_axes
    found = _probed_placeholders(deferred)
    if found is None:
        return None
    holders, shapes = found
    if any(not s for s in shapes) or not all(isinstance(h, GraphObject) for h in holders):
        return None
    built = []
    fixed = not any(d in _OPEN for s in shapes for d in s)     # (one build tells it all)
    batch = False
    for out in _built(deferred, holders, shapes):
        built.append(tuple(int(d) for d in getattr(out, "shape", UNKNOWN)))
        batch = len(getattr(out, "dynamic_axes", ())) == 1       # (the batch axis alone)
        if len(built) == 2 or fixed:
            break
    plain = batch and all(isinstance(h, GraphObject) and not without_dynamic_axes(h)
                          for h in holders)
    if not built and not any(without_dynamic_axes(h) for h in holders):
        # (a sequence op: its dynamic axes unknown, the placeholders may be sequences)
        for out in _built(deferred, holders, shapes, sequence=True):
            built.append(tuple(int(d) for d in getattr(out, "shape", UNKNOWN)))
            if len(built) == 2:
                break
    if not built or any(len(b) != len(built[0]) or -2 in b for b in built):
        return None
    deferred.__dict__["_probed_plain"] = plain and fixed and all(d >= 0 for d in built[0])
    if len(built) == 1:             # (one length builds: the inferred axes are that long)
        return built[0]
    first, second = built
    # (an axis that follows the stand-ins: inferred, or free where the placeholders' open
    # axes are all free, as CNTK 2.7 carries FreeDimension through)
    open_ = FREE_DIMENSION if all(d != -1 for s in shapes for d in s) else -1
    return tuple(a if a == b else open_ for a, b in zip(first, second))


def _lengths(deferred: Any) -> list:
    """The lengths to try for the inferred axes: two of :data:`_PROBE_LENGTHS`'s, then those of
    the axes of the constants and parameters the op reads (``times(q, W)`` takes ``W``'s input
    length)."""
    return list(_PROBE_LENGTHS) + [n for n in read_lengths(deferred) if n not in _PROBE_LENGTHS]


def read_lengths(deferred: Any) -> list:
    """The lengths of the axes of the constants and parameters ``deferred`` reads, each once, in
    the order they are met."""
    out: list[int] = []
    for part in deferred._parts():
        for v in part._operands():
            if isinstance(v, np.ndarray) or (isinstance(v, GraphObject) and (
                    getattr(v, "is_constant", False) or getattr(v, "is_parameter", False))):
                out.extend(int(d) for d in v.shape if int(d) > 0 and int(d) not in out)
    return out
