"""Between CNTK's objects and Stadyn's: Functions in, Variables out, and back.

Every op adapter unwraps its CNTK operands (:func:`operand`: Functions, NumPy arrays, numbers),
calls the Stadyn function, and wraps the result (:func:`wrap`) under the CNTK op name and the
name the user gave (:func:`named`).  Whether a value has the batch axis in front is
:data:`~stadyn.compat.cntk._graph.BATCH`'s to say (:func:`batched`).
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

import numpy as np

from ... import cntk_semantics as S
from ...cntk_semantics import reshape_samples
from ...graph import Variable
from ._graph import (BATCH, INNER_OPS, LEAF_NAMES, PLACEHOLDERS, SHAPELESS, kind_of,
                     set_op_name)
from ._inferred_parameters import current, infer_elementwise, refuse_pending
from ._mixed_axes import refuse_mixed_axes
from ._mixins import GraphObject
from ._renaming import refuse_name
from ._run_checks import at_first_run, refuse_when_run
from ._shown_constants import show_clone

__all__ = ["ShapelessPlaceholderError", "several_outputs_message", "wrap", "unwrap", "operand",
           "const", "batched", "named", "refuse_name", "one_op",
           "adapt", "binary", "same_dtype", "operands_dtype", "sample_axis", "sample_axes",
           "sample_shape", "lead_axes", "reshape_samples", "float_arrays", "swig_count"]


def wrap(value: Any) -> Any:
    """Stadyn Variables (also inside tuples and lists) as CNTK objects: inputs and placeholders
    as ``Variable``, parameters as ``Parameter``, constants as ``Constant``, outputs as
    ``Function``."""
    if isinstance(value, Variable):
        from ._variables import of
        return of(value)
    if isinstance(value, tuple):
        return tuple(wrap(v) for v in value)
    return value


def unwrap(value: Any) -> Any:
    """The Stadyn Variable inside a CNTK object (others unchanged; also inside lists, tuples)."""
    if isinstance(value, GraphObject):
        refuse_pending(value)       # (a parameter whose axes no op has inferred yet)
        return value.variable
    if isinstance(value, (list, tuple)):
        return type(value)(unwrap(v) for v in value)
    return value


class ShapelessPlaceholderError(ValueError):
    """An op applied to a placeholder whose shape is not known yet."""


def root_as_output(x: Any) -> Any:
    """``x`` as an op takes it where it is the root function of a layer not applied yet or
    of a waiting Function (``_operand_is_output``; it shows ``C.Function`` as its class): its
    output, as CNTK 2.7 takes a Function given as an operand; items of a list or tuple alike;
    anything else as it is.

    Example:
        >>> from stadyn.compat.cntk._adapt import root_as_output
        >>> root_as_output([1, 2])
        [1, 2]
    """
    if getattr(type(x), "_operand_is_output", False):
        return x.output
    if type(x) in (list, tuple):
        return type(x)(root_as_output(u) for u in x)
    return x


def several_outputs_message(f: Any) -> str:
    """CNTK 2.7's words for the Function ``f`` of several outputs taken where one Variable is
    needed (its ``output``, a layer's operand), ``f`` shown as its ``repr`` (pick one of
    its ``outputs`` instead).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> x = C.input_variable(2, name="x")
        >>> C.layers.Dense(2)(C.combine([x * 1, x * 2]))
        Traceback (most recent call last):
          ...
        RuntimeError: A Function instance 'Composite(Combine): ...' with more than one output ...
    """
    return (f"A Function instance '{f!r}' with more than one output cannot be implicitly "
            "converted to a Variable.")


def refuse_several_outputs(x: Any, swig: "str | None", hint: str = "") -> None:
    """CNTK 2.7's refusal of a Function of several outputs given to a one-operand op: SWIG's
    NotImplementedError for the C++ op ``swig`` its Python wrapper hands the Function to
    (``re_lu`` for ``relu``), or, ``swig`` None, the ValueError of the ops that read the
    operand's one output first (``floor``, ``stop_gradient``), ``hint`` (Stadyn's words)
    after CNTK's.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> x = C.input_variable(2)
        >>> C.relu(C.combine([x * 1, x * 2]))
        Traceback (most recent call last):
          ...
        NotImplementedError: Wrong number or type of arguments for overloaded function 're_lu'.
    """
    outputs = getattr(x, "outputs", ()) if isinstance(x, GraphObject) else ()
    if len(outputs) < 2:
        return
    if swig is None:
        raise ValueError(f"expected single output, but got {len(outputs)}{hint}")
    raise NotImplementedError(f"Wrong number or type of arguments for overloaded function "
                              f"'{swig}'.")


def swig_count(value: Any, swig: str) -> int:
    """``value`` where CNTK 2.7's C++ op ``swig`` takes a ``size_t`` (``classification_error``'s
    ``topN``, ``top_k``'s ``k``): a Python int of 0 or more (a bool too); anything else, a
    NumPy integer or a float among them, is SWIG's NotImplementedError.

    Example:
        >>> import numpy as np
        >>> swig_count(2, "top_k")
        2
        >>> swig_count(np.int64(2), "top_k")
        Traceback (most recent call last):
          ...
        NotImplementedError: Wrong number or type of arguments for overloaded function 'top_k'.
    """
    if not isinstance(value, int) or value < 0:
        raise NotImplementedError(f"Wrong number or type of arguments for overloaded function "
                                  f"'{swig}'.")
    return value


def operand(x: Any, dtype=np.float32) -> Any:
    """An op's operand as Stadyn takes it: CNTK objects unwrapped, NumPy arrays and lists as
    constants, numbers as they are."""
    x = root_as_output(x)
    if isinstance(x, GraphObject):
        refuse_pending(x)       # (a parameter whose axes no op has inferred yet)
        v = current(x)
        if v in SHAPELESS:
            raise ShapelessPlaceholderError(
                f"placeholder {PLACEHOLDERS.get(v, '')!r} has no shape yet: give "
                "placeholder(shape=...) or replace it before applying ops to it")
        return v
    if isinstance(x, (np.ndarray, list, tuple, np.generic)):
        return const(x, dtype)
    return x


def const(value, dtype=np.float32) -> Variable:
    """A constant Variable holding ``value`` as ``dtype`` (named, as CNTK's Constants are, so
    that a saved model keeps it as a constant and not as an input)."""
    from ._variables import Constant
    # (a NumPy scalar as its 0-d array: Constant refuses NumPy scalars, as CNTK's does)
    return Constant(np.asarray(value) if isinstance(value, np.generic) else value,
                    dtype=dtype).variable


def batched(x: Any) -> bool:
    """Whether ``x`` has the batch axis first (an input, or something computed from one)."""
    if isinstance(x, GraphObject):
        return BATCH(x.variable)
    return isinstance(x, Variable) and BATCH(x)


def lead_axes(x: Any) -> int:
    """How many leading axes of ``x`` are not a sample's: the batch axis, and the sequence axis
    of a sequence; 0 for an unbatched operand."""
    if not batched(x):
        return 0
    v = operand(x)
    return 2 if getattr(v, "sequence_lengths", None) is not None else 1


def sample_shape(x: Any) -> tuple[int, ...]:
    """The per-sample shape of ``x`` (its shape without the batch and sequence axes)."""
    v = operand(x)
    shape = tuple(getattr(v, "shape", np.shape(v)))
    return shape[lead_axes(x):]


def sample_axis(x: Any, axis: int) -> int:
    """CNTK's per-sample ``axis`` of ``x`` as a Stadyn axis (row-major, negative from the end)."""
    return S.static_axis(int(axis), len(operand(x).shape), lead_axes(x))


def sample_axes(x: Any) -> list[int]:
    """Every axis of a sample of ``x`` (all axes of an unbatched operand), as Stadyn axes."""
    n = len(operand(x).shape)
    return list(range(lead_axes(x), n))


def named(out: Any, name: str = "", op: str | None = None) -> Any:
    """``out`` (a CNTK Function) made by the CNTK op ``op`` and named ``name`` (a ``str``:
    :func:`refuse_name`)."""
    refuse_name(name, op)
    if isinstance(out, GraphObject) and out.variable.parent is not None:
        if op:
            set_op_name(out.variable, op)
        if name:
            out.variable.name = name
    return out


def one_op(out: Any, *operands: Any) -> Any:
    """``out`` (a Variable, or a CNTK object around one) as one op reading ``operands``: the
    values Stadyn computes on the way from them to ``out`` become its inner values
    (:data:`~stadyn.compat.cntk._graph.INNER_OPS`), which the graph walks and
    ``root_function.inputs`` pass through, as CNTK 2.7 shows ``floor(x)`` as one ``Floor``
    reading ``x``.  ``operands`` are where the walk stops (Variables or CNTK objects);
    leaves stop it too.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> x = C.input_variable(3, name="x")
        >>> [i.name for i in C.floor(x).root_function.inputs]
        ['x']
    """
    v = out.variable if isinstance(out, GraphObject) else out
    stops = {id(unwrap(o)) for o in operands}
    if not isinstance(v, Variable) or v.parent is None or id(v) in stops:
        return out
    stack, seen = list(v.parent.inputs), set(stops)
    while stack:
        u = stack.pop()
        if id(u) not in seen and u.parent is not None:
            seen.add(id(u))
            INNER_OPS.add(u)
            stack.extend(u.parent.inputs)
    return out


_FLOAT = {np.dtype(np.float32): "Float", np.dtype(np.float64): "Double",
          np.dtype(np.float16): "Float16"}


def _constant(v: Any) -> bool:
    """Whether ``v`` is a CNTK Constant (a Stadyn constant leaf) of a floating-point type."""
    return isinstance(v, Variable) and np.dtype(v.dtype) in _FLOAT and kind_of(v) == "constant"


def operands_dtype(*values: Any, op: str = "", arrays: bool = False) -> np.dtype:
    """The data type an op of ``values`` computes in, as CNTK 2.7 decides it: that of its
    inputs, parameters and other Functions' outputs (float64, float32, float16), which must agree
    (CNTK's ValueError otherwise); constants and numbers take it.  With none, that of the
    first constant (``values`` in CNTK's order of the op's operands), else float32."""
    firm = {}
    for v in values:
        v = v.variable if isinstance(v, GraphObject) else v
        if isinstance(v, Variable) and np.dtype(v.dtype) in _FLOAT and \
                kind_of(v) not in ("constant", "placeholder"):
            firm.setdefault(np.dtype(v.dtype), v)
    if len(firm) > 1:
        a, b = firm.values()
        raise ValueError(f"{op or 'an op'}: operands {wrap(a)!r} and {wrap(b)!r} have different "
                         f"data types '{_FLOAT[np.dtype(a.dtype)]}' and "
                         f"'{_FLOAT[np.dtype(b.dtype)]}' (CNTK 2.7: Primitive op '{op}' passed "
                         "operands with different DataTypes); give both one type")
    constants = [np.dtype(v.dtype) for v in map(unwrap, values) if _constant(v)]
    if arrays and not firm and not constants:
        # CNTK 2.7's get_data_type (its binary ops): the widest of the NumPy operands' types
        given = {np.dtype(v.dtype) for v in values
                 if isinstance(v, (np.ndarray, np.floating)) and np.dtype(v.dtype) in _FLOAT}
        constants = [d for d in map(np.dtype, (np.float64, np.float32, np.float16)) if d in given]
    return next(iter(firm), constants[0] if constants else np.dtype(np.float32))


def same_dtype(values: list, op: str = "") -> list:
    """``values`` (Stadyn Variables and others) with their constants in the op's data type
    (:func:`operands_dtype`): a float32 constant in a float64 op is cast, as CNTK clones it;
    a constant of another type is cast too, and the op refused when it runs, as CNTK 2.7
    refuses it (:mod:`._run_checks`; a float64 constant in a float32 op: "Cannot clone
    Constant with DataType 'Double' to DataType 'Float'"; two constants of different types
    in an op of constants only: "mismatching precision")."""
    dtype = operands_dtype(*values, op=op)
    firm = any(isinstance(v, Variable) and np.dtype(v.dtype) in _FLOAT and not _constant(v)
               and kind_of(v) != "placeholder" for v in values)
    out = []
    for v in values:
        if _constant(v) and np.dtype(v.dtype) != dtype:
            from ... import functions as F
            cast = F.cast(v, dtype.name)
            if firm and np.dtype(v.dtype) == np.float32 and dtype == np.float64:
                at_first_run(cast, _cloned)     # (CNTK clones it then)
            else:
                given, wanted = _FLOAT[np.dtype(v.dtype)], _FLOAT[dtype]
                cntk = f"Cannot clone Constant with DataType '{given}' to DataType '{wanted}'" \
                    if firm and dtype != np.float16 else \
                    "an ComputationNodeBasePtr of mismatching precision was passed"
                refuse_when_run(cast, (
                    f"{op or 'an op'}: the {np.dtype(v.dtype).name} constant {wrap(v)!r} in an "
                    f"op computing in {dtype.name} (CNTK 2.7, when it runs: {cntk}); give the "
                    f"constant dtype=np.{dtype.name}"))
            v = cast
        out.append(v)
    return out


def _cloned(cast: Variable) -> None:
    """The float64 clone CNTK 2.7's first run makes of the float32 constant ``cast`` casts
    (named as it is), shown from then on in the place of the constant."""
    from ._variables import Constant
    original = cast.parent.inputs[0]
    clone = Constant(original.d, dtype=cast.dtype, name=LEAF_NAMES.get(original, ""))
    show_clone(cast, clone.variable)


def adapt(fn: Callable, name: str | None = None, op: str | None = None) -> Callable:
    """A Stadyn function as a CNTK op: CNTK operands in, a CNTK Function out, ``name=`` taken."""
    @functools.wraps(fn)
    def adapted(*args, name: str = "", **kwargs):
        op_name = op or _op_name(adapted.__name__)
        dtype = operands_dtype(*args, *kwargs.values(), op=op_name)
        args = same_dtype([operand(a, dtype) for a in args], op_name)
        out = wrap(fn(*args,
                      **{k: operand(v) if _is_operand(v) else v for k, v in kwargs.items()}))
        return named(out, name, op_name)
    if name:
        adapted.__name__ = adapted.__qualname__ = name
    return adapted


_NUMPY_FLOATS = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.float16))


def float_arrays(*params: str, op: str | None = None) -> Callable:
    """Decorator: the CNTK op refuses NumPy arrays (and NumPy floating-point scalars) of any
    type but float32, float64 and float16 in the parameters ``params``, with CNTK 2.7's
    ValueError (``NumPy type "int64" is not supported``) before anything else is checked.
    CNTK 2.7's binary ops, losses, metrics and sequence ops decide their data type from these
    operands and refuse the others; its unary activations (``relu``) cast them to float32
    instead, and Python lists and numbers are always taken.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> try:
        ...     C.minus(np.arange(3), np.ones(3, np.float32))
        ... except ValueError as error:
        ...     print(str(error).split(" (")[0])
        minus: NumPy type "int64" is not supported
    """
    def decorate(fn: Callable) -> Callable:
        signature = inspect.signature(fn)
        where = op or fn.__name__

        @functools.wraps(fn)
        def checked(*args, **kwargs):
            given = signature.bind_partial(*args, **kwargs).arguments
            for param in params:
                value = given.get(param)
                if isinstance(value, (np.ndarray, np.inexact)) and \
                        np.dtype(value.dtype) not in _NUMPY_FLOATS:
                    raise ValueError(
                        f'{where}: NumPy type "{value.dtype}" is not supported (CNTK 2.7 takes '
                        f"float32, float64 and float16 arrays here); give "
                        f"np.asarray({param}, np.float32)")
            return fn(*args, **kwargs)
        return checked
    return decorate


def _is_operand(v: Any) -> bool:
    return isinstance(v, GraphObject)


def _op_name(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


# Set while an untyped ``@C.Function``'s graph is built for the types of its arguments: CNTK
# 2.7 built its ops on placeholders of unknown dynamic axes, so an op of a sequence and a
# value without one is refused then (no ReconcileDynamicAxis is put in, as when made at once)
STRICT_DYNAMIC_AXES = [False]


def _check_dynamic_axes(left: Any, right: Any, op: str | None) -> None:
    """CNTK 2.7's RuntimeError for an op of a sequence and a batch without one, while
    :data:`STRICT_DYNAMIC_AXES` is set (the ops of an untyped ``@C.Function``, made over
    placeholders, reconcile nothing): :func:`._mixed_axes.refuse_mixed_axes`'s."""
    if STRICT_DYNAMIC_AXES[0] and isinstance(left, GraphObject) and \
            isinstance(right, GraphObject):
        refuse_mixed_axes(op or "Binary", (left, right))


def binary(fn: Callable, left: Any, right: Any, name: str = "", op: str | None = None) -> Any:
    """``fn(left, right)`` with CNTK's broadcasting: sample axes align on the right, the batch
    axis apart."""
    _check_dynamic_axes(left, right, op)
    if op not in ("ElementDivide", "ElementMax", "ElementMin"):     # (CNTK 2.7's infer none)
        infer_elementwise(root_as_output(left), root_as_output(right), op or "")
    dtype = operands_dtype(left, right, op=op or "", arrays=op not in (None, "And", "Or", "Xor"))
    a, b = same_dtype([_tensor(operand(left, dtype), dtype), _tensor(operand(right, dtype),
                                                                      dtype)], op or "")
    pair = S.broadcast_pair(a, b, batched(left), batched(right))
    out = fn(*pair)
    return named(wrap(one_op(out, a, b) if op else out), name, op)


def _tensor(x: Any, dtype=np.float32) -> Variable:
    """A number as a constant of ``dtype`` (CNTK makes a ``Constant`` of it too)."""
    return x if isinstance(x, Variable) else const(x, dtype)
