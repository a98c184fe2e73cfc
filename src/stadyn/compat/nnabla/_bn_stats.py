"""The batch statistics ``F.batch_normalization`` (and ``F.tensor_normalization``) return over
several axes, as NNabla 1.39's nodes: its Python wrapper normalises such an input through
``BatchNormalizationInOutAdapter`` (the other axes first, ``axes`` flattened into one) and
gives the mean and variance back through ``Reshape`` and ``Transpose`` nodes of their own
(``python/src/nnabla/normalization_functions.py``, ``batch_normalization``).  So ``y.forward()``
leaves them as they were (zeros until one of them is forwarded), ``mean.forward()`` fills the
mean alone, and ``mean.parent.name`` is ``'Transpose'``; Stadyn's op gives them as outputs of
its one node, so here each is passed through the same two node kinds (values unchanged; case
``nnabla_fidelity_25.tensor_normalization__stats_as_nodes``).  Only those two are NNabla's (the
``Transpose`` with its ``axes``, the ``Reshape`` below with its ``shape``): under them NNabla
has its ``BatchNormalization``'s flattened statistic (``(1, 8)`` for ``x (2, 3, 4)``,
``axes=[0, 2]``), Stadyn a ``Transpose`` of its op's; and ``y.parent`` is Stadyn's op where
NNabla's is the ``Transpose`` of its input adapter's inverse (docs/nnabla-names.md).
``output_stat`` without ``batch_stat`` is refused with NNabla's ``AssertionError``; the running
statistics over several axes stay as they are (the catalog op's ``rule="nnabla"``).
"""

from __future__ import annotations

import functools
import inspect

from ... import functions as _F


def adapter_axes(ndim: int, axes) -> tuple[list[int], list[int], list[int]]:
    """NNabla's ``BatchNormalizationInOutAdapter`` geometry for ``axes`` of an ``ndim``-D
    input: the outer axes (the others, in order), the transpose moving them first (then
    ``axes`` sorted) and its inverse.

    Example:
        >>> adapter_axes(4, [1, 3])
        ([0, 2], [0, 2, 1, 3], [0, 2, 1, 3])
        >>> adapter_axes(3, [0, 2])
        ([1], [1, 0, 2], [1, 0, 2])
    """
    outer = sorted(set(range(ndim)).difference(axes))
    perm = outer + sorted(axes)
    return outer, perm, sorted(range(ndim), key=perm.__getitem__)


def _as_nnabla_nodes(stat, ndim: int, axes: list[int]):
    """``stat`` (of ``x``'s layout) through NNabla's ``Transpose(Reshape(...))`` of the
    adapter's layout, the same values."""
    _, perm, inverse = adapter_axes(ndim, axes)
    moved = _F.transpose(stat, perm)
    return _F.transpose(_F.reshape(moved, moved.shape), inverse)


def with_stats_as_nodes(name: str, fn):
    """``fn`` (the function ``name``: ``F`` or ``PF`` ``batch_normalization``) whose batch
    statistics over several axes are NNabla's nodes (NNabla's ``PF.batch_normalization`` calls
    its ``F.batch_normalization``), refusing ``output_stat=True`` with ``batch_stat=False`` with
    NNabla 1.39's bare ``AssertionError``: its wrapper asserts ``batch_stat or (not
    output_stat)`` (``python/src/nnabla/normalization_functions.py``,
    ``batch_normalization``); ``fn`` itself for any function but ``batch_normalization``.
    The call is bound to ``fn``'s signature once, so ``axes`` is found wherever it is given.

    Example:
        >>> import stadyn.functions as F
        >>> with_stats_as_nodes("relu", F.relu) is F.relu
        True
        >>> bn = with_stats_as_nodes("batch_normalization", F.batch_normalization)
        >>> bn(None, None, None, None, None, batch_stat=False, output_stat=True)
        ... # doctest: +ELLIPSIS
        Traceback (most recent call last):
        AssertionError: batch_normalization: output_stat=True needs batch_stat=True ...
    """
    if name != "batch_normalization":
        return fn
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            return fn(*args, **kwargs)      # the call itself reports it
        bound.apply_defaults()
        given = bound.arguments
        if given["output_stat"] and not given["batch_stat"]:
            raise AssertionError("batch_normalization: output_stat=True needs batch_stat=True "
                                 "(NNabla 1.39 asserts it)")
        out = fn(*args, **kwargs)
        axes = given["axes"]
        axes = [axes] if isinstance(axes, int) else list(axes)
        if not isinstance(out, (tuple, list)) or len(axes) == 1:
            return out
        x = next(iter(given.values()))
        axes = [int(a) + x.ndim * (int(a) < 0) for a in axes]
        y, mean, var = out
        return y, _as_nnabla_nodes(mean, x.ndim, axes), _as_nnabla_nodes(var, x.ndim, axes)
    return call
