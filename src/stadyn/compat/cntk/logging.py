"""``cntk.logging``: CNTK 2.x progress writers and ``log_number_of_parameters``."""

from __future__ import annotations

from typing import Any

from ...graph import Variable
from ...train.progress import (ProgressPrinter, ProgressWriter, TensorBoardProgressWriter)
from ...train.progress import log_number_of_parameters as _log_number_of_parameters
from ._function import Function

__all__ = ["ProgressPrinter", "ProgressWriter", "TensorBoardProgressWriter",
           "log_number_of_parameters"]


def _outputs(model: Any) -> list[Variable] | None:
    """The graph outputs ``model`` stands for (a Function, a Variable, or a list or tuple of
    them as ``combine`` gives them), or None for anything else (a list of parameters, a
    Trainer, a layer)."""
    items = list(model) if isinstance(model, (list, tuple)) else [model]
    outputs = []
    for item in items:
        if isinstance(item, Function) and item.kind != "parameter":
            outputs.append(item.variable)
        elif isinstance(item, Variable) and item.parent is not None:
            outputs.append(item)
        else:
            return None
    return outputs or None


def _cntk_order(params: list[Function]) -> list[Function]:
    """CNTK lists a model's parameters from its output back: the last layer's first, each
    layer's own in creation order (``W``, then ``b``).  Stadyn's are in creation order and a
    layer's share a scope (``dense_1/W``, ``dense_1/b``)."""
    layers: dict[str, list[Function]] = {}
    for p in params:
        layers.setdefault((p.variable.name or "").rpartition("/")[0], []).append(p)
    return [p for layer in reversed(list(layers.values())) for p in layer]


def log_number_of_parameters(model: Any, trace_level: int = 0) -> None:
    """Print ``Training {N} parameters in {K} parameter tensors.`` as CNTK 2.7 does, for a
    model output (a Function or Variable, or several as ``combine`` gives them: the
    parameters they depend on, each once, listed last layer first), or anything
    :func:`stadyn.train.log_number_of_parameters` takes (a list of parameters, a layer).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> z = C.layers.Dense(4)(C.layers.Dense(5)(C.input_variable(3)))
        >>> log_number_of_parameters(z, trace_level=1)  # doctest: +NORMALIZE_WHITESPACE
        Training 44 parameters in 4 parameter tensors.
        <BLANKLINE>
            (5, 4)
            (4,)
            (3, 5)
            (5,)
    """
    outputs = _outputs(model)
    if outputs is None:
        _log_number_of_parameters(model, trace_level)
        return
    seen: set[int] = set()
    params = []
    for out in outputs:
        for p in Function(out).parameters:
            if id(p.variable) not in seen:
                seen.add(id(p.variable))
                params.append(p)
    _log_number_of_parameters(_cntk_order(params), trace_level)
