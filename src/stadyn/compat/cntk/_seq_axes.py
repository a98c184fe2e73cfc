"""What CNTK 2.7 reports of the axes that sequence ops make and leave.

* A **new sequence axis**: ``sequence.where`` (and ``sequence.gather``, whose body is a
  ``Where``) names it ``whereNodeDynamicAxis_conditionVar_<uid of the condition>``;
  ``to_sequence`` ``<sequence_axis_name_prefix><uid of the value>`` (``toSequence_`` by
  default); ``gather`` with ``new_sequence_axis_typeinfo=(scale, add)`` derives it from the
  condition's axis (``defaultDynamicAxis_times_1_plus_2``; ``(1, 0)`` is the condition's axis
  itself), and ``sequence.slice`` from its input's (``<axis>_times_1_minus_1`` for
  ``slice(x, 0, -1)``, ``<axis>_fixedSliceOf_2`` for ``slice(x, 1, 3)``).  The name is
  recorded for the new sequences' lengths (``SEQUENCE_AXES``), so what is computed from them
  is on the same axis.
* The **unpacked steps**: ``sequence.unpack`` makes the padded step axis a static one that
  CNTK shows as a free dimension (``-3``: ``(-3, 3)`` for steps of 3, ``(-3,)`` for the mask);
  so do the values computed from it by ops that keep that axis, as CNTK 2.7's ``.shape`` shows:
  element by element (``tanh``, ``* 2``, ``+ b``), ``times`` by a weight, ``reshape`` of the
  axes after it (or of it with all after it: ``(-3,)``), ``slice`` of other axes, ``pad``,
  ``transpose``, reductions over other axes, ``splice``.
* An **input's free dimensions** (``input_variable((C.FreeDimension, 3))``, marked by
  :func:`stadyn.graph.mark_free_dimensions`) are shown as ``-3`` the same way, and through
  convolutions and poolings over them (a fully convolutional network's image sizes).

Example:
    >>> import stadyn.compat.cntk as C
    >>> x = C.sequence.input_variable(3)
    >>> C.sequence.unpack(x, 0.0, no_mask_output=True).shape
    (-3, 3)
"""

from __future__ import annotations

import weakref

from ... import cntk_semantics as S
from ...graph import (FREE_DIMENSION, Variable, free_dimensions, free_dimensions_marks,
                     graph_version, shapes_version)
from . import _graph as G
from ._axis import Axis

__all__ = ["FREE_DIMENSION", "value_uid", "name_new_axis", "on_derived_axis", "derived_axis_name",
           "free_steps", "holds_no_free_axes", "free_shown", "refuse_free_windows",
           "mark_free_axes"]


# op categories whose outputs line up with their inputs axis by axis (broadcasting aside)
_ELEMENTWISE = frozenset({"activation", "arithmetic", "math", "logical"})


def value_uid(v: Variable) -> str:
    """CNTK's uid of the value ``v``: ``Input3``, ``Parameter12``, ``Plus9_Output_0``."""
    uid = G.uid_of(v)
    if G.kind_of(v) != "output":
        return uid
    return f"{uid}_Output_{G.OUTPUT_INDEX.get(v, 0)}"


def name_new_axis(out: Variable, prefix: str, source: Variable) -> Variable:
    """Put the sequences of ``out`` on the axis ``prefix + uid of source``; returns ``out``."""
    return _on_axis(out, prefix + value_uid(source))


def derived_axis_name(source: Variable, scale: int, add: int) -> str:
    """The axis CNTK derives from ``source``'s sequence axis for sequences ``scale`` times as
    long plus ``add`` steps (``GetDerivedDynamicAxes``: ``gather``'s
    ``new_sequence_axis_typeinfo``, ``sequence.slice``); ``(0, 1)`` (one step: CNTK deletes
    the axis, and so do ``sequence.slice`` and ``gather``) is the default axis."""
    base = G.SEQUENCE_AXES.get(source.sequence_lengths) if \
        source.sequence_lengths is not None else None
    name = base.name if base is not None else Axis.default_dynamic_axis().name
    if (scale, add) == (1, 0):
        return name
    if (scale, add) == (0, 1):
        return Axis.default_dynamic_axis().name
    if scale > 0:
        return f"{name}_times_{scale}" + (f"_plus_{add}" if add > 0 else f"_minus_{-add}")
    return f"{name}_fixedSliceOf_{add}"


def _on_axis(out: Variable, name: str) -> Variable:
    if out.sequence_lengths is not None and name != Axis.default_dynamic_axis().name:
        G.SEQUENCE_AXES[out.sequence_lengths] = Axis(name)
    return out


def on_derived_axis(out: Variable, name: str) -> Variable:
    """Put the sequences of ``out`` on the axis named ``name``; returns ``out``."""
    return _on_axis(out, name)


# values whose axes are free by how they are made (a crop to a referent's free dimensions)
_MARKED: "weakref.WeakKeyDictionary[Variable, frozenset]" = weakref.WeakKeyDictionary()
# of those, the axes that are an input's own free dimensions (:func:`mark_free_axes`)
_INPUTS_OWN: "weakref.WeakKeyDictionary[Variable, frozenset]" = weakref.WeakKeyDictionary()


def mark_free_axes(v: Variable, axes, inputs_own=()) -> None:
    """Note that the ``axes`` of ``v``'s shape are free dimensions by how ``v`` is made (their
    lengths each run's, shown ``-3``: a crop to a referent's free dimensions), whatever the
    ops that make it; :func:`free_steps` reads them as an input's.  ``inputs_own``: those of
    them that are an input's own free dimensions, not unpacked steps (``unpack_batch`` of an
    input of ``(FreeDimension, 3)``: its axis 1), which ``free_steps(v, of_inputs=False)``
    leaves out.

    Example:
        >>> import stadyn as sd
        >>> v = sd.Variable((1, 4, 4)) * 2
        >>> mark_free_axes(v, [2])
        >>> free_shown(v.shape, free_steps(v))
        (1, 4, -3)
    """
    _MARKED[v] = frozenset(int(a) for a in axes)
    _MARKS[0] += 1
    if inputs_own:
        _INPUTS_OWN[v] = frozenset(int(a) for a in inputs_own)
    else:
        _INPUTS_OWN.pop(v, None)


# how many times mark_free_axes marked a value
_MARKS = [0]
# Values known to hold no free axis (True) or that may hold some (False), kept while the graph
# version, mark_free_axes' and mark_free_dimensions' counts are those of _CLEAN_STAMP: a value
# holds none where no value it is computed from through ops that carry free axes
# (:func:`_carries`) is a source of them: an unpack's output, a value mark_free_axes marked, a
# leaf with free dimensions.  Which values a value is computed from changes only by a rewiring
# (placeholders replaced, ``set_input``, ``clear_all_graph_links``: each moves the graph
# version on), and which are sources only by a mark; shapes do not decide it.  So building a
# deep graph asks each new value's inputs once, not the whole graph behind each ``.shape``.
_CLEAN: "weakref.WeakKeyDictionary[Variable, bool]" = weakref.WeakKeyDictionary()
_CLEAN_STAMP: list = [None]


def _is_source(u: Variable) -> bool:
    node = u.parent
    return (bool(_MARKED) and u in _MARKED) or (node is None and bool(free_dimensions(u))) \
        or (node is not None and node.spec.name == "sequence_unpack")


def holds_no_free_axes(v: Variable) -> bool:
    """Whether no axis of ``v`` is a free one (:func:`free_steps` is empty, whatever
    ``of_inputs``) because no value it is computed from through ops that carry free axes is
    an unpack's output, a value :func:`mark_free_axes` marked or a leaf with free dimensions;
    kept per value until the graph is rewired or a value marked.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> x = C.sequence.input_variable(3)
        >>> holds_no_free_axes(C.tanh(x).variable), holds_no_free_axes(
        ...     C.tanh(C.sequence.unpack(x, 0.0, no_mask_output=True)).variable)
        (True, False)
    """
    stamp = (graph_version(), _MARKS[0], free_dimensions_marks())
    if _CLEAN_STAMP[0] != stamp:
        _CLEAN.clear()
        _CLEAN_STAMP[0] = stamp
    known = _CLEAN.get(v)
    if known is not None:
        return known
    stack, entered = [v], set()
    while stack:        # (inputs first, without recursion: graphs thousands of ops deep)
        u = stack[-1]
        if u in _CLEAN:
            stack.pop()
            continue
        node = u.parent
        if _is_source(u):
            _CLEAN[u] = False
        elif node is None or not _carries(node):
            _CLEAN[u] = True
        else:
            inputs = [i for i in node.inputs if isinstance(i, Variable)]
            pending = [i for i in inputs if i not in _CLEAN]
            if pending and id(u) not in entered:
                entered.add(id(u))
                stack.extend(pending)
                continue
            # (an input still pending the second time is one u is computed into: a cycle,
            # which is not known to hold none)
            _CLEAN[u] = not pending and all(_CLEAN[i] for i in inputs)
        stack.pop()
    return _CLEAN[v]


# free_steps' answers per value (of_inputs -> axes), kept while _CLEAN's stamp and the shapes'
# version (graph.shapes_version: a run's re-inferred shapes, a leaf fed another shape) stand:
# the answer reads lengths (an element-wise op's fixed axes), so a value built on a graph that
# holds free axes asks its inputs' answers, not the whole graph behind it again
_FREE: "weakref.WeakKeyDictionary[Variable, dict]" = weakref.WeakKeyDictionary()
_FREE_STAMP: list = [None]


def free_steps(v: Variable, of_inputs: bool = True) -> frozenset:
    """The axes of ``v``'s shape (batch axis included) that hold ``sequence.unpack``'s padded
    steps: those of an unpack's outputs, and of values without a sequence axis computed from
    them by ops that keep the axis (:func:`_kept_steps`, as CNTK 2.7 keeps its free dimension
    in ``.shape``); and (unless not ``of_inputs``) those an input's free dimensions give."""
    if holds_no_free_axes(v):
        return frozenset()
    stamp = (_CLEAN_STAMP[0], shapes_version())
    if _FREE_STAMP[0] != stamp:
        _FREE.clear()
        _FREE_STAMP[0] = stamp
    known = _FREE.get(v)
    if known is not None and of_inputs in known:
        return known[of_inputs]
    found: dict[int, frozenset] = {}
    walked: list = []
    stack = [v]
    while stack:
        u = stack.pop()
        if id(u) in found:
            continue
        if _CLEAN.get(u):       # (nothing free behind it: holds_no_free_axes above)
            found[id(u)] = frozenset()
            continue
        known = _FREE.get(u)
        if known is not None and of_inputs in known:
            found[id(u)] = known[of_inputs]
            continue
        node = u.parent
        if _MARKED and u in _MARKED:
            found[id(u)] = _MARKED[u] if of_inputs else \
                _MARKED[u] - _INPUTS_OWN.get(u, frozenset())
            continue
        if node is None:        # an input with free dimensions (``input_variable((-3, 3))``)
            found[id(u)] = free_dimensions(u) if of_inputs else frozenset()
            continue
        inputs = [i for i in node.inputs if isinstance(i, Variable)]
        unpack = node.spec.name == "sequence_unpack"
        if not unpack and not _carries(node):
            found[id(u)] = frozenset()
            continue
        pending = [i for i in inputs if id(i) not in found]
        if pending:
            stack.append(u)
            stack.extend(pending)
            continue
        walked.append(u)
        if unpack:      # the steps, padded, and the steps' own free dimensions
            found[id(u)] = frozenset({1} | {a for a in found[id(inputs[0])] if a >= 2})
            continue
        if node.spec.name in _OPERAND_SHAPED:   # (its statistics broadcast; the operand's)
            found[id(u)] = found[id(inputs[0])]
            continue
        axes: set = set()
        for i in inputs:
            if found[id(i)]:
                axes |= _kept_steps(node, i, found[id(i)], tuple(u.shape))
        if node.spec.category in _ELEMENTWISE or node.spec.name in _SAME_AXES:
            axes -= _fixed_by_others(inputs, found, len(u.shape))
        if u.sequence_lengths is not None:
            # a sequence's steps are not unpacked steps (a sequence masked by an unpack's mask
            # is not); its sample's free dimensions (an input's FreeDimension) are kept
            axes = {a for a in axes if a >= 2}
        found[id(u)] = frozenset(axes)
    for u in walked:
        _FREE.setdefault(u, {})[of_inputs] = found[id(u)]
    return found[id(v)]


def free_shown(shape: tuple, free) -> tuple:
    """``shape`` as CNTK 2.7 shows it in ``.shape``: -3 on its free axes ``free`` (indices into
    ``shape``, as :func:`free_steps` gives them)."""
    return tuple(FREE_DIMENSION if k in free else d for k, d in enumerate(shape))


def refuse_free_windows(x: Variable, window, strides, auto, dilation=1, op: str = "pooling",
                        ceil: bool = False) -> None:
    """Refuse a window op over the last ``len(window)`` axes of ``x`` where one is a free
    dimension and CNTK's padding there depends on each minibatch's length
    (:func:`stadyn.cntk_semantics.refuse_windows_over_free_lengths`), and a convolution whose
    channel axis is a free dimension (in CNTK 2.7's words)."""
    free = free_steps(x)
    if not free:
        return
    n = len(window)
    if op.startswith("Convolution") and x.ndim - n - 1 in free and x.ndim - n - 1 > 0:
        raise ValueError("Convolution kernel or stride/padding attribute shape has an illegal "
                         "FreeDimension after shape inference.\nConvolution: its input's "
                         "channel axis is a free dimension (-3); the kernel needs its size")
    shown = free_shown(x.shape, free)
    S.refuse_windows_over_free_lengths([x.ndim - n + i in free for i in range(n)], window,
                                       strides, auto, dilation, op, shown[1:], ceil)


_REDUCTIONS = frozenset({"sum", "mean", "max", "min", "prod"})
_SAME_AXES = frozenset({"identity", "cast", "stop_gradient", "softmax", "log_softmax", "flip",
                        "dropout", "cumsum", "cntk_eye_like"})
# ops whose output is shaped as their first input (the operand), the others broadcast to it
_OPERAND_SHAPED = frozenset({"cntk_batch_normalization"})
_MOVING = frozenset({"slice", "pad", "transpose", "concatenate", "affine", "reshape",
                     "reshape_trailing", "one_hot"})
# ops that slide a window over the axes after the batch and channel axes (N, C, *spatial)
_WINDOWS = frozenset({"convolution", "deconvolution", "depthwise_convolution",
                      "depthwise_deconvolution", "max_pooling", "average_pooling",
                      "sum_pooling"})


def _fixed_by_others(inputs: list, found: dict, rank: int) -> set:
    """The axes of an element-wise op's output (of ``rank``, inputs aligned on the right) where
    some input has a fixed length above 1: a free axis broadcast against it takes that length
    (CNTK 2.7: ``(-3, 3) + (4, 3)`` is ``(4, 3)``)."""
    fixed = set()
    for i in inputs:
        offset = rank - i.ndim
        fixed |= {a + offset for a, d in enumerate(i.shape)
                  if d > 1 and a not in found.get(id(i), ()) and a + offset > 0}
    return fixed


def _carries(node) -> bool:
    name = node.spec.name
    return node.spec.category in _ELEMENTWISE | {"sequence"} or \
        name in _SAME_AXES | _REDUCTIONS | _MOVING | _WINDOWS | _OPERAND_SHAPED


def _arg(node, name: str, index: int, default=None):
    if name in node.kwargs:
        return node.kwargs[name]
    return node.args[index] if len(node.args) > index else default


def _kept_steps(node, x: Variable, free: frozenset, shape: tuple) -> set:
    """The axes of the output (of ``shape``) of ``node`` that hold the unpacked steps its input
    ``x`` holds on the axes ``free`` (CNTK 2.7: kept through element-wise ops, products over
    the sample's last axes, reshapes, slices and pads of other axes, reversals, transposes,
    reductions over other axes, splices; a reshape of the steps with the axes after them is one
    axis of unpacked steps; a slice of the steps counted from the start at both ends holds its
    static number of steps, one counted from the end keeps them)."""
    name, rank = node.spec.name, len(x.shape)
    if node.spec.category == "sequence" and x.sequence_lengths is not None:
        # a sequence op over the steps: the sample's axes, counted from the end, are kept
        # where the output ends in them (a step, a reduction over the steps, a delay)
        return {a - rank + len(shape) for a in free if a >= 2 and a - rank + len(shape) >= 1
                and tuple(shape[a - rank + len(shape) + 1:]) == tuple(x.shape[a + 1:])}
    if node.spec.category in _ELEMENTWISE or name in _SAME_AXES:    # (the lengths may be
        return {a for a in free if len(shape) == rank}      # stale; _fixed_by_others decides)
    if name in _REDUCTIONS:
        axis = _arg(node, "axis", 1)
        axes = set(range(rank)) if axis is None else {
            a % rank for a in (axis if isinstance(axis, (list, tuple)) else [axis])}
        if _arg(node, "keepdims", 2, False):
            return set(free) - axes
        return {a - sum(r < a for r in axes) for a in free if a not in axes}
    if name == "concatenate":
        return set(free) if len(shape) == rank else set()
    if name == "transpose":
        order = [int(a) for a in _arg(node, "axes", 1, ())]
        return {k for k, a in enumerate(order) if a in free}
    if name == "slice":     # CNTK 2.7: a range counted from the start at both ends is static
        start, stop = _arg(node, "start", 1) or (), _arg(node, "stop", 2) or ()
        return {a for a in free if not ((a >= len(start) or (start[a] or 0) >= 0)
                                        and a < len(stop) and (stop[a] or 0) > 0)}
    if name == "pad":           # CNTK 2.7 keeps -3 on a padded free axis too
        return set(free) if len(shape) == rank else set()
    if name in _WINDOWS:        # a free spatial axis of an image stays free (CNTK's FCNs)
        # (a pooling keeps its channels: a free channel axis stays free, CNTK 2.7's (-3, ...))
        first = 1 if name.endswith("_pooling") else 2
        return {a for a in free if a >= first} if x is node.inputs[0] else set()
    if name == "one_hot":                        # the last axis, of indices, made classes
        return {a for a in free if a < rank - 1}
    if name == "affine":
        return {a for a in free if a < int(_arg(node, "base_axis", 3, 1))}
    if name == "reshape_trailing":
        base, new = int(_arg(node, "base_axis", 2, 1)), tuple(_arg(node, "shape", 1, ()))
        kept = {a for a in free if a < base}
        if any(a >= base for a in free) and -1 in new:
            kept.add(base + new.index(-1))       # the steps and the axes after them, merged
        return kept
    if name == "reshape":                        # the axes after the steps reshaped
        return {a for a in free if shape[:a + 1] == tuple(x.shape[:a + 1])}
    return set()
