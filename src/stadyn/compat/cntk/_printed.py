"""How CNTK 2.7 prints a Function: ``f: Log(Tensor[1]) -> Tensor[1]`` (its name, the root's
op name, or ``Composite`` when the root reads other inputs than the Function's, its
arguments' types as ``cntk.layers.typing`` writes them, its outputs' types).

Example:
    >>> import stadyn.compat.cntk as C
    >>> print(C.log(C.input_variable(1), name="f"))
    f: Log(Tensor[1]) -> Tensor[1]
"""

from __future__ import annotations

import numpy as np

__all__ = ["type_text", "function_text", "function_repr", "op_name_of_call", "pending_text",
           "pending_output_text", "ELEMENTWISE_OPS",
           "reconciles_operand"]


def type_text(v) -> str:
    """``v``'s type as ``cntk.layers.typing`` writes it: ``Tensor[2,3]``,
    ``Tensor[np.float64,3]``, ``SparseTensor[5]``, ``ParameterTensor[2]`` (no dynamic axis),
    ``Sequence[Tensor[2]]``, ``SequenceOver[axis][...]``, ``tensor`` (shape unknown),
    ``np.float32`` (a scalar)."""
    shape = tuple(v.shape)
    dtype = np.dtype(getattr(v, "dtype", None) or np.float32)   # (a placeholder's: None)
    axes = tuple(getattr(v, "dynamic_axes", ()) or ())
    if shape == (-2,):
        s = "tensor"
    elif shape == ():
        s = f"np.{dtype.name}"
    else:
        s = "Tensor[" + ("" if dtype == np.float32 else f"np.{dtype.name},") + \
            ",".join(str(d) for d in shape) + "]"
        if getattr(v, "is_sparse", False):
            s = "Sparse" + s
        elif not axes:
            s = "Parameter" + s
    for axis in reversed(axes):
        name = getattr(axis, "name", str(axis))
        if name == "defaultBatchAxis":
            continue
        s = ("Sequence" if name in ("defaultDynamicAxis", "UnknownAxes")
             else f"SequenceOver[{name}]") + f"[{s}]"
    return s


def function_text(f) -> str:
    """``f`` as CNTK 2.7's ``str(Function)`` shows it."""
    op_name = f.op_name
    if f.is_composite:
        root = f.root_function
        same = root is not None and all(i.uid == ri.uid for i, ri in zip(f.inputs, root.inputs))
        op_name = root.op_name if same and not reconciles_operand(root) else "Composite"
    args = ", ".join((f"{a.name}: " if a.name else "") + type_text(a) for a in f.arguments)
    outputs = list(f.outputs)
    out = type_text(outputs[0]) if len(outputs) == 1 else \
        "Tuple[" + ", ".join(type_text(o) for o in outputs) + "]"
    return (f"{f.name}: " if f.name else "") + f"{op_name}({args}) -> {out}"


# CNTK 2.7's binary ops (its C++ ``BinaryOp``) that put a ReconcileDynamicAxis before an
# operand of the batch axis alone joined with one of a sequence axis
_RECONCILING = {"Plus", "Minus", "ElementTimes", "LogPlus", "Pow", "Equal", "NotEqual", "Less",
                "LessEqual", "Greater", "GreaterEqual", "Times", "TransposeTimes",
                "CosDistance"}


def reconciles_operand(root) -> bool:
    """Whether CNTK 2.7 made the primitive function ``root`` of an operand on the batch axis
    alone and one on a sequence axis: it puts a ReconcileDynamicAxis before the former, so
    the root reads that op's output (a Function of it prints ``Composite``).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> s, b = C.sequence.input_variable(2, name="s"), C.input_variable(2, name="b")
        >>> reconciles_operand((s + b).root_function), reconciles_operand((s + s).root_function)
        (True, False)
        >>> print(s + b)
        Composite(s: Sequence[Tensor[2]], b: Tensor[2]) -> Sequence[Tensor[2]]
    """
    if root.op_name not in _RECONCILING:
        return False
    axes = [tuple(getattr(i, "dynamic_axes", ()) or ()) for i in root.inputs]
    axes = [a for a in axes if a]
    return len(axes) == 2 and sum(any(getattr(x, "is_sequence_axis", False) for x in a)
                                  for a in axes) == 1


def function_repr(op_name: str, composite: bool, arguments, outputs) -> str:
    """A Function as CNTK 2.7's ``repr`` shows it (its C++ ``Function::AsString``,
    Function.cpp:1063): ``Composite(<root's op>): `` (``<op>: `` for a primitive), its
    arguments' and outputs' ``repr`` (``Input('x', [#], [3])``,
    ``Output('Plus5_Output_0', [#], [3])``).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> repr(C.relu(C.input_variable(3, name="x"), name="r"))
        "Composite(ReLU): Input('x', [#], [3]) -> Output('r', [#], [3])"
    """
    head = f"Composite({op_name}): " if composite else f"{op_name}: "
    return head + ", ".join(repr(a) for a in arguments) + " -> " + \
        ", ".join(repr(o) for o in outputs)


# CNTK 2.7's op names where they are not the Python name in CapWords (``plus``: ``Plus``),
# as ``root_function.op_name`` gives them; ops in ``cntk.sequence`` by ``sequence.<name>``
_OP_NAMES = {
    "relu": "ReLU", "sigmoid": "StableSigmoid", "elu": "ELU", "selu": "SELU",
    "leaky_relu": "LeakyReLU", "param_relu": "PReLU", "log_add_exp": "LogPlus",
    "cosine_distance": "CosDistance", "element_and": "And", "element_or": "Or",
    "element_xor": "Xor", "element_not": "Not", "square": "ElementTimes",
    "times_transpose": "TransposeTimes", "alias": "NoOp", "argmax": "ReduceElements",
    "argmin": "ReduceElements", "reduce_sum": "ReduceElements", "reduce_mean": "ReduceElements",
    "reduce_max": "ReduceElements", "reduce_min": "ReduceElements",
    "reduce_prod": "ReduceElements", "reduce_log_sum_exp": "ReduceElements",
    "reconcile_dynamic_axes": "ReconcileDynamicAxis", "to_sequence": "ToSequenceOp",
    "unpack_batch": "UnpackBatchAxis", "eye_like": "EyeLikeOp", "ones_like": "ConstantOp",
    "zeros_like": "ConstantOp", "weighted_binary_cross_entropy": "Logistic",
    "cosine_distance_with_negative_samples": "CosDistanceWithNegativeSamples",
    "sequence.delay": "PastValue", "sequence.broadcast_as": "Sequence::BroadcastAs",
    "sequence.first": "Sequence::Slice", "sequence.last": "Sequence::Slice",
    "sequence.gather": "Sequence::Gather", "sequence.is_first": "Sequence::IsFirst",
    "sequence.is_last": "Sequence::IsLast", "sequence.reduce_sum": "Sequence::ReduceElements",
    "sequence.reduce_max": "Sequence::ReduceElements", "sequence.scatter": "Sequence::Scatter",
    "sequence.softmax": "Sequence::Softmax",
    "uniform_like": "RandomDistribution", "normal_like": "RandomDistribution",
    "gumbel_like": "RandomDistribution", "bernoulli_like": "RandomDistribution",
}


def makes_block(fn, args: tuple = (), kwargs: "dict | None" = None) -> bool:
    """Whether CNTK 2.7 makes a block of a call of its op ``fn``: the reductions
    (ReduceFunctionAsBlock; ``reduce_sum``'s output is ``Block<n>_Output_0``; argmax and argmin
    are primitives), which their maker marks ``makes_block``; the losses CNTK makes blocks of
    (``classification_error`` of top 1 only: ``makes_block`` a rule of the call's ``args`` and
    ``kwargs``).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> makes_block(C.reduce_sum), makes_block(C.argmax)
        (True, False)
    """
    made = getattr(fn, "makes_block", False)     # (set by the reductions' maker, the losses)
    if callable(made):      # (a rule of the call's arguments: classification_error's top 1)
        return bool(made(*args, **(kwargs or {})))
    return bool(made)


# ops CNTK 2.7 makes of several, whose root reads others than the op's operands: printed
# ``Composite``
_COMPOSED = {"ceil", "round", "fmeasure"}


def op_name_of_call(fn) -> str:
    """The op name CNTK 2.7 prints for a call of the CNTK op ``fn`` (a Python function of
    ``cntk.ops`` or ``cntk.sequence``) not built yet: ``Plus`` for ``plus``, ``ReLU`` for
    ``relu``, ``Sequence::ReduceElements`` for ``sequence.reduce_sum``; ``Composite`` for the
    ops it makes of several.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> op_name_of_call(C.element_times), op_name_of_call(C.sequence.last)
        ('ElementTimes', 'Sequence::Slice')
    """
    shown = getattr(fn, "cntk_op_name", None)   # (a waiting block's kind: as_block's name)
    if shown:
        return shown
    name = getattr(fn, "__name__", "")
    if getattr(fn, "__module__", "").endswith(".sequence"):
        name = "sequence." + name
    if name in _COMPOSED:
        return "Composite"
    return _OP_NAMES.get(name, "".join(p.capitalize() for p in name.split(".")[-1].split("_")))


# the ops whose output CNTK 2.7 types as its operand's where the other is a placeholder
# without a shape
ELEMENTWISE_OPS = {"Plus", "Minus", "ElementTimes", "ElementDivide", "Greater", "GreaterEqual",
                "Less", "LessEqual", "Equal", "NotEqual", "Pow", "ElementMax", "ElementMin",
                "LogPlus"}


def pending_text(name: str, op_name: str, arguments, root_op: str = "",
                 shape: tuple = (-2,), outputs: "list | None" = None) -> str:
    """A Function not built yet (an op on a placeholder without a shape) as CNTK 2.7 prints
    it: its arguments' types (a placeholder's ``Sequence[tensor]``) and its output's, unknown
    (``Sequence[tensor]``) but for the dynamic axes of an argument that has known ones
    (``tensor`` over the batch axis) and, for an elementwise op (``Plus``; ``root_op``, the
    op itself where it is printed ``Composite``), that of an argument with a shape;
    ``outputs``, the types of several outputs (a ``combine``'s), as a ``Tuple[...]``.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> print(C.plus(C.placeholder(name="p"), 1.0, name="f"))
        f: Plus(p: Sequence[tensor]) -> Sequence[tensor]
    """
    args = ", ".join((f"{a.name}: " if a.name else "") + type_text(a) for a in arguments)
    out = pending_output_text(op_name, arguments, root_op, shape) if outputs is None else \
        "Tuple[" + ", ".join(outputs) + "]"
    return (f"{name}: " if name else "") + f"{op_name}({args}) -> {out}"


def pending_output_text(op_name: str, arguments, root_op: str = "",
                        shape: tuple = (-2,)) -> str:
    """The type CNTK 2.7 prints for the output of a Function not built yet (see
    :func:`pending_text`).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> from stadyn.compat.cntk._printed import pending_output_text
        >>> pending_output_text("Plus", [C.placeholder(), C.input_variable(3)])
        'Tensor[3]'
    """
    known = [a for a in arguments if not _unknown_axes(a)]
    shaped = [a for a in known if tuple(a.shape) != (-2,)]
    if (root_op or op_name) in ELEMENTWISE_OPS and shaped:
        out = type_text(shaped[0])
    elif tuple(shape) != (-2,) and arguments:
        # (inferred from placeholders' shapes with inferred axes: ``Tensor[-1,3]``)
        out = type_text(_Unknown((known or list(arguments))[0].dynamic_axes, shape))
    elif not known:
        out = "Sequence[tensor]"
    else:
        out = type_text(_Unknown(known[0].dynamic_axes))
    return out


def _unknown_axes(v) -> bool:
    return [getattr(a, "name", "") for a in v.dynamic_axes] == ["UnknownAxes"]


class _Unknown:
    """A value of unknown shape over ``dynamic_axes`` (to be written by :func:`type_text`)."""

    def __init__(self, dynamic_axes, shape: tuple = (-2,)):
        self.dynamic_axes, self.shape = dynamic_axes, tuple(shape)
