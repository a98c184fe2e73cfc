"""The values a channels-last plan gives its Variables, restored to the standard layout when
read rather than on every run.

A static plan that runs its convolution chains channels-last (``_layout.py``) computes the op
outputs of the chain in that layout, while every value Stadyn hands out is NCHW-contiguous.
Converting each value as the program ends costs a pass over memory per activation on every
step (the CIFAR ConvNet: ten copies, some 80 MB, a third of a step's time outside its ops;
docs/performance.md) for values a training loop never reads before the backward frees them.
So the plan gives the Variable the tensor as the program made it, marked (:func:`defer`), and
the first reader that needs the standard layout converts it once (:func:`settled`): the
user's ``.data`` / ``.d`` (``_variable_arrays.py``), an eager op's input (``_apply.py``) and a
plan's leaf (``_subgraph.leaf_tensor``); a Variable that detaches what it holds
(``clear_all_graph_links``, ``need_grad = True``) keeps the mark (:func:`detached`).  The
values are the same numbers either way (the conversion is ``contiguous()``); only strides
differ until then.

A backward that reads what a Variable holds (NNabla's, ``_shared_values.saved_as_held``) gets
a converted value back in the layout its program was traced with (:func:`like_saved`), so
reading ``.d`` between forward and backward changes no gradient's bits.
"""

from __future__ import annotations

import torch

__all__ = ["channels_last_only", "defer", "detached", "settled", "like_saved",
           "standard_layout_deferred"]

# Set on a tensor a plan gave a Variable in its channels-last layout (an attribute of the
# tensor, so it goes with the tensor wherever it is held or swapped).
_MARK = "_stadyn_layout_deferred"
# Whether any plan deferred a conversion yet: until then every reader skips the look-up.
_active = [False]


def channels_last_only(t) -> bool:
    """Whether ``t`` is a 4-d tensor in channels-last strides but not NCHW-contiguous: a value
    ``_layout.standard_layout`` converts (and the input ``_fuse_relu`` fuses a convolution
    over).

    Example:
        >>> import torch
        >>> t = torch.ones(1, 2, 2, 2)
        >>> channels_last_only(t), channels_last_only(t.to(memory_format=torch.channels_last))
        (False, True)
    """
    return (isinstance(t, torch.Tensor) and t.ndim == 4 and not t.is_contiguous()
            and t.is_contiguous(memory_format=torch.channels_last))


def defer(t: torch.Tensor) -> torch.Tensor:
    """Mark ``t``, a value a plan gives a Variable in its own (channels-last) layout, to be
    converted to the standard layout by its first reader (:func:`settled`); returns ``t``.

    Example:
        >>> import torch, stadyn as sd
        >>> v = sd.Variable((1, 2, 2, 2))
        >>> v._data = defer(torch.ones(1, 2, 2, 2).contiguous(memory_format=torch.channels_last))
        >>> v.data.is_contiguous()          # .data reads it through settled
        True
    """
    setattr(t, _MARK, True)
    _active[0] = True
    return t


def standard_layout_deferred(t) -> bool:
    """Whether ``t`` is a value whose conversion to the standard layout was deferred.

    Example:
        >>> import torch
        >>> t = torch.ones(1, 2, 2, 2).contiguous(memory_format=torch.channels_last)
        >>> standard_layout_deferred(t), standard_layout_deferred(defer(t))
        (False, True)
    """
    return _active[0] and isinstance(t, torch.Tensor) and getattr(t, _MARK, False)


def detached(t: torch.Tensor) -> torch.Tensor:
    """``t.detach()``, still marked when ``t`` is a deferred value: ``detach()`` makes a new
    tensor object, which would lose the mark (an attribute of the tensor) and keep the plan's
    channels-last strides for good (``clear_all_graph_links``, ``need_grad = True``).

    Example:
        >>> import torch
        >>> t = defer(torch.ones(1, 2, 2, 2).contiguous(memory_format=torch.channels_last))
        >>> standard_layout_deferred(detached(t)), standard_layout_deferred(t.detach())
        (True, False)
    """
    out = t.detach()
    if standard_layout_deferred(t):
        setattr(out, _MARK, True)
    return out


def settled(v):
    """The tensor ``v`` (a Variable) holds, in the standard layout: a deferred one is converted
    (``contiguous()``, the same numbers) and held from then on.

    Example:
        >>> import torch, stadyn as sd
        >>> v = sd.Variable((1, 2, 2, 2))
        >>> v._data = defer(torch.ones(1, 2, 2, 2).contiguous(memory_format=torch.channels_last))
        >>> settled(v).is_contiguous(), settled(v) is v._data
        (True, True)
    """
    t = v._data
    if _active[0] and t is not None and getattr(t, _MARK, False):
        t = v._data = t.contiguous()
    return t


def like_saved(now: torch.Tensor, was: torch.Tensor) -> torch.Tensor:
    """``now`` (what a Variable holds when a backward reads it) in the strides of ``was`` (the
    deferred value the program saved) when a reader converted it: the backward program runs in
    the layout it was traced with.  Anything else is returned as it is.

    Example:
        >>> import torch
        >>> was = defer(torch.zeros(1, 2, 2, 2).contiguous(memory_format=torch.channels_last))
        >>> like_saved(torch.ones(1, 2, 2, 2), was).stride() == was.stride()
        True
    """
    if not standard_layout_deferred(was) or now.stride() == was.stride():
        return now
    return torch.empty_strided(was.shape, was.stride(), dtype=now.dtype,
                               device=now.device).copy_(now)
