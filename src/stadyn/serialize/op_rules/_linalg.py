"""Rules of batched linear algebra and ``dot`` (``stadyn/ops/_linalg.py``): ``batch_det`` is
ONNX's Det (which imports back as it), ``batch_logdet`` Log(Abs(Det)); the diagonals and ``dot``
are spelled with Where, Gather, Transpose, Reshape and MatMul; ONNX has no matrix inverse."""

from __future__ import annotations

import numpy as np

from ... import functions as F
from ._common import COMPOSITE
from ._nnabla import nnabla
from ._table import Unmapped, register_rules


def _det_onnx(g, inputs, attrs):
    """Det"""
    return g.op("Det", [inputs[0]])


def _logdet_onnx(g, inputs, attrs):
    """Det, Abs, Log"""
    return g.op("Log", [g.op("Abs", [g.op("Det", [inputs[0]])])])


def _import_det(node):
    """Det over any leading axes: batch_det of the matrices laid out as one batch."""
    shape = tuple(node.shape(0))
    if node.dtype(0).kind != "f":
        node.unsupported(f"{node.dtype(0)} input (batch_det computes in floating point)")
    if len(shape) == 3:
        return F.batch_det(node.var(0))
    det = F.batch_det(F.reshape(node.var(0), (-1,) + shape[-2:]))
    return F.reshape(det, shape[:-2])


register_rules(F.batch_det, onnx_export=_det_onnx, onnx_import={"Det": _import_det},
               nnp_import=nnabla(F.batch_det, "BatchDet"))
register_rules(F.batch_logdet, onnx_export=_logdet_onnx, onnx_import=Unmapped(COMPOSITE),
               nnp_import=nnabla(F.batch_logdet, "BatchLogdet"))
register_rules(F.batch_inv, onnx_export=Unmapped("ONNX has no matrix inverse"),
               onnx_import=Unmapped("ONNX has no matrix inverse"),
               nnp_import=nnabla(F.batch_inv, "BatchInv"))


def _matrix_diag_onnx(g, inputs, attrs):
    """Unsqueeze, Where"""
    x = inputs[0]
    n = g.shape(x)[-1]
    column = g.unsqueeze(x, [g.ndim(x)])
    return g.op("Where", [g.const(np.eye(n, dtype=bool)), column, g.scalar(0, x)])


def _matrix_diag_part_onnx(g, inputs, attrs):
    """Reshape, Gather"""
    x = inputs[0]
    n = g.shape(x)[-1]
    flat = g.reshape(x, [0] * (g.ndim(x) - 2) + [n * n])
    return g.op("Gather", [flat, g.ints(np.arange(n) * (n + 1))], axis=g.ndim(x) - 2)


register_rules(F.matrix_diag, onnx_export=_matrix_diag_onnx, onnx_import=Unmapped(COMPOSITE),
               nnp_import=nnabla(F.matrix_diag, "MatrixDiag"))
register_rules(F.matrix_diag_part, onnx_export=_matrix_diag_part_onnx,
               onnx_import=Unmapped(COMPOSITE),
               nnp_import=nnabla(F.matrix_diag_part, "MatrixDiagPart"))


def _dot_onnx(g, inputs, attrs):
    """MatMul (Mul for a 0-d input; Transpose and Reshape around it for an N-d b)"""
    a, b = inputs
    sa, sb = g.shape(a), g.shape(b)
    if not sa or not sb:
        return g.op("Mul", [a, b])
    if len(sb) <= 2:
        return g.op("MatMul", [a, b])       # NumPy's dot is matmul for a 1-d or 2-d b
    k = sb[-2]
    perm = [len(sb) - 2] + [i for i in range(len(sb)) if i != len(sb) - 2]
    right = g.reshape(g.op("Transpose", [b], perm=perm), [k, -1])
    left = g.reshape(a, [-1, k])
    out = list(sa[:-1]) + list(sb[:-2]) + [sb[-1]]
    return g.reshape(g.op("MatMul", [left, right]), [-1] + out[1:])


def _dot_nnp(e, inputs, attrs):
    """NNabla's ``F.dot`` composition: ``Affine`` over ``a``'s last axis (``b`` 1-d: reshaped
    to a column and the result back; N-d: its second-last axis moved first by a
    ``Transpose``)"""
    a, b = inputs
    sa, sb = e.shape(a), e.shape(b)
    if not sa or not sb:
        e.unsupported("a 0-d input (NNabla's F.dot then computes with NumPy, not a function)")
    base = {"base_axis": len(sa) - 1}
    if len(sb) == 1:
        column = e.variable("dot_column", (sb[0], 1), e.batched(b))
        e.function("Reshape", [b], {"shape": (sb[0], 1), "inplace": True}, [column])
        h = e.variable("dot_affine", tuple(sa[:-1]) + (1,), e.batched(a) and len(sa) > 1)
        e.function("Affine", [a, column], base, [h])
        e.function("Reshape", [h], {"shape": tuple(sa[:-1]), "inplace": True})
        return
    order = list(range(len(sb)))
    order.insert(0, order.pop(len(sb) - 2))
    if order != sorted(order):       # a matrix b needs no Transpose (NNabla writes none)
        moved = e.variable("dot_transposed", tuple(sb[i] for i in order), False)
        e.function("Transpose", [b], {"axes": order}, [moved])
        b = moved
    e.function("Affine", [a, b], base)


register_rules(F.dot, onnx_export=_dot_onnx,
               onnx_import=Unmapped("ONNX's MatMul imports as batch_matmul or affine"),
               nnp_export=_dot_nnp,
               nnp_import=Unmapped("NNabla has no dot function (its F.dot is a composition): "
                                   "the export's Affine, Transpose and Reshape import one by one"))
