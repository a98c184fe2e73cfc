"""Variables holding one NNabla array in different shapes: ``x.reshape(shape, unlink=True)``.

NNabla 1.39's ``reshape(..., unlink=True)`` gives a new leaf whose ``NdArray``s view ``x``'s
arrays (``Variable::view(shape)``: one ``SyncedArray`` each for the value and the gradient), so
whatever one of them writes the other reads (a backward's gradient of an op output ``x``
included): ``x.d = ints`` (the array takes the int type, and
the view reads the ints), ``x.data.cast(np.int32)``, ``x.data.fill(3)`` with a NumPy array of
``x`` kept, and the same from the view's side, ``x`` an op's output or not; an op output's
view reads what each forward writes, which is float32 again after a cast of either (checked on
NNabla 1.39, case ``nnabla_fidelity_14.reshaped_view__shares_the_array``).

Here the view is a leaf over a ``view`` of ``x``'s tensor, and ``x`` and its views form one
group: when one of them is given a new tensor (a cast to another dtype, new memory for
``fill()``), :func:`follow` makes the others view it in their shapes, an op output among them
included; an op output's runs write into the tensor it holds, and one that gives it new memory
instead (its dtype was changed) makes the others view that (:func:`watch_output`).  A write
that keeps a member floating (one needs a gradient, or a built graph reads one as float data:
``v.d = ints``'s rule, ``_written_types.stays_float``) keeps the whole group floating, and a
gradient dropped by a solver's ``zero_grad`` gives the group one new zero gradient
(:func:`relink_grads`).
``x.data = nd`` (NNabla's ``set_data``: the view keeps the old array) is not followed: Stadyn
copies ``nd`` into the shared memory, which the views then read.

Example:
    >>> import numpy as np, stadyn.compat.nnabla as nn
    >>> x = nn.Variable.from_numpy_array(np.arange(4.0))
    >>> v = x.reshape((2, 2), unlink=True)
    >>> x.d = np.array([5, 6, 7, 8], np.int32)
    >>> v.d.dtype, v.d.tolist()
    (dtype('int32'), [[5, 6], [7, 8]])
"""

from __future__ import annotations

import weakref
from typing import Iterable

import torch

from ...graph import (Variable as _Core, data_of, grad_of, hand_out, holds_array_of, on_renew,
                      stop_reading, value_holder, viewed)
from ...graph import mark_zeroing
from ._own_arrays import own_array
from ...graph import IdentityKeyDict, IdentitySet

__all__ = ["same_variable", "unlinked_view", "share_array", "members", "follow", "watch_output",
           "relink_grads", "viewed_in_group", "note_view", "keep_old_arrays"]

# Each Variable of a group -> the group's members (a weak set shared by all of them).
_GROUPS: "IdentityKeyDict[_Core, IdentitySet]" = IdentityKeyDict()


# Each Variable -> the views ``get_unlinked_variable`` made of it (NNabla's CgVariables over
# its array): what keeps that array when the Variable is given another (``rewire_on``).
_VIEWS: "IdentityKeyDict[_Core, IdentitySet]" = IdentityKeyDict()


def note_view(x: _Core, view: _Core) -> None:
    """Record ``view`` (``x.get_unlinked_variable()``) as holding ``x``'s array."""
    views = _VIEWS.get(x)
    if views is None:
        views = _VIEWS[x] = IdentitySet()
    views.add(view)


def keep_old_arrays(x: _Core) -> None:
    """``x`` is about to take another Variable's array (NNabla 1.39's ``x.rewire_on(h)``:
    ``steal_variable_from_to``, _variable.pyx): its views keep the array it holds now, as
    their own (case ``nnabla_view_43.unlinked__source_rewired``).

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn
        >>> x = nn.Variable.from_numpy_array(np.zeros(2)); u = x.get_unlinked_variable()
        >>> keep_old_arrays(x); u.reset_shape((3,), force=True); x.shape, u.shape
        ((2,), (3,))
    """
    for view in list(_VIEWS.pop(x, ())):
        if view._alias is x:
            stop_reading(view)


def unlinked_view(x: _Core, shape) -> _Core:
    """NNabla's ``x.reshape(shape, unlink=True)``: a leaf of ``x``'s class and ``need_grad``
    viewing ``x``'s value and gradient in ``shape`` (one entry may be -1), the two holding one
    array from now on (:func:`share_array`; an op output's runs write into it:
    :func:`watch_output`).

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn
        >>> x = nn.Variable.from_numpy_array(np.arange(4.0))
        >>> v = unlinked_view(x, (2, -1)); x.data.fill(1.0); v.shape, v.d.tolist()
        ((2, 2), [[1.0, 1.0], [1.0, 1.0]])
    """
    if x.parent is not None:
        own_array(x)                    # (not an input's: _own_arrays.py)
    _Core.g.fget(x)                     # the gradient's buffer, allocated on first read
    value, grad = data_of(x).view(tuple(shape)), grad_of(x).view(tuple(shape))
    leaf = type(x)(tuple(value.shape), need_grad=x.need_grad)
    _Core.data.fset(leaf, value)
    _Core.grad.fset(leaf, grad)
    share_array(x, leaf)
    if x.parent is not None:
        watch_output(x)                 # later runs write into its array, as NNabla's do
        holds_array_of(leaf, x)         # and a reader after x's op reads this run's value
    return leaf


def share_array(x: _Core, view: _Core) -> None:
    """Make ``view`` (a leaf viewing ``x``'s tensor in another shape) one of the Variables
    holding ``x``'s array.

    Example:
        >>> import stadyn as sd
        >>> x, v = sd.Variable((4,)), sd.Variable((2, 2))
        >>> share_array(x, v); len(members(v))
        2
    """
    group = _GROUPS.get(x)
    if group is None:
        group = _GROUPS[x] = IdentitySet([x])
    group.add(view)
    _GROUPS[view] = group


def members(v: _Core) -> Iterable[_Core]:
    """The Variables holding ``v``'s array: ``v`` and those sharing it (:func:`share_array`).

    Example:
        >>> import stadyn as sd
        >>> x = sd.Variable((2,))
        >>> list(members(x)) == [x]
        True
    """
    group = _GROUPS.get(v)
    return (v,) if group is None else tuple(group)


def follow(v: _Core) -> None:
    """``v`` was given a new value tensor: the other Variables holding its array view that
    tensor from now on, each in its own shape (their gradients kept where the dtype allows).

    Example:
        >>> import numpy as np, torch, stadyn as sd
        >>> x = sd.Variable.from_numpy_array(np.zeros(4, np.float32))
        >>> v = sd.Variable((2, 2)); v.data = x.data.view(2, 2); share_array(x, v)
        >>> x.data = torch.arange(4); follow(x); v.d.tolist()
        [[0, 1], [2, 3]]
    """
    group = _GROUPS.get(v)
    if group is None:
        return
    new = data_of(v)
    for other in tuple(group):
        old = data_of(other)
        if other is not v and not (old is not None and old.data_ptr() == new.data_ptr()
                                   and old.dtype == new.dtype):
            grad = grad_of(other)
            _Core.data.fset(other, new.detach().reshape(tuple(other.shape)))
            if grad is not None and _fits(grad, data_of(other)):
                _Core.grad.fset(other, grad)
        if other.parent is not None:
            watch_output(other)


def watch_output(x: _Core) -> None:
    """The op output ``x`` holds an array other Variables view: its runs write into the tensor
    it holds (:func:`stadyn.graph.hand_out`), and a run that gives it new memory instead (its
    dtype was changed, ``v.data.cast(np.float64)`` of a view) makes the others view that.

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> x = F.add_scalar(nn.Variable.from_numpy_array(np.zeros(4, np.float32)), 1.0)
        >>> v = x.reshape((2, 2), unlink=True)   # (calls watch_output(x))
        >>> _ = v.data.cast(np.float64); x.forward(); v.d.dtype, v.d.tolist()
        (dtype('float32'), [[1.0, 1.0], [1.0, 1.0]])
    """
    t = data_of(x)
    hand_out(t)
    grad = grad_of(x)
    if grad is not None:
        hand_out(grad)                  # and a backward writes its gradient into it
    ref = weakref.ref(x)
    on_renew(t, _WATCHED, lambda old, new: _rerun(ref, old, new))


_WATCHED = "stadyn.compat.nnabla: an op output's array viewed by other Variables"


def _rerun(ref: "weakref.ref[_Core]", old: torch.Tensor, new: torch.Tensor) -> None:
    """A run gave the watched op output (``ref``) the new tensor ``new`` in place of ``old``:
    the Variables sharing its array view ``new``, each in its shape (an input of another shape
    with as many elements included).  A run that changed its number of elements gives it
    arrays of its own, value and gradient, as NNabla 1.39's (its views keep the old ones;
    case ``nnabla_fidelity_15.output_view__new_shape``)."""
    x = ref()
    if x is None or data_of(x) is not new:
        return
    if new.numel() != old.numel():
        group = _GROUPS.pop(x, None)
        if group is not None:
            group.discard(x)
            if grad_of(x) is not None:
                _Core.grad.fset(x, None)    # (the views keep the gradient they share)
        return
    _Core.data.fset(x, new)             # (its dtype is the run's again)
    follow(x)
    shared = next((g for g in (grad_of(m) for m in members(x) if m is not x)
                   if g is not None and g.numel() == new.numel()), None)
    if shared is not None:              # and one gradient, in its new shape
        _Core.grad.fset(x, shared.view(tuple(x.shape)))
        hand_out(grad_of(x))


def relink_grads(v: _Core) -> None:
    """``v``'s gradient was dropped (a solver's ``zero_grad``: ``stadyn.graph.release_grads``):
    ``v`` and the Variables holding its array get one new zero gradient, each viewing it in its
    own shape, so that a backward through any of them adds into what the others read (NNabla
    zeroes their one gradient array).  Unlike a dropped gradient, it is there, marked
    ``zeroing``: a solver's ``update()`` with no backward since skips ``v``, as NNabla's.

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn
        >>> from stadyn.graph import release_grads
        >>> x = nn.Variable.from_numpy_array(np.zeros(4, np.float32), need_grad=True)
        >>> v = x.reshape((2, 2), unlink=True)
        >>> release_grads([x]); v.grad.fill(1.0); x.g.tolist()
        [1.0, 1.0, 1.0, 1.0]
    """
    group = _GROUPS.get(v)
    if group is None:
        return
    value = data_of(v)
    dtype = value.dtype if value.is_floating_point() or value.is_complex() else torch.float32
    grad = torch.zeros(value.shape, dtype=dtype, device=value.device)
    for member in tuple(group):
        if member.parent is None and _fits(grad, data_of(member)):
            _Core.grad.fset(member, grad.view(tuple(member.shape)))
            mark_zeroing(grad_of(member))   # ``.grad.zeroing``, as after NNabla's zero_grad


def viewed_in_group(v: _Core, t: torch.Tensor) -> bool:
    """Whether a NumPy array handed out reads ``t`` (``v``'s value tensor) or the value of a
    Variable holding ``v``'s array: ``fill()`` / ``zero()`` of either then give the group new
    memory, leaving the old to that array, as NNabla's do.

    Example:
        >>> import stadyn.compat.nnabla as nn
        >>> from stadyn.graph import data_of
        >>> x = nn.Variable((4,)); v = x.reshape((2, 2), unlink=True)
        >>> viewed_in_group(v, data_of(v))
        False
        >>> kept = x.d
        >>> viewed_in_group(v, data_of(v))
        True
    """
    return viewed(t) or any(viewed(data_of(m)) for m in members(v) if m is not v)


def _fits(grad: torch.Tensor, value: torch.Tensor) -> bool:
    """Whether ``grad`` can stay the gradient of a leaf now holding ``value``."""
    return not value.requires_grad or grad.dtype == value.dtype


def same_variable(a, b) -> bool:
    """Whether ``a`` and ``b`` are one NNabla Variable: the same object, one holding the
    other's value (an unlinked view, a network input a loader replaced), or views of one
    array (the parameters ``get_parameter_or_create`` hands out)."""
    return a is b or value_holder(a) is value_holder(b) or _same_array(a, b)


def _same_array(a, b) -> bool:
    da, db = data_of(a), data_of(b)
    if da is None or db is None:
        return False
    return da.data_ptr() == db.data_ptr() and tuple(da.shape) == tuple(db.shape)
