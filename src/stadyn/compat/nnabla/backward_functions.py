"""``nnabla.backward_functions``: ``registry``, NNabla's table of each function's backward
function by type name (``'Sigmoid'``, ``'Affine'``), which its double-backward tests call.

An entry is called as NNabla's are: ``registry[name](grad_outputs, inputs, input_shapes,
outputs, output_shapes, **f.info.args)`` with the output gradients and the inputs as Variables
and the function's outputs (``outputs[0].parent``, made by an ``F`` call); it gives the
gradient of each input (one Variable, or a tuple of one per input) as a graph of Variables,
differentiable again in the inputs and in ``grad_outputs``; ``None`` for an input without
``need_grad`` (NNabla's gives a Variable there too, which its tests leave unread).  On Stadyn every
entry is the same: the function's call made again on ``inputs`` (``_function_api.py``) and
``nn.grad`` of its outputs weighted by ``grad_outputs``; the arguments are the call's own, so
``input_shapes``, ``output_shapes`` and ``info.args`` go unused.  The names are the type names
of ``nnabla.functions``' functions; another is NNabla's ``KeyError`` (``registry.get(name)`` is
None).

Example:
    >>> import numpy as np, stadyn.compat.nnabla as nn
    >>> import stadyn.compat.nnabla.functions as F
    >>> x = nn.Variable.from_numpy_array(np.array([1.0, 2.0]), need_grad=True)
    >>> y = F.mul2(x, x)
    >>> dy = nn.Variable.from_numpy_array(np.array([1.0, 1.0]))
    >>> gx0, gx1 = registry["Mul2"]([dy], [x, x], [(2,), (2,)], [y], [(2,)])
    >>> gx0.forward(); gx0.d.tolist()
    [2.0, 4.0]
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping, Sequence

from ...ops import CATALOG
from . import _composed
from ._function import type_name
from ._function_api import recorded_outputs
from ._grad import grad

__all__ = ["registry"]


def _backward_function(name: str):
    def backward_function(grad_outputs: Sequence, inputs: Sequence, input_shapes: Any,
                          outputs: Sequence, output_shapes: Any, **args) -> list:
        made = recorded_outputs(outputs[0].parent, list(inputs))
        wanted = [k for k, v in enumerate(inputs) if v.need_grad]
        found = grad(made, [inputs[k] for k in wanted], grad_outputs=list(grad_outputs))
        result: list = [None] * len(inputs)
        for k, g in zip(wanted, found):
            result[k] = g
        return result[0] if len(result) == 1 else tuple(result)

    backward_function.__name__ = name[:1].lower() + name[1:] + "_backward"
    return backward_function


class _Registry(Mapping):
    """The backward function of each of NNabla's type names."""

    def _names(self) -> list[str]:
        from . import functions     # (above this module: the F functions are made there)
        return sorted({type_name(n) for n in functions.__all__
                       if n in CATALOG or n in _composed.__all__})

    def __getitem__(self, name: str):
        if name not in self._names():
            raise KeyError(name)
        return _backward_function(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())


registry = _Registry()
