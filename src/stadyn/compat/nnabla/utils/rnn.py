"""``nnabla.utils.rnn``: variable-length sequences for the recurrent functions --
``pad_sequence``, ``pack_padded_sequence``, ``pack_sequence``, ``pad_packed_sequence`` and the
``PackedSequence`` they pass around, as NNabla 1.39's (``nnabla/utils/rnn.py``), built from
the same ``F`` functions so that gradients reach the sequences (case
``nnabla_user_28.user28_variable_length_sequences``).

As NNabla's, the packing functions need the dynamic mode (``F.pack_padded_sequence``'s
output shape depends on the lengths' values), ``pack_sequence`` pads time-major whatever its
``batch_first`` says (NNabla 1.39 ignores it there), and ``enforce_sorted=False`` sorts the
batch by decreasing length, which ``pad_packed_sequence`` undoes.

Example:
    >>> import numpy as np
    >>> import stadyn.compat.nnabla as nn
    >>> from stadyn.compat.nnabla.utils.rnn import pad_sequence
    >>> seqs = [nn.Variable.from_numpy_array(np.ones((n, 2), np.float32)) for n in (3, 1)]
    >>> with nn.auto_forward():
    ...     padded = pad_sequence(seqs)
    >>> padded.shape, padded.d[:, :, 0].tolist()
    ((3, 2, 2), [[1.0, 1.0], [1.0, 0.0], [1.0, 0.0]])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import functions as F
from .._context import Context, context_scope
from .._variable import Variable

__all__ = ["PackedSequence", "pad_sequence", "pack_padded_sequence", "pack_sequence",
           "pad_packed_sequence"]


class PackedSequence:
    """A packed batch: ``data`` (the steps of all sequences, longest first), ``batch_sizes``
    (how many sequences each step has), ``sorted_indices`` / ``unsorted_indices`` (None, or
    the batch's order by decreasing length and back).

    Example:
        >>> p = PackedSequence()
        >>> p.data is None and p.batch_sizes is None and p.sorted_indices is None
        True
    """

    def __init__(self) -> None:
        self.data: Any = None
        self.batch_sizes: Any = None
        self.sorted_indices: Any = None
        self.unsorted_indices: Any = None

    def __str__(self) -> str:
        # NNabla 1.39's formats a name it does not pass (a KeyError); not copied
        return (f"data={self.data}, batch_sizes={self.batch_sizes}, "
                f"sorted_indices={self.sorted_indices}, "
                f"unsorted_indices={self.unsorted_indices}")


def pad_sequence(sequences: list, batch_first: bool = False,
                 padding_value: float = 0.0) -> Any:
    """The Variables ``sequences`` (``(T_i, *)`` each) padded with ``padding_value`` into one
    ``(T, B, *)`` Variable (``(B, T, *)`` with ``batch_first``), ``T`` the longest.

    Example:
        >>> import numpy as np
        >>> import stadyn.compat.nnabla as nn
        >>> seqs = [nn.Variable.from_numpy_array(np.full((n,), 2.0, np.float32)) for n in (1, 2)]
        >>> with nn.auto_forward():
        ...     padded = pad_sequence(seqs, batch_first=True, padding_value=-1.0)
        >>> padded.d.tolist()
        [[2.0, -1.0], [2.0, 2.0]]
    """
    steps = max(s.shape[0] for s in sequences)
    lead = (len(sequences), steps) if batch_first else (steps, len(sequences))
    padded = F.constant(padding_value, lead + tuple(sequences[0].shape[1:]))
    for b, s in enumerate(sequences):
        n = s.shape[0]
        if batch_first:
            padded[b, :n, ...] = s
        else:
            padded[:n, b, ...] = s
    return padded


def pack_padded_sequence(padded_sequence: Any, lengths: Any, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """A :class:`PackedSequence` of ``padded_sequence`` whose sequences have ``lengths`` (a
    Variable), in decreasing order unless ``enforce_sorted=False`` (then sorted here).

    Example:
        >>> import numpy as np
        >>> import stadyn.compat.nnabla as nn
        >>> x = nn.Variable.from_numpy_array(np.arange(6, dtype=np.float32).reshape(3, 2))
        >>> with nn.auto_forward():
        ...     p = pack_padded_sequence(x, nn.Variable.from_numpy_array(np.array([3, 1])))
        >>> p.data.d.tolist(), p.batch_sizes.d.tolist()
        ([0.0, 1.0, 2.0, 4.0], [2, 1, 1])
    """
    sorted_indices = unsorted_indices = None
    if not enforce_sorted:
        with context_scope(Context()):
            lengths, sorted_indices = F.sort(lengths, axis=0, reverse=True, with_index=True)
        size = sorted_indices.shape[0]
        unsorted_indices = F.scatter_nd(F.arange(0, size), sorted_indices.reshape((1, size)),
                                        shape=(size,))
        padded_sequence = F.gather(padded_sequence, sorted_indices, 0 if batch_first else 1)
    data, batch_sizes = F.pack_padded_sequence(padded_sequence, lengths, batch_first)
    packed = PackedSequence()
    packed.data, packed.batch_sizes = data, batch_sizes
    packed.sorted_indices, packed.unsorted_indices = sorted_indices, unsorted_indices
    return packed


def pack_sequence(sequences: list, batch_first: bool = False,
                  enforce_sorted: bool = True) -> PackedSequence:
    """:func:`pad_sequence` then :func:`pack_padded_sequence` of the Variables ``sequences``
    (time-major: NNabla 1.39 ignores ``batch_first`` here).

    Example:
        >>> import numpy as np
        >>> import stadyn.compat.nnabla as nn
        >>> seqs = [nn.Variable.from_numpy_array(np.ones((n, 1), np.float32)) for n in (1, 3)]
        >>> with nn.auto_forward():
        ...     p = pack_sequence(seqs, enforce_sorted=False)
        >>> p.batch_sizes.d.tolist(), p.sorted_indices.d.tolist()
        ([2, 1, 1], [1, 0])
    """
    lengths = Variable.from_numpy_array(np.array([s.shape[0] for s in sequences]))
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: Any = None) -> tuple:
    """The padded Variable and the lengths of the :class:`PackedSequence` ``sequence``, in
    the batch's original order (the lengths float32 after that reordering, NNabla's
    ``lengths[unsorted_indices]``); ``total_length`` pads to that many steps (not fewer than
    the longest: a ``ValueError``).

    Example:
        >>> import numpy as np
        >>> import stadyn.compat.nnabla as nn
        >>> seqs = [nn.Variable.from_numpy_array(np.full((n,), n, np.float32)) for n in (1, 2)]
        >>> with nn.auto_forward():
        ...     padded, lengths = pad_packed_sequence(pack_sequence(seqs, enforce_sorted=False))
        >>> padded.d.tolist(), lengths.d.tolist()
        ([[1.0, 2.0], [0.0, 2.0]], [1.0, 2.0])
    """
    steps = sequence.batch_sizes.shape[0]
    if total_length is not None and total_length < steps:
        raise ValueError(f"`total length ({total_length})` must be greater than or equal to "
                         f"the maximum length ({steps}).")
    padded, lengths = F.pad_packed_sequence(sequence.data, sequence.batch_sizes, batch_first,
                                            padding_value, total_length)
    if sequence.unsorted_indices is not None:
        padded = F.gather(padded, sequence.unsorted_indices, 0 if batch_first else 1)
        lengths = lengths[sequence.unsorted_indices]
    return padded, lengths
