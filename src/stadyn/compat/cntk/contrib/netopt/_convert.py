"""Replacing the Functions a filter selects in a model by what a converter makes of each
(what CNTK 2.7's ``cntk.misc.convert`` does for ``netopt``): the rest of the graph is shared,
parameters included, and the model's inputs stay the model's inputs."""

from __future__ import annotations

from ..._adapt import unwrap
from ..._clone import rebuild
from ..._function import Function
from ...logging.graph import depth_first_search

__all__ = ["convert"]


def convert(model: Function, selects, converter) -> Function:
    """``model`` with each Function ``selects`` picks (a walk that does not enter blocks)
    replaced by ``converter(function)``, which computes the same kind of value from the
    function's inputs.  The graph is rebuilt once per replacement, parameters shared.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> x = C.input_variable(2)
        >>> z = C.sigmoid(C.tanh(x))
        >>> is_tanh = lambda f: getattr(f, "op_name", "") == "Tanh"
        >>> new = convert(z, is_tanh, lambda f: C.relu(f.inputs[0]))
        >>> (new.eval({x: np.array([[-1.0, 2.0]], np.float32)}) * 1000).astype(int).tolist()
        [[500, 880]]
    """
    for old in depth_first_search(model, selects, depth=0):
        new = converter(old)
        outputs = [unwrap(o) for o in model.outputs]
        replaced = unwrap(old.output)
        if len(outputs) == 1 and outputs[0] is replaced:
            model = new
            continue
        roots = rebuild(outputs, {replaced: unwrap(new.output)}, "share")
        model = Function(roots[0], roots) if len(roots) > 1 else Function(roots[0])
    return model
