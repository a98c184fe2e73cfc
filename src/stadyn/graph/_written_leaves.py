"""A leaf written between a dynamic forward and its backward: the backward reads the new value,
as NNabla 1.39's does.

NNabla's backward reads its inputs' arrays as they are when it runs: ``w.d = v``,
``w.d[...] = v``, ``w.data.copy_from(a)``, ``w.data.fill(c)`` or ``w.data = a`` between a
dynamic graph's ops and ``y.backward()`` give gradients of the new ``w`` (``x.g`` of ``w * x``
is the new ``w``), in float32 and in ``cpu:half`` (whose functions cast the current float32
array).  Torch's autograd saved the tensors its backward reads when the ops ran:

* a float32 leaf read as it is: the saved tensor is the leaf's own memory, which a NumPy write
  changes unseen (the new values, as NNabla's) and a torch write (``copy_``, ``fill_``) marks
  with a new version, which torch refuses to differentiate with.  :func:`written_leaves` puts
  back, for the backward only, the version the ops saw (every op of the graph that read the
  leaf saw the same one), so the saved tensor is read with its new values, and the leaf's
  version counter is restored after it;
* a float32 leaf read in ``cpu:half`` through its half copy (``_precision.HalfCopies``): the
  copy holds the old values whatever the write.  :func:`written_leaves` casts the leaf's
  value of now into the copy (its ``.data``, leaving autograd's version of it as it was) where
  the leaf was written since (a new version, other memory, or a NumPy array handed out over it
  since, or still alive, whose values the cast then differs from).

A leaf written between two ops that read it (one op saw the old version, another the new)
is left to torch, whose refusal ``_autograd_backward.py`` words.

Example:
    >>> import numpy as np, torch, stadyn as sd
    >>> from stadyn.graph import topological_nodes
    >>> w = sd.Variable.from_numpy_array(np.array([1.0, 2.0], np.float32), need_grad=True)
    >>> x = sd.Variable.from_numpy_array(np.array([3.0, 4.0], np.float32), need_grad=True)
    >>> with sd.auto_forward():
    ...     y = x * w
    >>> w.d = np.array([5.0, 6.0], np.float32)        # a torch write: a new version
    >>> with written_leaves(topological_nodes([y])):
    ...     torch.autograd.backward(y._data, torch.ones(2))
    >>> x.g.tolist()
    [5.0, 6.0]
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Sequence

import torch

from ._numpy_readers import handed_out, viewed
from ._shared_values import value_holder
from ._variable import FunctionNode, Variable

__all__ = ["note_read_leaves", "written_leaves"]

_set_versions = torch._C._autograd._unsafe_set_version_counter


def note_read_leaves(node: FunctionNode, args: Sequence, targs: Sequence,
                     kwargs: dict | None = None, tkw: dict | None = None) -> None:
    """Record on ``node``, run in dynamic mode with gradients, the leaf Variables among its
    arguments ``args`` (their tensors ``targs``; keywords ``kwargs``/``tkw``) with each
    tensor's version then (``node.read_leaves``), for :func:`written_leaves`.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> w = sd.Variable((2,)); node = F.relu(w).parent
        >>> note_read_leaves(node, [w], [w.data]); node.read_leaves[0][2]
        0
    """
    kept = [(a, t, t._version) for a, t in zip(args, targs)
            if isinstance(a, Variable) and a.parent is None and isinstance(t, torch.Tensor)]
    if kwargs:
        kept.extend((v, tkw[k], tkw[k]._version) for k, v in kwargs.items()
                    if isinstance(v, Variable) and v.parent is None
                    and isinstance(tkw.get(k), torch.Tensor))
    if kept:
        node.read_leaves = kept


def _half_stale(t: torch.Tensor, now: torch.Tensor, version: int, count: int) -> bool:
    """Whether the leaf whose tensor was ``t`` (version ``version``, ``count`` NumPy arrays
    handed out over it) when its half copy was made may hold other values ``now``."""
    return (now is not t or t._version != version or handed_out(t) != count
            or viewed(t))


@contextmanager
def written_leaves(nodes: Sequence[FunctionNode]) -> Iterator[None]:
    """For one backward through the dynamic ``nodes``: the leaves written since their ops ran
    are read with their new values (see the module docstring)."""
    versions: dict[int, tuple] = {}
    for node in nodes:
        for v, t, version in getattr(node, "read_leaves", None) or ():
            seen = versions.get(id(t))
            versions[id(t)] = (t, v, {version} | (seen[2] if seen else set()))
        for v, t, version, copy, count in getattr(node, "cast_leaves", None) or ():
            now = value_holder(v)._data
            if (now is None or not _half_stale(t, now, version, count)
                    or tuple(now.shape) != tuple(copy.shape)):
                continue
            value = now.detach().to(copy.dtype)
            if not torch.equal(value, copy.detach()):
                copy.data.copy_(value)          # (autograd's version of the copy unchanged)
    back, now_at = [], []
    for t, v, seen in versions.values():
        if len(seen) != 1 or value_holder(v)._data is not t:
            continue                            # (read at two versions, or other memory)
        (version,) = seen
        if t._version != version:
            back.append(t)
            now_at.append(t._version)
    if not back:
        yield
        return
    _set_versions(back, [next(iter(versions[id(t)][2])) for t in back])
    try:
        yield
    finally:
        _set_versions(back, now_at)
