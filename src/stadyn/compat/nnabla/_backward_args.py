"""What NNabla 1.39's ``Variable.forward`` / ``backward`` refuse, and ``backward``'s
``clear_buffer`` argument read and rewritten (moved out of ``_variable.py``).

Example:
    >>> import stadyn.compat.nnabla as nn
    >>> try:
    ...     refuse_leaf(nn.Variable((2,)), "backward")
    ... except RuntimeError as e:
    ...     print(str(e).split(":")[0])
    Variable.backward
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import graph as _graph
from ._ndarray import NdArray
from ._variable_protocol import VariableProtocol

__all__ = ["clearing", "clears", "refuse_grad_shape", "refuse_leaf"]


def refuse_leaf(v: Any, what: str) -> None:
    """A Variable with no parent (a leaf, or one whose function ``rewire_on`` moved to another
    Variable) has no ``forward`` / ``backward``: NNabla's RuntimeError (variable.cpp: "The
    variable has no parent").

    Example:
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> refuse_leaf(F.relu(nn.Variable((2,))), "forward") is None
        True
    """
    if v.parent is None:
        raise RuntimeError(f"Variable.{what}: value error in {what}: the variable "
                           f"{v.name or tuple(v.shape)!r} has no parent function (a leaf, "
                           "or one whose function rewire_on moved to another Variable)")


def refuse_grad_shape(v: Any, grad: Any) -> None:
    """Refuse a ``backward(grad)`` NNabla 1.39 refuses: its backward (``_variable.pyx``) makes
    an NdArray of an array grad's own shape and hands it to ``Variable::set_grad``, whose check
    refuses any other shape than the Variable's (variable.cpp:50, "Shape must match"): no
    broadcasting.  Anything else that is not a scalar it writes into a 0-d array: a list or
    tuple is NumPy's ValueError there, a Variable a RuntimeError (no dtype for it).  (The
    caller's line is looked up only to refuse: this runs on every backward.)

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn
        >>> try:
        ...     refuse_grad_shape(nn.Variable((2,)), np.ones(3))
        ... except RuntimeError as e:
        ...     print(type(e).__name__)
        RuntimeError
    """
    if isinstance(grad, (list, tuple)):
        raise ValueError(f"Variable.backward: grad must be a scalar, a NumPy array or an NdArray, "
                         f"not a {type(grad).__name__} (NNabla 1.39 stores it as a scalar: "
                         f"setting an array element with a sequence; called at {_where()})")
    if isinstance(grad, (_graph.Variable, VariableProtocol)):
        raise RuntimeError("Variable.backward: grad must be a scalar, a NumPy array or an "
                           "NdArray, not a Variable (pass its .g or .d; NNabla 1.39: type error "
                           f"in dtype_to_string; called at {_where()})")
    if isinstance(grad, (np.ndarray, NdArray)) and tuple(grad.shape) != tuple(v.shape):
        raise RuntimeError(f"Variable.backward: value error in set_grad: grad of shape "
                           f"{tuple(grad.shape)} for a Variable of shape {tuple(v.shape)} "
                           f"(NNabla 1.39: Shape must match; called at {_where()})")


def _where() -> str:
    """The user's line that called, for a refusal's message."""
    return _graph.format_location(_graph.user_location())


def clears(args: tuple, kwargs: dict) -> bool:
    """Whether a ``backward(*args, **kwargs)`` call asks to clear buffers.

    Example:
        >>> clears((1.0, True), {}), clears((), {"clear_buffer": False}), clears((), {})
        (True, False, False)
    """
    return bool(kwargs["clear_buffer"] if "clear_buffer" in kwargs
                else args[1] if len(args) > 1 else False)


def clearing(args: tuple, kwargs: dict, clear: bool):
    """``backward``'s positional and keyword arguments with ``clear_buffer`` set to ``clear``.

    Example:
        >>> clearing((1.0, True), {}, False), clearing((), {}, True)
        (([1.0, False], {}), ([], {'clear_buffer': True}))
    """
    args = list(args)
    if len(args) > 1:
        args[1] = clear
    else:
        kwargs = {**kwargs, "clear_buffer": clear}
    return args, kwargs
