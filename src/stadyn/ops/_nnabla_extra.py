"""NNabla's functions nnabla-examples calls that no other op module holds: ``scatter_nd`` (the
inverse of ``gather_nd``), into a new array or, NNabla's ``out=``, over an existing one.

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> with sd.auto_forward():
    ...     y = F.scatter_nd(sd.Variable.from_numpy_array([9.0, 10.0]),
    ...                      sd.Variable.from_numpy_array(np.array([[3, 1]])), shape=(4,))
    >>> y.d
    array([ 0., 10.,  0.,  9.], dtype=float32)
"""

from __future__ import annotations

import numpy as np
import torch

from ._registry import op

_C = "indexing"


def _slots(ids: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """The flat position, among the first ``M`` axes of ``shape``, each index tuple (a column
    of ``ids``, ``(M, K...)``) writes, negative indices counted from the end."""
    m = ids.shape[0]
    flat = ids.reshape(m, -1)
    slot = torch.zeros(flat.shape[1], dtype=torch.long, device=ids.device)
    for i in range(m):
        slot = slot * shape[i] + torch.remainder(flat[i], shape[i])
    return slot


class _ScatterOver(torch.autograd.Function):
    """``data`` written (``add``: added) over a copy of ``out`` at ``ids``, with NNabla 1.39's
    backward (src/nbla/function/generic/scatter_nd.cpp, its ``out`` branch): walking the index
    tuples in order, each row of ``data`` takes the output gradient at its place, which is then
    zeroed, so a place written twice gives its gradient to the first row only; ``out`` takes
    what is left (every written place zeroed, ``add`` or not), or all of it when ``data``
    takes none (NNabla returns before masking)."""

    @staticmethod
    def forward(ctx, data, ids, out, add):
        y = out.clone()
        y.index_put_(tuple(ids[i] for i in range(ids.shape[0])), data, accumulate=bool(add))
        ctx.save_for_backward(ids)
        ctx.shape = tuple(out.shape)
        return y

    @staticmethod
    def backward(ctx, grad):
        (ids,) = ctx.saved_tensors
        shape = ctx.shape
        m = ids.shape[0]
        lead = 1
        for s in shape[:m]:
            lead *= s
        rows = grad.reshape(lead, -1)
        slot = _slots(ids, shape)
        g_data = g_out = None
        if ctx.needs_input_grad[0]:
            order = torch.arange(slot.numel(), device=slot.device)
            first = torch.full((lead,), slot.numel(), dtype=torch.long, device=slot.device)
            first = first.scatter_reduce(0, slot, order, reduce="amin")
            taken = (first[slot] == order).to(grad.dtype)
            g_data = (rows[slot] * taken[:, None]).reshape(
                tuple(ids.shape[1:]) + shape[m:])
            written = torch.zeros(lead, dtype=torch.bool, device=grad.device)
            written[slot] = True
            g_out = torch.where(written[:, None], torch.zeros_like(rows), rows).reshape(shape)
        elif ctx.needs_input_grad[2]:
            g_out = grad
        return g_data, None, g_out, None


@op(2, category=_C, sequence="drop")
def scatter_nd(data, indices, shape=None, add=False, out=None):
    """A new array of ``shape``, zeros except at the index tuples along ``indices``' first axis,
    which take ``data``: ``out[indices[0, j], ..., indices[M - 1, j]] = data[j]`` (``add``:
    entries indexed twice are summed; otherwise one of them is kept).  ``data`` is
    ``indices.shape[1:] + shape[M:]``.  Backward, ``data`` gets the output gradient at its
    positions.  ``indices`` may be a Variable, a nested list or a NumPy array, as NNabla's.

    ``out`` (NNabla's ``out=``, instead of ``shape``): the array written over -- the output is
    ``out`` with ``data`` written (or added) at the index tuples, and backward, as NNabla 1.39's
    kernel, the first row of ``data`` writing a place takes its gradient (a later row writing
    it again none), ``out`` the gradient of the places not written (all of it when ``data``
    needs no gradient).  Unlike NNabla's, the output is a new array: ``out`` keeps its values.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.scatter_nd(sd.Variable.from_numpy_array([9.0]),
        ...                      sd.Variable.from_numpy_array(np.array([[1]])),
        ...                      out=sd.Variable.from_numpy_array(np.ones(3)))
        >>> y.d.tolist()
        [1.0, 9.0, 1.0]
    """
    if (shape is None) == (out is None):
        raise ValueError("scatter_nd: give shape= (a new array) or out= (an existing array to "
                         "write into), one of them")
    shape = tuple(int(s) for s in (shape if out is None else out.shape))
    # NNabla takes the indices as a Variable, a nested list or a NumPy array
    ids = (indices if isinstance(indices, torch.Tensor)
           else torch.as_tensor(np.asarray(indices), device=data.device)).long()
    m = ids.shape[0] if ids.ndim else 0
    expected = tuple(ids.shape[1:]) + shape[m:]
    if ids.ndim == 0 or m > len(shape) or tuple(data.shape) != expected:
        raise ValueError(f"scatter_nd: data {tuple(data.shape)} and indices "
                         f"{tuple(ids.shape)} do not fit shape {shape} (data must be "
                         "indices.shape[1:] + shape[M:])")
    if out is not None:
        # written in the wider dtype: float data over an integer ``out`` is not truncated
        # (NNabla 1.39 gives float32 [0, 2.7, 2, 3] for 2.7 written at 1 over int32 arange(4))
        dtype = torch.promote_types(data.dtype, out.dtype)
        return _ScatterOver.apply(data.to(dtype), ids, out.to(dtype), bool(add))
    result = data.new_zeros(shape)
    return result.index_put(tuple(ids[i] for i in range(m)), data, accumulate=bool(add))
