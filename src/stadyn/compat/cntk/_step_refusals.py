"""CNTK 2.7's refusals of a recurrence of a Python step (no recurrent cell's) as it is applied
and first run, which Stadyn's one ``recurrence`` op would otherwise run:

* an initial state of another data type than the input (``initial_state=0`` is a float32
  Constant, unless ``default_options(dtype=np.float64)``; the input float64): CNTK's
  ``PastValue`` of the state is of the initial state's type, and the step's first op reading
  it and the input refuses them as the recurrence is applied, a ValueError "Primitive op
  'Plus' passed operands ... with different DataTypes 'Float' and 'Double'."
  (:func:`check_data_types`);
* a step of several states, applied without ``return_full_state``, whose first state (the
  output) reads neither directly nor through the others some other state: CNTK 2.7 builds it,
  but its network's validation of that state's node fails at the first run, a RuntimeError
  "... The output Variable ... shape '[3]' does not match the SampleLayout shape '[]' of the
  corresponding ComputationNode in the network." (:func:`refuse_unread_states`).

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> x = C.sequence.input_variable(2, dtype=np.float64)
    >>> try:
    ...     C.layers.Recurrence(lambda h, v: h + v)(x)
    ... except ValueError as e:
    ...     print(str(e).split(" with ")[1])
    different DataTypes 'Float' and 'Double'.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...graph import Variable
from ._adapt import unwrap
from ._step_checks import called_on_placeholders
from ._variable_text import layout_text

__all__ = ["check_data_types", "refuse_unread_states"]

_TYPES = {np.dtype(np.float32): "Float", np.dtype(np.float64): "Double",
          np.dtype(np.float16): "Float16"}
_OPS = {"plus": "Plus", "minus": "Minus", "element_times": "ElementTimes",
        "element_divide": "ElementTimes", "times": "Times", "splice": "Splice"}


def check_data_types(fn: Any, n_states: int, initial: list, x: Any) -> None:
    """Refuse, as CNTK 2.7 does as the recurrence of the step ``fn`` is applied to ``x``, an
    initial state (of ``initial``, one for all or one each) of another data type than ``x``
    where the step's op reading that state and the input meets them."""
    x = unwrap(x)
    if not isinstance(x, Variable) or x.dtype not in _TYPES:
        return
    for k, init in enumerate(initial * n_states if len(initial) == 1 else initial):
        init = unwrap(init)
        dtype = np.dtype(init.dtype) if isinstance(init, Variable) else np.dtype(np.float32)
        if dtype == np.dtype(x.dtype) or dtype not in _TYPES:
            continue
        op = _meeting_op(fn, n_states, k)
        if op is None:
            continue
        raise ValueError(f"Primitive op '{op}' passed operands 'the state (its initial "
                         "state)', 'the input' with different DataTypes "
                         f"'{_TYPES[dtype]}' and '{_TYPES[np.dtype(x.dtype)]}'.")


def _meeting_op(fn: Any, n_states: int, k: int) -> "str | None":
    """CNTK's name of the first op of the step ``fn`` (on placeholders) reading both its state
    ``k`` and its input; None where none does or the step cannot be called so."""
    calls = _called(fn, n_states)
    if calls is None:
        return None
    states, x, outs = calls
    from ._deferred_reads import parts_of, reads
    for part in parts_of(*outs):
        operands = list(part._args) + list(part._kwargs.values())
        touches = [any(_is(a, s) or reads(a, s) for a in operands) for s in (states[k], x)]
        if all(touches):
            name = getattr(part._fn, "__name__", "")
            return _OPS.get(name, name[:1].upper() + name[1:])
    return None


def refuse_unread_states(fn: Any, n_states: int, out: Any, kind: str, shapes: Any,
                         memo: "dict | None" = None) -> None:
    """Make a run of the recurrence ``out`` (of the step ``fn`` of ``n_states`` states, whose
    shapes ``shapes()`` gives, without ``return_full_state``) raise CNTK 2.7's RuntimeError
    where its output does not read every state (directly, or through a state it reads).
    ``memo``: a dict kept with the step, where the states it leaves unread are found once (the
    step called on placeholders at its first application, not at each)."""
    from ._run_checks import InvalidAtRunError, refuse_when_run
    v = unwrap(out)
    if n_states < 2 or not isinstance(v, Variable):
        return
    unread = memo.get("unread") if memo is not None else None
    if unread is None:
        unread = _unread_states(fn, n_states)
        if memo is not None:
            memo["unread"] = unread
    if not unread:
        return
    try:
        shape = tuple(shapes()[unread[0]])
    except Exception:       # (shapes not known here: none shown)
        shape = ()
    dims = layout_text(shape)
    refuse_when_run(v, f"Function '{kind}': The output Variable 'state {unread[0]} of the "
                       f"step' shape '{dims}' does not match the SampleLayout shape '[]' of the "
                       "corresponding ComputationNode in the network (CNTK 2.7 runs no "
                       "recurrence whose output reads not every state: return_full_state=True "
                       "runs it)", InvalidAtRunError)


def _unread_states(fn: Any, n_states: int) -> list:
    """The states (by position) the output of the step ``fn`` reads neither directly nor
    through the states it reads, the step called on placeholders; none where it cannot be."""
    calls = _called(fn, n_states)
    if calls is None:
        return []
    states, _, outs = calls
    from ._deferred_reads import reads
    reached, todo = {0}, [0]
    while todo:
        i = todo.pop()
        for j, s in enumerate(states):
            if j not in reached and (_is(outs[i], s) or reads(outs[i], s)):
                reached.add(j)
                todo.append(j)
    return [j for j in range(n_states) if j not in reached]


def _called(fn: Any, n_states: int) -> "tuple | None":
    """``(state placeholders, input placeholder, results)`` of the step ``fn`` called on
    placeholders (:func:`~._step_checks.called_on_placeholders`), its results a list (a
    tuple's items, a Function's outputs); None where it cannot be called so or its results are
    not one per state."""
    calls = called_on_placeholders(fn, n_states)
    if calls is None:
        return None
    states, x, out = calls
    outs = list(out) if isinstance(out, (tuple, list)) else \
        list(getattr(out, "outputs", None) or [out])
    return (states, x, outs) if len(outs) == n_states else None


def _is(value: Any, ph: Any) -> bool:
    """Whether ``value`` is the placeholder ``ph`` itself (or its Function)."""
    return getattr(value, "variable", value) is getattr(ph, "variable", ph)
