"""What a CNTK Trainer counts its minibatches' samples on: the inputs with a batch (or
sequence) axis, and the criterion or the Variable under it (:func:`counted_variable`; a test
minibatch's metric: :func:`tested_variable`).  An
input without dynamic axes (``C.input_variable(3, dynamic_axes=[])``) holds no samples: it is
fed as it is, next to batched inputs of any count; a loss that no Variable with a dynamic axis
is under is refused as the Trainer is made, as CNTK 2.7 refuses it (it finds no variable to
count the samples on)."""

from __future__ import annotations

from ._adapt import unwrap, wrap
from ._fed_data import unbatched
from ._function import Function
from ._graph import BATCH, made_by_cntk_op

__all__ = ["uncounted_inputs", "counted_variable", "tested_variable", "given_as_combine",
           "refuse_no_sample_count"]


def uncounted_inputs(arguments) -> frozenset:
    """The ids of the Variables among ``arguments`` (a Trainer's inputs) that hold no samples:
    the native Trainer feeds them without counting them.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> x, w = C.input_variable(3), C.input_variable(3, dynamic_axes=[])
        >>> uncounted_inputs([x, w]) == {id(unwrap(w))}
        True
    """
    return frozenset(id(unwrap(a)) for a in arguments if unbatched(a))


def counted_variable(criterion):
    """CNTK 2.7's Trainer and Evaluator count a minibatch's samples on the criterion, or, where
    the criterion is one number for the minibatch (no batch axis: CTC's ``forward_backward``,
    ``edit_distance_error``, a ``reduce_sum`` over all axes), on the first Variable with a batch
    or sequence axis met depth first through its inputs, in their order: CNTK 208 counts its
    label frames, not its utterances.  The Variables met are CNTK's: inputs and the outputs of
    CNTK ops, not those of the Stadyn ops a CNTK op is made of."""
    if criterion is None or BATCH(criterion) or criterion.sequence_lengths is not None:
        return criterion
    seen: set[int] = set()

    def search(v):
        for x in (v.parent.inputs if v.parent is not None else ()):
            if id(x) in seen:
                continue
            seen.add(id(x))
            if (BATCH(x) or x.sequence_lengths is not None) and (
                    x.parent is None or made_by_cntk_op(x)):
                return x
            found = search(x)
            if found is not None:
                return found
        return None
    return search(criterion) or criterion


def given_as_combine(metric) -> bool:
    """Whether CNTK 2.7 tests ``metric``, a Trainer's or Evaluator's metric as given to it, as
    a Combine: its Python layer's ``sanitize_function`` makes a Variable (``m.outputs[1]``,
    ``f.output``, either of a ``(loss, metric)``-valued Function's outputs) ``combine([v])``
    (``cntk/internal/sanitize.py``), and ``C.combine([...])`` is one already.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> x = C.input_variable(3, name="x")
        >>> f = C.reduce_sum(x)
        >>> given_as_combine(f), given_as_combine(f.output), given_as_combine(C.combine([f]))
        (False, True, True)
    """
    if metric is None:
        return False
    return not isinstance(metric, Function) or metric.root_function.op_name == "Combine"


def tested_variable(metric, combined: bool = False):
    """What CNTK 2.7's Evaluator (and a Trainer's ``test_minibatch``) counts a test
    minibatch's samples on: the metric (a Stadyn Variable) where it has a dynamic axis, else
    the first input of its root function, whatever its axes
    (``Source/CNTKv2LibraryDll/Evaluator.cpp:38-46``: ``m_testSampleCountVar =
    m_evaluationFunction->RootFunction()->Inputs()[0]``) -- not the first Variable with a
    batch axis under it, as its Trainer counts a loss (:func:`counted_variable`).  A metric
    given as a Variable or a Combine (``combined``, :func:`given_as_combine`) has the Combine
    for its root, whose first input is the metric itself: one without dynamic axes is one
    sample, the test's average its plain value.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> x, w = C.input_variable(3, name="x"), C.input_variable(3, dynamic_axes=[], name="w")
        >>> all_axes = C.Axis.all_axes()
        >>> m = C.plus(C.reduce_sum(w), C.reduce_sum(x, axis=all_axes))
        >>> wrap(tested_variable(unwrap(m))).shape, wrap(counted_variable(unwrap(m))).name
        ((), 'x')
        >>> tested_variable(unwrap(m), combined=True) is unwrap(m)
        True
    """
    if metric is None or combined or BATCH(metric) or metric.sequence_lengths is not None:
        return metric
    inputs = wrap(metric).root_function.inputs
    return unwrap(inputs[0]) if inputs else metric


def refuse_no_sample_count(loss, counted) -> None:
    """CNTK 2.7's ValueError for a Trainer whose loss (a Stadyn Variable) has no dynamic axis
    and is computed from no Variable that has one (only inputs without dynamic axes,
    parameters and constants): it has nothing to count a minibatch's samples on
    (``counted``, what :func:`counted_variable` found, has none either).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> a = C.input_variable(3, dynamic_axes=[], name="a")
        >>> p = C.parameter((3,), init=1.0, name="p")
        >>> loss = unwrap(C.plus(a, p, name="pl"))
        >>> refuse_no_sample_count(loss, counted_variable(loss))
        Traceback (most recent call last):
        ...
        ValueError: Trainer: Failed to find a variable underlying the graph rooted at \
specified loss function 'Plus: Input('a', [], [3]) -> Output('pl', [], [3])', from which the \
training sample count can be determined.
    """
    if BATCH(counted) or counted.sequence_lengths is not None:
        return
    raise ValueError("Trainer: Failed to find a variable underlying the graph rooted at "
                     f"specified loss function '{wrap(loss).root_function!r}', from which the "
                     "training sample count can be determined.")
