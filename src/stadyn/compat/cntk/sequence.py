"""``cntk.sequence``: inputs with a sequence axis and the ops over it, on ``stadyn.sequence``.

A sequence input is fed a list of arrays, one per sequence (or an array of equal-length
sequences); ``eval`` returns one array per sequence for a value that still has the axis.

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> x = C.sequence.input_variable(2)
    >>> y = C.sequence.reduce_sum(x)
    >>> y.eval({x: [np.ones((3, 2), np.float32), np.ones((1, 2), np.float32)]}).tolist()
    [[3.0, 3.0], [1.0, 1.0]]
"""

from __future__ import annotations

import weakref

import numpy as np

from ... import functions as F
from ... import sequence as S
from . import _graph as G
from ...graph import (Variable, broadcast_like, format_location, mark_free_dimensions,
                      user_location)
from ._deferrable import defer_module
from ._sparse_operands import refuse_sparse_operands
from ._adapt import (adapt, batched, const, float_arrays, named, one_op, operand, refuse_name,
                     refuse_several_outputs, unwrap, wrap)
from ._adapt import operand as _as_operand
from ._axis import Axis
from ._loops import as_loop_sequence, one_step
from ._seq_axes import derived_axis_name, name_new_axis, on_derived_axis
from ._defaults import default_override_or
from ._variables import batch_axis_only, free_until_fed, input_dtype, without_dynamic_axes
from ._sequence_begin import reads_across
from ._run_checks import InvalidAtRunError, at_first_run, check_each_run, refuse_when_run
from ._shown_constants import float64_scalars, show_slice_scalars
from ._deferred import Deferred, UnknownOutput
from ._step_delays import in_step

__all__ = ["input_variable", "input", "past_value", "future_value", "reduce_sum", "reduce_max",
           "first", "last", "broadcast_as", "slice", "softmax", "unpack", "is_first", "is_last",
           "delay", "where", "gather", "scatter", "Axis", "default_override_or"]

_WHERE_AXIS = "whereNodeDynamicAxis_conditionVar_"


def input_variable(shape, dtype=default_override_or(np.float32), needs_gradient: bool = False,
                   is_sparse: bool = False, sequence_axis=None, dynamic_axes=None,
                   name: str = ""):
    """An input holding sequences whose steps have per-sample ``shape`` (a sparse input is
    fed dense, one-hot rows), on ``sequence_axis`` (CNTK's default dynamic axis, or a named
    ``C.Axis``; ``dynamic_axes``, the batch axis and the sequence axis, replaces it).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> C.sequence.input_variable((3,)).shape
        (3,)
        >>> C.sequence.input_variable(3, sequence_axis=C.Axis("words")).dynamic_axes
        (Axis('defaultBatchAxis'), Axis('words'))
    """
    refuse_name(name, "input_variable")
    steps, free = free_until_fed((shape,) if isinstance(shape, int) else tuple(shape))
    v = S.input_variable(steps, dtype=input_dtype(dtype), need_grad=needs_gradient)
    mark_free_dimensions(v, [k + 2 for k in free])
    G.INPUTS[v] = name
    if is_sparse:
        G.SPARSE.add(v)
    G.BATCH.add(v)
    G.name_sequence_axis(v, tuple(dynamic_axes) if dynamic_axes else sequence_axis)
    return wrap(v)


input = input_variable  # noqa: A001 - CNTK's name


def _seq_operand(x):
    """A delay's operand: a placeholder (a loop's forward declaration) becomes a sequence."""
    return as_loop_sequence(unwrap(x))


def _initial(initial_state, x):
    """CNTK's ``initial_state``: a number, an array (one step's shape) or a Function.  A
    number is a scalar float32 Constant, None one of ``x``'s type holding 0, as CNTK 2.7 makes
    them (listed among the model's ``constants``)."""
    if initial_state is None:
        return const(0.0, unwrap(x).dtype)
    if isinstance(initial_state, (int, float, np.number)) and not isinstance(initial_state, bool):
        return const(initial_state)
    return operand(initial_state)


def _from_sequence(x, init, time_step: int):
    """``x`` delayed by ``time_step`` (earlier for a positive one) from an initial state
    ``init`` that is a sequence (on any axis), as CNTK 2.7's ``PastValue`` and ``FutureValue``
    read one: a delay into the past by ``k`` starts each sequence of ``x`` with the last ``k``
    steps of the initial state's, into the future it ends with their first ``k``
    (``past_value(x, initial_state=s)``: ``s``'s last step, then ``x``'s) -- ``k`` delays by
    one, each from one step of ``init``.  None where ``init`` is no sequence."""
    if not isinstance(init, Variable) or getattr(init, "sequence_lengths", None) is None \
            or time_step == 0:
        return None
    out = x
    for j in range(abs(time_step)):
        if time_step > 0:       # the last step first, then the one before it ...
            step = S.last(init if j == 0 else S.slice(init, -(j + 1), -j))
        else:                   # the first step first, then the next ...
            step = S.first(init if j == 0 else S.slice(init, j, j + 1))
        out = S.delay(out, step, 1 if time_step > 0 else -1)
    if abs(time_step) > 1:
        _check_initial_lengths(out, init, time_step)
    return out


def _check_initial_lengths(out, init, time_step: int) -> None:
    """At each run: CNTK 2.7 takes an initial-state sequence of one step for all ``k`` steps
    of a delay by ``k``, and refuses a shorter one than ``k`` otherwise (its ValueError "...
    requires second argument (initialState) sequences to be either of length 1 or at least
    as long as the timestep"); Stadyn refuses the one-step one (NotImplementedError) rather
    than read past it."""
    ref, k = weakref.ref(init.sequence_lengths), abs(time_step)
    kind = "PastValue" if time_step > 0 else "FutureValue"

    def check():
        lengths = ref()
        if lengths is None or lengths.data is None:
            return
        found = [int(n) for n in np.asarray(lengths.d).ravel()]
        if any(n == 1 for n in found):
            raise NotImplementedError(
                f"{kind} by {k} steps from an initial_state sequence of one step (which CNTK "
                "2.7 repeats for every step) is not supported by Stadyn")
        if any(n < k for n in found):
            raise ValueError(
                f"{kind} operation requires second argument (initialState) sequences to be "
                f"either of length 1 or at least as long as the timestep ({k}).")
    check_each_run(unwrap(out), check)


def past_value(x, initial_state=None, time_step: int = 1, name: str = ""):
    """The value ``time_step`` steps earlier in each sequence (``initial_state`` before).

    Example: ``C.sequence.past_value(h)``, ``C.sequence.past_value(x, initial_state=1.0,
    time_step=2)``."""
    stepped = in_step(x, "past_value")    # (inside a recurrence's step: _step_delays)
    if stepped is not None:
        return named(stepped, name)
    x, init = _seq_operand(x), _initial(initial_state, x)
    out = _from_sequence(x, init, time_step)
    return named(wrap(S.past_value(x, init, time_step) if out is None else out), name)


def future_value(x, initial_state=None, time_step: int = 1, name: str = ""):
    """The value ``time_step`` steps later in each sequence (``initial_state`` after).

    Example: ``C.sequence.future_value(h)``."""
    stepped = in_step(x, "future_value")    # (inside a recurrence's step: _step_delays)
    if stepped is not None:
        return named(stepped, name)
    x, init = _seq_operand(x), _initial(initial_state, x)
    out = _from_sequence(x, init, -time_step)
    return named(wrap(S.future_value(x, init, time_step) if out is None else out), name)


def _block(out, op_name: str, root_op: str, name: str, *arguments):
    """``out`` (a Function) shown as CNTK 2.7 builds its op: a block of kind ``op_name``
    (``Sequence::Slice``) named ``name`` over ``arguments``, around the primitive ``root_op``
    (``GatherPacked``), so ``root_function.op_name``, ``is_block`` and ``block_root`` read
    as CNTK's.  A value the op returned as it was (an input, another block) is left alone."""
    refuse_name(name, op_name)
    v = unwrap(out)
    args = [unwrap(a) for a in arguments]
    if v.parent is None or v in G.BLOCKS or any(v is a for a in args):
        return named(out, name)
    G.mark_block(v, op_name, name, args, root_op)
    return out


_reduce_sum = adapt(S.reduce_sum, "reduce_sum")
_reduce_max = adapt(S.reduce_max, "reduce_max")
_first = adapt(S.first, "first")
_last = adapt(S.last, "last")
_softmax = adapt(S.softmax, "softmax")


@float_arrays("seq", op="sequence.reduce_sum")
def reduce_sum(seq, name: str = ""):
    """The sum over each sequence's steps, one value per sequence (CNTK 2.7's block
    ``Sequence::ReduceElements``).  Example: ``C.sequence.reduce_sum(x)``."""
    return _block(_reduce_sum(seq), "Sequence::ReduceElements", "ReduceElements", name, seq)


@float_arrays("seq", op="sequence.reduce_max")
def reduce_max(seq, name: str = ""):
    """The largest value over each sequence's steps (a ``Sequence::ReduceElements`` block).
    Example: ``C.sequence.reduce_max(x)``."""
    return _block(_reduce_max(seq), "Sequence::ReduceElements", "ReduceElements", name, seq)


@float_arrays("seq", op="sequence.first")
def first(seq, name: str = ""):
    """Each sequence's first step (CNTK 2.7's block ``Sequence::Slice`` around
    ``GatherPacked``).  Example: ``C.sequence.first(x)``."""
    return _slice(_first(seq), name, seq)


@float_arrays("seq", op="sequence.last")
def last(seq, name: str = ""):
    """Each sequence's last step (a ``Sequence::Slice`` block).
    Example: ``C.sequence.last(x)``."""
    return _slice(_last(seq), name, seq)


def _slice(out, name: str, seq):
    """``out`` (``sequence.first``'s or ``last``'s) shown as CNTK 2.7's ``Sequence::Slice``
    block, which holds two scalar constants, 0 and 1 (float32; float64 once a float64 graph
    first runs, as CNTK clones them), listed before the sequence among its inputs."""
    made = _block(out, "Sequence::Slice", "GatherPacked", name, seq)
    v = unwrap(made)
    if isinstance(v, Variable) and v.parent is not None and \
            v.parent.spec.name in ("sequence_first", "sequence_last"):
        show_slice_scalars(v)
        if np.dtype(v.dtype) == np.float64:
            at_first_run(v, float64_scalars)
    return made


@float_arrays("seq", op="sequence.softmax")
def softmax(seq, name: str = ""):
    """The softmax over each sequence's steps (CNTK 2.7's block ``Sequence::Softmax``).
    Example: ``C.sequence.softmax(x)``."""
    return _block(_softmax(seq), "Sequence::Softmax", "ElementDivide", name, seq)


@float_arrays("operand", "broadcast_as_operand", op="sequence.broadcast_as")
def broadcast_as(operand, broadcast_as_operand, name: str = ""):
    """``operand`` (one value per sequence) at every step of ``broadcast_as_operand``.  Inside
    a recurrence's step, where ``broadcast_as_operand`` is one step of its sequence, every
    step sees the same ``operand``: it is returned as it is.

    Example: ``C.sequence.broadcast_as(C.sequence.last(h), h)``."""
    refuse_several_outputs(operand, None)
    like = unwrap(broadcast_as_operand)
    if getattr(like, "sequence_lengths", None) is None and _in_step(like):
        if isinstance(unwrap(operand), Variable):   # CNTK's first pass reads like's axes
            broadcast_like(unwrap(operand), like)
        return operand
    value = unwrap(operand) if batched(operand) else _per_sequence(operand, like)
    return _block(wrap(S.broadcast_as(value, like)), "Sequence::BroadcastAs",
                  "ReconcileDynamicAxis", name, value, like)


def _per_sequence(value, like):
    """A value without the batch axis (a number, an array, a constant) once per sequence of
    ``like``."""
    v = _as_operand(value)
    v = v if isinstance(v, Variable) else F.constant(float(v), ())
    first = reads_across(S.first(like), None)     # (for its shape: no step is read)
    base = F.mul_scalar(F.sum(first, axis=list(range(1, len(first.shape))))
                        if len(first.shape) > 1 else first, 0.0)
    return F.add2(F.reshape(base, (-1,) + (1,) * len(v.shape)),
                  F.reshape(v, (1,) + tuple(v.shape)))


def _in_step(v) -> bool:
    """Whether ``v`` is one step of a sequence inside a recurrence's step (computed there from
    the step's states or inputs)."""
    stack, seen = [v], set()
    while stack:
        u = stack.pop()
        if u in G.STEP_VALUES:
            return True
        if id(u) in seen or u.parent is None:
            continue
        seen.add(id(u))
        stack.extend(u.parent.inputs)
    return False


@float_arrays("seq", op="sequence.slice")
def slice(seq, begin_index: int, end_index: int, name: str = ""):  # noqa: A001
    """Steps ``begin_index:end_index`` of each sequence (negative: from its end; 0: the end),
    on the axis CNTK 2.7 derives from the input's (``defaultDynamicAxis_times_1_minus_1``); a
    slice of one step is no sequence, one value per sequence, as CNTK 2.7's.

    Example: ``C.sequence.slice(x, 0, -1)``."""
    x, begin, end = unwrap(seq), int(begin_index), int(end_index)
    if end - begin == 1:    # one step: CNTK 2.7 deletes the sequence axis, as sequence.first
        out = S.first(x) if begin == 0 else S.last(x) if end == 0 else \
            S.first(S.slice(x, begin, end))
        return _block(wrap(out), "Sequence::Slice", "GatherPacked", name, x)
    out = S.slice(x, begin, end)
    if begin >= 0 and end <= 0:
        out = on_derived_axis(out, derived_axis_name(x, 1, end - begin))
    elif end - begin > 0:
        out = on_derived_axis(out, derived_axis_name(x, 0, end - begin))
    if begin == 0 and end == 0:     # (CNTK 2.7 returns the sequence itself)
        return named(wrap(out), name)
    return _block(wrap(out), "Sequence::Slice", "GatherPacked", name, x)


def unpack(x, padding_value, no_mask_output: bool = False, name: str = ""):
    """The sequences as a plain value padded with ``padding_value``, and its mask: one
    function of two outputs, CNTK 2.7's ``UnpackSequenceOp`` (``UnpackSequenceOp5_Output_0``,
    ``_1``; the mask of ``unpack(x, 0, name='u')`` is named ``u_UnpackSequenceMask``); only
    the value with ``no_mask_output``.

    Example: ``C.sequence.unpack(x, 0.0, no_mask_output=True)``."""
    value, mask = S.unpack(unwrap(x), float(padding_value))
    if no_mask_output:
        return named(wrap(value), name, "UnpackSequenceOp")
    from ._function import Function
    value.name = name or None
    mask.name = name + "_UnpackSequenceMask" if name else None
    G.mark_outputs([value, mask], "UnpackSequenceOp")
    return Function(value, [value, mask])


def _ones(x):
    """1 at every step of ``x``'s sequences (one number per step)."""
    v = unwrap(x)
    if len(v.shape) > 2:
        v = F.sum(v, axis=list(range(2, len(v.shape))))
    return F.add_scalar(F.mul_scalar(v, 0.0), 1.0)


@float_arrays("seq", op="sequence.is_first")
def is_first(seq, name: str = ""):
    """1 at each sequence's first step, 0 elsewhere.  Example: ``C.sequence.is_first(x)``."""
    ones = _ones(seq)
    out = one_op(wrap(ones - S.past_value(ones, 0.0)), seq)     # (one op reading the sequence)
    return _block(out, "Sequence::IsFirst", "PastValue", name, seq)


@float_arrays("seq", op="sequence.is_last")
def is_last(seq, name: str = ""):
    """1 at each sequence's last step, 0 elsewhere.  Example: ``C.sequence.is_last(x)``."""
    ones = _ones(seq)
    out = one_op(wrap(ones - S.future_value(ones, 0.0)), seq)
    return _block(out, "Sequence::IsLast", "FutureValue", name, seq)


def delay(x, initial_state=None, time_step: int = 1, name: str = ""):
    """``past_value`` for a positive ``time_step``, ``future_value`` for a negative one, ``x``
    for 0.  Example: ``C.sequence.delay(x, time_step=-1)`` is each next step."""
    stepped = in_step(x, "delay")    # (inside a recurrence's step: _step_delays)
    if stepped is not None:
        return named(stepped, name)
    x, init = _seq_operand(x), _initial(initial_state, x)
    out = _from_sequence(x, init, time_step)
    if out is None:
        out = S.delay(x, init, time_step)
    if time_step == 0:
        return named(wrap(out), name)
    return named(wrap(out), name, "PastValue" if time_step > 0 else "FutureValue")


@float_arrays("condition", op="sequence.where")
def where(condition, name: str = ""):
    """The positions of the steps whose ``condition`` is nonzero, as a new sequence (a count
    ``k`` repeats a position), on the axis ``whereNodeDynamicAxis_conditionVar_<uid of
    condition>`` as in CNTK 2.7.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> c = C.sequence.input_variable(1)
        >>> C.sequence.where(c).eval({c: [np.array([[1], [0], [1]], np.float32)]})
        [array([0., 2.], dtype=float32)]
    """
    c, stood_in = _selected_steps(condition, "where")
    c = _scalar_condition(c, condition, "where")
    out = name_new_axis(S.where(c), _WHERE_AXIS, unwrap(condition))
    _refuse_run_of_samples(out, "where", condition, stood_in)
    return named(wrap(out), name, "Where")


@float_arrays("seq", "condition", op="sequence.gather")
def gather(seq, condition, new_sequence_axis_typeinfo=None, name: str = ""):
    """The steps of ``seq`` whose ``condition`` is nonzero, as a new sequence, on the axis
    ``where`` makes (``new_sequence_axis_typeinfo=(scale, add)``: one derived from the
    condition's, ``<axis>_times_<scale>_plus_<add>``; the values do not depend on it).
    Example: ``C.sequence.gather(x, C.greater(x, 0))``."""
    c, stood_in = _selected_steps(condition, "gather")
    c = _scalar_condition(c, condition, "gather")
    x, seq_stood_in = _selected_steps(seq, "gather")
    out = S.gather(x, c)
    _refuse_run_of_samples(out, "gather", seq if seq_stood_in else condition,
                           stood_in or seq_stood_in)
    if new_sequence_axis_typeinfo is None:
        out = name_new_axis(out, _WHERE_AXIS, unwrap(condition))
    else:
        scale, add = (int(k) for k in new_sequence_axis_typeinfo)
        if (scale, add) == (0, 1):  # one step each: CNTK 2.7 deletes the sequence axis
            out = S.first(out)
        else:
            out = on_derived_axis(out, derived_axis_name(unwrap(condition), scale, add))
    return _block(wrap(out), "Sequence::Gather", "GatherPacked", name, seq, c)


@float_arrays("seq", "condition", op="sequence.scatter")
def scatter(seq, condition, new_sequence_axis_typeinfo=None, name: str = ""):
    """The steps of ``seq`` put where ``condition`` is nonzero, on its axis (0 elsewhere).
    A ``seq`` without a sequence axis (batched, ``C.input_variable``) is one step per sample,
    as CNTK 2.7 reads it (for conditions with one nonzero step per sequence).

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> v, c = C.input_variable(2), C.sequence.input_variable(1)
        >>> C.sequence.scatter(v, c).eval({v: np.array([[1, 2]], np.float32),
        ...                                c: [np.array([[0], [1]], np.float32)]})
        [array([[0., 0.],
               [1., 2.]], dtype=float32)]
    """
    x = unwrap(seq)
    if getattr(x, "sequence_lengths", None) is None:
        if not batched(seq):        # (CNTK 2.7: ScatterPacked's operands' dynamic axes differ)
            raise ValueError(f"sequence.scatter: {seq!r} has neither a batch nor a sequence "
                             "axis (CNTK 2.7 refuses it: its operands must have dynamic axes); "
                             "give it a sequence axis (C.sequence.input_variable) or a batch "
                             "axis (C.input_variable)")
        x = one_step(x)
    c, stood_in = _selected_steps(condition, "scatter")
    c = _scalar_condition(c, condition, "scatter")
    out = S.scatter(x, c)
    _refuse_run_of_samples(out, "scatter", condition, stood_in)
    return _block(wrap(out), "Sequence::Scatter", "ScatterPacked", name, seq, condition)


def _selected_steps(operand, op: str) -> "tuple[Variable, bool]":
    """``(the operand's value, stood in)`` for the sequence op ``op`` that selects steps by a
    condition: a value with the batch axis alone stands in as sequences of one step each
    (``stood in``: CNTK 2.7 builds the op so but does not run it,
    :func:`_refuse_run_of_samples`); one without dynamic axes is refused, as CNTK 2.7
    refuses it, with the user's line."""
    v = unwrap(operand)
    if not isinstance(v, Variable) or v.sequence_lengths is not None or _in_step(v):
        return v, False
    if batched(operand):
        return one_step(v), True
    line = format_location(user_location())
    raise RuntimeError(f"sequence.{op}: " + _NO_SEQUENCE_TO_SELECT.format(repr(operand))
                       + f" ({_NONE_HAS}: give it a sequence axis, C.sequence.input_variable)"
                       + (f" at {line}" if line else ""))


def _scalar_condition(c: Variable, condition, op: str) -> Variable:
    """``c``, the value of the condition of the sequence op ``op``; where it holds more than
    one number per step, CNTK 2.7 builds the op and refuses every run of it (ValueError
    "Where operation can only operate on scalar input."): a stand-in of one number per step
    (its sum), every run of a graph holding it refused so, before any other refusal of the
    op's."""
    if not isinstance(c, Variable) or len(c.shape) <= 2 or int(np.prod(c.shape[2:])) == 1:
        return c
    one = F.sum(c, axis=list(range(2, len(c.shape))))
    refuse_when_run(one, f"sequence.{op}: Where operation can only operate on scalar input. "
                    f"Its condition {condition!r} holds {int(np.prod(c.shape[2:]))} numbers "
                    "per step (CNTK 2.7 builds the op, then refuses to run it); give it one "
                    "(shape () or (1,))", ValueError)
    return one


def _refuse_run_of_samples(out: Variable, op: str, operand, stood_in: bool) -> None:
    """Where ``operand`` has the batch axis alone (:func:`_selected_steps`), every run of a
    graph holding ``out`` refused as CNTK 2.7's fails (RuntimeError), the words saying why
    and where the op was built."""
    if stood_in:
        refuse_when_run(out, f"sequence.{op}: its operand {operand!r} has the batch axis "
                        "alone, each sample a sequence of one step, which CNTK 2.7 builds "
                        "but does not run ('AddSequence: Sequences must be a least one frame "
                        "long'); give it a sequence axis (C.sequence.input_variable)",
                        InvalidAtRunError)


# CNTK 2.7 refuses these when run on a sparse input (a tensor operation on sparse data)
refuse_sparse_operands(globals(), ["past_value", "future_value", "delay", "reduce_sum",
                                  "reduce_max", "broadcast_as"])

def _lacking_axes(operand) -> "tuple":
    """``(placeholder, how it was made)`` where ``operand`` is a placeholder made without
    dynamic axes (``dynamic_axes=[]``) or with the batch axis alone, or an op waiting on such
    placeholders whose dynamic axes are so known (none, the batch axis alone: the placeholder
    it reads first); else ``(None, None)``."""
    if without_dynamic_axes(operand):
        return operand, _NONE_MADE
    if batch_axis_only(operand):
        return operand, _BATCH_MADE
    owner = operand.waiting if isinstance(operand, UnknownOutput) else operand  # (its op)
    if isinstance(owner, Deferred) and owner._typed is None:
        axes = owner.dynamic_axes
        if axes == ():
            return owner.placeholders[0], _NONE_MADE
        if len(axes) == 1 and getattr(axes[0], "is_batch_axis", False):
            return owner.placeholders[0], _BATCH_MADE
    if _built_without_sequence(operand):
        return operand, (_BATCH_HAS if batched(operand) else _NONE_HAS)
    return None, None


_NONE_MADE = "it was made with dynamic_axes=[]"
_BATCH_MADE = "it was made with the batch axis alone"
_NONE_HAS, _BATCH_HAS = "it has no dynamic axes", "it has the batch axis alone"


def _built_without_sequence(operand) -> bool:
    """Whether ``operand`` is a built value (an input, an op's output) without a sequence axis
    that is no step of a recurrence (CNTK 2.7 refuses the sequence ops on it as they are
    called)."""
    var = getattr(operand, "variable", None)
    return isinstance(var, Variable) and var.sequence_lengths is None and \
        G.kind_of(var) != "placeholder" and not _in_step(var)


def _refused_without_axes(op: str, kind: type, says: str):
    """The ``as_called`` hook (``_deferrable``) of the sequence op ``op``: an operand without
    dynamic axes, a placeholder of ``dynamic_axes=[]`` waiting for its binding, refused as
    CNTK 2.7 refuses it when the op is made (``kind``, ``says`` with ``{}`` for the operand)."""
    def as_called(arguments: dict) -> None:
        found, made = _lacking_axes(next(iter(arguments.values())))
        refused, words = kind, says
        if made in (_BATCH_MADE, _BATCH_HAS) and op in _STEPPING:   # (CNTK's first / last:
            refused, words = RuntimeError, _NOT_TWO_AXES    # a step back or on, refused)
        if made in (_BATCH_HAS, _NONE_HAS) and op in _SELECTING:    # (each its own checks:
            return              # a scattered value needs no sequence axis)
        if found is not None:
            line = format_location(user_location())
            raise refused(f"sequence.{op}: " + words.format(repr(found))
                          + f" ({made}: give it a sequence axis)"
                          + (f" at {line}" if line else ""))
    as_called.acts_on = _may_lack_axes      # (a call on anything else skips the hook)
    return as_called


def _may_lack_axes(operand) -> bool:
    """Whether ``operand`` may be what :func:`_lacking_axes` finds: a placeholder made
    without dynamic axes or with the batch axis alone, or a waiting op (its output)."""
    var = getattr(operand, "variable", None)
    return isinstance(operand, (Deferred, UnknownOutput)) or without_dynamic_axes(operand) \
        or batch_axis_only(operand) or (isinstance(var, Variable) and var.sequence_lengths is None)


# the ops CNTK 2.7 builds of a step back or on (PastValue / FutureValue)
_STEPPING = ("first", "last", "is_first", "is_last", "slice")
# the ops that select steps by a condition (a Where): on a built operand, their own checks
_SELECTING = ("where", "gather", "scatter")


_NO_SEQUENCE_AXIS = ("Axis::OperandSequenceAxis() sentinel cannot be resolved if the operand "
                     "'{}' has no sequence axis or > 1 ordered dynamic axes.")
_NO_ORDERED_AXIS = ("A sequence function can only be applied on operands with at least one "
                    "dynamic axis and whose first dynamic axis is ordered")
_NO_LAYOUT_AXIS = "ReconcileDynamicAxis: layout operand '{}' must have at least one dynamic axis."
_NO_SEQUENCE_TO_SELECT = "its operand '{}' has no sequence axis to select steps along."
_NOT_TWO_AXES = ("PastValue/FutureValue Function: Input operand '{}' with #dynamic axes != 2 "
                 "(1 sequence axis and 1 batch axis) is not supported.")
_WITHOUT_AXES = {**{op: (ValueError, _NO_SEQUENCE_AXIS)
                    for op in ("reduce_sum", "reduce_max", "softmax")},
                 **{op: (ValueError, _NO_ORDERED_AXIS) for op in ("first", "last", "slice")},
                 **{op: (ValueError, _NO_LAYOUT_AXIS) for op in ("is_first", "is_last")},
                 **{op: (RuntimeError, _NOT_TWO_AXES)
                    for op in ("past_value", "future_value", "delay")},
                 "unpack": (ValueError, _NO_SEQUENCE_AXIS),
                 # CNTK 2.7: RuntimeError "vector::_M_range_insert" (a C++ message; ours says why)
                 **{op: (RuntimeError, _NO_SEQUENCE_TO_SELECT)
                    for op in ("where", "gather", "scatter")}}

# ops on placeholders without a shape (or on layers) wait for their shapes; those over a
# sequence axis refuse an operand that has no dynamic axes as they are called
defer_module(globals(), __all__,
             as_called={op: _refused_without_axes(op, *how) for op, how in _WITHOUT_AXES.items()})
