"""NNabla's ``nn.Variable``: Stadyn's Variable whose ``.data`` and ``.grad`` are NdArrays.

In NNabla a Variable's ``data`` and ``grad`` are ``NdArray``s, and its first tutorial works
on them: ``x.grad.zero()``, ``x.data.data`` (the NumPy view), ``param.data -= param.grad * lr``.
This subclass gives exactly that, over the same memory: the NdArray it returns views the
Variable's tensor, so ``zero()``, ``fill()`` and the in-place operators write the Variable's
value or gradient.  ``.grad`` is never None (a zero buffer is allocated on first read, as NNabla
allocates), and the repr is NNabla's (``<Variable((2, 3), need_grad=True) at 0x...>``).

What those NdArrays read and write back is ``_variable_arrays.py``.  Everything else is
Stadyn's Variable: the outputs of ops on such Variables are of this class too
(``stadyn.graph.apply`` reads the class of an op's first input), ``nn.get_parameters()`` gives
its parameters as this class, and Stadyn's own code reads values through
``stadyn.graph.data_of`` / ``grad_of``, never ``.data``.

Example:
    >>> import numpy as np
    >>> import stadyn.compat.nnabla as nn
    >>> x = nn.Variable.from_numpy_array(np.ones((2,)), need_grad=True)
    >>> x.grad.fill(3.0)
    >>> x.g.tolist()
    [3.0, 3.0]
    >>> x.data -= x.grad * 0.5
    >>> x.d.tolist()
    [-0.5, -0.5]
    >>> x
    <Variable((2,), need_grad=True) at 0x...>
"""

from __future__ import annotations

import sys
from typing import Any, Mapping

import numpy as np
import torch

from ... import graph as _graph
from ...graph import data_of, grad_of, hand_out, read_value_of, topological_nodes
from ._function import Function, as_function, built_rank, mark_forwarded
from ._ndarray import NdArray
from ...graph import unmark_zeroing
from ._counters import cast_counters
from ._overwritable import check_before_forward, share_after_forward
from ._own_arrays import give_ndarray, own_array, owned_output
from ._shared_arrays import keep_old_arrays, note_view, relink_grads, unlinked_view
from ._shared_grads import (backward_sharing, note_sharing, relink_held, share_grad,
                            unshare_grad)
from ._spectral_u import record_starts, write_after_backward
from ._variable_arrays import assign, grad_array, grad_tensor, value_array
from ._variable_operators import _checked_operator
from ._variable_protocol import VariableProtocol
from ._variable_identity import holding_the_same, share_identity
from ._backward_args import clearing, clears, refuse_grad_shape, refuse_leaf
from ._fill_values import unmark_filled
from ._kept_dtypes import forget
from ._written_types import (assign_to_output, broadcast_written, float_for_gradients,
                             sync_for_backward, take_written_type, warn_rounded)
from ._names import set_shown_name, shown_name
from ._readers import reader_functions
from ._registered_flags import REGISTERED_FLAGS, follow_flag, is_registered, set_by_stadyn

__all__ = ["Variable", "as_nnabla", "forward_all"]

_Core = _graph.Variable


class _HeldReading(_Core):
    """Stadyn's Variable reading, in a static plan's backward, the arrays its op outputs hold
    when the backward runs (what the user wrote, or a later run), as NNabla's backward does
    (``stadyn.graph.Variable.reads_held_values``); a backward from an inner Variable after a
    forward of a loss over it says nothing, as NNabla's (``warns_forward_again``)."""

    __slots__ = ()
    reads_held_values = True
    warns_forward_again = False


class Variable(VariableProtocol, _HeldReading):
    """A Variable as NNabla has it (see the module docstring): ``nn.Variable(shape,
    need_grad=False)``; ``.data`` / ``.grad`` are NdArrays sharing its memory.

    Example:
        >>> import stadyn.compat.nnabla as nn
        >>> x = nn.Variable((2, 3), need_grad=True)
        >>> x.grad.zero()
        >>> type(x.data).__name__, float(x.g.sum())
        ('NdArray', 0.0)
    """

    __slots__ = ()

    @classmethod
    def from_numpy_array(cls, data: Any, grad: Any = None, need_grad: bool | None = False,
                         dtype: Any = None) -> "Variable":
        """A leaf Variable holding a copy of ``data``, as NNabla's.  An integer or bool array
        that needs a gradient (``need_grad=True``) gets one, float32 as NNabla writes it; its
        values are float32 here (torch computes gradients of floating-point tensors only),
        where NNabla keeps the integer array beside the gradient.

        Example:
            >>> import numpy as np, stadyn.compat.nnabla as nn
            >>> v = nn.Variable.from_numpy_array(np.array([1, 2]), need_grad=True)
            >>> v.need_grad, v.g.dtype, v.d.tolist()
            (True, dtype('float32'), [1.0, 2.0])
        """
        if need_grad and dtype is None and np.asarray(data).dtype.kind in "biu":
            warn_rounded(data)
            dtype = np.float32
        return super().from_numpy_array(data, grad, need_grad, dtype)

    @property
    def name(self) -> str:
        """The Variable's name as NNabla 1.39 shows it: ``''`` until a program sets one (a
        registered parameter's too; ``_names.py``).

        Example:
            >>> import stadyn.compat.nnabla as nn
            >>> x = nn.Variable((2,))
            >>> x.name = "x"; x.name, nn.Variable((2,)).name
            ('x', '')
        """
        return shown_name(self)

    @name.setter
    def name(self, value: str) -> None:
        set_shown_name(self, value, is_registered(self))

    @property
    def need_grad(self) -> bool:
        """Whether a backward writes this Variable's gradient.  On a registered parameter
        (``nn.get_parameters()[...]``) it is the registry's flag, as NNabla's: set after a
        parametric function built a graph on the parameter, it leaves that graph's gradient
        alone and decides what ``nn.get_parameters()`` lists (``_registered_flags.py``).

        Example:
            >>> import stadyn.compat.nnabla as nn
            >>> x = nn.Variable((2,), need_grad=True)
            >>> x.need_grad = False
            >>> x.need_grad
            False
        """
        flag = REGISTERED_FLAGS.get(self)
        return _Core.need_grad.fget(self) if flag is None else flag

    @need_grad.setter
    def need_grad(self, flag: bool) -> None:
        flag = bool(flag)
        computes = _Core.need_grad.fget(self)
        if flag:
            float_for_gradients(self)
        if set_by_stadyn(sys._getframe(1)):
            REGISTERED_FLAGS.pop(self, None)
            _Core.need_grad.fset(self, flag)
        elif self in REGISTERED_FLAGS or (flag != computes and is_registered(self)):
            if flag == computes:
                del REGISTERED_FLAGS[self]
            else:
                REGISTERED_FLAGS[self] = flag
        else:
            _Core.need_grad.fset(self, flag)
        follow_flag(self)               # the graphs a program built on it read the flag

    @property
    def data(self) -> NdArray:
        """The value as an NdArray viewing this Variable's memory (its ``cast`` changes the
        Variable's dtype, as in NNabla); one kept reads the value the Variable holds then."""
        if self.parent is not None:
            own_array(self)                  # (no array shared with an input: _own_arrays.py)
        return value_array(self)

    @data.setter
    def data(self, value: Any) -> None:
        owner = value._owner[0] if isinstance(value, NdArray) and value._owner else None
        if (owner is not None and owner is not self and self.parent is None
                and isinstance(owner, _Core) and tuple(owner.shape) == tuple(self.shape)):
            # ``h0.data = h.data``: in NNabla both hold one array from now on (an RNN's state
            # carried from one forward to the next), so this leaf reads ``owner``'s value; its
            # gradient stays its own (NNabla's ``set_data`` swaps only the data array: case
            # ``nnabla_views_35.data_shared__own_gradient``)
            grad = grad_of(self)
            read_value_of(self, owner)
            _graph.keep_own_grad(self)
            if grad is not None and tuple(grad.shape) == tuple(self.shape):
                _Core.grad.fset(self, grad)
            return
        if (self.parent is not None and isinstance(value, NdArray) and value._owner is None
                and tuple(value.shape) == tuple(self.shape)):
            give_ndarray(self, value)    # ``y.data = nd``: later runs write into ``nd``
            return
        if isinstance(value, NdArray) and tuple(value.shape) != tuple(self.shape):
            raise RuntimeError(f"value error in set_data: Shape must match: the NdArray has "
                               f"{tuple(value.shape)}, the Variable {tuple(self.shape)}")
        assign(self, value, data_of(self), _Core.data.fset)

    def reset_shape(self, shape: Any, force: bool = False) -> None:
        """Give this Variable ``shape``, as NNabla's: without ``force`` the number of elements
        must stay (the values are kept, reshaped; NNabla's RuntimeError otherwise), with it
        the array is new (zeros).  A view's (``get_unlinked_variable``) is its source's array:
        both change.

        Example:
            >>> import numpy as np, stadyn.compat.nnabla as nn
            >>> v = nn.Variable.from_numpy_array(np.arange(3.0).reshape(1, 3))
            >>> u = v.get_unlinked_variable(); u.reset_shape((3, 1)); v.shape, v.d.ravel().tolist()
            ((3, 1), [0.0, 1.0, 2.0])
        """
        shape = tuple(int(d) for d in shape)
        if force or shape == tuple(self.shape):
            _Core.reset_shape(self, shape, True)
            return
        if int(np.prod(shape, dtype=np.int64)) != self.size:
            raise RuntimeError(f"value error in reshape: Total dimensions not match. Set "
                               f"force=true if you want to resize array (clearing data). "
                               f"Given: {int(np.prod(shape, dtype=np.int64))} != current: "
                               f"{self.size}.")
        holder = _graph.value_holder(self)
        kept = data_of(holder).detach().reshape(shape).clone()
        _Core.reset_shape(holder, shape, True)
        _Core.data.fset(holder, kept)

    @property
    def grad(self) -> NdArray:
        """The gradient as an NdArray viewing this Variable's gradient buffer (zeros are
        allocated on the first read, as NNabla allocates).  One kept reads the gradient the
        Variable holds then (after a ``zero_grad`` and a backward, the new one, as NNabla's)."""
        return grad_array(self)

    @grad.setter
    def grad(self, value: Any) -> None:
        if value is None:
            _Core.grad.fset(self, None)
            relink_grads(self)          # (a solver's zero_grad of a Variable sharing its array)
            relink_held(self)           # (and of one whose array another holds: v.grad = h.grad)
            return
        held = value._owner if isinstance(value, NdArray) else None
        if (held and held[1] is grad_tensor and held[0] is not self
                and tuple(held[0].shape) == tuple(self.shape)):
            grad_tensor(held[0])        # (allocated: both hold it from now on)
            if share_grad(self, held[0]):   # ``v.grad = h.grad``: one array (_shared_grads)
                return
        unshare_grad(self)              # (another array given: its own again, as NNabla's)
        current = grad_of(self)
        if current is None:
            self.g                      # allocates the zero buffer
            current = grad_of(self)
        assign(self, value, current, _Core.grad.fset)

    def get_unlinked_variable(self, need_grad: bool | None = None) -> "Variable":
        """A leaf Variable over this one's value and gradient, cut from the graph (NNabla's
        name for :meth:`unlinked`): gradients reaching it stop there.  ``need_grad=None``
        keeps this Variable's ``need_grad``, as in NNabla.

        Example:
            >>> import numpy as np
            >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
            >>> x = nn.Variable.from_numpy_array(np.ones(2), need_grad=True)
            >>> u = F.mul_scalar(x, 3.0).get_unlinked_variable()
            >>> u.parent is None, u.need_grad
            (True, True)
        """
        v = as_nnabla(_Core.unlinked(self, self.need_grad if need_grad is None
                                     else bool(need_grad)))
        note_sharing(v)                 # (its gradient array is this one's: _shared_grads.py)
        note_view(self, v)              # (it keeps this one's array at a rewire_on)
        return v                        # (== and hash() as this one's: _variable_identity.py)

    def unlinked(self, need_grad: bool | None = None) -> "Variable":
        """NNabla's older name of :meth:`get_unlinked_variable` (the same: ``need_grad=None``
        keeps this Variable's ``need_grad``).

        Example:
            >>> import stadyn.compat.nnabla as nn
            >>> nn.Variable((2,), need_grad=True).unlinked().need_grad
            True
        """
        return self.get_unlinked_variable(need_grad)

    def rewire_on(self, var: "Variable") -> None:
        """Put the graph computing ``var`` in this Variable's place, as NNabla 1.39's: this
        Variable becomes the output of ``var``'s function (its readers now read that graph)
        and takes ``var``'s ``need_grad``; ``var`` is left a leaf sharing this Variable's
        arrays; a view of this Variable made before (``get_unlinked_variable``) keeps the
        array this Variable held, as NNabla's.  ``var`` must be a function's output of this
        Variable's shape (NNabla's RuntimeError otherwise).

        Example:
            >>> import numpy as np, stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
            >>> x = nn.Variable.from_numpy_array(np.array([1.0, 4.0]))
            >>> h = nn.Variable((2,)); y = F.add_scalar(h, 1.0)
            >>> z = F.pow_scalar(x, 0.5); h.rewire_on(z)
            >>> y.forward(); y.d.tolist(), h.parent.outputs[0] is h, z.parent
            ([2.0, 3.0], True, None)
        """
        if var.parent is None:
            raise RuntimeError("Variable.rewire_on: the Variable given must be the output of a "
                               "function (it has no parent function)")
        if tuple(var.shape) != tuple(self.shape):
            raise RuntimeError(f"Variable.rewire_on: the shapes must match: the Variable "
                               f"given has {tuple(var.shape)}, this one {tuple(self.shape)}")
        keep_old_arrays(self)           # (its views keep the array it holds now)
        share_identity(self, var)       # (NNabla's: var's nbla::Variable, == and hash())
        _Core.rewire_on(self, var)
        _Core.clear_all_graph_links(var)
        read_value_of(var, self)

    @property
    def d(self) -> Any:
        """The value as a NumPy array sharing its memory.  One kept from a leaf keeps its
        values when ``data.fill()`` / ``zero()`` or a scalar assigned give the leaf new memory,
        as NNabla's; one kept from an op's output shows the later runs' values, until a
        ``fill()`` of the output gives it new memory (both as NNabla 1.39's)."""
        if self.parent is not None:
            own_array(self)                  # (no array shared with an input: _own_arrays.py)
            hand_out(data_of(self))          # later runs write into it, as NNabla's do
        return value_array(self).data

    @d.setter
    def d(self, value: Any) -> None:
        if np.isscalar(value):
            self.data.data = value           # NNabla's zero() / fill(): new memory
            return
        value = broadcast_written(self, value, "d")
        if self.parent is not None:
            own_array(self)
            assign_to_output(self, value)
            return
        take_written_type(self, value)
        _Core.d.fset(self, value)
        forget(self)                         # (written: NNabla's array now has its dtype)

    @classmethod
    def _from_node(cls, parent, index, shape, dtype, need_grad, data):
        # a dynamic run's output viewing its input's memory gets its own (_own_arrays.py)
        return super()._from_node(parent, index, shape, dtype, need_grad,
                                  owned_output(parent, data))

    def _grad_buffer(self) -> torch.Tensor:
        # NNabla 1.39's gradient is float32 whatever the value's type (an int32 or bool
        # Variable's ``g`` is float32 zeros: case ``nnabla_fidelity_14.integer_leaf__float32_
        # gradient``); Stadyn's allocates one of the value's dtype
        if _Core.grad.fget(self) is None:
            value = _Core.data.fget(self)
            if not (value.is_floating_point() or value.is_complex()):
                _Core.grad.fset(self, torch.zeros(value.shape, dtype=torch.float32,
                                                  device=value.device))
        return super()._grad_buffer()

    @property
    def g(self) -> Any:
        """The gradient as a NumPy array sharing its memory (zeros allocated on first read;
        float32 for a Variable of integers or bools, as NNabla's)."""
        value = _Core.g.fget(self)
        unmark_zeroing(grad_of(self))
        unmark_filled(grad_of(self))
        return value

    @g.setter
    def g(self, value: Any) -> None:
        if np.isscalar(value):
            self.grad.data = value       # NNabla's zero() / fill(): see NdArray.zero
            return
        _Core.g.fset(self, broadcast_written(self, value, "g"))

    @property
    def rank(self) -> int:
        """The depth of this Variable in its graph: 0 for a leaf, else its parent's rank + 1
        (NNabla's ``rank``).

        Example:
            >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
            >>> x = nn.Variable((2,))
            >>> x.rank, F.relu(F.relu(x)).rank
            (0, 2)
        """
        return 0 if self.parent is None else built_rank(self.parent) + 1

    @property
    def function_references(self) -> list:
        """The functions still alive that take this Variable as an input, each once, the
        newest first (NNabla's; read only; see ``_readers.py`` for the order).

        Example:
            >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
            >>> x = nn.Variable((2,))
            >>> a, b = F.relu(x), F.sigmoid(x)
            >>> x.function_references, a.function_references
            ([Sigmoid, ReLU], [])
        """
        return reader_functions(self)

    def forward(self, *args, **kwargs) -> None:
        """Stadyn's ``forward`` (same arguments); the functions it runs have NNabla's rank
        after a forward from the start, their hooks' included (see ``Function.rank``).  The
        forward of ``F.sink(loss, acc)`` is one of ``loss`` and ``acc`` too, as NNabla's and
        Stadyn's: a ``loss.backward()`` after it reads that forward's values (its dropout
        masks included) instead of running ``loss``'s forward again (nnabla-examples' Graph
        U-Nets).

        Example:
            >>> import numpy as np
            >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
            >>> x = nn.Variable.from_numpy_array(np.ones((2, 3)), need_grad=True)
            >>> loss = F.mean(F.dropout(x, 0.5)); acc = F.max(x)
            >>> F.sink(loss, acc).forward(); kept = float(loss.d)
            >>> x.grad.zero(); loss.backward(); float(loss.d) == kept
            True

        A Variable with no parent (a leaf, or one whose function ``rewire_on`` moved to
        another Variable) raises RuntimeError, as NNabla's (variable.cpp: "The variable has
        no parent"); so does its ``backward``.
        """
        refuse_leaf(self, "forward")
        mark_forwarded(self)
        parent = self.parent
        if parent is not None and parent.spec.forwards_inputs:
            for v in parent.inputs:     # (roots of Stadyn's forward too: OpSpec)
                mark_forwarded(v)
        check_before_forward([self])    # in-place results (F.scatter_nd(out=x)): _overwritable
        cast_counters([self])           # mean_subtraction's int32 counter: _counters
        record_starts([self])           # spectral norms' u, written again in backward
        super().forward(*args, **kwargs)
        share_after_forward([self])

    def backward(self, *args, **kwargs) -> None:
        """Stadyn's ``backward`` (same arguments), reading what was written into an op's
        output since its forward, as NNabla's: ``y.d[i] = v`` after ``y.d = ints`` too
        (``_written_types.sync_for_backward``, whose example shows it).  A spectral norm's ``u``
        is written again from the ``u`` its forward started from, in NNabla's backward order
        (``_spectral_u``)."""
        refuse_leaf(self, "backward")
        refuse_grad_shape(self, args[0] if args else kwargs.get("grad", 1))
        sync_for_backward()
        # (a leaf sharing an op output's gradient array in the graph: NNabla's order places
        # what it gets, _shared_grads.py)
        def run(clear: bool) -> None:
            a, k = clearing(args, kwargs, clear)
            super(Variable, self).backward(*a, **k)
        backward_sharing(self, run, clears(args, kwargs))
        write_after_backward(self)      # NNabla's spectral norms write u again: _spectral_u

    def apply(self, **kwargs) -> "Variable":
        """Set the named properties and return this Variable (NNabla's helper for chaining:
        ``loss = F.mean(y).apply(persistent=True)``).  A name that is no property of a
        Variable raises AttributeError, as NNabla's does.

        Example:
            >>> import stadyn.compat.nnabla as nn
            >>> x = nn.Variable((2,))
            >>> x.apply(persistent=True, need_grad=True) is x, x.persistent, x.need_grad
            (True, True, True)
        """
        for key, value in kwargs.items():
            if not hasattr(type(self), key):
                raise AttributeError(f"Variable.apply: a Variable has no property {key!r} "
                                     f"(in apply({key}=...))")
            setattr(self, key, value)
        return self

    def reshape(self, shape: Any, unlink: bool = False) -> "Variable":
        """This Variable in another ``shape`` (one entry may be -1): NNabla's method.  By
        default the result is ``F.reshape(self, shape)``, in the graph (the gradient flows back
        to this Variable); ``unlink=True`` gives a leaf viewing this one's value and gradient
        in the new shape, with its ``need_grad``: the two hold one array, as NNabla's
        (``_shared_arrays.py``: a cast or ``x.d = ints`` of either shows in the other; an op
        output's view reads what each forward writes).

        Example:
            >>> import numpy as np
            >>> import stadyn.compat.nnabla as nn
            >>> x = nn.Variable.from_numpy_array(np.arange(6.0), need_grad=True)
            >>> y = x.reshape((-1, 3)); y.forward(); y.shape, y.parent is not None
            ((2, 3), True)
            >>> v = x.reshape((3, 2), unlink=True); v.d[0, 0] = 7.0; float(x.d[0])
            7.0
        """
        if not unlink:
            from ...functions import reshape
            return reshape(self, tuple(shape))
        view = unlinked_view(self, shape)
        note_sharing(view)
        return view

    def clear_all_graph_links(self) -> None:
        """Cut the whole graph behind this Variable, as NNabla 1.39's does (``_variable.pyx``:
        it visits every function up to here and clears each output's parent): this Variable
        and every intermediate one become leaves holding their values.  Truncated BPTT needs
        it: a state ``h`` carried to the next step must stop the next backward there (Stadyn
        cut this Variable's own link alone, and the next step's gradients ran on through the
        steps before).

        Example:
            >>> import numpy as np
            >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
            >>> x = nn.Variable.from_numpy_array(np.ones(2))
            >>> h = F.mul_scalar(x, 2.0); y = F.add_scalar(h, 1.0); y.forward()
            >>> y.clear_all_graph_links(); h.parent, y.parent, y.d.tolist()
            (None, None, [3.0, 3.0])
        """
        nodes = list(topological_nodes([self]))
        for node in nodes:
            for out in node.outputs:
                if out is not None:
                    _Core.clear_all_graph_links(out)

    def visit(self, f) -> None:
        """Call ``f(function)`` for every function this Variable depends on, in forward order
        (inputs first), each an NNabla :class:`~stadyn.compat.nnabla._function.Function`.

        Example:
            >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
            >>> y = F.sum(F.relu(nn.Variable((2,))) * 2.0)
            >>> names = []; y.visit(lambda f: names.append(f.name)); names
            ['ReLU', 'MulScalar', 'Sum']
        """
        for node in topological_nodes([self]):
            as_nnabla(as_function(node).inputs)     # its parameters print as NNabla's too
            f(node)


Variable._op_output_class, Variable._node_class = Variable, Function


for _op, _function in (("add", "add2"), ("sub", "sub2"), ("mul", "mul2"),
                       ("truediv", "div2"), ("pow", "pow2")):
    setattr(Variable, f"__{_op}__", _checked_operator(f"__{_op}__", _function, False))
    setattr(Variable, f"__r{_op}__", _checked_operator(f"__r{_op}__", _function, True))


def forward_all(variables, *args, **kwargs) -> None:
    """NNabla's ``nn.forward_all(variables, clear_buffer=False, clear_no_need_grad=False,
    function_pre_hook=None, function_post_hook=None)``:
    Stadyn's ``forward_all``; the functions it runs have NNabla's rank after a forward from the
    start (see ``Function.rank``).

    Example:
        >>> import numpy as np
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> a = F.relu(nn.Variable.from_numpy_array(np.array([1.0, -1.0])))
        >>> b, c = F.sin(a), F.cos(a)
        >>> b.parent.rank, forward_all([b, c]), b.parent.rank, c.parent.rank
        (1, None, 2, 2)
        >>> forward_all(v for v in (b, c)); [round(float(b.d[0]), 4), round(float(c.d[0]), 4)]
        [0.8415, 0.5403]
    """
    variables = list(variables)         # (a generator read once: both loops see it whole)
    for v in variables:
        mark_forwarded(v)
    check_before_forward(variables)
    cast_counters(variables)
    record_starts(variables)
    _graph.forward_all(variables, *args, **kwargs)
    share_after_forward(variables)


def as_nnabla(v: Any) -> Any:
    """``v`` (a Stadyn Variable, or a mapping or sequence of them) as NNabla's Variables: the
    same objects, their class switched to :class:`Variable`.

    Example:
        >>> import stadyn as sd
        >>> from stadyn.compat.nnabla._variable import as_nnabla
        >>> w = sd.Variable((2,))
        >>> as_nnabla(w) is w, type(w).__module__
        (True, 'stadyn.compat.nnabla._variable')
    """
    if type(v) is _Core:
        v.__class__ = Variable
        for view in holding_the_same(v):    # (a graph's frozen view of a parameter: == v)
            if type(view) is _Core:
                view.__class__ = Variable
    elif isinstance(v, Mapping):
        for item in v.values():
            as_nnabla(item)
    elif isinstance(v, (list, tuple)):
        for item in v:
            as_nnabla(item)
    return v
