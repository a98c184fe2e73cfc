"""``stadyn.sequence`` (``sd.sequence``): values with a sequence axis and the ops over it.

A sequence input holds a minibatch of sequences of different lengths, padded, with its
lengths (``Variable.sequence_lengths``; the layout is in ``docs/architecture.md``).  Feed it a
list of arrays, one per sequence; read results back with :func:`unpack_value`.  The functions
here call the sequence ops of the catalog (``F.sequence_*``, ``F.past_value``, ...) with the
value's own lengths; which sequence axis each op's outputs have is part of the op's
declaration (``@op(..., sequence=...)``), so calling an op of the catalog directly gives the
same axes.

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> x = sd.sequence.input_variable((2,))
    >>> y = sd.sequence.reduce_sum(F.tanh(x))
    >>> x.d = [np.zeros((3, 2)), np.ones((1, 2))]
    >>> y.forward()
    >>> [[round(float(v), 4) for v in row] for row in y.d]
    [[0.0, 0.0], [0.7616, 0.7616]]
"""

from __future__ import annotations

import itertools
from typing import Any, Callable, Sequence

import numpy as np

from . import functions as F
from ._errors import ShapeError
from .graph import (Variable, auto_forward, first_pass_shape, free_batch_input, hoist_invariants,
                    note_first_pass, sequence_input, step_first_pass,
                    sequences_of, set_sequence_axis, set_sequences)
from .ops import StepFunction

__all__ = ["input_variable", "feed", "unpack_value", "lengths_of", "reduce_sum", "reduce_max",
           "softmax", "first", "last", "slice", "broadcast_as", "past_value", "future_value",
           "unpack", "recurrence", "delay", "where", "gather", "scatter", "to_sequence",
           "to_sequence_like", "state_value", "optimized_rnnstack", "run_step_function",
           "reshape_samples"]


def input_variable(shape: Sequence[int] | int, dtype: Any = np.float32,
                   need_grad: bool = False, name: str | None = None) -> Variable:
    """An input holding sequences whose steps have ``shape`` (``(B, T, *shape)``, padded).

    Example:
        >>> import stadyn as sd
        >>> sd.sequence.input_variable(3).shape
        (1, 1, 3)
    """
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(shape)
    v = free_batch_input(sequence_input(shape, need_grad=need_grad, dtype=dtype))
    v.name = name
    return v


def feed(x: Variable, sequences: Sequence[Any]) -> None:
    """Put a list of sequences (arrays ``(T_b, *shape)``) into the sequence input ``x``; the
    same as ``x.d = sequences``.

    Example:
        >>> import numpy as np, stadyn as sd
        >>> x = sd.sequence.input_variable(1)
        >>> sd.sequence.feed(x, [np.ones((2, 1)), np.ones((4, 1))])
        >>> x.shape
        (2, 4, 1)
    """
    set_sequences(x, sequences)


def unpack_value(y: Variable) -> list[np.ndarray]:
    """The sequences ``y`` holds after a forward, each cut to its length.

    Example:
        >>> import numpy as np, stadyn as sd
        >>> x = sd.sequence.input_variable(1)
        >>> x.d = [np.ones((2, 1)), np.ones((1, 1))]
        >>> [s.shape for s in sd.sequence.unpack_value(x)]
        [(2, 1), (1, 1)]
    """
    return sequences_of(y)


def lengths_of(x: Variable, op: str = "sequence op") -> Variable:
    """The lengths Variable of ``x``'s sequence axis; a :class:`ShapeError` without one."""
    lengths = getattr(x, "sequence_lengths", None)
    if lengths is None:
        raise ShapeError(f"{op}: the input {getattr(x, 'shape', x)} has no sequence axis (make "
                         "it from sd.sequence.input_variable)")
    return lengths


_constant_ids = itertools.count()


def state_value(value: Any) -> Variable:
    """An initial state as a graph value: a Variable itself, a number a ``constant`` op, an
    array a named leaf (a constant the graph holds, not an input a caller feeds).

    Example:
        >>> import stadyn as sd
        >>> sd.sequence.state_value([0.5, 1.0]).shape
        (2,)
    """
    if isinstance(value, Variable):
        return value
    arr = np.asarray(value, dtype=np.float32)
    if arr.ndim == 0:
        return F.constant(float(arr), ())
    v = Variable.from_numpy_array(arr)
    v.name = f"initial_state{next(_constant_ids)}"
    return v


def reduce_sum(x: Variable) -> Variable:
    """The sum over each sequence's steps (no sequence axis left).  Example above."""
    return F.sequence_reduce_sum(x, lengths_of(x, "sequence.reduce_sum"))


def reduce_max(x: Variable) -> Variable:
    """The element-wise maximum over each sequence's steps.  Example:
    ``sd.sequence.reduce_max(h)``."""
    return F.sequence_reduce_max(x, lengths_of(x, "sequence.reduce_max"))


def softmax(x: Variable) -> Variable:
    """Softmax over each sequence's steps (a sequence again; padded steps are 0).  Example:
    ``weights = sd.sequence.softmax(scores)``."""
    return F.sequence_softmax(x, lengths_of(x, "sequence.softmax"))


def first(x: Variable) -> Variable:
    """Each sequence's first step.  Example: ``sd.sequence.first(h)``."""
    return F.sequence_first(x, lengths_of(x, "sequence.first"))


def last(x: Variable) -> Variable:
    """Each sequence's last step.

    Example:
        >>> import numpy as np, stadyn as sd
        >>> x = sd.sequence.input_variable(1)
        >>> y = sd.sequence.last(x)
        >>> x.d = [np.array([[1.0], [2.0]]), np.array([[5.0]])]
        >>> y.forward()
        >>> y.d.ravel().tolist()
        [2.0, 5.0]
    """
    return F.sequence_last(x, lengths_of(x, "sequence.last"))


def slice(x: Variable, begin_index: int, end_index: int) -> Variable:  # noqa: A001 - CNTK's
    """Steps ``begin_index:end_index`` of each sequence (negative: from the end; end 0: to the
    end).  Example: ``sd.sequence.slice(x, 0, -1)`` drops each last step."""
    return F.sequence_slice(x, lengths_of(x, "sequence.slice"), begin_index, end_index)[0]


def broadcast_as(x: Variable, like: Variable) -> Variable:
    """``x`` (one value per sequence) at every step of ``like``'s sequences.  Example:
    ``sd.sequence.broadcast_as(sentence_vector, words)``."""
    return F.sequence_broadcast_as(x, like, lengths_of(like, "sequence.broadcast_as"))


def past_value(x: Variable, initial_state: Any = 0.0, time_step: int = 1) -> Variable:
    """The value ``time_step`` steps earlier (``initial_state`` before each start).  Example:
    ``sd.sequence.past_value(h)``."""
    return F.past_value(x, lengths_of(x, "past_value"), state_value(initial_state), time_step)


def future_value(x: Variable, initial_state: Any = 0.0, time_step: int = 1) -> Variable:
    """The value ``time_step`` steps later (``initial_state`` after each end).  Example:
    ``sd.sequence.future_value(h)``."""
    return F.future_value(x, lengths_of(x, "future_value"), state_value(initial_state),
                          time_step)


def unpack(x: Variable, padding_value: float = 0.0) -> tuple[Variable, Variable]:
    """``(padded, mask)``: the sequences as a plain ``(B, T, ...)`` value and a ``(B, T)`` mask.
    Example: ``y, mask = sd.sequence.unpack(x)``."""
    return F.sequence_unpack(x, lengths_of(x, "sequence.unpack"), padding_value)


def recurrence(step: Callable, inputs: Sequence[Variable], initial_states: Sequence[Any],
               state_shapes: Sequence[Sequence[int]], go_backwards: bool = False
               ) -> tuple[Variable, ...]:
    """Run ``step(*states, *step_inputs) -> new state (or tuple of states)`` along the sequence
    axis of ``inputs``; returns each state's sequence.  The step is recorded once as a graph
    (on placeholders with ``state_shapes`` and one step of each input) and run at every step
    in both modes.  A step that returns a state of another shape (CNTK's ``h + reshape(x,
    (1, 1, 3))`` on a state of ``(3,)``) is recorded again on states of that shape, as CNTK
    infers a loop's shapes, until they settle: the state takes the shape the step gives it
    (a per-sequence initial state of the same size is reshaped to it).

    Example:
        >>> import numpy as np, stadyn as sd
        >>> x = sd.sequence.input_variable(1)
        >>> (y,) = sd.sequence.recurrence(lambda h, u: h + u, [x], [0.0], [(1,)])
        >>> x.d = [np.array([[1.0], [2.0], [3.0]]), np.array([[4.0]])]
        >>> y.forward()
        >>> [s.ravel().tolist() for s in sd.sequence.unpack_value(y)]
        [[1.0, 3.0, 6.0], [4.0]]
    """
    lengths_of(inputs[0], "recurrence")      # a clear error for an input without lengths
    declared = [tuple(int(d) for d in s) for s in state_shapes]
    shapes, tried, first = declared, [declared], None
    while True:
        states, step_inputs, outs = _record_step(step, shapes, inputs)
        first = first or (states, step_inputs, outs)
        found = [tuple(o.shape[1:]) for o in outs]
        if found == shapes or len(found) != len(shapes):    # (a count StepFunction names)
            break
        if found in tried or len(tried) > _RECORDINGS:
            k = next(k for k, (o, s) in enumerate(zip(tried[1], declared)) if o != s)
            raise ShapeError(f"recurrence: the step returns state {k} of shape {tried[1][k]}, "
                             f"but the state has shape {declared[k]}, and on states of the "
                             "shapes it returns it returns others: "
                             f"{', '.join(str(t[k]) for t in tried[2:] + [found])}")
        # CNTK's state takes the shape the step gives it (its loop's shapes are inferred to a
        # fixed point): record the step again on states of that shape
        shapes = found
        tried.append(found)
    initial_states = [_initial_as(v, old, new)
                      for v, old, new in zip(initial_states, declared, shapes)]
    # values computed outside the loop are inputs of the recurrence, computed once
    outs, outside = hoist_invariants(outs, states + step_inputs)
    results = run_step_function(StepFunction(states, step_inputs, outs), inputs,
                                initial_states, go_backwards, outside)
    if shapes != declared:
        _note_first_pass(first, inputs, results)
    return results


def _note_first_pass(first, inputs: Sequence[Variable], results) -> None:
    """Note the shapes CNTK's first inference pass gives the outputs of a recurrence whose
    state took another shape than declared (the step's first recording with its states
    unknown): a parameter after the loop is inferred from them (graph/_first_pass.py)."""
    states, step_inputs, outs = first
    fed = [(1,) + first_pass_shape(v)[2:] for v in inputs]
    for shape, result in zip(step_first_pass(outs, states, step_inputs, fed), results):
        if shape is not None and shape[1:] != tuple(result.shape[2:]):
            note_first_pass(result, tuple(result.shape[:2]) + shape[1:])


_RECORDINGS = 4      # a step whose state shape has not settled after this many is an error


def _record_step(step: Callable, shapes, inputs):
    """The step recorded on placeholders: its states (of ``shapes``), one step of each input,
    and the new states it returns."""
    with auto_forward(False):
        states = [Variable((1,) + s) for s in shapes]
        step_inputs = [Variable((1,) + tuple(v.shape[2:]), dtype=v.dtype) for v in inputs]
        out = step(*states, *step_inputs)
    return states, step_inputs, list(out) if isinstance(out, (tuple, list)) else [out]


def _initial_as(value: Any, declared: tuple, shape: tuple) -> Any:
    """An initial state given for a state of shape ``declared`` (one per sequence: a batch axis
    first) made one of ``shape`` when the step gave the state that shape with the same number of
    elements (CNTK broadcasts it: ``(5,)`` for a state of ``(1, 1, 5)``).  A scalar or a
    one-step value broadcasts as it is."""
    if declared == shape or not isinstance(value, Variable) or \
            len(value.shape) != len(declared) + 1 or \
            int(np.prod(declared)) != int(np.prod(shape)):
        return value
    return F.reshape(value, (-1,) + shape)


def run_step_function(program: StepFunction, inputs: Sequence[Variable],
                      initial_states: Sequence[Any], go_backwards: bool = False,
                      outside: dict | None = None) -> tuple[Variable, ...]:
    """Run a recorded step (:class:`stadyn.ops.StepFunction`) along the sequence axis of
    ``inputs`` (one per step input of the program, all of the same lengths); returns each
    state's sequence.  :func:`recurrence` records the step from a Python function; BrainScript
    loops record theirs while the network is built.  ``outside`` maps the id of a value the
    step captured to the Variable to feed in its place (:func:`stadyn.graph.hoist_invariants`).

    Example:
        >>> import numpy as np, stadyn as sd
        >>> from stadyn.ops import StepFunction
        >>> h, u = sd.Variable((1, 1)), sd.Variable((1, 1))
        >>> x = sd.sequence.input_variable(1)
        >>> (y,) = sd.sequence.run_step_function(StepFunction([h], [u], [h * 2.0 + u]), [x], [0.0])
        >>> x.d = [np.array([[1.0], [1.0]])]
        >>> y.forward()
        >>> sd.sequence.unpack_value(y)[0].ravel().tolist()
        [1.0, 3.0]
    """
    lengths = lengths_of(inputs[0], "recurrence")
    ys = F.recurrence(lengths, *inputs, *[state_value(v) for v in initial_states],
                      *[(outside or {}).get(id(c), c) for c in program.captured], step=program,
                      n_sequences=len(inputs), go_backwards=go_backwards)
    return ys if isinstance(ys, tuple) else (ys,)


def optimized_rnnstack(x: Variable, weights: Variable, hidden_size: int, num_layers: int = 1,
                       bidirectional: bool = False, recurrent_op: str = "lstm") -> Variable:
    """CNTK's ``optimized_rnnstack``: a stack of ``num_layers`` recurrences (``"lstm"``,
    ``"gru"``, ``"rnnTanh"``, ``"rnnReLU"``, cuDNN's equations) over the sequence ``x``, all
    weights in one parameter in cuDNN's flat layout (any shape holding
    ``stadyn.ops.rnnstack_weight_count(...)`` numbers; CNTK shapes it ``(count / H, H)``).
    Returns a sequence of ``D * hidden_size`` per step.

    Example:
        >>> import numpy as np, stadyn as sd
        >>> from stadyn.ops import rnnstack_weight_count
        >>> x = sd.sequence.input_variable(3)
        >>> n = rnnstack_weight_count(3, 4, num_layers=2, bidirectional=True, recurrent_op="gru")
        >>> w = sd.Variable.from_numpy_array(np.full((n // 4, 4), 0.1, np.float32))
        >>> y = sd.sequence.optimized_rnnstack(x, w, 4, 2, bidirectional=True, recurrent_op="gru")
        >>> x.d = [np.ones((2, 3)), np.ones((5, 3))]
        >>> y.forward()
        >>> y.shape, y.sequence_lengths.d.tolist()
        ((2, 5, 8), [2, 5])
    """
    return F.optimized_rnnstack(x, lengths_of(x, "optimized_rnnstack"), weights,
                                hidden_size=int(hidden_size), num_layers=int(num_layers),
                                bidirectional=bool(bidirectional), recurrent_op=recurrent_op)


def delay(x: Variable, initial_state: Any = 0.0, time_step: int = 1) -> Variable:
    """``past_value`` for a positive ``time_step``, ``future_value`` of ``-time_step`` for a
    negative one, ``x`` itself for 0 (CNTK's ``sequence.delay``).  Example:
    ``sd.sequence.delay(x, time_step=-1)`` is the next step."""
    k = int(time_step)
    if k > 0:
        return past_value(x, initial_state, k)
    if k < 0:
        return future_value(x, initial_state, -k)
    return x


def where(condition: Variable, max_repeat: int = 1) -> Variable:
    """The positions of the steps whose ``condition`` is nonzero, as a new sequence (a count
    ``k`` repeats a position ``k`` times, fractions accumulate; the new axis is as long as the
    longest new sequence, read from the counts: ``max_repeat`` times the condition's padded
    length is only the shape a build shows before its values are known).  A sequence that
    takes no step is an ``EmptySequenceError`` (CNTK 2.7's RuntimeError: its sequences are at
    least one step long).

    Example:
        >>> import numpy as np, stadyn as sd
        >>> c = sd.sequence.input_variable(())
        >>> y = sd.sequence.where(c)
        >>> c.d = [np.array([1.0, 0.0, 1.0]), np.array([0.0, 2.0])]
        >>> y.forward()
        >>> [s.tolist() for s in sd.sequence.unpack_value(y)]
        [[0.0, 2.0], [1.0, 1.0]]
    """
    return F.sequence_where(condition, lengths_of(condition, "sequence.where"), max_repeat)[0]


def gather(x: Variable, condition: Variable, max_repeat: int = 1) -> Variable:
    """The steps of ``x`` whose ``condition`` (a sequence on ``x``'s axis) is nonzero, as a new
    sequence.  Example: ``sd.sequence.gather(words, is_noun)``."""
    return F.sequence_gather(x, condition, lengths_of(x, "sequence.gather"), max_repeat)[0]


def scatter(x: Variable, condition: Variable) -> Variable:
    """The steps of ``x`` put back where ``condition`` is nonzero, on ``condition``'s axis (0
    elsewhere): the inverse of :func:`gather`.  Example:
    ``sd.sequence.scatter(sd.sequence.gather(x, c), c)``."""
    return F.sequence_scatter(x, condition, lengths_of(condition, "sequence.scatter"))


def to_sequence(x: Variable, lengths: Variable | None = None) -> Variable:
    """A plain ``(B, T, *s)`` value as sequences of ``lengths`` (a ``(B,)`` value; all ``T``
    when None).

    Example:
        >>> import numpy as np, stadyn as sd
        >>> with sd.auto_forward():
        ...     x = sd.Variable.from_numpy_array(np.arange(6.0).reshape(2, 3))
        ...     y = sd.sequence.to_sequence(x, sd.Variable.from_numpy_array(np.array([1, 3])))
        >>> [s.tolist() for s in sd.sequence.unpack_value(y)]
        [[0.0], [3.0, 4.0, 5.0]]
    """
    if lengths is None:
        lengths = F.sequence_full_lengths(x)
    return F.to_sequence(x, lengths)[0]


def to_sequence_like(x: Variable, like: Variable) -> Variable:
    """A plain ``(B, T, *s)`` value as sequences with the lengths of ``like``'s (padded to the
    same ``T``).  Example: ``sd.sequence.to_sequence_like(padded, words)``."""
    lengths = lengths_of(like, "sequence.to_sequence_like")
    if len(x.shape) < 2 or tuple(x.shape[:2]) != tuple(like.shape[:2]):
        raise ShapeError(f"to_sequence_like: the value's leading axes {tuple(x.shape[:2])} are "
                         f"not the sequences' (batch, steps) {tuple(like.shape[:2])}")
    y, n = F.to_sequence(x, lengths)
    return set_sequence_axis(y, lengths)


def reshape_samples(v: Variable, lead: int, shape: Sequence[int]) -> Variable:
    """``v`` with its ``lead`` leading axes (none, the batch axis, or a sequence's batch and step
    axes) kept and the rest reshaped to ``shape``: the batch axis as -1, a sequence's two axes
    by ``F.reshape_trailing``, so that no batch size or padded length is written into the graph
    (a static graph is replayed for other minibatches) and a padded step never mixes with
    another.

    Example:
        >>> import stadyn as sd
        >>> sd.sequence.reshape_samples(sd.Variable((4, 5, 6)), 2, (2, 3)).shape
        (4, 5, 2, 3)
    """
    shape = tuple(int(s) for s in shape)
    if lead == 2:
        return F.reshape_trailing(v, shape, base_axis=2)
    return F.reshape(v, (-1,) * lead + shape)
