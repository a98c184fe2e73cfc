"""NNabla's functions nnabla-examples calls that no other op module holds: ``scatter_nd`` (the
inverse of ``gather_nd``).

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> with sd.auto_forward():
    ...     y = F.scatter_nd(sd.Variable.from_numpy_array([9.0, 10.0]),
    ...                      sd.Variable.from_numpy_array(np.array([[3, 1]])), shape=(4,))
    >>> y.d
    array([ 0., 10.,  0.,  9.], dtype=float32)
"""

from __future__ import annotations

from ._registry import op

_C = "indexing"


@op(2, category=_C, sequence="drop")
def scatter_nd(data, indices, shape=None, add=False):
    """A new array of ``shape``, zeros except at the index tuples along ``indices``' first axis,
    which take ``data``: ``out[indices[0, j], ..., indices[M - 1, j]] = data[j]`` (``add``:
    entries indexed twice are summed; otherwise one of them is kept).  ``data`` is
    ``indices.shape[1:] + shape[M:]``.  NNabla's ``out=`` (scatter into an existing array) is
    not supported.  Backward, ``data`` gets the output gradient at its positions.
    Example: ``F.scatter_nd(h, idx, shape=(n, h.shape[1]))``."""
    if shape is None:
        raise ValueError("scatter_nd: give shape= (NNabla's out=, a write into an existing "
                         "array, is not supported)")
    shape = tuple(int(s) for s in shape)
    ids = indices.long()
    m = ids.shape[0] if ids.ndim else 0
    expected = tuple(ids.shape[1:]) + shape[m:]
    if ids.ndim == 0 or m > len(shape) or tuple(data.shape) != expected:
        raise ValueError(f"scatter_nd: data {tuple(data.shape)} and indices "
                         f"{tuple(indices.shape)} do not fit shape {shape} (data must be "
                         "indices.shape[1:] + shape[M:])")
    out = data.new_zeros(shape)
    return out.index_put(tuple(ids[i] for i in range(m)), data, accumulate=bool(add))
