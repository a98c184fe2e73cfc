"""CNTK's ops that turn a plain axis into a sequence axis: ``to_sequence``,
``to_sequence_like`` (``cntk.ops``; the ops over sequences are in ``cntk.sequence``).

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> x = C.sequence.input_variable(2)
    >>> y = C.to_sequence_like(C.sequence.unpack(x, 0.0, no_mask_output=True) * 2.0, x)
    >>> [a.tolist() for a in y.eval({x: [np.ones((2, 2), np.float32),
    ...                                  np.ones((1, 2), np.float32)]})]
    [[[2.0, 2.0], [2.0, 2.0]], [[2.0, 2.0]]]
"""

from __future__ import annotations

from ... import sequence as S
from ._adapt import named, operand, unwrap, wrap
from ._seq_axes import name_new_axis

__all__ = ["to_sequence", "to_sequence_like"]


def to_sequence(x, sequence_lengths=None, sequence_axis_name_prefix: str = "toSequence_",
                name: str = ""):
    """The first axis of each sample of ``x`` as a sequence axis, the sequences
    ``sequence_lengths`` long (one number per sample; all of it when None), on the axis
    ``<sequence_axis_name_prefix><uid of x>`` as in CNTK 2.7.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> x = C.input_variable((3, 2))
        >>> n = C.input_variable(())
        >>> y = C.to_sequence(x, n)
        >>> [a.shape for a in y.eval({x: np.ones((2, 3, 2), np.float32),
        ...                           n: np.array([2, 3], np.float32)})]
        [(2, 2), (3, 2)]
    """
    v = operand(x)
    n = None if sequence_lengths is None else operand(sequence_lengths)
    out = name_new_axis(S.to_sequence(v, n), str(sequence_axis_name_prefix), v)
    return named(wrap(out), name, "ToSequenceOp")


def to_sequence_like(x, dynamic_axes_like, name: str = ""):
    """The first axis of each sample of ``x`` as the sequence axis of ``dynamic_axes_like``
    (same lengths).  Example: ``C.to_sequence_like(C.sequence.unpack(h, 0, True), h)``."""
    return named(wrap(S.to_sequence_like(operand(x), unwrap(dynamic_axes_like))), name,
                 "ToSequenceLikeOp")

