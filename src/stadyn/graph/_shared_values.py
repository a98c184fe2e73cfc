"""Values the user holds on to: NNabla's arrays are buffers that later runs write into.

In NNabla, ``y.d`` is a NumPy view of ``y``'s buffer, and each forward writes ``y``'s new
value into that buffer, so an array kept from an earlier step shows the latest value (a
monitor averaging ``loss.d`` arrays kept over several steps gets the last loss); and
``h0.data = h.data`` makes two Variables hold one array (an RNN's state carried from one
forward to the next).  Stadyn's runs give op outputs fresh tensors; these helpers keep
NNabla's sharing where the compat layer asks for it:

* :func:`hand_out` marks an output's tensor whose memory the user was given; the runs then
  write the output's new values into it (:func:`set_output`, which the plans call for every
  op output they fill), and a backward its gradient, where that was handed out
  (:func:`set_grad`, for every intermediate's gradient it keeps);
* a static plan's backward reads, for each value it saved that is an op output's, the tensor
  that output holds when the backward runs, where the output's class sets
  ``Variable.reads_held_values`` (:func:`outputs_saved`, :func:`saved_as_held`): the
  memory handed to the user, with what the user wrote there (NNabla's backward reads the
  variables' arrays), not the run's own tensor -- which differs after the first run, or when
  the output was given memory of its own (an NNabla view op's: ``_own_arrays.py``);
* :func:`read_value_of` makes a leaf hold another Variable's value from now on (a view, as
  :meth:`Variable.unlinked` gives a new leaf);
* :func:`renew_value` gives a Variable's value new memory and leaves the old to whoever holds
  it (NNabla's ``W.data.fill(v)``, ``zero()``, ``W.d = scalar``: a NumPy array kept from
  ``W.d`` keeps the old values); graph runs and solvers read a leaf's tensor when they run,
  so they see the new one, and a holder that keeps the tensor itself (a solver's state,
  handed out as a Variable by ``get_states``) asks to be told with :func:`on_renew`;
* :func:`drop_stale` lets an op output's value go when the graph gives it another shape (an
  input of another shape); the run that fills it next tells the holders of the dropped
  tensor, as for any replacement.
"""

from __future__ import annotations

import weakref

import torch

from .._errors import StadynError
from ._deferred_layout import like_saved
from ._grad_buffers import carry_released
from ._variable import Variable
from ._versions import bump_graph_version, layout_changed, shapes_changed
from ._identity_keys import IdentityKeyDict

__all__ = ["hand_out", "handed_out", "set_output", "set_grad", "read_value_of", "value_holder",
           "renew_value", "on_renew", "drop_stale", "outputs_saved", "saved_as_held",
           "stop_reading"]

_ON_RENEW = "_stadyn_on_renew"

_HANDED_OUT = "_stadyn_handed_out"

# Op outputs whose value was dropped for a new shape (drop_stale) -> the dropped tensor, when
# someone asked to be told of its replacement (on_renew): the next set_output tells them.
_DROPPED: "IdentityKeyDict[Variable, torch.Tensor]" = IdentityKeyDict()


def hand_out(t: torch.Tensor) -> None:
    """Record that ``t``'s memory was handed to the user (NNabla's ``y.d``, a NumPy view): the
    next runs write the values of the op output holding ``t`` into it in place, so the array
    the user kept shows them, as NNabla's does (see :func:`set_output`).

    Example:
        >>> import torch
        >>> hand_out(torch.zeros(2))
    """
    setattr(t, _HANDED_OUT, True)


def handed_out(t: torch.Tensor) -> bool:
    """Whether :func:`hand_out` marked ``t``.

    Example:
        >>> import torch
        >>> t = torch.zeros(2); before = handed_out(t); hand_out(t)
        >>> before, handed_out(t)
        (False, True)
    """
    return getattr(t, _HANDED_OUT, False)


def set_output(v: Variable, t: torch.Tensor) -> None:
    """Give the op output ``v`` the value ``t`` a run computed: written into ``v``'s tensor in
    place when that was handed out (:func:`hand_out`) and has ``t``'s shape, dtype and device,
    with no autograd graph on either (``t`` may view a leaf that needs a gradient: a static
    plan's transpose of a parameter, computed under ``no_grad``); an eager run's ``t`` (in its
    autograd graph: a graph holding ``python_function``) takes that memory with the values
    written there, and ``v`` holds ``t`` (NNabla's op writes the array the user holds, and its
    backward reads it: ``y.data = nd``, a ``y.d`` kept); otherwise ``v`` holds ``t``,
    and whoever asked to be told of a handed-out tensor's replacement (:func:`on_renew`) is
    told (an output cast to float64 between runs gets its float32 value back in new memory).

    Example:
        >>> import torch, stadyn as sd, stadyn.functions as F
        >>> from stadyn.graph import data_of
        >>> y = F.add_scalar(sd.Variable((2,)), 1.0)
        >>> y.forward(); kept = data_of(y); hand_out(kept)
        >>> set_output(y, torch.full((2,), 5.0)); kept.tolist(), data_of(y) is kept
        ([5.0, 5.0], True)
    """
    old = v._data
    if old is None:
        old = _DROPPED.pop(v, None)     # (dropped for a new shape: its holders are told)
    if (old is not None and old is not t and handed_out(old) and old.shape == t.shape
            and old.dtype == t.dtype and old.device == t.device):
        if t.grad_fn is None and not old.requires_grad:
            with torch.no_grad():       # (``t`` may view a leaf that needs a gradient)
                old.copy_(t)
            return
        if t.grad_fn is not None:
            # an eager run's output, in its autograd graph: it takes the memory handed out,
            # the values written there first, so the array the user holds shows this run too
            was = t.data_ptr()
            old.data.copy_(t.data)
            t.data = old.data
            hand_out(t)
            v._data = t
            _saved_result_reads(t, was)
            return
    if v.shape != tuple(t.shape):
        shapes_changed()
    v._data = t
    if old is not None and old is not t and handed_out(old):
        _tell_renewed(old, t)


def outputs_saved(fw, n_fill: int) -> tuple:
    """Where a forward program (``fw``, an fx ``GraphModule`` whose first ``n_fill`` outputs
    are the values it gives Variables, the rest the values its backward reads) saves a value
    it also gives a Variable: ``(j, k)`` pairs, the ``j``-th saved value being the ``k``-th
    given (one tensor, the same node of its graph).

    Example:
        >>> import torch, torch.fx as fx
        >>> fw = fx.symbolic_trace(lambda x: (x.t(), x * 2, x.t()))
        >>> outputs_saved(fw, 2)        # (x.t() twice is two nodes)
        ()
        >>> g = fx.Graph(); x = g.placeholder("x"); y = g.call_function(torch.exp, (x,))
        >>> _ = g.output((y, y)); outputs_saved(fx.GraphModule({}, g), 1)
        ((0, 0),)
    """
    output = next(n for n in reversed(fw.graph.nodes) if n.op == "output")
    outs = list(output.args[0])
    given: dict = {}
    for k, node in enumerate(outs[:n_fill]):
        given.setdefault(node, k)
    return tuple((j, given[node]) for j, node in enumerate(outs[n_fill:]) if node in given)


def saved_as_held(saved: tuple, pairs: tuple, fill) -> tuple:
    """The values a backward reads: ``saved`` (what the forward program saved), each one the
    program also gave an op output (``pairs``, from :func:`outputs_saved`; ``fill``, the
    Variables given values) replaced by the tensor that output holds now, where that is
    another of the same shape, dtype and device: memory handed to the user, which the later
    runs write into (:func:`set_output`) and the user may have written (``y.d = v``; NNabla's
    backward reads the arrays the variables hold), in the layout the program saved it in where
    a reader converted a channels-last value (``_deferred_layout.like_saved``).

    Example:
        >>> import torch, stadyn as sd, stadyn.functions as F
        >>> y = F.exp(sd.Variable((2,)))
        >>> run = torch.ones(2); y._data = torch.full((2,), 5.0)
        >>> saved_as_held((run,), ((0, 0),), [y])[0].tolist()
        [5.0, 5.0]
    """
    read = None
    for j, k in pairs:
        now, was = fill[k]._data, saved[j]
        if (now is not None and now is not was and now.shape == was.shape
                and now.dtype == was.dtype and now.device == was.device):
            if read is None:
                read = list(saved)
            read[j] = like_saved(now.detach(), was)
    return saved if read is None else tuple(read)


def set_grad(v: Variable, g: torch.Tensor) -> None:
    """Give the op output ``v`` the gradient ``g`` a backward computed: written into ``v``'s
    gradient tensor in place when that was handed out (:func:`hand_out`: a Variable viewing
    ``v``'s arrays, NNabla's ``v.reshape(shape, unlink=True)``, reads it) and has ``g``'s
    shape and device; otherwise ``v`` holds ``g`` (cast to ``v``'s dtype).

    Example:
        >>> import torch, stadyn as sd, stadyn.functions as F
        >>> from stadyn.graph import grad_of
        >>> y = F.add_scalar(sd.Variable((2,)), 1.0)
        >>> kept = torch.zeros(2); hand_out(kept); y.grad = kept
        >>> set_grad(y, torch.full((2,), 3.0)); kept.tolist(), grad_of(y) is kept
        ([3.0, 3.0], True)
    """
    old = v._grad
    if (old is not None and old is not g and handed_out(old)
            and not old.requires_grad and old.shape == g.shape and old.device == g.device):
        with torch.no_grad():
            old.copy_(g)
        return
    v._grad = g if g.dtype == v._dtype else g.to(v._dtype)


def drop_stale(v: Variable) -> None:
    """The graph has given the op output ``v`` a shape (``v._shape``): a value of another shape
    goes (the next run fills ``v``; a value of ``v``'s shape stays), and whoever asked to be
    told of its replacement (:func:`on_renew`) is told when :func:`set_output` fills it (a
    Variable viewing its array in another shape, NNabla's ``x.reshape(shape, unlink=True)``,
    follows it).

    Example:
        >>> import torch, stadyn as sd, stadyn.functions as F
        >>> from stadyn.graph import data_of
        >>> y = F.add_scalar(sd.Variable((2,)), 1.0)
        >>> y.forward(); told = []
        >>> on_renew(data_of(y), "me", lambda old, new: told.append(tuple(new.shape)))
        >>> hand_out(data_of(y)); drop_stale(y); y._data is None    # its shape: kept
        False
        >>> y._shape = (1, 2); drop_stale(y); y._data is None       # another shape: dropped
        True
        >>> set_output(y, torch.ones(1, 2)); told
        [(1, 2)]
    """
    old = v._data
    if old is None or tuple(old.shape) == v._shape:
        return
    v._data = None
    if getattr(old, _ON_RENEW, None):
        _DROPPED[v] = old


def read_value_of(leaf: Variable, var: Variable) -> None:
    """Make ``leaf`` hold ``var``'s value from now on, as :meth:`Variable.unlinked` gives a new
    leaf: every read of it (and every graph run it feeds) sees ``var``'s current value, and
    writing it writes ``var``'s memory.  NNabla's ``x.data = y.data``.  Nothing changes when
    ``var`` already reads ``leaf``'s value.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> h0 = sd.Variable((2,))
        >>> h = F.add_scalar(h0, 1.0)
        >>> read_value_of(h0, h)
        >>> h.forward(); h.forward(); h.d.tolist()
        [2.0, 2.0]
    """
    if leaf.parent is not None:
        raise StadynError("read_value_of: only a leaf Variable (no parent op) can hold "
                          "another Variable's value")
    target = var
    while target._alias is not None:
        target = target._alias
    if target is leaf:
        return
    if tuple(target.shape) != tuple(leaf.shape):
        raise StadynError(f"read_value_of: shape {tuple(target.shape)} is not the leaf's "
                          f"{tuple(leaf.shape)}")
    leaf._alias = target
    leaf._data = None
    layout_changed()
    bump_graph_version()


def stop_reading(leaf: Variable) -> None:
    """End the view ``leaf``'s reading of the Variable it views (:meth:`Variable.unlinked`,
    :func:`read_value_of`): from now on it holds, as its own, the tensor and gradient that
    Variable holds now (the same memory), whatever that Variable is given later.  NNabla's
    view after ``v.rewire_on(h)``: ``v`` takes ``h``'s array, the view keeps ``v``'s old one.

    Example:
        >>> import torch, stadyn as sd
        >>> w = sd.Variable((2,)); u = w.unlinked()
        >>> stop_reading(u); w.data = torch.ones(3); u.shape, u.d.tolist()
        ((2,), [0.0, 0.0])
    """
    source = leaf._alias
    if source is None:
        return
    value, grad = Variable.data.fget(source), Variable.grad.fget(source)
    leaf._alias = None
    leaf._data = None
    Variable.data.fset(leaf, value)
    if grad is not None and leaf._need_grad:
        Variable.grad.fset(leaf, grad)
    bump_graph_version()


def value_holder(v: Variable) -> Variable:
    """The Variable whose tensor ``v`` reads: ``v`` itself, or for a view
    (:meth:`Variable.unlinked`, :func:`read_value_of`) the Variable it views.

    Example:
        >>> import stadyn as sd
        >>> w = sd.Variable((2,))
        >>> value_holder(w.unlinked()) is w
        True
    """
    while v._alias is not None:
        v = v._alias
    return v


def on_renew(t: torch.Tensor, key: object, callback) -> None:
    """Call ``callback(old, new)`` when :func:`renew_value` (or a run's :func:`set_output`)
    replaces the tensor ``t`` (``old``) by ``new`` in the Variable holding it, and again at
    every later replacement: for a holder that keeps ``t`` itself (a solver's state, a
    Variable viewing an op output's array).  One callback per ``key``: registering a key again
    replaces its callback.

    Example:
        >>> import torch
        >>> on_renew(torch.zeros(2), "me", lambda old, new: None)
    """
    callbacks = getattr(t, _ON_RENEW, None)
    if callbacks is None:
        callbacks = {}
        setattr(t, _ON_RENEW, callbacks)
    callbacks[key] = callback


def renew_value(v: Variable, tensor: torch.Tensor) -> torch.Tensor:
    """Give ``v``'s value (a view's: the viewed Variable's) the new memory ``tensor``, of the
    same shape and dtype, keeping its gradient; the old tensor is left to whoever still holds
    it.  Returns the tensor now held (a leaf's, with ``requires_grad`` as before; a dynamic
    graph's output keeps its tensor, in the autograd graph, which takes the new memory; its
    op's backward, where it reads that output, reads the new memory: ``_saved_result_reads``).

    Example:
        >>> import numpy as np, torch, stadyn as sd
        >>> w = sd.Variable.from_numpy_array(np.ones(2), need_grad=True)
        >>> kept = w.d
        >>> renew_value(w, torch.zeros(2)).requires_grad, kept.tolist(), w.d.tolist()
        (True, [1.0, 1.0], [0.0, 0.0])
    """
    holder = value_holder(v)
    old = Variable.data.fget(holder)
    if tuple(tensor.shape) != tuple(old.shape) or tensor.dtype != old.dtype:
        raise StadynError(f"renew_value: a {tensor.dtype} {tuple(tensor.shape)} tensor cannot "
                          f"replace the {old.dtype} {tuple(old.shape)} value")
    if old.grad_fn is not None:
        # a dynamic graph's output, which its backward reads (NNabla's reads the new memory):
        # the tensor keeps its place in the autograd graph and takes the new memory, the old
        # left to the NumPy arrays over it (each holds a tensor of its own: numpy_reader)
        was = old.data_ptr()
        old.data = tensor
        _saved_result_reads(old, was)
        return old
    grad = Variable.grad.fget(holder)
    Variable.data.fset(holder, tensor)
    new = Variable.data.fget(holder)
    carry_released(old, new)            # a ``zero_grad``'s gradient still reads ``zeroing``
    if grad is not None:
        Variable.grad.fset(holder, grad)
    _tell_renewed(old, new)
    return new


_READS_HELD = "stadyn_saved_result_reads_held"


def _saved_result_reads(out: torch.Tensor, was: int) -> None:
    """The dynamic graph's output ``out`` took new memory (:func:`renew_value`): the op that
    computed it, where its backward reads its own output (``exp``, ``tanh``, ``softmax``: torch
    saved that output as a tensor of its own, over the old memory), reads ``out``'s memory
    when the backward runs instead, as NNabla's backward reads the output's array (``was``:
    where the output's memory was).  Only an output given new memory pays for this; hooks on
    the op's saved output, set once."""
    fn = out.grad_fn
    if fn is None or fn.metadata.get(_READS_HELD):
        return
    fn.metadata[_READS_HELD] = True
    held = weakref.ref(out)
    saved = [getattr(fn, name) for name in dir(fn) if name.startswith("_raw_saved_result")]
    # an autograd.Function's (NNabla's ReLU, swish, prod: ops/_output_grads.py) saves its
    # output among its tensors: those over the output's old memory, of its shape
    raw = getattr(fn, "_raw_saved_tensors", None)
    if raw:
        try:
            unpacked = fn.saved_tensors
        except RuntimeError:            # (freed by a backward already)
            unpacked = ()
        saved += [r for r, t in zip(raw, unpacked)
                  if t.data_ptr() == was and t.shape == out.shape]
    for s in saved:
        try:
            s.register_hooks(_keep, lambda was, held=held: _read_held(held, was))
        except RuntimeError:            # (freed by a backward already, or hooked before)
            pass


def _keep(t: torch.Tensor) -> torch.Tensor:
    return t


def _read_held(held, was: torch.Tensor) -> torch.Tensor:
    """What a hooked saved output unpacks to: the output's memory now, where the output is
    still alive and of the saved shape, else what was saved."""
    out = held()
    if out is None or out.shape != was.shape or out.dtype != was.dtype:
        return was
    return out.detach()


def _tell_renewed(old: torch.Tensor, new: torch.Tensor) -> None:
    """``new`` replaced ``old`` in the Variable holding it: the callbacks registered on ``old``
    (:func:`on_renew`) move to ``new`` and are called."""
    callbacks = getattr(old, _ON_RENEW, None)
    if callbacks is not None:
        setattr(new, _ON_RENEW, callbacks)
        for callback in list(callbacks.values()):
            callback(old, new)
