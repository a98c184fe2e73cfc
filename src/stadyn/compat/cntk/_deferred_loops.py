"""Loops closed through placeholders without a shape: ``replace_placeholders`` of a waiting
Function (:class:`~._deferred.Deferred`) binding such a placeholder to a value computed from
it through ``past_value`` / ``future_value`` (CNTK's LightRNN writes its ``lightlstm`` so, the
input ``x`` still a placeholder too).

CNTK replaces the placeholder in the graph of the Function ``replace_placeholders`` was called
on (another Function reading it keeps it as a placeholder), and infers the loop's shapes once
the other placeholders are bound: an op one of whose operands has no shape yet takes what the
others fix (``times(dh, H)`` gives ``H``'s output shape, ``ft * dc`` ``ft``'s), passes over
the loop until nothing is left unknown.  Here the binding is kept with the parts of that
Function (:func:`bind_loop`: ``{placeholder: value}`` on each of its Deferreds, which
:func:`loop_of` reads) and, when the graph is built, each loop's
placeholder is given the shape a *probe* finds: the loop's value replayed with the loop's
placeholders unknown (:data:`UNKNOWN`), an op reading an unknown operand tried on stand-ins
of the shapes its other operands suggest (:func:`probe_call`), again with the shapes found
until every loop's is known.  The graph is then built on placeholders of those shapes and
the loops closed as any other (``_loops.close_loops``: the body runs as one recurrence).

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> x, h = C.placeholder(name="x"), C.placeholder(name="h")
    >>> s = x + C.sequence.past_value(h)
    >>> s.replace_placeholders({h: s.output}) is s, [p.name for p in s.placeholders]
    (True, ['x'])
    >>> a = C.sequence.input_variable(2)
    >>> s(a).eval({a: [np.ones((3, 2), np.float32)]})[0].tolist()
    [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]
"""

from __future__ import annotations

from typing import Callable

from ._adapt import unwrap
from ._axis import Axis
from ._deferred_operands import _layer_function, _shapeless
from ._late import late
from ._mixins import GraphObject

__all__ = ["bind_loop", "loop_of", "UNKNOWN", "UNKNOWN_SEQUENCE", "STRICT", "has_unknown",
           "probe_call", "loop_placeholder", "close_built_loops"]


def bind_loop(parts, ph, value) -> None:
    """Replace the placeholder without a shape ``ph`` by ``value``, which reads it (a loop), in
    the Deferreds ``parts`` (those of the Function ``replace_placeholders`` was called on, as
    CNTK replaces it in that Function's graph only): a Function made apart from them that
    reads ``ph`` keeps it as a placeholder."""
    for part in parts:
        part._loops[id(ph.variable)] = (ph, value)


def loop_of(part, v) -> "tuple | None":
    """The loop ``(placeholder, value)`` the Deferred ``part`` reads in place of ``v`` (bound
    by :func:`bind_loop`), or None."""
    if not _shapeless(v):
        return None
    return part.__dict__.get("_loops", {}).get(id(v.variable))


def _key(loop: tuple) -> tuple:
    ph, value = loop
    return ("loop", id(ph.variable), id(value))


_PROBE, _GUESSES, _MADE = "probe", "loop guesses", "loop placeholders"
# a probe's memo key: an op reading an unknown operand is tried only as CNTK 2.7 infers one
# (a recurrence step's first pass, ``_step_state_shapes``): an elementwise op over operands one
# of which has dynamic axes takes their shape, any other op's output stays unknown
# (PrimitiveFunction.cpp:240-290)
STRICT = "cntk's unknown shapes"
_ELEMENTWISE = {"plus", "minus", "element_times", "element_divide", "log_add_exp", "pow",
                "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
                "element_max", "element_min", "clip", "element_select", "past_value",
                "future_value", "delay"}


class _Unknown:
    """A value of a probe whose shape is not known yet (see the module's text)."""

    def __init__(self, text: str = "UNKNOWN"):
        self._text = text

    def __repr__(self) -> str:
        return self._text


UNKNOWN = _Unknown()
# in CNTK 2.7's first pass over a recurrence step (:data:`STRICT`): a value whose shape is not
# known but whose dynamic axes are, an op's over an unknown operand and one with dynamic axes
# (``splice(h, x)``: GetOutputDynamicAxes takes the known operand's, PrimitiveFunction.cpp:
# 200-221); an elementwise op over it and a known operand takes that operand's shape (a
# Dense's bias: ``d(splice(h, x))`` is ``d``'s output shape there)
UNKNOWN_SEQUENCE = _Unknown("UNKNOWN (dynamic axes known)")


def has_unknown(args, kwargs: dict) -> bool:
    """Whether an operand (in a list too) is :data:`UNKNOWN` (or
    :data:`UNKNOWN_SEQUENCE`)."""
    def check(v) -> bool:
        if isinstance(v, (list, tuple)):
            return any(check(u) for u in v)
        return v is UNKNOWN or v is UNKNOWN_SEQUENCE
    return any(check(a) for a in args) or any(check(v) for v in kwargs.values())


def _stand_in(shape: tuple):
    """A sequence input of ``shape`` standing for a value of a probe."""
    return late("input_variable")(shape, dynamic_axes=[Axis.default_batch_axis(),
                                                       Axis.default_dynamic_axis()])


def _candidates(fn, args, kwargs: dict) -> list:
    """The shapes an unknown operand of ``fn`` may have: ``times``' left one, its right
    operand's input part (``W``'s shape less its last ``output_rank`` axes), its right one
    none (its output axes are free); else the shape of each known operand, then a
    scalar's."""
    known = [a for a in list(args) + list(kwargs.values())
             if isinstance(a, GraphObject) and not _shapeless(a)]
    name = getattr(fn, "__name__", "")
    if name == "times" and len(args) >= 2 and args[1] is UNKNOWN:
        return []       # (the left operand does not fix the right one: CNTK 2.7 refuses too)
    if name == "times" and len(args) >= 2 and args[0] is UNKNOWN:
        rank = int(kwargs.get("output_rank", args[2] if len(args) > 2 else 1))
        shape = tuple(args[1].shape)
        return [shape[:len(shape) - rank]] if len(shape) > rank else []
    out: list = []
    for a in known:
        if tuple(a.shape) not in out and -2 not in a.shape:
            out.append(tuple(a.shape))
    return out + [()]


def probe_call(fn, args, kwargs: dict, known: bool = False, strict: bool = False):
    """``fn`` called in a probe on operands some of which are :data:`UNKNOWN`: on stand-ins
    of the first of :func:`_candidates` it builds with; :data:`UNKNOWN` if none does (or
    ``fn`` is a layer, which its first operand would give its parameters' shapes).
    ``known``: no operand is unknown, but one may stand on a wrong guess: :data:`UNKNOWN`
    where ``fn`` refuses them.  ``strict``: :data:`UNKNOWN` too where CNTK 2.7 leaves the
    output unknown (:data:`STRICT`), :data:`UNKNOWN_SEQUENCE` where it knows the output's
    dynamic axes only; a Dense with a bias over an operand of known axes gives its output
    shape (its ``+ b`` an elementwise op)."""
    if known:
        if strict and isinstance(fn, _layer_function()):
            out = _layer_first_pass(fn, args, True)
            if out is not None:
                return out
        try:
            return fn(*args, **kwargs)
        except Exception:           # (a guess the next pass corrects)
            return UNKNOWN
    if strict:
        axes = _axes_known(list(args) + list(kwargs.values()))
        if isinstance(fn, _layer_function()):
            out = _layer_first_pass(fn, args, axes)
            return out if out is not None else UNKNOWN_SEQUENCE if axes else UNKNOWN
        if not _elementwise_over_axes(fn, args, kwargs):
            return UNKNOWN_SEQUENCE if axes else UNKNOWN
    elif isinstance(fn, _layer_function()):
        return UNKNOWN
    for shape in _candidates(fn, args, kwargs):
        def fill(v):
            if isinstance(v, list):
                return [fill(u) for u in v]
            if isinstance(v, tuple):
                return tuple(fill(u) for u in v)
            return _stand_in(shape) if v is UNKNOWN or v is UNKNOWN_SEQUENCE else v
        try:
            return fn(*fill(tuple(args)), **{k: fill(v) for k, v in kwargs.items()})
        except Exception:           # (not that shape: the next)
            continue
    return UNKNOWN


def _elementwise_over_axes(fn, args, kwargs: dict) -> bool:
    """Whether CNTK 2.7 gives ``fn`` over operands some of which are unknown a shape: an
    elementwise op one of whose known operands has dynamic axes (a Constant's or a
    Parameter's, none: the op's output axes, and so its shape, stay unknown)."""
    if getattr(fn, "__name__", "") not in _ELEMENTWISE or \
            not getattr(fn, "__module__", "").startswith(__name__.rsplit(".", 1)[0]):
        return False
    operands = list(args) + list(kwargs.values())
    known = [a for a in operands if isinstance(a, GraphObject) and not _shapeless(a)]
    return any(getattr(a, "dynamic_axes", None) for a in known) or \
        (bool(known) and any(a is UNKNOWN_SEQUENCE for a in operands))


def _axes_known(operands: list) -> bool:
    """Whether one of ``operands`` (in a list too) has known dynamic axes in CNTK's first pass
    over a step: :data:`UNKNOWN_SEQUENCE`, or a known value with dynamic axes."""
    for a in operands:
        if isinstance(a, (list, tuple)):
            if _axes_known(list(a)):
                return True
        elif a is UNKNOWN_SEQUENCE or (isinstance(a, GraphObject) and not _shapeless(a) and
                                       getattr(a, "dynamic_axes", None)):
            return True
    return False


def _layer_first_pass(layer_fn, args, axes: bool):
    """What the layer ``layer_fn`` gives over ``args`` in CNTK 2.7's first pass over a
    recurrence step (:data:`STRICT`; ``axes``: an operand's dynamic axes are known): a
    stand-in of the shape :func:`_through` finds, :data:`UNKNOWN_SEQUENCE` (or
    :data:`UNKNOWN` without ``axes``) where it finds none, None for a layer it does not
    follow (the caller's rule)."""
    one = args[0] if len(args) == 1 else None
    shape = tuple(one.shape) if isinstance(one, GraphObject) and not _shapeless(one) else None
    if shape is None and not axes:      # (nothing known: its output's axes neither)
        return UNKNOWN
    out = _through(layer_fn, shape) if len(args) == 1 else _OTHER
    if out is _OTHER:
        return None
    return _stand_in(out) if out is not None else UNKNOWN_SEQUENCE if axes else UNKNOWN


_OTHER = object()       # (a layer :func:`_through` does not follow)


def _through(layer_fn, shape: "tuple | None"):
    """The output shape of the layer ``layer_fn`` over a value of ``shape`` (None: unknown) in
    CNTK 2.7's first pass over a recurrence step: a Dense with a bias gives its output shape
    whatever its input (whatever its ``input_rank``/``map_rank``), and its weight keeps its
    input axes to infer (``d(h + reduce_sum(x))`` is inferred at the state's later ``(3,)``).
    The cause: the layer is ``times(x, W) + b``; the ``Times`` over an operand of unknown
    shape has an unknown shape, but the ``Plus``, an elementwise op whose output's dynamic
    axes are known (the product's, its operand's), is shaped then
    (PrimitiveFunction.cpp:241-273), and an operand of unknown shape takes the other's
    there (PrimitiveFunction.h:489-493): ``b``'s.  One without a bias (an ``Embedding`` too:
    ``times(x, E)``) gives its ``Times``'s shape over a known input of one axis or more, else
    none (``d(splice(h, x))`` without a bias: ``d``'s weight takes the initial state's
    ``(1,)`` spliced with ``x`` in the next pass, then refuses the state's ``(3,)``); a
    Sequential its steps' in turn (a function step applied to a stand-in); :data:`_OTHER` for
    another layer, a Sequential with a tuple step or a step refusing the shape."""
    from ...layers import Dense
    from ._layers_composite import CompositeLayer
    layer = getattr(layer_fn, "layer", None)
    if isinstance(layer, Dense):
        if layer.bias:
            return tuple(layer.shape)
        return _times_shape(layer, shape) if shape else None
    if not isinstance(layer, CompositeLayer):
        return _OTHER
    for step in layer.composite.steps:
        if isinstance(step, tuple):
            return _OTHER
        if isinstance(step, _layer_function()):
            shape = _through(step, shape)
            if shape is _OTHER:
                return _OTHER
        elif shape is not None:         # (a step over an unknown value: unknown)
            try:
                shape = tuple(step(_stand_in(shape)).shape)
            except Exception:           # (not a step of one value's shape: not followed)
                return _OTHER
    return shape


def _times_shape(dense, shape: tuple):
    """The shape of the ``Times`` of the layer ``dense`` (a ``Dense``) over a sample of
    ``shape``: the axes its ``input_rank`` or ``map_rank`` leave to map, then its output's
    (:data:`_OTHER` where those ranks do not fit ``shape``: the layer's own refusal)."""
    if dense.input_rank is not None:
        kept = len(shape) - int(dense.input_rank)
    else:
        kept = int(dense.map_rank or 0)
    if not 0 <= kept < len(shape):
        return _OTHER
    return tuple(shape[:kept]) + tuple(dense.shape)


def _shape_of(value) -> "tuple | None":
    if value is UNKNOWN or not isinstance(value, GraphObject):
        return None
    shape = tuple(getattr(value, "shape", (-2,)))
    return None if -2 in shape else shape


def loop_placeholder(loop: tuple, bound: dict, memo: dict, build: Callable):
    """What the placeholder of ``loop`` (:func:`loop_of`) stands for while ``build(value,
    bound, memo)`` builds a graph: in a probe, a stand-in of the shape guessed for it or
    :data:`UNKNOWN`; else a new placeholder of the shape the probes find (one per build),
    closed by :func:`close_built_loops`."""
    key = _key(loop)
    if key in memo:
        return memo[key]
    if memo.get(_PROBE):
        memo.setdefault(_MADE, []).append(loop)
        guess = memo[_GUESSES].get(key)
        memo[key] = UNKNOWN if guess is None else _stand_in(guess)
        return memo[key]
    shape, axes = _probed_shape(loop, bound, build)
    memo[key] = late("placeholder")(shape=shape, dynamic_axes=axes, name=loop[0].name)
    memo.setdefault(_MADE, []).append(loop)
    return memo[key]


def _probed_shape(loop: tuple, bound: dict, build: Callable) -> tuple:
    """The shape and dynamic axes of the placeholder of ``loop``: those of its value, replayed
    with the loops' placeholders unknown, then with the shapes found, until its is known."""
    v = loop[0]
    guesses: dict = {}
    axes: dict = {}
    for _ in range(8):
        memo = {_PROBE: True, _GUESSES: dict(guesses)}
        build(loop[1], bound, memo)
        done = 0
        progress = False
        while done < len(memo.get(_MADE, [])):      # (each loop the probe met)
            met = memo[_MADE][done]
            done += 1
            value = build(met[1], bound, memo)
            shape = _shape_of(value)
            if shape is not None and guesses.get(_key(met)) != shape:
                guesses[_key(met)] = shape
                axes[_key(met)] = list(value.dynamic_axes)
                progress = True
        if _key(loop) in guesses and not progress:
            return guesses[_key(loop)], axes[_key(loop)]
        if not progress:
            break
    raise ValueError(
        f"replace_placeholders: the shape of placeholder {v.name!r}, bound to a value computed "
        "from it, cannot be inferred from the ops around it (give the placeholder a shape: "
        "C.placeholder(shape=...))")


def close_built_loops(bound: dict, memo: dict, build: Callable) -> None:
    """Close the loops a build met: each new placeholder replaced by its loop's value built
    on it, all at once (one recurrence), as ``replace_placeholders`` does."""
    made = memo.get(_MADE, [])
    subs: dict = {}
    k = 0
    while k < len(made):                # (building a value may meet another loop)
        subs[_key(made[k])] = build(made[k][1], bound, memo)
        k += 1
    if not subs:
        return
    memo[_MADE] = []
    replacements = {memo[_key(loop)]: subs[_key(loop)] for loop in made}
    first = next(iter(replacements.values()))
    late("Function")(unwrap(first)).replace_placeholders(replacements)
