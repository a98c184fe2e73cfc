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

__all__ = ["bind_loop", "loop_of", "UNKNOWN", "STRICT", "has_unknown", "probe_call",
           "loop_placeholder", "close_built_loops"]


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

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()


def has_unknown(args, kwargs: dict) -> bool:
    """Whether an operand (in a list too) is :data:`UNKNOWN`."""
    def check(v) -> bool:
        if isinstance(v, (list, tuple)):
            return any(check(u) for u in v)
        return v is UNKNOWN
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
    output unknown (:data:`STRICT`)."""
    if known:
        try:
            return fn(*args, **kwargs)
        except Exception:           # (a guess the next pass corrects)
            return UNKNOWN
    if isinstance(fn, _layer_function()) or (strict and not _elementwise_over_axes(fn, args,
                                                                                 kwargs)):
        return UNKNOWN
    for shape in _candidates(fn, args, kwargs):
        def fill(v):
            if isinstance(v, list):
                return [fill(u) for u in v]
            if isinstance(v, tuple):
                return tuple(fill(u) for u in v)
            return _stand_in(shape) if v is UNKNOWN else v
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
    known = [a for a in list(args) + list(kwargs.values())
             if isinstance(a, GraphObject) and not _shapeless(a)]
    return any(getattr(a, "dynamic_axes", None) for a in known)


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
