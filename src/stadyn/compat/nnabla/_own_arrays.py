"""Op outputs hold arrays of their own, as NNabla's: writing one never writes its input.

NNabla 1.39 computes ``F.identity``, ``F.transpose``, ``F.slice`` (``x[i]``), ``F.split``,
``F.broadcast``, ``F.flip``, ``F.stack``, ``F.tile`` and ``F.reshape(..., inplace=False)``
into new memory, so ``y.d = v`` or ``y.d[i] = v`` of their output leaves the input alone; only
``F.reshape`` with its default ``inplace=True`` (and ``Variable.reshape``) shares its input's
array (checked on NNabla 1.39, case ``nnabla_fidelity_17.view_outputs__own_memory``).  Stadyn's
kernels for these ops return torch views of their input, which is what a graph run wants (no
copy); the array is copied only where the user can write it:

* a static graph's output gets memory of its own when its value is handed to the user
  (:func:`own_array`, from ``.d``, ``.data`` and ``y.d = v``); it is then a handed-out tensor,
  into which the later runs write (``stadyn.graph.hand_out``), and which the plan's backward
  reads (``stadyn.graph.saved_as_held``); run eagerly (a new shape's trial, an untraceable
  op), the tensor in the autograd graph takes that memory, so its backward reads it too;
* a dynamic graph's output is copied when the op runs (:func:`owned_output`), so that the ops
  run after it read it, and a backward reaches its gradient ``y.g``, through the copy.

Example:
    >>> import numpy as np
    >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
    >>> a = nn.Variable.from_numpy_array(np.zeros((2, 2), np.float32))
    >>> y = F.transpose(a, (1, 0)); y.forward()
    >>> y.d[0, 1] = 7.0
    >>> a.d.tolist(), y.d.tolist()
    ([[0.0, 0.0], [0.0, 0.0]], [[0.0, 7.0], [0.0, 0.0]])
"""

from __future__ import annotations

import weakref

import torch

from ...graph import (Variable as _Core, data_of, get_auto_forward, hand_out, handed_out,
                      on_renew, renew_value)
from ._readers import reader_functions
from ...graph import IdentityKeyDict, IdentitySet

__all__ = ["own_array", "give_array", "give_ndarray", "owned_output", "shares_by_design",
           "renew_shared_input", "renew_shared_outputs", "holds_input_array"]

# Nodes whose output holds an input's array by the call that made them (NNabla's in-place
# ``F.scatter_nd(..., out=x)``: ``_overwritable.write_in_place``).
_HOLD_INPUT_ARRAYS: "IdentitySet" = IdentitySet()
# The Variable whose array they hold -> those nodes (for renew_shared_outputs).
_HELD_BY: "IdentityKeyDict" = IdentityKeyDict()


def holds_input_array(node, x=None) -> None:
    """Record that the output of ``node`` holds its input's array by design (NNabla's in-place
    ``F.scatter_nd(..., out=x)``, ``x`` the Variable whose array it is, when given):
    :func:`own_array` and :func:`owned_output` leave it so, and :func:`renew_shared_outputs`
    gives it ``x``'s new memory.

    Example:
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> node = F.identity(nn.Variable((2,))).parent
        >>> holds_input_array(node); node in _HOLD_INPUT_ARRAYS
        True
    """
    _HOLD_INPUT_ARRAYS.add(node)
    if x is not None:
        _HELD_BY.setdefault(x, IdentitySet()).add(node)


def shares_by_design(node) -> bool:
    """Whether the op of ``node`` shares its input's array in NNabla 1.39: ``F.reshape`` with
    ``inplace=True`` (its default).

    Example:
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> a = nn.Variable((2, 2))
        >>> shares_by_design(F.reshape(a, (4,)).parent)
        True
        >>> shares_by_design(F.reshape(a, (4,), inplace=False).parent)
        False
    """
    return node.spec.name == "reshape" and bool(node.attrs["inplace"])


def _shares_input_storage(t: torch.Tensor, node) -> bool:
    """Whether ``t`` lies in the memory of one of ``node``'s inputs."""
    ptr = t.untyped_storage().data_ptr()
    return any(data_of(v).untyped_storage().data_ptr() == ptr for v in node.inputs)


def _aliases_input(t: torch.Tensor, node) -> bool:
    """Whether ``t``, an output of ``node``, may share memory with another tensor: a torch
    view, or an input's own tensor."""
    return t._base is not None or _shares_input_storage(t, node)


def own_array(v: _Core) -> None:
    """Give the op output ``v`` memory of its own before its value is handed to the user, when
    its tensor views another's (an input's: Stadyn's transpose, slice, ... kernels return
    views); a handed-out tensor, which the later runs write into.

    Example:
        >>> import numpy as np
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> from stadyn.graph import data_of
        >>> a = nn.Variable.from_numpy_array(np.arange(4.0, dtype=np.float32))
        >>> y = F.identity(a); y.forward(); own_array(y)
        >>> data_of(y).data_ptr() == data_of(a).data_ptr()
        False
    """
    node = v.parent
    if node is None or node in _HOLD_INPUT_ARRAYS:
        return
    if shares_by_design(node):
        _share_input_array(v, node.inputs[0])
        return
    t = data_of(v)
    if t is not None and not handed_out(t):
        _own_readers(v, t)
    if handed_out(t) or not _aliases_input(t, node):
        # (handed out: memory the user holds already, of its own or, for the Variables of
        # ``x.reshape(shape, unlink=True)``, one array they share: _shared_arrays.py)
        return
    _hold(v, t, t.detach().clone(memory_format=torch.contiguous_format))


def _hold(v: _Core, current: "torch.Tensor | None", t: torch.Tensor) -> None:
    """``v`` holds the memory ``t``, handed out to the user: where ``v``'s ``current`` tensor is
    in an autograd graph (a dynamic graph's output, or a static graph run eagerly: a new
    shape's trial, an untraceable op), that tensor keeps its place there and takes the memory,
    so its backward reads what is written into it."""
    if current is not None and current.grad_fn is not None:
        current.data = t
        hand_out(current)
        return
    _Core.data.fset(v, t)
    hand_out(t)


def give_array(v: _Core, t: torch.Tensor) -> None:
    """The op output ``v`` holds ``t`` (an ``nn.NdArray``'s memory) from now on, as NNabla's
    ``y.data = nd`` and ``F.*(..., outputs=[nd])``: ``v`` shows ``t``'s values until it runs,
    and each run writes into ``t`` (a handed-out tensor: ``stadyn.graph.hand_out``).

    Example:
        >>> import numpy as np, torch
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> y = F.add_scalar(nn.Variable.from_numpy_array(np.ones(2, np.float32)), 1.0)
        >>> t = torch.zeros(2); give_array(y, t); y.forward(); t.tolist()
        [2.0, 2.0]
    """
    _hold(v, data_of(v), t)


def give_ndarray(v: _Core, a, t: "torch.Tensor | None" = None) -> None:
    """:func:`give_array` of the ``nn.NdArray`` ``a``'s memory (``t``, a view of it in ``v``'s
    shape, where given: ``y.data = nd``, ``outputs=[nd]`` of a static graph), ``a`` following
    the array ``v`` holds where a run gives ``v`` new memory: an array of another dtype than
    the op's (float16, int) is cast to the op's by its next run, as NNabla 1.39's is, and ``a``
    then holds the output's values in that dtype (in its own shape), one array with ``v`` (what
    is written into either shows in the other and in the backward).

    Example:
        >>> import numpy as np
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> y = F.add_scalar(nn.Variable.from_numpy_array(np.ones(2, np.float32)), 1.0)
        >>> nd = nn.NdArray.from_numpy_array(np.array([7, 8], np.int32))
        >>> give_ndarray(y, nd); y.d.dtype, nd.dtype
        (dtype('int32'), dtype('int32'))
        >>> y.forward(); nd.dtype, nd.data.tolist()
        (dtype('float32'), [2.0, 2.0])
    """
    give_array(v, a._own if t is None else t)
    ref = weakref.ref(a)

    def follow(old: torch.Tensor, new: torch.Tensor) -> None:
        held = ref()
        if held is not None and held._own is not None and new.is_contiguous() and (
                held._own is old or  # (or ``old`` took its memory: an eager run's output)
                held._own.untyped_storage().data_ptr() == old.untyped_storage().data_ptr()):
            held._own = new.view(tuple(held._own.shape))
            hand_out(new)           # the later runs write into it, as into ``a``'s first

    on_renew(data_of(v), ("nn.NdArray given", id(a)), follow)


def _own_readers(v: _Core, t: torch.Tensor) -> None:
    """``v``'s memory ``t`` is about to be handed to the user, who may write it: the outputs
    of the functions reading ``v`` whose value views ``t`` (a static run's transpose, copying
    reshape, ...: NNabla's hold arrays of their own) get memory of their own first."""
    ptr = t.untyped_storage().data_ptr()
    for f in reader_functions(v):
        if shares_by_design(f) or f in _HOLD_INPUT_ARRAYS:
            continue
        for y in f.outputs:
            u = data_of(y) if y is not None else None
            if (u is not None and not handed_out(u)
                    and u.untyped_storage().data_ptr() == ptr):
                own_array(y)


def _share_input_array(v: _Core, x: _Core) -> None:
    """``v`` is ``F.reshape(x, ...)`` (in place): it views the array ``x`` holds, which is
    ``x``'s own (``x[0]``, a slice then such a reshape, views the slice's array, not the
    sliced input's)."""
    if x.parent is None:
        return
    own_array(x)
    held, t = data_of(x), data_of(v)
    if (t.untyped_storage().data_ptr() != held.untyped_storage().data_ptr()
            and held.is_contiguous() and held.numel() == t.numel()):
        view = held.view(tuple(t.shape))
        _Core.data.fset(v, view)
        hand_out(view)
    hand_out(held)                      # the later runs write into ``x``'s memory, ``v``'s too


def renew_shared_input(v: _Core, new: torch.Tensor) -> None:
    """``v``'s value was given the new memory ``new`` (``fill()`` / ``zero()`` / ``v.d = 5``
    while a NumPy array of it is kept): where ``v`` is ``F.reshape(x, ...)`` (in place) of an
    op output or a static graph's leaf ``x``, the two hold one array, which NNabla gives new
    memory, so ``x`` views ``new`` in its shape (and so on up a chain of such reshapes).

    Example:
        >>> import numpy as np
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> x = F.add_scalar(nn.Variable.from_numpy_array(np.zeros(4, np.float32)), 1.0)
        >>> y = F.reshape(x, (2, 2)); y.forward(); kept = y.d
        >>> y.data.fill(5.0); x.d.tolist(), kept.tolist()
        ([5.0, 5.0, 5.0, 5.0], [[1.0, 1.0], [1.0, 1.0]])
    """
    node = v.parent
    while node is not None and shares_by_design(node):
        x = node.inputs[0]
        old = data_of(x)
        if old is None or old.numel() != new.numel() or old.dtype != new.dtype:
            return
        if x.parent is None and get_auto_forward():
            old.data = new.view(tuple(old.shape))   # (a dynamic graph's leaf: in its graph)
            return
        renew_value(x, new.view(tuple(old.shape)))
        if x.parent is not None:
            hand_out(data_of(x))
        node = x.parent


def renew_shared_outputs(v: _Core, new: torch.Tensor, was: int) -> None:
    """``v``'s value was given the new memory ``new`` (its array was at ``was``, a storage's
    address): the outputs that hold ``v``'s array in NNabla -- ``F.reshape(v, ...)`` (in
    place), ``F.scatter_nd(..., out=v)`` -- view ``new`` in their shapes from now on (and so on
    down a chain of them): their values, and the backward of the ops reading them, which reads
    their tensors.

    Example:
        >>> import numpy as np
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> e = F.add_scalar(nn.Variable.from_numpy_array(np.zeros(4, np.float32)), 1.0)
        >>> y = F.reshape(e, (2, 2)); y.forward(); kept = e.d
        >>> e.data.fill(5.0); y.d.tolist(), kept.tolist()
        ([[5.0, 5.0], [5.0, 5.0]], [1.0, 1.0, 1.0, 1.0])
    """
    holders = [f for f in reader_functions(v) if shares_by_design(f)]
    holders += list(_HELD_BY.get(v, ()))
    for f in holders:
        for y in f.outputs:
            t = data_of(y) if y is not None else None
            if (t is None or t.numel() != new.numel() or t.dtype != new.dtype
                    or t.untyped_storage().data_ptr() != was):
                continue
            renew_value(y, new.view(tuple(t.shape)))
            hand_out(data_of(y))
            renew_shared_outputs(y, new, was)


def owned_output(node, data: torch.Tensor | None) -> torch.Tensor | None:
    """The tensor a dynamic run gives the output of ``node``: ``data``, or a copy of it (in
    the autograd graph) where it views an input's memory and NNabla's op does not share.

    Example:
        >>> import torch, stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> node = F.identity(nn.Variable((2,))).parent
        >>> x = data_of(node.inputs[0])
        >>> owned_output(node, x[:1])._base is None
        True
        >>> inner = torch.zeros(2); owned_output(node, inner[:1])._base is inner
        True
    """
    if (data is None or node is None or data._base is None or shares_by_design(node)
            or node in _HOLD_INPUT_ARRAYS):
        return data
    # (a view of the op's own intermediate, as a convolution's or affine's output is, stays)
    if not _shares_input_storage(data, node):
        return data
    return data.clone(memory_format=torch.contiguous_format)
