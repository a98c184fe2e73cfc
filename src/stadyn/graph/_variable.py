"""The graph's IR: Variables and function nodes (the counters that tell plans to re-check are
in :mod:`._versions`; a Variable's value and gradient accessors, mixed in, in
:mod:`._variable_arrays`).

Every op call creates one :class:`FunctionNode` whose outputs are new :class:`Variable` objects
(:func:`stadyn.graph.apply`, in ``_apply.py``).  In dynamic mode (:func:`stadyn.auto_forward`) the
op runs at once on torch tensors and torch's autograd records it; in static mode (the default)
the op only infers its output shapes and :meth:`Variable.forward` later runs the subgraph through
a lowered plan (``_runner.py``).

``Variable.forward`` / ``.backward`` reach the runner (above this module) through one import
inside each method, the only imports here that point up: a Variable offering ``forward()`` is
the programming model NNabla's users expect (its Variable calls into its engine the same way).
"""

from __future__ import annotations

import weakref
from typing import Any, Callable, Sequence

import numpy as np
import torch

from .._errors import StadynError
from ._context import get_current_context
from ._dtypes import _TORCH_TO_NP, _normalise_shape, to_torch_dtype
from ._deferred_layout import detached
from ._location import format_location
from ._padding import pad_sequences
from ._recompute import recompute_now
from ._variable_arrays import VariableArrays, _zeros
from ._versions import _marks, bump_graph_version, layout_changed, shapes_changed

__all__ = ["Variable", "FunctionNode", "topological_nodes", "to_torch_dtype", "on_unlinked"]

# called as hook(view, source) by every Variable.unlinked (a front end's record of its views:
# compat.nnabla's ``==`` and ``hash()`` take a view for its source, as NNabla's)
_UNLINKED_HOOKS: list = []


def on_unlinked(hook: Callable[[Any, Any], None]) -> None:
    """Call ``hook(view, source)`` for every view :meth:`Variable.unlinked` makes from now on.

    Example:
        >>> import stadyn as sd
        >>> seen = []
        >>> def hook(view, source): seen.append(source)
        >>> on_unlinked(hook)
        >>> w = sd.Variable((2,)); _ = w.unlinked(); _UNLINKED_HOOKS.remove(hook)
        >>> seen == [w]
        True
    """
    _UNLINKED_HOOKS.append(hook)


class Variable(VariableArrays):
    """A node of the graph holding an N-d array, its gradient and the function that made it.

    In static mode a Variable made by an op holds only its shape until the graph is run with
    :meth:`forward`; leaves (inputs, parameters) hold data from the start.  ``.d`` and ``.g`` are
    NumPy views of the data and gradient (on CPU they share memory; assigning writes into the
    buffer); ``.data`` and ``.grad`` are the torch tensors.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable((2, 3))
        >>> y = F.sum(x * 2.0)
        >>> x.d = np.arange(6).reshape(2, 3)
        >>> y.forward()
        >>> float(y.d)
        30.0
    """

    __slots__ = ("_data", "_grad", "_shape", "_dtype", "_need_grad", "_persistent", "parent",
                 "_index", "graph_name", "_plan", "_plans", "_alias", "_seq", "recompute",
                 "_stops_grad", "_starts_grad", "_kept", "_half_copy", "__weakref__")

    #: Whether a static plan's backward reads the value an op output holds when the backward
    #: runs (memory the user was handed and may have written, or another run wrote) instead of
    #: the value its own forward saved.  False: a backward differentiates the forward it belongs
    #: to (CNTK's ``backward(state, ...)`` after another Function's forward).  A front end whose
    #: original reads the arrays its variables hold (NNabla) sets it on its Variable class.
    reads_held_values = False

    #: Whether ``backward()`` from a Variable that was not a root of its last forward (an inner
    #: one, after ``loss.forward()``) warns that it runs that Variable's forward again first
    #: (a RuntimeWarning: the run costs a forward, and its random ops draw anew: only graphs of
    #: a front end with ``reads_held_values`` replay the forward's draws).  A front end whose
    #: original reads the forward's values there and says nothing (NNabla) sets it False.
    warns_forward_again = True

    def __init__(self, shape: Sequence[int] = (), need_grad: bool | None = False,
                 dtype: Any = np.float32):
        shape = _normalise_shape(shape)
        tdtype = to_torch_dtype(dtype)
        need_grad = bool(need_grad) and tdtype.is_floating_point
        self._data: torch.Tensor | None = _zeros(shape, tdtype, need_grad)
        self._grad: torch.Tensor | None = None
        self._shape = shape
        self._dtype = tdtype
        self._need_grad = need_grad
        self._persistent = False
        self.parent: FunctionNode | None = None
        self._index = 0
        self.graph_name: str | None = None
        self._plan = None
        self._plans = None
        self._alias: Variable | None = None
        self._stops_grad = False    # an op output set need_grad=False: no gradient through it
        self._starts_grad = False   # an op output set need_grad=True: gradients reach it
        self._seq: Variable | None = None
        self.recompute = recompute_now()

    @classmethod
    def _from_node(cls, parent: "FunctionNode", index: int, shape: Sequence[int],
                   dtype: torch.dtype, need_grad: bool, data: torch.Tensor | None) -> "Variable":
        v = cls.__new__(cls)
        v._data = data
        v._grad = None
        v._shape = shape
        v._dtype = dtype
        v._need_grad = need_grad
        v._persistent = False
        v.parent = parent
        v._index = index
        v.graph_name = None
        v._plan = None
        v._plans = None
        v._alias = None
        v._stops_grad = False
        v._starts_grad = False
        v._seq = None
        v.recompute = recompute_now()
        return v

    @classmethod
    def from_tensor(cls, tensor: torch.Tensor, need_grad: bool | None = None) -> "Variable":
        """A leaf Variable holding ``tensor`` (not copied)."""
        v = cls._from_node(None, 0, tuple(tensor.shape), tensor.dtype, False, None)  # type: ignore[arg-type]
        layout_changed()
        need = tensor.requires_grad if need_grad is None else bool(need_grad)
        v._data = tensor.detach().requires_grad_(need and tensor.dtype.is_floating_point)
        v._need_grad = v._data.requires_grad
        return v

    @classmethod
    def from_numpy_array(cls, data: Any, grad: Any = None, need_grad: bool | None = False,
                         dtype: Any = None) -> "Variable":
        """A leaf Variable holding a copy of ``data`` (a NumPy array or anything array-like).

        Example:
            >>> import numpy as np, stadyn as sd
            >>> sd.Variable.from_numpy_array(np.ones((2, 2))).shape
            (2, 2)
        """
        arr = np.asarray(data)
        if dtype is not None:
            arr = arr.astype(dtype)
        elif arr.dtype == np.float64:
            arr = arr.astype(np.float32)
        t = torch.tensor(arr, device=get_current_context().device)   # a copy; 0-d stays 0-d
        v = cls.from_tensor(t, need_grad=bool(need_grad))
        if grad is not None:
            v.g = grad
        return v

    # -- shape and type -------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        """The dimensions; a view's (:meth:`unlinked`) are its source's as they are now (a
        ``reset_shape`` or new data of the source shows in the view, as NNabla's one array)."""
        if self._alias is not None:
            return self._view_dims()
        data = self._data
        return tuple(data.shape) if data is not None else tuple(self._shape)

    def _view_dims(self) -> tuple[int, ...]:
        """A view's shape read from its source; its own record follows (ops built on it and
        graph runs read ``_shape``)."""
        source = self._alias
        while source._alias is not None:
            source = source._alias
        dims = source.shape
        if dims != self._shape:
            self._shape = dims
        return dims

    def _dims(self) -> tuple[int, ...]:
        return self._view_dims() if self._alias is not None else self._shape

    @property
    def ndim(self) -> int:
        return len(self._dims())

    @property
    def size(self) -> int:
        return int(np.prod(self._dims(), dtype=np.int64))

    def size_from_axis(self, axis: int = -1) -> int:
        """Product of the dimensions from ``axis`` on (NNabla's ``size_from_axis``)."""
        return int(np.prod(self._dims()[axis:], dtype=np.int64))

    @property
    def dtype(self):
        """The element type (a NumPy dtype where NumPy has one, else the torch dtype)."""
        return _TORCH_TO_NP.get(self._dtype, self._dtype)

    @property
    def torch_dtype(self) -> torch.dtype:
        return self._dtype

    @property
    def name(self) -> str | None:
        """The name a program gives (None until named).  Stadyn's own code reads
        ``graph_name`` (a parameter's registry path; None: anonymous), the same here; a front
        end showing another name (NNabla's ``''``) overrides ``name`` alone.

        >>> x = Variable((2,)); x.name = "x"; x.name, x.graph_name
        ('x', 'x')
        """
        return self.graph_name

    @name.setter
    def name(self, value: str | None) -> None:
        self.graph_name = value

    def __len__(self) -> int:
        dims = self._dims()
        if not dims:
            raise TypeError("len() of a 0-d Variable")
        return dims[0]

    def __repr__(self) -> str:
        made = f", parent={self.parent.spec.name}" if self.parent is not None else ""
        name = f"{self.graph_name!r}, " if self.graph_name else ""
        return f"<Variable {name}shape={self.shape}, need_grad={self.need_grad}{made}>"

    # -- need_grad ------------------------------------------------------------------------------
    @property
    def need_grad(self) -> bool:
        return self._need_grad

    @need_grad.setter
    def need_grad(self, flag: bool) -> None:
        """Set on an op's output, ``False`` stops the gradient there (NNabla's rule; static
        graphs are re-lowered, ``True`` lifts it; a backward from the output itself still
        reaches its inputs), ``True`` makes gradients reach it even where
        its inputs need none (``nn.grad([y], [x])`` of an ``x`` from data: WGAN-GP's penalty)."""
        _marks[0] += bool(flag) != self._need_grad    # a later backward reads it (_grad_marks.py)
        self._need_grad = flag = bool(flag)
        layout_changed()
        if self.parent is None and self._data is not None and self._data.dtype.is_floating_point:
            kept = Variable.grad.fget(self)   # held by the tensor or by the Variable: it stays
            self._data.requires_grad_(flag)
            Variable.grad.fset(self, kept)
        elif self.parent is not None:
            if self._stops_grad == flag or self._starts_grad != flag:
                self._stops_grad, self._starts_grad = not flag, flag
                _marks[0] += 1      # plans are keyed by the marks (graph/_runner.py)
            # (a dynamic value keeps its autograd history: a later op reads it detached, and a
            # backward cuts it there, _grad_marks.cut_stopped)
            if (flag and self._data is not None and not self._data.requires_grad
                    and self._data.is_floating_point()):
                self._data = detached(self._data).requires_grad_(True)

    # -- persistent -----------------------------------------------------------------------------
    @property
    def persistent(self) -> bool:
        """Keep this intermediate's value through ``forward(clear_buffer=True)`` (and
        ``clear_no_need_grad``).  Changing it invalidates the cached plans, which were built for
        the old set of kept values.

        Example:
            >>> import numpy as np, stadyn as sd, stadyn.functions as F
            >>> x = sd.Variable.from_numpy_array(np.array([1.0, -2.0]))
            >>> y = x * 2.0
            >>> loss = F.sum(y)
            >>> loss.forward(clear_buffer=True)
            >>> y.persistent = True
            >>> loss.forward(clear_buffer=True)
            >>> y.d.tolist()
            [2.0, -4.0]
        """
        return self._persistent

    @persistent.setter
    def persistent(self, flag: bool) -> None:
        flag = bool(flag)
        if flag != self._persistent:
            self._persistent = flag
            bump_graph_version()

    # -- the sequence axis (see _sequence.py) ---------------------------------------------------
    @property
    def sequence_lengths(self) -> "Variable | None":
        """For a Variable with a sequence axis (axis 1, after the batch axis), the int64
        Variable ``(B,)`` of its sequences' lengths; None for one without.

        Example:
            >>> import numpy as np, stadyn as sd
            >>> x = sd.sequence.input_variable((2,))
            >>> x.d = [np.ones((3, 2)), np.ones((1, 2))]     # a list of sequences
            >>> x.shape, x.sequence_lengths.d.tolist()
            ((2, 3, 2), [3, 1])
        """
        return self._seq

    def _set_sequences(self, sequences: Sequence[Any]) -> None:
        """Feed sequences of different lengths: pad them and set the lengths."""
        if self.parent is not None:
            raise StadynError("only an input Variable can be fed sequences")
        dtype = self.dtype if isinstance(self.dtype, np.dtype) else np.float32
        padded, lengths = pad_sequences(sequences, self._shape[2:], dtype)
        device = Variable.data.fget(self).device
        Variable.data.fset(self, torch.from_numpy(padded).to(device))
        Variable.data.fset(self._seq, torch.from_numpy(lengths).to(device))

    # -- graph ----------------------------------------------------------------------------------
    def unlinked(self, need_grad: bool | None = None) -> "Variable":
        """A leaf Variable sharing this one's value and gradient (as NNabla's) that cuts the
        graph: a backward through it accumulates into the gradient and stops there.

        Example:
            >>> import numpy as np, stadyn as sd, stadyn.functions as F
            >>> x = sd.Variable.from_numpy_array(np.ones(2), need_grad=True)
            >>> h = F.identity(x).unlinked()
            >>> h.parent is None
            True
        """
        v = Variable._from_node(None, 0, self._shape, self._dtype,  # type: ignore[arg-type]
                                bool(need_grad), None)
        v._alias = self
        v.persistent = self.persistent
        for hook in _UNLINKED_HOOKS:
            hook(v, self)
        return v

    def rewire_on(self, var: "Variable") -> None:
        """Make ``var``'s parent this Variable's parent, this Variable its output in ``var``'s
        place (splices a graph in place of ``self``: what was computed from this Variable is
        computed from ``var``'s op, and walks from that op reach this Variable's readers).  It
        takes ``var``'s ``need_grad``, set or not (an output set ``need_grad=False`` stops the
        gradients there, one never set does not), as NNabla's.

        Example:
            >>> import stadyn as sd, stadyn.functions as F
            >>> x, y = sd.Variable((2,)), sd.Variable((2,))
            >>> z = F.tanh(x)
            >>> z.rewire_on(F.relu(y))
            >>> z.parent.name, z.parent.outputs[0] is z
            ('relu', True)
        """
        node = var.parent
        self.parent = node
        self._index = var._index
        self._data = var._data
        if (self._need_grad, self._stops_grad, self._starts_grad) != (
                var._need_grad, var._stops_grad, var._starts_grad):
            self._need_grad = var._need_grad
            self._stops_grad, self._starts_grad = var._stops_grad, var._starts_grad
            _marks[0] += 1      # plans are keyed by the marks (graph/_runner.py)
        if node is not None:
            outs = list(node._outputs)
            outs[var._index] = weakref.ref(self)
            node._outputs = tuple(outs)
        bump_graph_version()

    def rewire_as(self, var: "Variable") -> None:
        """Make this Variable ``var`` from now on: the output of ``var``'s op (in ``var``'s
        place, so re-inferred shapes reach it), with ``var``'s shape and sequence axis.  What
        was computed from this Variable is computed from ``var``'s op; ``var`` itself should
        not be used afterwards.

        Example:
            >>> import stadyn as sd, stadyn.functions as F
            >>> x, y = sd.Variable((2,)), sd.Variable((3,))
            >>> z = F.tanh(x)
            >>> z.rewire_as(F.relu(y))
            >>> z.shape, z.parent.name
            ((3,), 'relu')
        """
        Variable.rewire_on(self, var)      # (not a front end's own rewire_on)
        self._shape, self._dtype, self._seq = var._shape, var._dtype, var._seq

    def forward(self, clear_buffer: bool = False, clear_no_need_grad: bool = False,
                function_pre_hook: Callable | None = None,
                function_post_hook: Callable | None = None) -> None:
        """Compute this Variable from the leaves of its graph.

        ``clear_buffer`` keeps only this output, ``persistent`` variables and those the program
        holds (inference); ``clear_no_need_grad`` also keeps what a :meth:`backward` needs.
        The graph is lowered once to generated code and cached.  ``function_pre_hook`` /
        ``function_post_hook`` are called with each op's node before / after it runs, after the
        global ones (``stadyn.graph.set_function_pre_hook``); the graph then runs op by op.
        """
        from ._runner import forward_roots, run_forward     # (the runner is above: the top)
        run_forward(forward_roots(self), clear_buffer, clear_no_need_grad,  # (sink's inputs too)
                    function_pre_hook=function_pre_hook, function_post_hook=function_post_hook)

    def backward(self, grad: Any = 1, clear_buffer: bool = False,
                 function_pre_hook: Callable | None = None,
                 function_post_hook: Callable | None = None) -> None:
        """Accumulate gradients of this Variable into the ``.grad`` of the leaves it depends on.

        ``grad`` is the gradient of the objective w.r.t. this Variable (a scalar, an array, or None
        to use the current ``.g``).  Gradients accumulate until a solver's ``zero_grad``.
        ``clear_buffer`` frees the values the program does not hold (then forward again).
        ``function_pre_hook`` / ``function_post_hook`` are called with each op's node before /
        after its backward runs (a static graph's backward then runs op by op).
        """
        from ._runner import backward          # the runner is above this module (see the top)
        backward(self, grad, clear_buffer, function_pre_hook, function_post_hook)

    def visit(self, f: Callable[["FunctionNode"], Any]) -> None:
        """Call ``f(node)`` for every function node this Variable depends on, inputs first."""
        for node in topological_nodes([self]):
            f(node)

    def clear_all_graph_links(self) -> None:
        """Forget the graph behind this Variable (it becomes a leaf holding its value).

        The graph version moves on, so a plan of a graph this Variable is in (built with its
        op inside) is built again: the next forward reads the value held here, as NNabla's.

        Example:
            >>> import numpy as np, stadyn as sd, stadyn.functions as F
            >>> x = sd.Variable.from_numpy_array(np.ones(2, np.float32))
            >>> h = F.mul_scalar(x, 2.0); y = F.add_scalar(h, 1.0); y.forward()
            >>> h.clear_all_graph_links(); h.d = np.array([10.0, 20.0], np.float32)
            >>> y.forward(); y.d.tolist()
            [11.0, 21.0]
        """
        had_parent = self.parent is not None
        self.parent = None
        self._plan = None
        if self._data is not None:      # (a channels-last plan's value stays deferred)
            self._data = detached(self._data)
        if had_parent:
            bump_graph_version()        # plans and cast_counters' walks are keyed by it

    def reset_shape(self, shape: Sequence[int], force: bool = False) -> None:
        """Reshape a leaf's buffer (reallocating; the value is lost).  A view's
        (:meth:`unlinked`) reshapes its source, as NNabla's one array.

        Example:
            >>> import stadyn as sd
            >>> w = sd.Variable((1, 3)); u = w.unlinked()
            >>> u.reset_shape((2, 3)); w.shape, u.shape
            ((2, 3), (2, 3))
        """
        if self._alias is not None:
            self._alias.reset_shape(shape, force)
            return
        shape = _normalise_shape(shape)
        if shape == self._shape:
            return
        if self.parent is not None and not force:
            raise StadynError("reset_shape on a Variable made by a function; pass force=True")
        shapes_changed()
        self._shape = shape
        self._data = _zeros(shape, self._dtype, self._need_grad and self.parent is None)

    # Arithmetic operators are installed by stadyn.ops (the graph does not import the op catalog).


# ---------------------------------------------------------------------------------------------
# Function nodes
# ---------------------------------------------------------------------------------------------

class FunctionNode:
    """One op call: the op's spec, the arguments it was called with, its inputs and outputs.

    ``args`` / ``kwargs``: what the op received (Variables in input positions); ``attrs``: every
    attribute, defaults filled in; ``location``: the user's ``(file, line)`` that created it (None
    from a loader; :attr:`where` formats it); ``state``: its own ``OpSpec.state`` object or None;
    ``ran_under``: the gradient marks' version when it ran in dynamic mode (None: it did not, or
    a static forward ran it since: ``run_forward``); ``context``: the
    :class:`~stadyn.graph.Context` it computes in, bound when it was made (NNabla's functions
    bind it so: ``compat.nnabla``'s ``Function``), or None (Stadyn's and CNTK's: the one in
    effect at each forward; :func:`~stadyn.graph._precision.half_of`).
    """

    __slots__ = ("spec", "args", "kwargs", "inputs", "_outputs", "scope", "location", "state",
                 "ran_under", "context", "cast_leaves", "read_leaves", "__weakref__")

    def __init__(self, spec, args: tuple, kwargs: dict, inputs: tuple, scope: str,
                 location: tuple[str, int] | None = None):
        self.spec, self.args, self.kwargs = spec, args, kwargs
        self.ran_under: int | None = None
        self.inputs: tuple[Variable, ...] = inputs
        self._outputs: tuple = ()
        self.scope = scope
        self.location = location
        self.state = spec.state() if spec.state is not None else None
        self.context = None

    @property
    def where(self) -> str | None:
        """``'file:line'`` of the user's code that created this node, or None.

        Example:
            >>> import stadyn as sd, stadyn.functions as F
            >>> y = F.relu(sd.Variable((2,)))
            >>> y.parent.where.startswith("<doctest")
            True
        """
        return format_location(self.location)

    @property
    def outputs(self) -> list[Variable | None]:
        """The output Variables still alive (None for outputs nobody holds any more)."""
        return [r() for r in self._outputs]

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def attrs(self) -> dict[str, Any]:
        return self.spec.attributes(self.args, self.kwargs)

    def set_input(self, k: int, new: "Variable") -> None:
        """Make input ``k`` of this op call (in its declaration's order) ``new``.  Static plans
        that hold the node are rebuilt on their next forward.  Example: ``y.parent.set_input(0,
        x2)`` makes ``y`` an op of ``x2`` where it was one of ``x``."""
        positional = self.spec.variadic or k < len(self.args)
        self._set_argument(k, None if positional else self.spec.inputs[k], new, positional)
        self.inputs = tuple(a for a in (*self.args, *self.kwargs.values())
                            if isinstance(a, Variable))

    def set_attribute(self, name: str, value: Any) -> None:
        """Change one attribute of this op call (e.g. a dropout rate per epoch); static plans
        that hold the node are rebuilt on their next forward."""
        if name not in self.spec.attrs:
            raise StadynError(f"{self.spec.name} has no attribute {name!r}; its attributes are "
                              f"{sorted(self.spec.attrs)}")
        k = self.spec.position_of(name)
        self._set_argument(k, name, value, not self.spec.variadic and k < len(self.args))

    def _set_argument(self, position: int, name: Any, value: Any, positional: bool) -> None:
        if positional:
            self.args = (*self.args[:position], value, *self.args[position + 1:])
        else:
            self.kwargs = {**self.kwargs, name: value}
        bump_graph_version()

    def __repr__(self) -> str:
        where = f" in {self.scope!r}" if self.scope else ""
        return f"<FunctionNode {self.spec.name}{where}>"


# An op's outputs, and its node, take their classes from its first input (apply).
Variable._op_output_class, Variable._node_class = Variable, FunctionNode


def topological_nodes(roots: Sequence[Variable]) -> list[FunctionNode]:
    """The function nodes the roots depend on, each after all nodes it depends on."""
    order: list[FunctionNode] = []
    visited: set[int] = set()
    stack: list[tuple[FunctionNode, bool]] = [
        (v.parent, False) for v in reversed(roots) if v.parent is not None]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in visited:
            continue
        visited.add(id(node))
        stack.append((node, True))
        for inp in reversed(node.inputs):
            parent = inp.parent
            if parent is not None and id(parent) not in visited:
                stack.append((parent, False))
    return order
