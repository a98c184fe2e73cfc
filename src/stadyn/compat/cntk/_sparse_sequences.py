"""``as_sequences`` of sparse data (a ``Value`` or a reader's ``MinibatchData`` of a sparse
stream), as CNTK 2.7's ``Value.as_sequences`` gives it (cntk/core.py:290-300): without the
variable its ValueError, else each sequence as a SciPy CSR matrix of its steps (made from the
dense steps, as CNTK's is: a stored zero is not kept), with its UserWarning that the
conversion may be slow.  Where SciPy is not installed (CNTK 2.7 needs it, Stadyn does not),
the dense arrays.

Example:
    >>> import warnings, numpy as np, stadyn.compat.cntk as C
    >>> x = C.sequence.input_variable(3, is_sparse=True)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     got = sparse_sequences([np.eye(3, dtype=np.float32)[[2, 0]]], x)
    >>> [(type(s).__name__, s.shape, s.nnz) for s in got]
    [('csr_matrix', (2, 3), 2)]
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["sparse_sequences"]


def sparse_sequences(sequences: "list[np.ndarray]", variable) -> list:
    """``sequences`` (each ``(steps, *shape)``, dense) of sparse data as CNTK 2.7's
    ``as_sequences(variable)`` gives them (see the module)."""
    if variable is None:
        raise ValueError("cannot convert sparse value to sequences without the corresponding "
                         "variable")
    try:
        from scipy import sparse
    except ImportError:             # (no SciPy: the dense steps)
        return list(sequences)
    warnings.warn("converting Value object to CSR format might be slow", stacklevel=3)
    return [sparse.csr_matrix(np.asarray(s)) for s in sequences]
