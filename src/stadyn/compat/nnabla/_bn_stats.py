"""The batch statistics ``F.batch_normalization`` (and ``F.tensor_normalization``) return over
several axes, as NNabla 1.39's nodes: its Python wrapper normalises such an input through
``BatchNormalizationInOutAdapter`` (the other axes first, ``axes`` flattened into one) and
gives the mean and variance back through ``Reshape`` and ``Transpose`` nodes of their own
(``python/src/nnabla/normalization_functions.py``, ``batch_normalization``).  So ``y.forward()``
leaves them as they were (zeros until one of them is forwarded), ``mean.forward()`` fills the
mean alone, and ``mean.parent.name`` is ``'Transpose'``; Stadyn's op gives them as outputs of
its one node, so here each is passed through the same two node kinds (values unchanged; case
``nnabla_fidelity_24.tensor_normalization__stats_as_nodes``).
"""

from __future__ import annotations

import functools

from ... import functions as _F


def _as_nnabla_nodes(stat, ndim: int, axes: list[int]):
    """``stat`` (of ``x``'s layout) through NNabla's ``Transpose(Reshape(...))`` of the
    adapter's layout, the same values."""
    outer = sorted(set(range(ndim)).difference(axes))
    perm = outer + sorted(axes)
    inverse = sorted(range(ndim), key=perm.__getitem__)
    moved = _F.transpose(stat, perm)
    return _F.transpose(_F.reshape(moved, moved.shape), inverse)


def with_stats_as_nodes(name: str, fn):
    """``fn`` (the function ``name``) whose batch statistics over several axes are NNabla's
    nodes; ``fn`` itself for any function but ``batch_normalization``.

    Example:
        >>> import stadyn.functions as F
        >>> with_stats_as_nodes("relu", F.relu) is F.relu
        True
    """
    if name != "batch_normalization":
        return fn

    @functools.wraps(fn)
    def call(x, *args, **kwargs):
        out = fn(x, *args, **kwargs)
        axes = kwargs.get("axes", args[4] if len(args) > 4 else [1])
        axes = [axes] if isinstance(axes, int) else list(axes)
        if not isinstance(out, (tuple, list)) or len(axes) == 1:
            return out
        axes = [int(a) + x.ndim * (int(a) < 0) for a in axes]
        y, mean, var = out
        return y, _as_nnabla_nodes(mean, x.ndim, axes), _as_nnabla_nodes(var, x.ndim, axes)
    return call
