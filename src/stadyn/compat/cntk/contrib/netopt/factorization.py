"""CNTK 2.7's ``cntk.contrib.netopt.factorization``: each ``Dense`` layer ``x @ W + b`` of a
model replaced by a ``DenseFactored`` block ``(x @ W1) @ W2 + b``, ``W1`` and ``W2`` of rank
``k`` (a truncated SVD of ``W`` unless a factor function is given), so a layer of ``m * n``
weights costs ``(m + n) * k``.

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> import stadyn.compat.cntk.contrib.netopt.factorization as nc
    >>> x = C.input_variable(6)
    >>> z = C.layers.Dense(4, init=C.glorot_uniform(seed=1))(x)
    >>> nz = nc.factor_dense(z, projection_function=lambda W: 2)
    >>> [(p.name, p.shape) for p in nz.parameters]      # (CNTK 2.7 lists them so)
    [('W2', (2, 4)), ('W1', (6, 2)), ('b', (4,))]
"""

from __future__ import annotations

import numpy as np

from ... import ops as _ops
from ..._blocks import BlockFunction
from ..._function import Function
from ...variables import Parameter
from ...layers import default_override_or, get_default_override, identity
from ...layers import Dense as _Dense
from ._convert import convert

__all__ = ["svd_subprojection", "factor_dense", "dense_factored"]


def svd_subprojection(matrix, k: int):
    """``matrix`` (``m x n``) as two matrices of rank ``k``: ``U[:, :k]`` (``m x k``) and
    ``diag(s[:k]) @ V[:k]`` (``k x n``) from its singular value decomposition ``U s V``;
    their product is the closest rank-``k`` matrix to ``matrix``.

    Example:
        >>> W1, W2 = svd_subprojection(np.diag([3.0, 2.0, 1.0]), 2)
        >>> W1.shape, W2.shape, np.abs(W1 @ W2).round(6).tolist()
        ((3, 2), (2, 3), [[3.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 0.0]])
    """
    u, s, v = np.linalg.svd(np.asarray(matrix), full_matrices=False)
    return np.ascontiguousarray(u[:, :k]), np.diag(s[:k]) @ v[:k, :]


def _is_dense(f, filter_function) -> bool:
    return (type(f) is Function and f.op_name == "Dense" and f.is_block
            and (filter_function(f) if filter_function else True))


def factor_dense(model, projection_function=None, filter_function=None,
                 factor_function=None):
    """``model`` with each ``Dense`` block that ``filter_function`` accepts (all, without
    one) replaced by a ``DenseFactored`` block over the same input and bias: its weights
    ``W`` (``m x n``) become ``W1, W2 = factor_function(W, k)`` (a truncated SVD,
    :func:`svd_subprojection`, without one), ``k = projection_function(W)`` (``min(m, n)``
    without one).  The layers' activations are not carried over, as in CNTK 2.7: a factored
    block computes ``x @ W1 @ W2 + b``.  Parameters outside the replaced blocks are shared.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> x = C.input_variable(5)
        >>> z = C.layers.Dense(5, init=C.glorot_uniform(seed=2))(x)
        >>> nz = factor_dense(z, projection_function=lambda W: 3)
        >>> nz.root_function.op_name, nz.W1.shape, nz.W2.shape
        ('DenseFactored', (5, 3), (3, 5))
    """
    if factor_function is None and projection_function is None:
        raise ValueError("Dense: default factor function (svd) requires a "
                         "projection_function.")

    def factored(dense):
        W, b = dense.W.value, dense.b.value
        k = projection_function(W) if projection_function else min(W.shape)
        W1, W2 = factor_function(W, k) if factor_function else svd_subprojection(W, k)
        return dense_factored((int(k), int(W.shape[1])), init={"W1": W1, "W2": W2},
                              activation=None, init_bias=b,
                              name="DenseFactored")(dense.inputs[2])

    return convert(model, lambda f: _is_dense(f, filter_function), factored)


def dense_factored(shapes, activation=default_override_or(identity),
                   init={"W1": None, "W2": None}, input_rank=None, map_rank=None,
                   bias=default_override_or(True), init_bias=default_override_or(0),
                   name: str = ""):
    """A layer ``activation(x @ W1 @ W2 + b)``, shown as a ``DenseFactored`` block named
    ``name``: ``W1`` of shape ``(input, shapes[0])``, ``W2`` ``(shapes[0], shapes[1])``,
    both initialised from the arrays in ``init`` (``{'W1': ..., 'W2': ...}``).  The defaults
    of ``activation``, ``bias`` and ``init_bias`` are ``Dense``'s (``default_options``).

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> layer = dense_factored((1, 2), init={"W1": np.ones((3, 1)), "W2": np.ones((1, 2))})
        >>> x = C.input_variable(3)
        >>> layer(x).eval({x: np.array([[1.0, 2.0, 3.0]], np.float32)}).tolist()
        [[6.0, 6.0]]
    """
    if input_rank is not None or map_rank is not None or \
            not all(isinstance(s, (int, np.integer)) for s in shapes):
        raise ValueError("dense_factored: shapes must be two ints and input_rank, map_rank "
                         f"left out (got shapes={shapes!r}, input_rank={input_rank!r}, "
                         f"map_rank={map_rank!r})")
    activation = get_default_override(_Dense, activation=activation)
    bias = get_default_override(_Dense, bias=bias)
    init_bias = get_default_override(_Dense, init_bias=init_bias)
    W1v = np.asarray(init["W1"], np.float32)
    W2v = np.asarray(init["W2"], np.float32)
    W1 = Parameter(W1v.shape, init=W1v, name="W1")
    W2 = Parameter((int(shapes[0]), int(shapes[1])), init=W2v, name="W2")
    b = Parameter((int(shapes[1]),), init=init_bias, name="b") if bias else None

    @BlockFunction("DenseFactored", name)
    def dense(x):
        r = _ops.times(_ops.times(x, W1), W2)
        if b is not None:
            r = r + b
        return activation(r) if activation is not None else r
    return dense
