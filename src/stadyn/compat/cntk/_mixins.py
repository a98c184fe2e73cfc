"""What CNTK's graph objects share: a Stadyn Variable inside (:class:`GraphObject`), the math
operators (:class:`TensorOpsMixin`), the properties of a Variable (:class:`VariableMixin`) and
``asarray`` (:class:`ArrayMixin`)."""

from __future__ import annotations

import weakref

import numpy as np

from ...graph import Variable, free_dimensions
from . import _graph as G
from ._late import late
from ._printed import type_text
from ._seq_axes import FREE_DIMENSION, free_steps, value_uid
from ._swig_handles import SwigHandle

__all__ = ["GraphObject", "TensorOpsMixin", "VariableMixin", "ArrayMixin", "second_handle",
           "not_a_variable", "compared_output", "waiting_function_eq", "move_variable",
           "moved", "hash_as"]

# A CNTK object whose Stadyn Variable was replaced by another after it was made (a parameter
# with inferred axes: ``_inferred_parameters``'s stand-in, then the parameter made once its
# shape is known) stays the same CNTK Variable: equal to, and hashed as, what it was.
# the replaced Variable -> the one that stands for it now
_MOVED: "weakref.WeakKeyDictionary[Variable, Variable]" = weakref.WeakKeyDictionary()
# id of the Variable standing for a replaced one -> the hash its handles showed before (a
# plain dict, read on every hash; an entry leaves it as its Variable is freed)
_HASHED_AS: "dict[int, int]" = {}


def move_variable(old: Variable, new: Variable) -> None:
    """Let every CNTK object over ``old`` stand for ``new`` from now on, equal to the objects
    over ``new`` and hashed as before (a dict keyed by it still finds it), as CNTK 2.7's
    Parameter keeps its identity when its inferred axes are fixed.

    Example:
        >>> old, new = GraphObject(Variable((2,))), GraphObject(Variable((2,)))
        >>> key = hash(old)
        >>> move_variable(old.variable, new.variable)
        >>> old == new, hash(new) == key, hash(old) == key
        (True, True, True)
    """
    _MOVED[old] = new
    _HASHED_AS[id(new)] = _HASHED_AS.get(id(old), id(old))
    weakref.finalize(new, _HASHED_AS.pop, id(new), None)


def hash_as(variable: Variable, key: int) -> None:
    """Have every CNTK object over ``variable`` hash as ``key``: what a layer's declared
    parameter hashed as before the layer's application made ``variable`` for it (CNTK 2.7's
    declared parameter is the one the application uses, so a dict keyed by it finds it).

    Example:
        >>> v = Variable((2,))
        >>> hash_as(v, 7)
        >>> hash(GraphObject(v))
        7
    """
    _HASHED_AS[id(variable)] = key
    weakref.finalize(variable, _HASHED_AS.pop, id(variable), None)


def moved(variable: Variable) -> Variable:
    """The Variable that stands for ``variable`` now (itself unless :func:`move_variable`)."""
    return _MOVED.get(variable, variable) if _MOVED else variable


def not_a_variable() -> TypeError:
    """CNTK 2.7's TypeError for comparing a Variable with what is no Variable (SWIG's words)."""
    return TypeError("in method 'Variable_eq', argument 2 of type 'CNTK::Variable const &'")


def compared_output(other):
    """What CNTK 2.7 compares of ``other`` as a Variable: a Function not built yet (a waiting
    call, an unapplied layer: a class with ``compares_as_output``) compares as its output (of
    several outputs, CNTK's TypeError); anything else as itself."""
    if not getattr(type(other), "compares_as_output", False):
        return other
    try:
        return other.output
    except RuntimeError:            # (an LSTM layer's: no one output, as CNTK's Variable_eq)
        raise not_a_variable() from None


def waiting_function_eq(self, other) -> bool:
    """``==`` of a Function not built yet, as CNTK 2.7's Python Function: itself, or a
    Variable (an output) that is its output; ``False`` for anything else (``w == 3``)."""
    if other is self:
        return True
    if getattr(type(other), "compared_by_variable", False):
        return other.__eq__(self)
    return False


class GraphObject(SwigHandle):
    """The Stadyn Variable behind a CNTK Function, Variable, Parameter or Constant.  Two CNTK
    objects over the same Variable are equal (and hash alike), so either works as a dict key."""

    __slots__ = ("variable",)

    def __init__(self, variable: Variable):
        self.variable = variable

    #: a Variable (or an output not built yet): compared by what it is, as CNTK's Variable_eq
    compared_by_variable = True

    #: what else than the Stadyn Variable tells two CNTK Variables apart: the output of a
    #: one-op block's inside (``_block_inside``) is not the block's output in CNTK 2.7
    _seen_from = ""

    def _compared(self) -> "tuple[str, Variable]":
        """What CNTK 2.7 compares of this Variable: ``(where seen from, Stadyn Variable)``."""
        return (self._seen_from, moved(self.variable))

    def __hash__(self) -> int:
        key = id(self.variable)
        if _HASHED_AS:      # (a Variable standing for one replaced: hashed as that one)
            key = _HASHED_AS.get(key, key)
        return key if not self._seen_from else hash((self._seen_from, key))

    def __eq__(self, other) -> bool:
        """As CNTK 2.7's ``Variable.__eq__``: the same Variable of the graph (a Function with
        one output compares as that output; one of several is CNTK's TypeError).  Anything
        but a graph object or ``None`` is CNTK's TypeError too (SWIG's ``Variable_eq`` takes
        only a Variable: ``x == 3``, ``3 in [x]``).  A Function not built yet (a waiting call,
        an unapplied layer) or its output is a Variable of the graph too, another one
        (``x == relu(placeholder())`` is False, ``x in [w, x]`` True)."""
        if other is None:
            return False
        other = compared_output(other)
        if not isinstance(other, GraphObject):
            if getattr(type(other), "compared_by_variable", False):
                return False        # (an output not built yet: not this Variable)
            raise not_a_variable()
        mine, theirs = self._compared(), other._compared()
        return mine[0] == theirs[0] and mine[1] is theirs[1]

    def __ne__(self, other) -> bool:
        return not self.__eq__(other)

    def __copy__(self):
        """``copy.copy``: a second handle on the same Variable, equal to this one, as CNTK
        2.7's (``copy.deepcopy`` and pickling are its TypeError).

        Example:
            >>> import copy, stadyn.compat.cntk as C
            >>> x = C.input_variable(3, name="x")
            >>> y = copy.copy(x)
            >>> y == x, y is x, y.uid == x.uid
            (True, False, True)
        """
        return second_handle(self)


def second_handle(obj: GraphObject, distinct: bool = False) -> GraphObject:
    """Another object holding what ``obj`` holds (its slots and attributes); ``distinct``:
    one equal to itself alone (hashed by identity), as CNTK 2.7's copy of a Function, whose
    Python wrappers compare by identity.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> f = C.relu(C.input_variable(3))
        >>> g = second_handle(f, distinct=True)
        >>> g == f, g == g, g.uid == f.uid
        (False, True, True)
    """
    klass = _distinct_class(type(obj)) if distinct else type(obj)
    other = object.__new__(klass)
    for base in type(obj).__mro__:
        for slot in getattr(base, "__slots__", ()):
            if slot != "__weakref__" and hasattr(obj, slot):
                setattr(other, slot, getattr(obj, slot))
    if hasattr(obj, "__dict__"):
        other.__dict__.update(obj.__dict__)
    return other


_DISTINCT: dict = {}        # {class: its subclass whose objects compare by identity}


def _distinct_class(klass: type) -> type:
    if klass in _DISTINCT.values():
        return klass
    found = _DISTINCT.get(klass)
    if found is None:
        found = _DISTINCT[klass] = type(klass)(klass.__name__, (klass,), {
            "__slots__": (), "__module__": klass.__module__, "__qualname__": klass.__qualname__,
            "__eq__": lambda self, other: self is other, "__hash__": object.__hash__})
    return found


def _ops():
    return late("ops")


class TensorOpsMixin:
    """CNTK's operators: ``+ - * / @``, ``abs``, unary ``-`` and slicing with ``[]``.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> x = C.input_variable(4)
        >>> (abs(-x[1:3]) * 2).eval({x: np.arange(4, dtype=np.float32)[None]}).tolist()
        [[2.0, 4.0]]
    """

    __slots__ = ()

    def __add__(self, other):
        return _ops().plus(self, other)

    def __radd__(self, other):
        return _ops().plus(other, self)

    def __sub__(self, other):
        return _ops().minus(self, other)

    def __rsub__(self, other):
        return _ops().minus(other, self)

    def __mul__(self, other):
        return _ops().element_times(self, other)

    def __rmul__(self, other):
        return _ops().element_times(other, self)

    def __matmul__(self, other):
        return _ops().times(self, other)

    def __rmatmul__(self, other):
        return _ops().times(other, self)

    def __truediv__(self, other):
        return _ops().element_divide(self, other)

    def __rtruediv__(self, other):
        return _ops().element_divide(other, self)

    def __abs__(self):
        return _ops().abs(self)

    def __neg__(self):
        return _ops().negate(self)

    def __getitem__(self, arg):
        """Slicing: ``x[1:3]`` is ``slice(x, 0, 1, 3)``; ``x[0]`` keeps the axis (size 1); a
        list picks several elements of an axis and splices them; ``...`` counts the following
        axes from the end.  A Function with several outputs gives its ``arg``-th output."""
        outputs = getattr(self, "outputs", None)
        if outputs is not None and len(outputs) > 1:
            return outputs[arg]
        ops = _ops()
        items = arg if isinstance(arg, tuple) else (arg,)
        result, offset = self, 0
        for axis, item in enumerate(items):
            if item is Ellipsis:
                offset = -len(items)
                continue
            where = axis + offset
            if isinstance(item, (int, np.integer)):
                item = slice(int(item), int(item) + 1)
            if isinstance(item, slice):
                begin, end = item.start or 0, item.stop or 0
                if begin or end:
                    result = ops.slice(result, where, begin, end, item.step or 1)
            elif isinstance(item, (list, tuple)):
                if not all(isinstance(i, (int, np.integer)) for i in item):
                    raise IndexError(f"indices must be integers, got {item!r}")
                picked = [ops.slice(result, where, int(i), int(i) + 1) for i in item]
                result = picked[0] if len(picked) == 1 else ops.splice(*picked, axis=where)
            else:
                raise IndexError(f"{type(item).__name__} is not supported as an index")
        return result


class VariableMixin:
    """The properties CNTK's Variables, Parameters and Constants have.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> x = C.input_variable((2, 3), name="x")
        >>> x.shape, x.name, x.is_input, x.is_parameter, x.needs_gradient
        ((2, 3), 'x', True, False, False)
    """

    __slots__ = ()

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of a sample (without the batch axis); a placeholder's is ``(-2,)`` until it
        is bound (or the one it was made with, where that has an inferred axis, -1)."""
        v = self.variable
        if v in G.SHAPELESS:
            return G.INFERRED_SHAPES.get(v, (-2,))
        if not G.BATCH(v):         # (an input made with dynamic_axes=[]: its free dimensions;
            # unpack_batch's output: its batch, and what ops that keep it make of it)
            free = free_dimensions(v) if v.parent is None else free_steps(v)
            return tuple(FREE_DIMENSION if k in free else d for k, d in enumerate(v.shape))
        lead = 2 if v.sequence_lengths is not None else 1   # a sequence axis too
        free = free_steps(v)        # sequence.unpack's padded steps, an input's free dimensions
        return tuple(FREE_DIMENSION if k in free else d for k, d in enumerate(v.shape))[lead:]

    @property
    def dtype(self):
        """The NumPy type of the values (``np.float32``)."""
        return np.dtype(self.variable.dtype).type

    @property
    def name(self) -> str:
        """The name given when it was made ('' when none)."""
        return G.name_of(self.variable)

    @property
    def uid(self) -> str:
        """A unique id (``Input3``, ``Parameter12``, ``Plus9_Output_0``)."""
        return value_uid(self.variable)

    @property
    def needs_gradient(self) -> bool:
        """Whether gradients are computed for it."""
        return bool(self.variable.need_grad)

    @property
    def is_input(self) -> bool:
        return G.kind_of(self.variable) == "input"

    @property
    def is_output(self) -> bool:
        return G.kind_of(self.variable) == "output"

    @property
    def is_parameter(self) -> bool:
        return G.kind_of(self.variable) == "parameter"

    @property
    def is_constant(self) -> bool:
        return G.kind_of(self.variable) == "constant"

    @property
    def is_placeholder(self) -> bool:
        return G.kind_of(self.variable) == "placeholder"

    @property
    def is_sparse(self) -> bool:
        """Whether it is an input made with ``is_sparse=True``, as CNTK 2.7 says (Stadyn holds
        its data dense; every other value is dense)."""
        return self.variable in G.SPARSE

    @property
    def _type(self):
        """Its type as one record, as CNTK 2.7's ``Variable._type``: ``shape``, ``dtype``,
        ``needs_gradient``, ``is_sparse``, ``dynamic_axes`` (``str`` of it is written as
        ``cntk.layers.typing`` writes a type).

        Example:
            >>> import stadyn.compat.cntk as C
            >>> t = C.input_variable(13, name="x")._type
            >>> t.shape, t.dynamic_axes, t.is_sparse, t.needs_gradient
            ((13,), (Axis('defaultBatchAxis'),), False, False)
        """
        made = late("variable_type")(shape=tuple(self.shape), dtype=self.dtype,
                                     needs_gradient=self.needs_gradient,
                                     is_sparse=self.is_sparse, dynamic_axes=self.dynamic_axes)
        return made.named(type_text(self))

    @property
    def dynamic_axes(self) -> tuple:
        """The batch axis for what carries one (``(Axis.default_batch_axis(),)``), and the
        sequence axis after it for a sequence (the named axis its input was declared on, else
        the default one); else ()."""
        from ._axis import Axis
        lengths = self.variable.sequence_lengths
        if lengths is not None:
            return (Axis.default_batch_axis(),
                    G.SEQUENCE_AXES.get(lengths) or Axis.default_dynamic_axis())
        return (Axis.default_batch_axis(),) if G.BATCH(self.variable) else ()

    def has_batch_axis(self) -> bool:
        """Whether it has the batch axis (a placeholder, whose axes are not known until it is
        bound, has not: CNTK 2.7's answer)."""
        return G.BATCH(self.variable) and not self.is_placeholder

    def has_sequence_axis(self) -> bool:
        """Whether it has a sequence axis (a placeholder, whose axes are not known until it is
        bound, has: CNTK 2.7's answer)."""
        return self.variable.sequence_lengths is not None or self.is_placeholder

    @property
    def owner(self):
        """The Function this is the output of (RuntimeError for inputs, parameters, ...)."""
        if not self.is_output:
            raise RuntimeError("called owner() on a variable that is not an output variable")
        return late("Function")(self.variable)._output_owner()


class ArrayMixin:
    """``asarray()``: the value as a NumPy array."""

    __slots__ = ()

    def asarray(self) -> np.ndarray:
        """A copy of the value."""
        return self.variable.d.copy()
