"""Gradient buffers: where a static plan's backward puts gradients, and when memory is reused.

A backward program returns a new tensor for each gradient.  For most gradients that is the
``.grad`` the leaf gets.  Some gradients need memory of their own: one that must be copied (it
may alias a program input or another output), one computed in half precision for an fp32
parameter (converted), and a large weight gradient that the program writes with ``mm.out``
(:func:`stadyn.graph.write_products_into_buffers`).  Allocating that memory afresh on every step
costs page faults (docs/performance.md), so the graph keeps **one buffer per parameter** and
reuses it.  An eager backward can use the same buffer: an op's backward that computes a whole
weight gradient writes it where :func:`eager_grad_out` says (the oneDNN affine's does), and
autograd makes that memory the ``.grad``.

The reuse contract is explicit, and no reuse is ever seen.  A buffer the graph made and handed
out as a ``.grad`` stays the caller's until the caller gives it back with
:func:`release_grads` — every solver's and learner's ``zero_grad`` does; only then may a later
backward write into it, and only while nothing else reads its memory: a NumPy array kept from
``.g`` (or a view of it), a torch view, or the ``.grad`` tensor itself kept by the caller
(:func:`unshared`).  A buffer something still reads is left to its reader and the backward
takes new memory, so an array kept from ``.g`` keeps the values it had, as in NNabla 1.39,
whose ``zero_grad`` gives a parameter a new array and leaves the old one to the NumPy arrays
holding it; and a step with no array kept reuses the memory as before.  A gradient dropped any
other way (``v.grad = None``) is never written again.
"""

from __future__ import annotations

import sys
from typing import Iterable, Sequence

import torch

from ._numpy_readers import viewed
from ._subgraph import parameter_tensor_of_view
from ._variable import Variable

__all__ = ["release_grads", "take_released", "is_released", "accumulate_grads", "grad_out_buffer",
           "eager_grad_out", "unshared", "mark_zeroing", "is_zeroing", "unmark_zeroing"]

# The buffer a parameter's tensor carries (an attribute of the tensor, so it goes when the
# parameter's tensor is replaced).
_ATTR = "_stadyn_grad_buffer"
# Set on a leaf's value tensor by release_grads (NNabla's zero_grad zeroes the gradient,
# whose ``zeroing`` is then True): see take_released.
_RELEASED = "_stadyn_grad_released"


class _Buffer:
    """A gradient buffer of one parameter and whether a backward may write into it."""

    __slots__ = ("tensor", "free")

    def __init__(self, tensor: torch.Tensor):
        self.tensor = tensor
        self.free = False


def _counts(box: _Buffer) -> tuple[int, int, int]:
    """The references to ``box.tensor``: Python's to its object, C++'s to the tensor and to
    its memory (every tensor over that memory, a NumPy array's among them, holds one).

    The two C++ counts are torch's own (``Tensor._use_count``, ``_storage_Use_Count``: no
    public API gives them; torch is pinned).  A torch without them gives counts no buffer
    is ever alone with (``_ALONE`` is then all -1): every backward takes new memory --
    correct, only slower."""
    t = box.tensor
    try:
        return (sys.getrefcount(t), t._use_count(),
                torch._C._storage_Use_Count(t.untyped_storage()._cdata))
    except AttributeError:       # pragma: no cover - another torch
        return (sys.getrefcount(t), 1 << 30, 1 << 30)


def _alone() -> tuple[int, int, int]:
    probe = _Buffer(torch.empty(1))
    counts = _counts(probe)
    return counts if counts[1] != 1 << 30 else (-1, -1, -1)


# The counts of a tensor nothing but a _Buffer holds, measured as _counts measures (its own
# references, the temporary storage object's): the same code on every interpreter.
_ALONE = _alone()


def unshared(box: _Buffer) -> bool:
    """Whether nothing but ``box`` holds ``box.tensor`` or reads its memory: no NumPy array
    (``.g`` kept), no other tensor over it (a view, ``detach()``), no one holding the tensor.

    Example:
        >>> import torch
        >>> from stadyn.graph._grad_buffers import _Buffer, unshared
        >>> box = _Buffer(torch.zeros(3))
        >>> unshared(box)
        True
        >>> kept = box.tensor.numpy()
        >>> unshared(box)
        False
    """
    return all(n <= alone for n, alone in zip(_counts(box), _ALONE))


def _take(t: torch.Tensor) -> torch.Tensor | None:
    """``t``'s buffer if it was released, still matches ``t`` and nothing else reads it (it is
    in use afterwards); a released buffer something reads is left to its reader."""
    buffer = getattr(t, _ATTR, None)
    if buffer is None or not buffer.free:
        return None
    if not unshared(buffer):
        delattr(t, _ATTR)                # its reader's from now on
        return None
    b = buffer.tensor
    if b.shape != t.shape or b.dtype != t.dtype or b.device != t.device:
        return None
    buffer.free = False
    return b


def _keep(t: torch.Tensor, tensor: torch.Tensor) -> torch.Tensor:
    """Make ``tensor`` ``t``'s buffer (in use)."""
    setattr(t, _ATTR, _Buffer(tensor))
    return tensor


def _same_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether ``a`` is ``b`` or another tensor object over the same memory, as ``b``."""
    return a is b or (a.data_ptr() == b.data_ptr() and a.shape == b.shape
                      and a.stride() == b.stride() and a.dtype == b.dtype)


def release_grads(variables: Iterable[Variable]) -> None:
    """Drop the gradients of ``variables`` and give their buffers back to the graph.

    A later backward may then write a gradient into the memory a released gradient occupied
    instead of allocating, unless something still reads that memory then (see the module
    docstring): a NumPy array kept from ``.g``, or the ``.grad`` tensor kept, keeps its values.
    Solvers' and learners' ``zero_grad`` call it.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> from stadyn.graph import release_grads
        >>> w = sd.Variable.from_numpy_array(np.ones(3), need_grad=True)
        >>> loss = F.sum(w * w)
        >>> loss.forward(); loss.backward()
        >>> w.g.tolist()
        [2.0, 2.0, 2.0]
        >>> release_grads([w])
        >>> w.grad is None
        True
    """
    for v in variables:
        t = v._data
        if v._alias is not None and t is not None and t.grad is not None \
                and t.grad is Variable.grad.fget(v._alias):
            # a view's tensor accumulates into its source's gradient (``leaf_tensor``): keep
            # that link for the next backward, as zeros (NNabla zeroes the shared array; in
            # new memory when an array kept from it reads the old)
            if viewed(t.grad):
                zeros = torch.zeros_like(t.grad)
                Variable.grad.fset(v._alias, zeros)
                t.grad = zeros
            else:
                t.grad.zero_()
            continue
        if t is not None and v.parent is None:
            g = t.grad
            buffer = getattr(t, _ATTR, None)
            if buffer is not None and g is not None and _same_memory(g, buffer.tensor):
                buffer.free = True
            setattr(t, _RELEASED, True)
        v.grad = None


def take_released(v: Variable) -> bool:
    """Whether :func:`release_grads` dropped the leaf ``v``'s gradient since this was last
    asked (NNabla's ``zero_grad`` leaves the gradient zeroed, ``zeroing`` until it is read).

    Example:
        >>> import stadyn as sd
        >>> w = sd.Variable((2,), need_grad=True)
        >>> release_grads([w]); take_released(w), take_released(w)
        (True, False)
    """
    t = v._data
    if t is None or not getattr(t, _RELEASED, False):
        return False
    delattr(t, _RELEASED)
    return True


def is_released(v: Variable) -> bool:
    """Whether :func:`release_grads` dropped the leaf ``v``'s gradient and no reader has taken
    the mark since (:func:`take_released` without taking it): NNabla's ``zeroing`` of a
    gradient ``zero_grad`` cleared, which solvers skip, where a gradient never written is
    zeros they update with.

    Example:
        >>> import stadyn as sd
        >>> w = sd.Variable((2,), need_grad=True)
        >>> is_released(w)
        False
        >>> release_grads([w]); is_released(w), is_released(w)
        (True, True)
    """
    t = v._data
    return t is not None and bool(getattr(t, _RELEASED, False))


def carry_released(old: torch.Tensor, new: torch.Tensor) -> None:
    """Carry :func:`release_grads`' mark from a leaf's value tensor ``old`` to ``new``, which
    replaces it (NNabla's ``W.data.fill(v)`` while a NumPy array reads the old memory): the
    gradient a solver's ``zero_grad`` dropped still reads ``zeroing``.

    Example:
        >>> import torch, stadyn as sd
        >>> from stadyn.graph import renew_value     # which calls it
        >>> w = sd.Variable((2,), need_grad=True)
        >>> release_grads([w]); _ = renew_value(w, torch.zeros(2)); take_released(w)
        True
    """
    if getattr(old, _RELEASED, False):
        setattr(new, _RELEASED, True)


def grad_out_buffer(t: torch.Tensor) -> torch.Tensor:
    """Where a backward program writes ``t``'s gradient (an ``mm.out`` target): ``t``'s
    released buffer, else a new one that becomes its buffer.

    Example:
        >>> import torch
        >>> from stadyn.graph._grad_buffers import grad_out_buffer
        >>> w = torch.zeros(2, 3, requires_grad=True)
        >>> grad_out_buffer(w).shape
        torch.Size([2, 3])
    """
    buffer = _take(t)
    if buffer is None:
        buffer = _keep(t, torch.empty_like(t, memory_format=torch.contiguous_format))
    return buffer


def eager_grad_out(t: torch.Tensor) -> torch.Tensor | None:
    """Where an op's eager backward may write the whole gradient of the leaf tensor ``t`` (an
    ``mm.out`` target): ``t``'s released buffer, else a new one that becomes its buffer; None
    unless autograd will hand that gradient to ``t.grad`` as it is -- no gradient of the
    gradient is being recorded, ``t`` is a plain leaf tensor without a ``.grad``, and nothing
    is traced (a trace's programs are the static plan's to place).

    The backward returns ``buffer.detach()``: autograd keeps a gradient as ``.grad`` without a
    copy only when no other reference holds its tensor object, and the buffer is held by ``t``.
    The ``.grad`` is then that memory, and :func:`release_grads` frees it for the next step
    (reused while nothing reads it, :func:`unshared`), so a large weight's gradient is not
    allocated afresh (page faults) at every eager step.

    Example:
        >>> import torch
        >>> from stadyn.graph._grad_buffers import eager_grad_out
        >>> w = torch.zeros(2, 3, requires_grad=True)
        >>> with torch.no_grad():                 # as in a backward without create_graph
        ...     eager_grad_out(w).shape
        torch.Size([2, 3])
        >>> eager_grad_out(w) is None            # a gradient of the gradient is recorded
        True
    """
    if (torch.is_grad_enabled() or type(t) is not torch.Tensor or not t.is_leaf
            or t.grad is not None or torch._C._len_torch_dispatch_stack() != 0):
        return None
    return grad_out_buffer(t)


def accumulate_grads(leaves: Sequence[Variable], grads: Sequence[torch.Tensor],
                     must_copy: Sequence[bool] | None = None) -> None:
    """Add ``grads`` into the leaves' ``.grad`` (set it where there is none yet).

    A gradient that must be copied (``must_copy``; by default one that is a view) or converted
    (computed in half precision for an fp32 parameter) goes into the leaf's released buffer, or
    a new one that becomes its buffer.  A gradient written into the leaf's buffer and then added
    to an existing ``.grad`` leaves the buffer free again at once (nobody else saw it).

    Example:
        >>> import torch
        >>> from stadyn.graph import Variable
        >>> from stadyn.graph._grad_buffers import accumulate_grads
        >>> w = Variable.from_tensor(torch.zeros(2), need_grad=True)
        >>> accumulate_grads([w], [torch.ones(2)]); accumulate_grads([w], [torch.ones(2)])
        >>> w.grad
        tensor([2., 2.])
    """
    olds, news = [], []
    for k, (v, g) in enumerate(zip(leaves, grads)):
        # a view of a parameter: its gradient is the parameter's as it is now (a zero_grad
        # after the forward dropped the one the view's leaf was given)
        t = parameter_tensor_of_view(v)
        if t is None:
            t = v._data
        if t.grad is None:
            if (must_copy[k] if must_copy is not None else g._base is not None) \
                    or g.dtype != t.dtype:
                spare = _take(t)
                if spare is not None:
                    g = spare.copy_(g)
                else:
                    g = _keep(t, g.to(t.dtype, copy=True))
            t.grad = g
        else:
            olds.append(t.grad)
            news.append(g)
            buffer = getattr(t, _ATTR, None)
            if buffer is not None and g is buffer.tensor:
                buffer.free = True           # an mm.out target, added and not kept
    if olds:
        if all(o.dtype == n.dtype for o, n in zip(olds, news)):
            torch._foreach_add_(olds, news)
        else:
            for o, n in zip(olds, news):
                o.add_(n)


# NNabla's ``zeroing`` of a gradient a user zeroed (``x.grad.zero()``): solvers skip it.
_ZEROED_AT = "_nnabla_zeroed_at"


def mark_zeroing(t: torch.Tensor) -> None:
    """Record that ``t`` was just zeroed (``NdArray.zeroing``).  Kept on the tensor, with its
    version: every NdArray viewing it (``x.grad`` is a new one on each read) sees it, and any
    write (a backward, ``fill``) ends it.

    Example:
        >>> import torch
        >>> mark_zeroing(torch.zeros(2))
    """
    setattr(t, _ZEROED_AT, t._version)


def is_zeroing(t: torch.Tensor) -> bool:
    """Whether ``t`` was zeroed (:func:`mark_zeroing`) and not written since.

    Example:
        >>> import torch
        >>> t = torch.ones(2); mark_zeroing(t); is_zeroing(t)
        True
        >>> t += 1; is_zeroing(t)
        False
    """
    return getattr(t, _ZEROED_AT, None) == t._version


def unmark_zeroing(t: torch.Tensor) -> None:
    """Forget that ``t`` was zeroed (its values were handed out and may be written).

    Example:
        >>> import torch
        >>> unmark_zeroing(torch.zeros(2))
    """
    if hasattr(t, _ZEROED_AT):
        delattr(t, _ZEROED_AT)
