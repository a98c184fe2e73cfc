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

__all__ = ["type_text", "function_text"]


def type_text(v) -> str:
    """``v``'s type as ``cntk.layers.typing`` writes it: ``Tensor[2,3]``,
    ``Tensor[np.float64,3]``, ``SparseTensor[5]``, ``ParameterTensor[2]`` (no dynamic axis),
    ``Sequence[Tensor[2]]``, ``SequenceOver[axis][...]``, ``tensor`` (shape unknown),
    ``np.float32`` (a scalar)."""
    shape = tuple(v.shape)
    dtype = np.dtype(getattr(v, "dtype", np.float32))
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
        op_name = root.op_name if same else "Composite"
    args = ", ".join((f"{a.name}: " if a.name else "") + type_text(a) for a in f.arguments)
    outputs = list(f.outputs)
    out = type_text(outputs[0]) if len(outputs) == 1 else \
        "Tuple[" + ", ".join(type_text(o) for o in outputs) + "]"
    return (f"{f.name}: " if f.name else "") + f"{op_name}({args}) -> {out}"
