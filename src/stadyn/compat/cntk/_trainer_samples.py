"""What a CNTK Trainer counts its minibatches' samples on: the inputs with a batch (or
sequence) axis, and the criterion or the Variable under it (:func:`counted_variable`).  An
input without dynamic axes (``C.input_variable(3, dynamic_axes=[])``) holds no samples: it is
fed as it is, next to batched inputs of any count; a loss that no Variable with a dynamic axis
is under is refused as the Trainer is made, as CNTK 2.7 refuses it (it finds no variable to
count the samples on)."""

from __future__ import annotations

from ._adapt import unwrap, wrap
from ._fed_data import unbatched
from ._graph import BATCH, made_by_cntk_op

__all__ = ["uncounted_inputs", "counted_variable", "refuse_no_sample_count"]


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


def refuse_no_sample_count(loss) -> None:
    """CNTK 2.7's ValueError for a Trainer whose loss (a Stadyn Variable) has no dynamic axis
    and is computed from no Variable that has one (only inputs without dynamic axes,
    parameters and constants): it has nothing to count a minibatch's samples on
    (:func:`counted_variable` finds none).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> a = C.input_variable(3, dynamic_axes=[], name="a")
        >>> p = C.parameter((3,), init=1.0, name="p")
        >>> refuse_no_sample_count(unwrap(C.plus(a, p, name="pl")))
        Traceback (most recent call last):
        ...
        ValueError: Trainer: Failed to find a variable underlying the graph rooted at \
specified loss function 'Plus: Input('a', [], [3]) -> Output('pl', [], [3])', from which the \
training sample count can be determined.
    """
    counted = counted_variable(loss)
    if BATCH(counted) or counted.sequence_lengths is not None:
        return
    raise ValueError("Trainer: Failed to find a variable underlying the graph rooted at "
                     f"specified loss function '{wrap(loss).root_function!r}', from which the "
                     "training sample count can be determined.")
