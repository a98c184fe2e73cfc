"""The sequence axis: padded values with per-sequence lengths that travel with them.

A Variable with a sequence axis holds a minibatch of sequences *padded* to the longest one,
batch axis first and the sequence (time) axis second: ``(B, T, *sample)``.  Its
``sequence_lengths`` is a second Variable, an int64 vector ``(B,)`` of the sequences' lengths;
step ``t`` of sequence ``b`` is real when ``t < lengths[b]`` and padding otherwise.  The lengths
are an ordinary graph leaf (an input of every op that reads the sequence axis), so both modes
and the static lowering see them as data; a padded step's value is unspecified and every
sequence op (``stadyn.sequence``) masks it out of sums, maxima, softmaxes, gradients and
recurrences.

An op whose output keeps its input's first two axes (element-wise ops, ``affine`` over the
sample axes, ...) keeps the input's sequence axis (:func:`propagate`); the sequence ops set
their outputs' axes themselves.

Example:
    >>> import numpy as np
    >>> from stadyn.graph import sequence_input, set_sequences, sequences_of
    >>> x = sequence_input((2,))
    >>> set_sequences(x, [np.ones((3, 2)), np.zeros((1, 2))])
    >>> x.shape, x.sequence_lengths.d.tolist()
    ((2, 3, 2), [3, 1])
    >>> [s.shape for s in sequences_of(x)]
    [(3, 2), (1, 2)]
"""

from __future__ import annotations

import weakref
from typing import Any, Sequence

import numpy as np

from .._errors import ShapeError
from ._padding import pad_sequences
from ._variable import Variable

__all__ = ["sequence_input", "set_sequences", "sequences_of", "pad_sequences", "is_lengths",
           "propagate", "new_lengths", "set_sequence_axis"]

# The Variables that hold some sequence axis's lengths (graph leaves a caller does not feed
# directly: setting the data Variable from a list of sequences fills them).
_LENGTHS: "weakref.WeakSet[Variable]" = weakref.WeakSet()


def new_lengths(lengths: Any = (1,)) -> Variable:
    """A leaf holding sequence lengths (int64), known as such to :func:`is_lengths`."""
    v = Variable.from_numpy_array(np.asarray(lengths, dtype=np.int64))
    _LENGTHS.add(v)
    return v


def is_lengths(v: Variable) -> bool:
    """Whether ``v`` is a leaf holding a sequence axis's lengths (fed with its sequences)."""
    return v in _LENGTHS


def sequence_input(shape: Sequence[int], need_grad: bool = False,
                   dtype: Any = np.float32) -> Variable:
    """A leaf with a sequence axis: ``(1, 1, *shape)`` until sequences are fed.

    Example:
        >>> from stadyn.graph import sequence_input
        >>> sequence_input((3,)).shape
        (1, 1, 3)
    """
    shape = tuple(int(s) for s in shape)
    v = Variable((1, 1) + shape, need_grad=need_grad, dtype=dtype)
    v._seq = new_lengths()
    return v


def set_sequences(v: Variable, sequences: Sequence[Any]) -> None:
    """Feed a list of sequences of different lengths to a sequence input ``v`` (padded; its
    lengths updated).  A sequence that is a 1-d array for a scalar-step input is fine.

    Example:
        >>> import numpy as np
        >>> from stadyn.graph import sequence_input, set_sequences
        >>> x = sequence_input(())
        >>> set_sequences(x, [np.arange(2.0), np.arange(3.0)])
        >>> x.d.tolist()
        [[0.0, 1.0, 0.0], [0.0, 1.0, 2.0]]
    """
    if v._seq is None:
        raise ShapeError(f"Variable {v.name or ''} has no sequence axis; make it with "
                         "sd.sequence.input_variable to feed it sequences")
    v._set_sequences(sequences)


def sequences_of(v: Variable) -> list[np.ndarray]:
    """The sequences a Variable with a sequence axis holds, each cut to its length (copies)."""
    if v._seq is None:
        raise ShapeError("sequences_of: the Variable has no sequence axis")
    data, lengths = v.d, v._seq.d
    return [data[b, :int(n)].copy() for b, n in enumerate(lengths)]


def set_sequence_axis(v: Variable, lengths: Variable | None) -> Variable:
    """Give ``v`` (axis 1 after the batch axis) the sequence axis whose lengths are
    ``lengths`` (None: no sequence axis); returns ``v``.

    Example:
        >>> import stadyn as sd
        >>> from stadyn.graph import new_lengths, set_sequence_axis
        >>> v = set_sequence_axis(sd.Variable((1, 4, 2)), new_lengths([4]))
        >>> v.sequence_lengths.d.tolist()
        [4]
    """
    v._seq = lengths
    return v


def propagate(inputs: Sequence[Variable], outputs: Sequence[Variable]) -> None:
    """Give ``outputs`` the sequence axis of the first input that has one, where an output
    keeps that input's first two axes (batch and sequence)."""
    for v in inputs:
        seq = v._seq
        if seq is not None:
            lead = tuple(v._shape[:2])
            for out in outputs:
                if out._seq is None and tuple(out._shape[:2]) == lead:
                    out._seq = seq
            return
