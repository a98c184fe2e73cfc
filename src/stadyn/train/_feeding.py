"""Putting minibatch data into a graph's inputs: arrays, tensors, a reader's MinibatchData and
sequences, with the checks the Trainer and the evaluation loop share (class ids must be whole
numbers; a minibatch must fit the input's per-sample shape)."""

from __future__ import annotations

from typing import Any, Callable, Collection, Sequence

import numpy as np
import torch

from .._errors import DataError, ShapeError, StadynError
from ..graph import (FREE_DIMENSION, Variable, data_of, fed_for_a_run, free_dimensions,
                     pad_sequences)

__all__ = ["FeedingPlans", "PER_SEQUENCE", "count_roots", "feed", "feed_minibatch", "input_plan",
           "loss_axis", "sample_count", "unwrap_input", "fits_sample", "stack_samples"]


def _as_array(value: Any) -> np.ndarray | torch.Tensor:
    """Minibatch data (a reader's MinibatchData, a NumPy array, a tensor, a SciPy sparse
    matrix: its dense rows) as an array."""
    if isinstance(value, torch.Tensor):
        return value
    if hasattr(value, "toarray") and hasattr(value, "tocsr"):    # scipy.sparse (its .data is
        return np.asarray(value.toarray())                       # the non-zero values only)
    if hasattr(value, "asarray") and callable(value.asarray):
        return np.asarray(value.asarray())
    if hasattr(value, "data") and not isinstance(value, np.ndarray):
        return np.asarray(value.data)
    return np.asarray(value)


def _shown(var: Variable, shown: str | None) -> str:
    """How a refusal names the input ``var``: ``shown`` (as the caller's front end shows it:
    CNTK's ``Input('x', [#], [* x 3])``), else the Variable's name, else ``input``."""
    return shown or var.graph_name or "input"


def _feed_sequences(var: Variable, value: Any, shown: str | None = None) -> int:
    """Feed a sequence input: a list of arrays (one per sequence), a reader's sequence stream
    (padded data with lengths) or an array of equal-length sequences; returns the steps."""
    lengths = getattr(value, "lengths", None)
    if lengths is not None and not isinstance(value, (list, tuple)):
        # the padded rows cut to their lengths (not ``as_sequences()``, which a front end's
        # minibatch may refuse to a user, as CNTK's truncated ones, while training on it)
        value = [row[:int(n)] for row, n in zip(np.asarray(value), lengths)]
    elif not isinstance(value, (list, tuple)):
        value = _as_array(value)
        if value.ndim > var.ndim:       # (var: sequences, steps, *sample)
            raise ShapeError(_too_many_axes(var, tuple(value.shape), 2, shown))
        if var.shape[2:] == (1,) and value.ndim == 2 and value.shape[1] != 1:
            # one array holds whole steps (CNTK: its trailing axes are the sample's); only
            # a list's sequences may leave a step's one value without its axis
            raise ShapeError(f"input {var.graph_name or ''}: a minibatch of shape {value.shape} "
                             "does not end in the steps' shape (1,); give a list of sequences "
                             "or an array (sequences, steps, 1)")
        value = list(value)
    elif any(hasattr(s, "tocsr") for s in value):      # SciPy sparse sequences: dense steps
        value = [_as_array(s) if hasattr(s, "tocsr") else s for s in value]
    steps = _refuse_steps_of_another_shape(var, value)
    if free_dimensions(var) and steps is not None:
        # steps of the length this minibatch gives its free dimensions (CNTK's FreeDimension)
        padded, lengths = pad_sequences(value, steps, np.dtype(var.dtype))
        device = data_of(var).device
        var.data = torch.from_numpy(padded).to(device)
        var.sequence_lengths.data = torch.from_numpy(lengths).to(device)
    else:
        var.d = list(value)
    return int(var.sequence_lengths.d.sum())


def _dims(shape) -> str:
    return "[" + " x ".join("*" if d == FREE_DIMENSION else str(d) for d in shape) + "]"


def _sample_shape(var: Variable, lead: int = 1, free: frozenset | None = None) -> tuple:
    """``var``'s per-sample shape (after ``lead`` batch and sequence axes), ``-3`` for each of
    its free dimensions ``free`` (:func:`~stadyn.graph.free_dimensions`, looked up if not
    given)."""
    free = free_dimensions(var) if free is None else free
    return tuple(FREE_DIMENSION if k + lead in free else d for k, d in enumerate(var.shape[lead:]))


def _fits(sample: tuple, shape: Sequence[int]) -> bool:
    """Whether ``shape`` is that of a sample of shape ``sample`` (:func:`_sample_shape`: any
    length on a free dimension)."""
    return len(shape) == len(sample) and all(
        d == FREE_DIMENSION or d == int(n) for d, n in zip(sample, shape))


def _not_compatible(shape: tuple, k: int, sample: tuple) -> str:
    """CNTK 2.7's ``Value::Create`` words for sequence ``k`` of ``shape`` that does not fit
    ``sample``."""
    return (f"Value::Create: The shape '{_dims(shape)}' of sequence #{k} is not compatible "
            f"with the sample shape '{_dims(sample)}'.")


def fits_sample(var: Variable, shape: Sequence[int], lead: int = 1) -> bool:
    """Whether ``shape`` is that of one sample of the input ``var`` (any length on a free
    dimension).

    Example:
        >>> import stadyn as sd
        >>> from stadyn.graph import mark_free_dimensions
        >>> x = mark_free_dimensions(sd.Variable((1, 1, 3)), [1])
        >>> fits_sample(x, (7, 3)), fits_sample(x, (7, 2)), fits_sample(x, (3,))
        (True, False, False)
    """
    return _fits(_sample_shape(var, lead), shape)


def stack_samples(var: Variable, samples: Sequence[Any]) -> np.ndarray:
    """A list of samples (arrays) for the input ``var`` as one minibatch array; samples of
    different lengths on a free dimension are refused in CNTK 2.7's words (``Value::Create``
    takes a list's entries as sequences, each of one sample).

    Example:
        >>> import numpy as np, stadyn as sd
        >>> from stadyn.graph import mark_free_dimensions
        >>> x = mark_free_dimensions(sd.Variable((1, 1, 3)), [1])
        >>> stack_samples(x, [np.ones((2, 3)), np.ones((2, 3))]).shape
        (2, 2, 3)
        >>> stack_samples(x, [np.ones((4, 3)), np.ones((2, 3))])
        Traceback (most recent call last):
        ...
        stadyn._errors.ShapeError: Value::Create: The shape '[2 x 3]' of sequence #1 is not ...
    """
    arrays = [np.asarray(v, dtype=np.dtype(var.dtype)) for v in samples]
    sample = _sample_shape(var)
    for k, a in enumerate(arrays):
        if a.ndim == 0 and sample:      # (a number for a sample of rank 1 or more)
            raise ShapeError(f"{_not_compatible((), k, sample)}\ninput {var.graph_name or ''}: "
                             f"sample {k} is a single number (a 0-d array), the input's samples "
                             f"are of shape {sample}")
    if free_dimensions(var) and arrays:
        first = arrays[0].shape
        for k, a in enumerate(arrays[1:], 1):
            if a.shape != first:
                raise ShapeError(
                    f"{_not_compatible(a.shape, k, _sample_shape(var))}\ninput "
                    f"{var.graph_name or ''}: sample {k} has shape {a.shape}, sample 0 {first}: "
                    "the samples of one minibatch have one length on each free dimension")
    return np.stack(arrays)


def _too_many_axes(var: Variable, shape: tuple, dynamic: int, shown: str | None = None) -> str:
    """CNTK 2.7's ValueError for a minibatch of more axes than the sample's and at most two
    more (its batch and sequence axes; an input without a sequence axis takes one of length 1
    too), then the input as Stadyn sees it."""
    sample = tuple(var.shape[dynamic:])
    return (f"Value rank ({len(shape)}) should be larger than the Variable rank "
            f"({len(sample)}) at most by number of dynamic axes ({dynamic}); Variable = "
            f"'{_shown(var, shown)}', Value shape = '{_dims(shape)}'.\ninput "
            f"{var.graph_name or ''}: a minibatch of shape {shape} has more axes than the samples "
            f"{sample} and the {'sequences and their steps' if dynamic == 2 else 'batch'}")


def _refuse_steps_of_another_shape(var: Variable, sequences: list) -> tuple | None:
    """CNTK 2.7's ValueError for a sequence (of a list of them) whose steps are not of the
    input's sample shape (a sequence of one step may leave its axis out, and steps of one
    value theirs; every sequence's steps of one length on a free dimension); returns the
    steps' shape of sequences given with their steps axis (None if none is)."""
    sample = _sample_shape(var, 2)
    first = None        # the steps' shape of the first sequence (free dimensions: one length)
    for k, seq in enumerate(sequences):
        shape = tuple(getattr(seq, "shape", None) or np.shape(seq))
        steps = shape[1:] if len(shape) == len(sample) + 1 else shape
        if (len(shape) == len(sample) + 1 and _fits(sample, steps)
                and first in (None, steps)) or \
                (shape == sample and shape) or (sample == (1,) and len(shape) == 1):
            first = steps
            continue
        raise ShapeError(f"{_not_compatible(shape, k, sample)}\ninput "
                         f"{var.graph_name or ''}: sequence {k} has shape {shape}; the sequences "
                         f"of this input have steps of shape {sample}")
    return first


def feed(var: Variable, value: Any, shown: str | None = None) -> int:
    """Put ``value`` into the input ``var`` (reallocating when the batch size changes); returns
    the number of samples (the first axis; a sequence input's steps).  A reader's sequence
    stream whose sequences are all one step long feeds a plain input (a label per sequence).
    A minibatch that does not fit is refused naming the input as ``shown`` (how the caller's
    front end shows it), else by its name.

    Example:
        >>> import numpy as np, stadyn as sd
        >>> x = sd.Variable((1, 3))
        >>> feed(x, np.ones((2, 3)))
        2
        >>> feed(x, np.ones((2, 4)), shown="Input('x', [#], [3])")
        Traceback (most recent call last):
        ...
        stadyn._errors.ShapeError: The trailing dimensions of the Value shape '[2 x 4]' do not \
match the Variable 'Input('x', [#], [3])' shape '[3]'.
        ...
    """
    n = (_feed_sequences(var, value, shown) if var.sequence_lengths is not None
         else _feed(var, value, shown))
    fed_for_a_run(var)    # one run's data: a later build may give it another batch
    return n


def _feed(var: Variable, value: Any, shown: str | None = None) -> int:
    lengths = getattr(value, "lengths", None)
    if lengths is not None and (np.asarray(lengths) == 1).all():
        value = np.asarray(value.data)[:, 0]
    free = free_dimensions(var)
    if isinstance(value, (list, tuple)) and (free or (
            _sample_shape(var, 1, free) and any(np.ndim(s) == 0 for s in value))):
        # (one length per minibatch; a number for a sample of rank 1 or more: CNTK's words)
        value = stack_samples(var, value)
    arr = value if type(value) is np.ndarray else _as_array(value)
    data = data_of(var)
    if not data.dtype.is_floating_point and data.dtype != torch.bool:
        _check_whole_numbers(var, arr)
    if tuple(arr.shape) == var.shape:
        if (type(arr) is np.ndarray and arr.dtype.kind in "biuf" and arr.dtype.isnative
                and not data.requires_grad):
            data.copy_(torch.from_numpy(np.require(arr, requirements="C")))  # var.d = arr
        else:
            var.d = arr
    else:
        if tuple(arr.shape[1:]) != var.shape[1:] and not (
                free and _fits(_sample_shape(var, 1, free), tuple(arr.shape[1:]))):
            raise ShapeError(_misfit(var, tuple(arr.shape), shown))
        t = arr if isinstance(arr, torch.Tensor) else torch.from_numpy(
            np.require(arr, requirements="C"))
        # a copy: the input's buffer is written in place by the next minibatch of this size,
        # which must not write into the caller's array
        var.data = t.to(data_of(var).device, data_of(var).dtype, copy=True)
    return int(arr.shape[0]) if len(arr.shape) else 1


def cntk_value_misfit(shape: Sequence[int], sample: Sequence[int], shown: str,
                      batch_axes: int = 0) -> str | None:
    """CNTK 2.7's ValueError for a value of ``shape`` fed to the Variable shown as ``shown``
    (its ``repr``) of per-sample shape ``sample`` (``FREE_DIMENSION``, -3: any length; CNTK
    writes it ``*``), or None where it fits: a value of lower rank; an axis between the
    ``batch_axes`` leading ones (an input with a batch axis: 1; without dynamic axes: 0) and
    the sample's that is not of length 1 (numbered from the sample's, as CNTK numbers it);
    trailing dimensions that are not the sample's.

    Example:
        >>> cntk_value_misfit((2, 4), (-3, 3), "Input('x', [], [* x 3])")
        "The trailing dimensions of the Value shape '[2 x 4]' do not match the Variable \
'Input('x', [], [* x 3])' shape '[* x 3]'."
        >>> print(cntk_value_misfit((5, 2, 3), (3,), "Input('y', [#], [3])", 1))
        The dimension size (2) of the axis (1) of the Value ('[5 x 2 x 3]') must be 1, because \
this axis is not specified as a dynamic axis of the Variable ('Input('y', [#], [3])').
        >>> cntk_value_misfit((5, 1, 7, 3), (-3, 3), "Input('y', [#], [* x 3])", 1) is None
        True
    """
    shape, sample = tuple(int(d) for d in shape), tuple(sample)
    rank, extra = len(sample), len(shape) - len(sample)
    if extra < 0:
        return (f"Value's rank ({len(shape)}) should be >= the Variable's rank ({rank}); "
                f"Variable = '{shown}', Value shape = '{_dims(shape)}'.")
    for j in range(extra - batch_axes):        # (from the sample's axes outwards)
        if shape[extra - 1 - j] != 1:
            return (f"The dimension size ({shape[extra - 1 - j]}) of the axis ({rank + j}) of "
                    f"the Value ('{_dims(shape)}') must be 1, because this axis is not "
                    f"specified as a dynamic axis of the Variable ('{shown}').")
    if not _fits(sample, shape[extra:]):
        return (f"The trailing dimensions of the Value shape '{_dims(shape)}' do not match the "
                f"Variable '{shown}' shape '{_dims(sample)}'.")
    return None


def _misfit(var: Variable, shape: tuple, shown: str | None = None) -> str:
    """What is wrong with a minibatch of ``shape`` for ``var``: CNTK 2.7's ValueError first
    (:func:`cntk_value_misfit`; more axes than a batch and a sequence axis:
    :func:`_too_many_axes`), then the input and the shapes as Stadyn sees them."""
    sample = _sample_shape(var)
    name = _shown(var, shown)
    if len(shape) > len(sample) + 2:
        return _too_many_axes(var, shape, 1, shown)
    # (an axis between the batch and the sample: CNTK 2.7 takes it as a sequence axis of
    # length 1 only; a misfit it takes otherwise is named by its trailing dimensions)
    first = cntk_value_misfit(shape, sample, name, 1) or (
        f"The trailing dimensions of the Value shape '{_dims(shape)}' do not match the "
        f"Variable '{name}' shape '{_dims(sample)}'.")
    return (f"{first}\ninput {var.graph_name or ''}: a minibatch of shape {shape} does not fit an "
            f"input of per-sample shape {sample}" + (" (-3: a free dimension, any length)"
                                                     if FREE_DIMENSION in sample else ""))


# ops whose second input holds class ids (converted to integers, so a fraction is truncated)
_CLASS_ID_OPS = ("softmax_cross_entropy", "categorical_cross_entropy", "top_n_error")


def _class_id_inputs(nodes) -> set[int]:
    """The ids of the leaf Variables the graph reads as class ids."""
    found = set()
    for node in nodes:
        if node.spec.name in _CLASS_ID_OPS:
            inputs = node.spec.split_arguments(node.args, node.kwargs)[0]
            target = inputs[1] if len(inputs) > 1 else None
            if isinstance(target, Variable) and target.parent is None:
                found.add(id(target))
    return found


def _check_whole_numbers(var: Variable, arr) -> None:
    """Float data for class ids (an integer input, or the target of a class-id loss) would be
    truncated: refuse it unless it holds whole numbers (checked on the host, where the
    minibatch is; the op checks again on the CPU)."""
    if isinstance(arr, torch.Tensor):
        fractional = arr.is_floating_point() and not bool(torch.all(arr == torch.trunc(arr)))
    else:
        fractional = arr.dtype.kind in "fc" and not np.all(arr == np.trunc(arr))
    if fractional:
        raise DataError(f"input {var!r} holds class ids: the minibatch holds numbers that "
                        f"are not whole; they would be truncated")


def unwrap_input(var) -> Variable:
    """Inputs may be given as CNTK-compat wrappers around Variables."""
    return var if isinstance(var, Variable) else getattr(var, "variable", var)


PER_SEQUENCE = "sequences"     # feed_minibatch's count_axis: count the minibatch's sequences


def feed_minibatch(plan, values, count_axis: Variable | str | None = None,
                   uncounted: Collection[int] = ()) -> int:
    """Feed ``values`` into the inputs of ``plan`` (``(variable, holds class ids, is a
    sequence, how a refusal names it)`` per value, in order); returns the minibatch's sample
    count.  Without ``count_axis``: sequences where some input is per sequence, steps where
    every input is a sequence (a criterion's own samples are counted afterwards:
    :func:`sample_count`).  With ``count_axis`` (from :func:`loss_axis`), the samples of the
    loss as CNTK counts them: the
    steps of the sequence input whose lengths ``count_axis`` is (a loss per step), or
    :data:`PER_SEQUENCE`: the sequences (a loss per sequence).  The inputs whose ids are in
    ``uncounted`` hold no samples (a front end's inputs without a batch axis, CNTK's
    ``dynamic_axes=[]``): fed as they are, not counted (1 where only such inputs are fed).

    Example:
        >>> import numpy as np, stadyn as sd
        >>> x, w = sd.Variable((2, 3)), sd.Variable((3,))
        >>> plan = input_plan([x, w], set())
        >>> feed_minibatch(plan, [np.ones((2, 3)), np.ones(3)], uncounted={id(w)})
        2
    """
    plain = steps = None
    axes: dict[int, int] = {}          # steps per sequence axis
    first: dict = {}                   # the first input fed per axis (None: the batch axis)
    sequences = None
    for (v, class_ids, sequence, shown), value in zip(plan, values):
        if class_ids:
            _check_whole_numbers(v, _as_array(value))
        n = feed(v, value, shown)
        if id(v) in uncounted:
            continue
        if sequence:
            sequences = int(v.sequence_lengths.shape[0])
            if isinstance(count_axis, Variable):
                if v.sequence_lengths is count_axis:
                    steps = n
                continue
            axis = id(v.sequence_lengths)
            if axis in axes and n != axes[axis]:
                raise _layouts_differ(_shown(v, shown), first[axis], "sequence axis",
                                      (axes[axis], n))
            first.setdefault(axis, _shown(v, shown))
            axes[axis] = steps = n
        else:
            if plain is not None and n != plain:
                raise _layouts_differ(_shown(v, shown), first[None], "batch axis", (plain, n))
            first.setdefault(None, _shown(v, shown))
            plain = n
    if isinstance(count_axis, Variable) and steps is not None:
        return steps
    if count_axis == PER_SEQUENCE or (plain is None and len(axes) > 1):
        # a loss per sequence (sequences on several axes and a loss on none of them: a
        # similarity of two sequences' last steps): CNTK counts the loss's samples, one per
        # sequence (a plain input holds one sample per sequence)
        return plain if plain is not None else sequences
    if plain is None and sequences is None and plan:
        return 1        # (only inputs without samples)
    return plain if plain is not None else steps


def _layouts_differ(later: str, earlier: str, axis: str, counts: tuple) -> DataError:
    """The refusal of a minibatch whose inputs on the same dynamic axis (``axis``: the batch
    axis, or a sequence axis) hold different numbers of samples (``later`` and ``earlier``:
    the two inputs as shown, ``later`` fed after ``earlier``)."""
    return DataError(
        f"Trainer: inputs {later} and {earlier} are on the same {axis} but hold different "
        f"sample counts {sorted(counts)}: give every input on an axis as many samples (or "
        "sequences of the same lengths)")


def loss_axis(loss: Variable, plan) -> Variable | str | None:
    """How CNTK counts the samples of a minibatch of ``plan`` for ``loss``: the loss's
    samples.  Where some input is a sequence: for a loss per step, the lengths of the input the
    loss's sequence axis comes from (its own lengths, or those they are computed from: a slice
    of the labels), whose steps are counted; for a loss per sequence, :data:`PER_SEQUENCE`.
    None where no input is a sequence (every input's first axis counts), or where the loss's
    steps come from no input (they are counted once the loss is computed)."""
    if not plan or not any(sequence for _, _, sequence, _ in plan):
        return None
    if loss.sequence_lengths is None:
        return PER_SEQUENCE
    axes = {id(v.sequence_lengths): v.sequence_lengths for v, _, sequence, _ in plan
            if sequence}
    stack, seen = [loss.sequence_lengths], set()
    while stack:
        v = stack.pop()
        if v is None or id(v) in seen:
            continue
        seen.add(id(v))
        if id(v) in axes:
            return axes[id(v)]
        if v.parent is not None:
            stack.extend(i for i in v.parent.inputs if i.dtype == v.dtype)
    return None


def input_plan(keys, class_id_inputs: set[int]) -> list:
    """What :func:`feed_minibatch` needs to know of each input (a Variable, or a front end's
    wrapper of one): ``(variable, holds class ids, is a sequence, how a refusal names it)``,
    the name a wrapper's ``repr`` (as its front end shows the input), else None (the
    Variable's own); ``class_id_inputs`` holds the ids of :func:`_class_id_inputs`."""
    plan = []
    for key in keys:
        v = unwrap_input(key)
        plan.append((v, id(v) in class_id_inputs, v.sequence_lengths is not None,
                     None if key is v else repr(key)))
    return plan


def count_roots(v: Variable) -> list[Variable]:
    """What to compute with ``v`` so that :func:`sample_count` can read its samples afterwards:
    ``v`` itself (a replayed plan does not update an intermediate's ``shape``) and its sequence
    lengths, where they are computed rather than fed."""
    return [v] + ([v.sequence_lengths] if v.sequence_lengths is not None else [])


def sample_count(v: Variable, fed: int) -> int:
    """The samples of a per-sample criterion ``v`` (a metric) just computed with
    :func:`count_roots`, as CNTK counts
    them: its steps where it is a sequence (a tagger's errors), else its first axis (a
    classifier over sequences counts sequences); ``fed`` (the count of
    :func:`feed_minibatch`) for a criterion with no sample axis.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable((3, 2))
        >>> m = F.sum(x, axis=1, keepdims=True)
        >>> x.d = np.ones((3, 2)); m.forward()
        >>> sample_count(m, 3), sample_count(F.sum(m), 3)
        (3, 3)
    """
    if v.sequence_lengths is not None:
        return int(v.sequence_lengths.d.sum())
    shape = data_of(v).shape
    return int(shape[0]) if len(shape) else fed


class FeedingPlans:
    """The feeding plans of one graph, cached per set of input keys (and a ``tag``: what the
    inputs are fed for), each checked once when first made: an input the graph reads that the
    keys leave out would silently keep the previous minibatch's data, so it is one
    :class:`~stadyn.StadynError` (``missing_message(missing Variables, tag)``).  ``derive``
    (optional) computes something more from a new plan, cached with it (the Trainer's
    :func:`loss_axis`).  The keys are kept with their plan, so their ids are not reused while
    it is cached; at most ``size`` plans are kept.

    Example:
        >>> import stadyn as sd
        >>> x, y = sd.Variable((2, 3)), sd.Variable((2, 1))
        >>> plans = FeedingPlans(set(), lambda missing, tag: f"{tag}: no data for {missing}")
        >>> [sequence for _, _, sequence, _ in plans.plan([x, y], [x, y])[0]]
        [False, False]
        >>> plans.plan([x], [x, y], "test")
        Traceback (most recent call last):
        ...
        stadyn._errors.StadynError: test: no data for [<Variable shape=(2, 1), need_grad=False>]
    """

    def __init__(self, class_id_inputs: set[int],
                 missing_message: Callable[[list[Variable], str], str],
                 derive: Callable[[list], Any] | None = None, size: int = 16):
        self._class_ids = class_id_inputs
        self._message = missing_message
        self._derive = derive
        self._size = size
        self._plans: dict = {}

    def plan(self, keys: Sequence, needed: Sequence[Variable], tag: str = "") -> tuple:
        """``(plan, derived)`` for the inputs ``keys`` (Variables or front-end wrappers, as
        given), which must cover the Variables ``needed``; ``plan`` is what
        :func:`feed_minibatch` takes."""
        key = (tag, tuple(map(id, keys)))
        cached = self._plans.get(key)
        if cached is not None:
            return cached[0], cached[1]
        variables = [unwrap_input(k) for k in keys]
        given = {id(v) for v in variables}
        missing = [v for v in needed if id(v) not in given]
        if missing:
            raise StadynError(self._message(missing, tag))
        plan = input_plan(keys, self._class_ids)
        derived = self._derive(plan) if self._derive is not None else None
        if len(self._plans) >= self._size:
            self._plans.clear()
        self._plans[key] = (plan, derived, list(keys))
        return plan, derived
