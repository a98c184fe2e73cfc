"""Harness entries of NNabla's functions whose output shape depends on values (``stadyn/ops/
_nnabla_values.py``: ``nonzero``, ``unique``, ``bool_gather``, ``bool_scatter``,
``pack_padded_sequence``, ``pad_packed_sequence``), merged into ``test_ops.ENTRIES``.  NumPy
references (tests/compat's ``nnabla_values`` cases compare with NNabla's own numbers).
"""

from __future__ import annotations

import numpy as np

from op_harness_types import Data

_D = Data(5150)
normal = _D.normal


def ref_nonzero(x):
    return np.stack(np.nonzero(x)).astype(np.int64)


def ref_unique(x, flatten=True, axis=None, sorted=True, with_index=False,  # noqa: A002
               with_inverse=False, with_counts=False):
    along = None if flatten else axis
    y, first, inverse, counts = np.unique(x, return_index=True, return_inverse=True,
                                          return_counts=True, axis=along)
    inverse = inverse.reshape(-1)
    if not sorted:
        order = np.argsort(first, kind="stable")
        rank = np.argsort(order)
        y = y[order] if along is None else np.take(y, order, axis=along)
        first, counts, inverse = first[order], counts[order], rank[inverse]
    outs = [y] + [v.astype(np.int32) for flag, v in ((with_index, first),
                                                    (with_inverse, inverse),
                                                    (with_counts, counts)) if flag]
    return outs[0] if len(outs) == 1 else tuple(outs)


def ref_bool_gather(x, mask):
    return x[mask != 0]


def ref_bool_scatter(x, mask, output=None):
    out = np.zeros(mask.shape + x.shape[1:]) if output is None else output.copy()
    out[mask != 0] = x
    return out


def ref_pack(x, lengths, batch_first=False):
    if batch_first:
        x = x.swapaxes(0, 1)
    t = x.shape[0]
    sizes = np.array([(lengths > s).sum() for s in range(t)])
    packed = np.concatenate([x[s, :sizes[s]] for s in range(t)])
    return packed, sizes.astype(np.int32)


def ref_pad(packed, batch_sizes, batch_first=False, padding_value=None, total_length=None):
    t, b = len(batch_sizes), int(batch_sizes.max())
    total = max(t, total_length or -1)
    out = np.zeros((total, b) + packed.shape[1:])
    start = 0
    for s, n in enumerate(batch_sizes.astype(int)):
        out[s, :n] = packed[start:start + n]
        start += n
    lengths = np.array([(batch_sizes > k).sum() for k in range(b)], np.int32)
    return (out.swapaxes(0, 1) if batch_first else out), lengths


def value_shape_entries(Case, Entry) -> dict:
    sparse = normal(3, 4) * (_D.ints(2, 3, 4) == 1)
    repeats = np.array([2.5, -1.0, 0.0, 7.0], np.float32)[_D.ints(4, 3, 5)]
    rows = np.array([[2, 1, 2], [0, 1, 3], [2, 1, 2], [0, 0, 0]], np.float32)
    mask = np.array([[1, 0, 1, 1], [0, 1, 0, 0]], np.float32)
    lengths = np.array([4, 2, 1], np.int64)
    sizes = np.array([3, 2, 2, 1], np.int32)
    none = "its outputs are integer indices"
    return {
        "nonzero": Entry([Case((sparse,)), Case((np.zeros((2, 2), np.float32),))], ref_nonzero,
                         no_grad=none),
        "unique": Entry([Case((repeats,)),
                         Case((repeats,), {"sorted": False, "with_index": True,
                                           "with_inverse": True, "with_counts": True}),
                         Case((rows,), {"flatten": False, "axis": 0, "with_index": True,
                                        "with_inverse": True, "with_counts": True}),
                         Case((rows.T.copy(),), {"flatten": False, "axis": 1, "sorted": False,
                                                 "with_inverse": True})],
                        ref_unique, no_grad="no gradient (NNabla 1.39's backward raises)"),
        "bool_gather": Entry([Case((normal(2, 4, 3), mask))], ref_bool_gather,
                             grad_inputs=(0,), why_not_others="the mask gets no gradient"),
        "bool_scatter": Entry([Case((normal(4, 2), mask)),
                               Case((normal(4, 2), mask, normal(2, 4, 2)))],
                              ref_bool_scatter, grad_inputs=(0,),
                              why_not_others="the mask gets no gradient; output's (the "
                                             "gradient where the mask is 0) is compared "
                                             "with NNabla's in tests/compat"),
        "pack_padded_sequence": Entry(
            [Case((normal(4, 3, 2), lengths)),
             Case((normal(3, 4), lengths), {"batch_first": True})],
            ref_pack, grad_inputs=(0,), why_not_others="lengths are integers"),
        "pad_packed_sequence": Entry(
            [Case((normal(8, 2), sizes)),
             Case((normal(8), sizes), {"batch_first": True, "total_length": 6})],
            ref_pad, grad_inputs=(0,), why_not_others="batch sizes are integers"),
    }
