"""The zeros a CTF file stores in its sparse inputs (``3:0``, or ``1:2 1:-2`` adding to 0).

CNTK 2.7's text reader keeps every ``index:value`` it reads in its sparse data, zeros too
(TextParser.cpp:860-861), so the gradient of a weight multiplied by such an input has a block
for the stored zero's row, which CNTK's learners update (momentum, AdaGrad: the row moves where
a dense zero leaves it).  :func:`stored_zeros` finds them in one sample's text,
:func:`stored_batch` lays a batch's out as a bool mask beside its values
(``StreamBatch.stored``).

Example:
    >>> import numpy as np
    >>> from stadyn.io._ctf_values import InputField
    >>> field = InputField("x", (4,), True)
    >>> stored_zeros(field, "1:2 3:0", np.array([0.0, 2.0, 0.0, 0.0], np.float32)).tolist()
    [False, False, False, True]
"""

from __future__ import annotations

import numpy as np

from ._ctf_values import InputField

__all__ = ["stored_zeros", "stored_batch"]


def stored_zeros(field: InputField, text: str, parsed: np.ndarray) -> "np.ndarray | None":
    """Where a sparse input's ``text`` (already read into ``parsed``) stores a zero (``3:0``,
    or ``1:2 1:-2``), as a bool array of the sample's shape; None where it stores none (or is
    dense).  CNTK 2.7's reader keeps such an entry in its sparse data (TextParser.cpp:
    860-861 append every ``index:value`` it reads, zeros too), so the gradient of a
    weight multiplied by it has a block for its row, which the learners update."""
    if not field.sparse or np.count_nonzero(parsed) == text.count(":"):
        return None         # (dense, or as many non-zeros as entries: the common case)
    tokens = text.split()
    flat = parsed.reshape(-1)
    given = np.fromiter((int(t.partition(":")[0]) for t in tokens), np.int64, len(tokens))
    zero = given[flat[given] == 0]
    if not zero.size:
        return None
    mask = np.zeros(flat.shape, bool)
    mask[zero] = True
    return mask.reshape(parsed.shape)


def stored_batch(field: InputField, zeros: list[list], shape: tuple[int, ...],
                  sequences: bool) -> "np.ndarray | None":
    """The stored zeros of a batch of ``shape`` (each sequence's ``(step, mask)`` of the
    samples storing any), or None where no sample stores one."""
    if not field.sparse or not any(zeros):
        return None
    out = np.zeros(shape, bool)
    for k, z in enumerate(zeros):
        for t, m in z:
            if sequences:
                out[k, t] = m
            elif t == 0:
                out[k] = m
    return out
