"""CNTK's Variables: inputs, placeholders, parameters and constants (``cntk.variables``), and
the functions that make them (``input_variable``, ``placeholder``, ``parameter``,
``constant``, ``output_variable``)."""

from __future__ import annotations

import itertools
import weakref

import numpy as np

from ...graph import Variable as _Var
from ...graph import FREE_DIMENSION, free_batch_input, mark_free_dimensions, sequence_input
from . import _graph as G
from ._function_pure import refuse_parameters
from ._inferred_parameters import pending, pending_shape, unresolved_value_error
from ._init_arguments import refuse_uncalled_initializer
from ._parameters import first_value, registered
from ...layers import default_override_or
from ._late import bind, late
from ._mixins import ArrayMixin, GraphObject, TensorOpsMixin, VariableMixin
from ._renaming import refuse_name
from ._sequence_placeholders import mark_sequence_placeholder
from ._record import Record
from ._value_types import input_dtype, parameter_dtype, value_dtype
from ._variable_text import axis_mark, dims_text

__all__ = ["Variable", "Parameter", "Constant", "Record", "of", "input_variable",
           "placeholder", "parameter", "constant", "output_variable", "InferredDimension",
           "FreeDimension"]

InferredDimension = -1   # a dimension a parameter learns from its first use
FreeDimension = FREE_DIMENSION   # a dimension free to change from minibatch to minibatch

_constant_ids = itertools.count()

# The dynamic axes a placeholder was made with (``placeholder(..., dynamic_axes=...)``); one
# made without has CNTK's unknown ones
_PLACEHOLDER_AXES: "weakref.WeakKeyDictionary[_Var, tuple]" = weakref.WeakKeyDictionary()

# What ``output_variable`` made, and the uid CNTK 2.7 gives it (``Output<n>``): held as a
# placeholder until a UserFunction binds it, shown (and asked) as CNTK's output kind
_OUTPUT_UIDS: "weakref.WeakKeyDictionary[_Var, str]" = weakref.WeakKeyDictionary()


def _shape(shape) -> tuple[int, ...]:
    if shape is None:
        return ()
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


def free_until_fed(shape: tuple) -> tuple[tuple, list]:
    """An input's per-sample ``shape`` as it is made, 1 on each ``FreeDimension`` (-3) until
    it is fed, and the indices of those free axes."""
    return (tuple(1 if d == FreeDimension else d for d in shape),
            [k for k, d in enumerate(shape) if d == FreeDimension])


class Variable(VariableMixin, TensorOpsMixin, GraphObject):
    """A CNTK Variable: an input, a placeholder, or a Function's output seen as a value.

    ``Variable(shape, ...)`` makes an input (as ``input_variable`` does).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> v = C.variables.Variable((2, 3), name="v")
        >>> v.shape, v.is_input, isinstance(C.input_variable(2), C.variables.Variable)
        ((2, 3), True, True)
    """

    __slots__ = ()

    def __init__(self, shape=None, dtype=None, needs_gradient: bool = False,
                 is_sparse: bool = False, dynamic_axes=None, name: str = ""):
        dtype = input_dtype(dtype)
        shape, free = free_until_fed(_shape(shape))
        lead = 1        # the batch axis (and a sequence input's steps) before the sample
        if any(getattr(a, "is_sequence_axis", False) for a in (dynamic_axes or ())):
            var, lead = sequence_input(shape, need_grad=needs_gradient, dtype=dtype), 2
        else:
            var = _Var((1,) + shape, need_grad=needs_gradient, dtype=dtype)
        G.INPUTS[var] = name
        if is_sparse:
            G.SPARSE.add(var)
        if dynamic_axes is None or len(dynamic_axes):
            G.BATCH.add(var)
            free_batch_input(var)      # sized by what is fed (CNTK's dynamic axes)
            mark_free_dimensions(var, [k + lead for k in free])
        else:
            var.reset_shape(shape)
            mark_free_dimensions(var, free)
        G.name_sequence_axis(var, tuple(dynamic_axes or ()))
        GraphObject.__init__(self, var)

    @property
    def dtype(self):
        """The NumPy type of the values (``np.float32``); a placeholder's is None, as CNTK
        2.7's (it takes that of what replaces it)."""
        if self._waiting_placeholder():
            return None
        return VariableMixin.dtype.fget(self)

    def _made_as_output(self) -> bool:
        # (output_variable's, not bound yet: CNTK 2.7's kind Output, with no owner)
        return self.variable in _OUTPUT_UIDS and G.kind_of(self.variable) == "placeholder"

    def _waiting_placeholder(self) -> bool:
        return G.kind_of(self.variable) == "placeholder" and not self._made_as_output()

    @property
    def is_output(self) -> bool:
        """Whether it is a Function's output (or what ``output_variable`` made, as in CNTK).

        Example:
            >>> import stadyn.compat.cntk as C
            >>> o = C.output_variable(2, C.input_variable(2).dtype, [])
            >>> o.is_output, o.is_placeholder, o.owner
            (True, False, None)
        """
        return self._made_as_output() or VariableMixin.is_output.fget(self)

    @property
    def is_placeholder(self) -> bool:
        """Whether it is a placeholder waiting to be bound."""
        return self._waiting_placeholder()

    @property
    def owner(self):
        """The Function this is the output of (None for what ``output_variable`` made, as
        CNTK 2.7's; a RuntimeError for inputs, parameters, ...)."""
        if self._made_as_output():
            return None
        return VariableMixin.owner.fget(self)

    @property
    def uid(self) -> str:
        """A unique id (``Input3``; ``Output5`` for what ``output_variable`` made)."""
        if self._made_as_output():
            return _OUTPUT_UIDS[self.variable]
        return VariableMixin.uid.fget(self)

    @property
    def dynamic_axes(self) -> tuple:
        """The batch axis, and the sequence axis after it for a sequence; a placeholder's,
        those it was made with, else CNTK's unknown ones (``(Axis('UnknownAxes'),)``).

        Example:
            >>> import stadyn.compat.cntk as C
            >>> C.placeholder().dynamic_axes, C.placeholder(2, dynamic_axes=[]).dynamic_axes
            ((Axis('UnknownAxes'),), ())
        """
        if self._made_as_output():
            return _PLACEHOLDER_AXES[self.variable]
        if G.kind_of(self.variable) == "placeholder" and not G.typed_placeholder(self.variable):
            from ._axis import Axis
            return _PLACEHOLDER_AXES.get(self.variable, Axis.unknown_dynamic_axes())
        return VariableMixin.dynamic_axes.fget(self)

    def as_parameter(self) -> "Parameter":
        """This Variable as a Parameter (a TypeError unless it is one)."""
        if not self.is_parameter:
            raise TypeError("cannot be converted into a Parameter")
        return of(self.variable)

    def as_constant(self) -> "Constant":
        """This Variable as a Constant (a TypeError unless it is one)."""
        if not self.is_constant:
            raise TypeError("cannot be converted into a Constant")
        return of(self.variable)

    def __repr__(self) -> str:
        kind = {"input": "Input", "placeholder": "Placeholder", "output": "Output",
                "parameter": "Parameter", "constant": "Constant"}.get(   # (as CNTK 2.7 shows
            G.kind_of(self.variable), "Variable")     # a Function's inputs: by their kind)
        return shown("Output" if self._made_as_output() else kind, self)


def shown(kind: str, v) -> str:
    """``v`` as CNTK 2.7 shows a Variable: ``Input('x', [#, *], [2 x 3])`` (its name, else its
    uid; its dynamic axes, ``#`` the batch axis and ``*`` the default sequence axis; its
    shape; ``???`` for what a placeholder does not know yet).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> C.sequence.input_variable((2, 3), name="x")
        Input('x', [#, *], [2 x 3])
    """
    dims = dims_text(tuple(v.shape))
    if kind == "Placeholder" and v.variable not in _PLACEHOLDER_AXES and \
            not G.typed_placeholder(v.variable):        # (a block's: its argument's axes)
        axes = "???"
    else:
        axes = ", ".join(axis_mark(a) for a in v.dynamic_axes)
    return f"{kind}('{v.name or v.uid}', [{axes}], [{dims}])"


class Parameter(VariableMixin, TensorOpsMixin, GraphObject):
    """A learnable parameter: ``Parameter(shape, init, dtype, device, name)``; ``init`` is a
    number, an array (its shape wins) or an initializer from ``cntk.initializer``.  Its type is
    ``dtype``, else ``default_options``' (float32 by default), not the array's: the function
    :func:`parameter` takes a float64 array's float64, as CNTK 2.7's.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> p = C.Parameter((2, 3), init=1.0, name="p")
        >>> p.shape, p.name, float(p.value.sum())
        ((2, 3), 'p', 6.0)
        >>> p.value = np.zeros((2, 3), np.float32); float(p.value.sum())
        0.0
    """

    __slots__ = ()

    def __init__(self, shape=None, init=None, dtype=None, device=None, name: str = ""):
        from ...parametric import current_registry
        from ._parameters import cntk_parameters
        refuse_parameters()     # (inside a @Function body, as CNTK 2.7)
        # The class takes default_options' type (float32 by default), not the array's: CNTK
        # 2.7's Parameter(init=np.eye(3)) is float32, its parameter(init=np.eye(3)) float64.
        dtype = parameter_dtype(None, input_dtype(None) if dtype is None else dtype)
        if isinstance(init, (np.ndarray, list)):
            value = np.asarray(init, dtype=dtype)
            shape = value.shape
        else:
            shape = _shape(shape)
            _refuse_free_axis("Parameter", name, shape)
            if any(d < 0 and d != InferredDimension for d in shape):
                raise ValueError(f"Parameter: the shape {shape} has a dimension of unknown "
                                 "kind (give the full shape, or InferredDimension, -1, for "
                                 "an axis the first op that uses it infers)")
            refuse_uncalled_initializer("parameter", "init", init)
            if init is None:
                init = 0.0
            elif isinstance(init, (int, float)):    # Python's (bool and np.float64 among them)
                init = float(init)
            elif isinstance(init, (str, bytes, np.generic)):    # (CNTK 2.7's SWIG overloads)
                raise NotImplementedError("Wrong number or type of arguments for overloaded "
                                          "function 'constant_initializer'.")
            value = None
        with cntk_parameters():
            path = current_registry().claim(name or "parameter")
        if value is None and InferredDimension in shape:
            # (CNTK 2.7 draws the init once the first op that uses it infers the shape)
            var = pending(shape, dtype, lambda full: _made(path, name, full,
                                                           first_value(full, init, dtype), dtype))
            G.LEAF_NAMES[var] = name
        else:
            var = _made(path, name, shape, first_value(shape, init, dtype) if value is None
                        else value, dtype)
        GraphObject.__init__(self, var)

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape (``-1`` on an axis no op has inferred yet: ``InferredDimension``)."""
        waiting = pending_shape(self)
        return waiting if waiting is not None else VariableMixin.shape.fget(self)

    @property
    def value(self) -> np.ndarray:
        """A copy of the value (settable with an array of the same shape); a ValueError
        while an axis is still to be inferred, as in CNTK 2.7."""
        waiting = pending_shape(self)
        if waiting is not None and -2 in waiting:
            raise RuntimeError(f"std::bad_array_new_length\nConstant.value: the shape "
                               f"{waiting} has -2, no size (CNTK 2.7's RuntimeError)")
        if waiting is not None:
            raise unresolved_value_error(self)
        return self.variable.d.copy()

    @value.setter
    def value(self, array) -> None:
        if not isinstance(array, np.ndarray):
            raise TypeError(f"Unsupported value type: {type(array).__name__}")
        self.variable.d = np.asarray(array, dtype=self.variable.dtype)

    def set_value(self, value) -> None:
        """Write ``value`` (a NumPy array or an ``NDArrayView`` of the parameter's shape).

        Example:
            >>> import numpy as np, stadyn.compat.cntk as C
            >>> p = C.Parameter((2,), init=0.0)
            >>> p.set_value(C.NDArrayView.from_dense(np.ones(2, np.float32))); p.value.tolist()
            [1.0, 1.0]
        """
        if pending_shape(self) is not None:
            raise unresolved_value_error(self)
        array = value.asarray() if hasattr(value, "asarray") else np.asarray(value)
        if tuple(array.shape) != tuple(self.shape):
            raise ValueError(f"Parameter.set_value: shape {tuple(array.shape)}, the parameter "
                             f"has {tuple(self.shape)}")
        if hasattr(value, "asarray") and array.dtype != np.dtype(self.variable.dtype):
            raise RuntimeError(f"Parameter.set_value: an NDArrayView of {array.dtype} for the "
                               f"{np.dtype(self.variable.dtype)} parameter {self.name!r} "
                               "(CNTK 2.7: 'source' and 'destination' have different data "
                               "types)")
        self.variable.d = np.asarray(array, dtype=self.variable.dtype)

    asarray = ArrayMixin.asarray

    def __repr__(self) -> str:
        return shown("Parameter", self)


class Constant(VariableMixin, TensorOpsMixin, GraphObject):
    """A constant: ``Constant(value, shape, dtype, device, name)`` (a Python number fills
    ``shape``; an array or a list keeps its own shape; a NumPy scalar is refused, as in CNTK);
    its type as :class:`Parameter`'s (:func:`constant` takes a float64 array's float64).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> C.Constant(1, (2, 3)).value.tolist()
        [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    """

    __slots__ = ()

    def __init__(self, value=None, shape=None, dtype=None, device=None, name: str = ""):
        # default_options' type (float32 by default), not the array's (as Parameter's)
        dtype = np.dtype(input_dtype(None) if dtype is None else dtype)
        if value is None and shape is None:     # (CNTK 2.7's words)
            raise ValueError("you need to specify at least shape or value")
        if np.isscalar(value) and not isinstance(value, (int, float)):
            # CNTK 2.7 hands a scalar to its C++ constructor, which takes only Python numbers
            raise NotImplementedError(
                "Wrong number or type of arguments for overloaded function 'new_Constant'.\n"
                f"constant: the value {value!r} is a {type(value).__name__}; give a Python "
                "number or an array")
        arr = np.asarray(0.0 if value is None else value, dtype=dtype)
        filled = shape is not None and (value is None or np.isscalar(value))
        full = _shape(shape) if filled else arr.shape
        _refuse_free_axis("Constant", name, full)
        uid = f"constant{next(_constant_ids)}" + (f"/{name}" if name else "")

        def make(known: tuple) -> _Var:
            if -2 in known:     # (an op made on it: CNTK 2.7's RuntimeError of its shape)
                raise RuntimeError(f"Constant{name and ' ' + repr(name)} of shape {known}: -2 "
                                   "is no size (CNTK 2.7 takes it as 2**64 - 2, which no "
                                   "operand's shape is compatible with)")
            # (only a number fills the shape: an array or a list keeps its own, as in CNTK)
            made = _Var.from_numpy_array(np.broadcast_to(arr, known).copy() if filled
                                         else arr, dtype=dtype)
            made.name = uid
            G.LEAF_NAMES[made] = name
            return made

        if filled and -2 in full and value is None:     # (CNTK 2.7 allocates it at once)
            raise RuntimeError(f"std::bad_array_new_length\nconstant: the shape {full} has "
                               "-2, no size (CNTK 2.7 takes it as 2**64 - 2 and cannot "
                               "allocate the value)")
        if filled and (InferredDimension in full or -2 in full):
            # (CNTK 2.7 makes it, shows -1 and refuses only its value until an op infers it;
            # -2, which no op infers, it shows so and refuses its value and every op on it)
            var = pending(full, dtype, make)
            var.need_grad = False
            G.LEAF_NAMES[var] = name
        else:
            var = make(full)
        GraphObject.__init__(self, var)

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape (``-1`` on an axis no op has inferred yet: ``InferredDimension``)."""
        waiting = pending_shape(self)
        return waiting if waiting is not None else VariableMixin.shape.fget(self)

    @property
    def value(self) -> np.ndarray:
        """A copy of the value (settable: CNTK allows it, as Stadyn's constants are buffers); a
        ValueError while an axis is still to be inferred, as in CNTK 2.7."""
        waiting = pending_shape(self)
        if waiting is not None and -2 in waiting:
            raise RuntimeError(f"std::bad_array_new_length\nConstant.value: the shape "
                               f"{waiting} has -2, no size (CNTK 2.7's RuntimeError)")
        if waiting is not None:
            raise unresolved_value_error(self)
        return self.variable.d.copy()

    @value.setter
    def value(self, array) -> None:
        self.variable.d = np.asarray(array, dtype=self.variable.dtype)

    asarray = ArrayMixin.asarray

    def __repr__(self) -> str:
        return shown("Constant", self)


def _refuse_free_axis(kind: str, name: str, shape: tuple) -> None:
    """CNTK 2.7's ValueError for a parameter or constant given a free axis (-3)."""
    if FreeDimension in shape:      # (CNTK 2.7's words; the uid is CNTK's count)
        dims = dims_text(shape)
        raise ValueError(f"Parameter/Constant '{kind}('{name or kind}', [], [{dims}])' has "
                         f"invalid shape '[{dims}]'; it is illegal for a Parameter/Constant "
                         "to have a FreeDimension.")


def _made(path: str, name: str, shape: tuple, value, dtype) -> _Var:
    """The parameter ``path`` of the CNTK registry, named ``name``."""
    var = registered(path, name, shape, value, dtype)
    G.LEAF_NAMES[var] = name
    return var


def of(v: _Var, as_variable: bool = False):
    """The CNTK object for the Stadyn Variable ``v``: a Function for an output, a Parameter or a
    Constant, else a Variable; with ``as_variable`` always a Variable (as CNTK's ``inputs`` and
    ``outputs`` show them: ``as_parameter()`` converts)."""
    Function = late("Function")
    kind = G.kind_of(v)
    if as_variable:
        cls = Variable
    elif kind == "parameter":
        cls = Parameter
    elif kind == "constant":
        cls = Constant
    elif kind == "output":
        return Function(v)
    else:
        cls = Variable
    obj = cls.__new__(cls)
    GraphObject.__init__(obj, v)
    return obj


def input_variable(shape, dtype=default_override_or(np.float32),
                   needs_gradient: bool = False, is_sparse: bool = False, dynamic_axes=None,
                   name: str = "") -> Variable:
    """An input with per-sample ``shape`` (the batch axis is added; its size follows the data).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> x = C.input_variable((3, 32, 32))
        >>> x.shape, x.variable.shape
        ((3, 32, 32), (1, 3, 32, 32))
    """
    refuse_name(name, "input_variable")
    return Variable(shape, dtype, needs_gradient, is_sparse, dynamic_axes, name)


def placeholder(shape=None, dynamic_axes=None, name: str = "") -> Variable:
    """A placeholder: a stand-in for a variable given later (by calling the Function, by
    ``clone`` substitutions or ``replace_placeholders``).  Without ``shape`` it takes the shape
    of what it is bound to.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> p = C.placeholder((2,))
        >>> f = C.relu(p)
        >>> x = C.input_variable(2)
        >>> f(x).eval({x: np.array([[-1, 2]], np.float32)}).tolist()
        [[0.0, 2.0]]
        >>> C.placeholder((C.InferredDimension, 3), name="p")
        Placeholder('p', [???], [? x 3])
        >>> q = C.placeholder((C.FreeDimension, 3), name="q")
        >>> q, (q + 1).shape
        (Placeholder('q', [???], [* x 3]), (-3, 3))
    """
    refuse_name(name, "placeholder_variable")
    if isinstance(shape, str):
        # (a name given first lands on ``shape``: CNTK 2.7's shape converter reads a string as
        # one inferred axis, [?], and the placeholder stays unnamed)
        shape = (InferredDimension,)
    # (shapeless until bound, as CNTK 2.7's, which takes the shape of what it is bound to
    # whole -- an inferred axis, -1, a free one, -3 -- but shows the shape it was given)
    # every shaped placeholder but one on a sequence axis waits too: until bound, CNTK 2.7's
    # dynamic axes of one made without any (or with the batch axis alone) are not its own --
    # it takes a sequence as it takes a batch, its ops built on what it is bound to
    inferred = shape is not None and _shape(shape) != (-2,) and not any(
        getattr(a, "is_sequence_axis", False) for a in dynamic_axes or ())
    if shape is None or _shape(shape) == (-2,) or inferred:     # (-2,): CNTK's unknown shape
        var = _Var((1,))
        G.SHAPELESS.add(var)
        if inferred:
            G.INFERRED_SHAPES[var] = _shape(shape)
        shape = None
    else:
        var = _Var((1,) + _shape(shape))
        if dynamic_axes is None or len(dynamic_axes):
            G.BATCH.add(var)
            free_batch_input(var)      # sized by what is fed (CNTK's dynamic axes)
        else:
            var.reset_shape(_shape(shape))
    G.PLACEHOLDERS[var] = name
    if dynamic_axes is not None:
        _PLACEHOLDER_AXES[var] = tuple(dynamic_axes)
    if shape is not None and any(getattr(a, "is_sequence_axis", False)
                                 for a in dynamic_axes or ()):
        from ._loops import as_loop_sequence     # on a sequence axis: a sequence until replaced
        as_loop_sequence(var)
        mark_sequence_placeholder(var)      # (its ops noted: bound to a non-sequence, rebuilt)
        G.name_sequence_axis(var, tuple(dynamic_axes))
    obj = Variable.__new__(Variable)
    GraphObject.__init__(obj, var)
    return obj


def without_dynamic_axes(v) -> bool:
    """Whether ``v`` is a placeholder made with no dynamic axes (``dynamic_axes=[]``) and not
    bound yet: CNTK 2.7 knows its dynamic axes (none) while it waits, so an op on it has none
    either and a ``sequence`` op refuses it as it is called.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> [without_dynamic_axes(C.placeholder(2, dynamic_axes=d)) for d in ([], None)]
        [True, False]
    """
    var = getattr(v, "variable", None)
    return isinstance(var, _Var) and _PLACEHOLDER_AXES.get(var) == () and \
        G.kind_of(var) == "placeholder"


def batch_axis_only(v) -> bool:
    """Whether ``v`` is a placeholder made with the batch axis alone as its dynamic axes and
    not bound yet: CNTK 2.7 knows them while it waits, so a ``sequence`` op refuses it as it
    is called.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> [batch_axis_only(C.placeholder(2, dynamic_axes=d))
        ...  for d in ([C.Axis.default_batch_axis()], None)]
        [True, False]
    """
    var = getattr(v, "variable", None)
    axes = _PLACEHOLDER_AXES.get(var) if isinstance(var, _Var) else None
    return axes is not None and len(axes) == 1 and getattr(axes[0], "is_batch_axis", False) \
        and G.kind_of(var) == "placeholder"


def output_variable(shape, dtype, dynamic_axes, needs_gradient: bool = True,
                    name: str = "") -> Variable:
    """What a ``UserFunction``'s ``infer_outputs`` returns: the shape and type of an output.
    A ``FreeDimension`` in ``shape`` is sized by the arrays the function's ``forward`` gives
    (1 until it runs).  On dynamic axes with a sequence axis (a sequence input's
    ``dynamic_axes``) the output is a sequence of that input's lengths, as in CNTK 2.7.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> s = C.sequence.input_variable(3)
        >>> C.output_variable(2, s.dtype, s.dynamic_axes).dynamic_axes == s.dynamic_axes
        True
    """
    refuse_name(name, "output_variable")
    shape = tuple(1 if d == FreeDimension else d for d in _shape(shape))
    if any(getattr(a, "is_sequence_axis", False) for a in dynamic_axes or ()):
        var = sequence_input(shape, need_grad=needs_gradient, dtype=dtype)
        G.name_sequence_axis(var, tuple(dynamic_axes))
    else:
        var = _Var((1,) + _shape(shape) if dynamic_axes else _shape(shape),
                   need_grad=needs_gradient, dtype=dtype)
    G.PLACEHOLDERS[var] = name
    _PLACEHOLDER_AXES[var] = tuple(dynamic_axes or ())
    _OUTPUT_UIDS[var] = G.new_uid("Output")
    if dynamic_axes:
        G.BATCH.add(var)
    obj = Variable.__new__(Variable)
    GraphObject.__init__(obj, var)
    return obj


def parameter(shape=None, init=None, dtype=None, device=None, name: str = "") -> Parameter:
    """A learnable parameter (see :class:`Parameter`).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> C.parameter((3, 2), init=0.5, name="w").value.tolist()
        [[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]]
    """
    refuse_name(name, "new_Parameter")
    return Parameter(shape, init, parameter_dtype(init, dtype), device, name)


def constant(value=None, shape=None, dtype=None, device=None, name: str = "") -> Constant:
    """A constant (see :class:`Constant`); broadcasts against batched inputs.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> C.constant(2.5, shape=(3,), name="k").value.tolist()
        [2.5, 2.5, 2.5]
    """
    refuse_name(name, "new_Constant")
    return Constant(value, shape, value_dtype(value, dtype), device, name)


bind(placeholder=placeholder,            # a loop's placeholder, given its shape (_deferred_loops)
     input_variable=input_variable)      # a probe's stand-in (_deferred_loops)
