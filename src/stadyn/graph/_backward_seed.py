"""The gradient a backward starts from: ``Variable.backward(grad)``'s ``grad`` (a number, an
array, a tensor, or None for the Variable's own ``.g``) as a tensor like the Variable's value.

Example:
    >>> import numpy as np, torch, stadyn as sd
    >>> y = sd.Variable.from_numpy_array(np.zeros(2, np.float32))
    >>> backward_seed(y, 3, torch.zeros(2)).tolist(), is_unit_seed(1, torch.zeros(()))
    ([3.0, 3.0], True)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ._variable import Variable

__all__ = ["backward_seed", "is_unit_seed", "input_seeds"]


def backward_seed(var: Variable, grad: Any, like: torch.Tensor) -> torch.Tensor:
    """The seed of a backward from ``var`` given ``grad``, in ``like``'s shape, dtype and
    device (a copy: it may flow unchanged into a leaf's gradient, which accumulates in place)."""
    if grad is None:
        return var._grad_buffer().to(like.dtype)
    if isinstance(grad, torch.Tensor):
        return grad.detach().to(device=like.device, dtype=like.dtype).expand_as(like).clone()
    arr = np.asarray(grad)
    if arr.ndim == 0:
        # Cast as NNabla casts it: a scale past the dtype's range is inf (a dynamic loss scaler
        # then finds inf in the gradients and lowers the scale); full_like would raise.
        value = torch.tensor(float(arr), dtype=torch.float64, device=like.device)
        return value.to(like.dtype).expand_as(like).clone()
    return torch.tensor(arr, dtype=like.dtype, device=like.device).expand_as(like).clone()


def input_seeds(root: Variable) -> dict[int, tuple[Variable, torch.Tensor]]:
    """The gradients a backward from ``root`` starts from besides ``root``'s own, by the ``id``
    of the Variable each seeds: where ``root``'s op writes nothing into its inputs' gradients
    and its ``OpSpec.seeds_inputs`` holds for the call (NNabla 1.39's
    ``sink(one_input_grad=False)``, whose ``Sink::backward_impl`` leaves them as the program
    wrote them), each input made by an op starts from its gradient as it is now, copied.  A
    leaf input's gradient is where the backward adds, already (NNabla's too), so it seeds
    nothing.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.ones(2), need_grad=True)
        >>> l1 = F.sum(x * 2.0)
        >>> l1.g = 0.3
        >>> [float(t) for _, t in input_seeds(F.sink(l1, x, one_input_grad=False)).values()]
        [0.30000001192092896]
        >>> input_seeds(F.sink(l1, x))
        {}
    """
    node = root.parent
    if node is None or node.spec.seeds_inputs is None or not node.spec.seeds_inputs(node.attrs):
        return {}
    return {id(v): (v, v._grad_buffer().clone()) for v in node.inputs if v.parent is not None}


def is_unit_seed(grad: Any, like: torch.Tensor) -> bool:
    """Whether ``grad`` seeds a one-element floating-point ``like`` with exactly 1, the seed
    ``torch.autograd.backward`` makes when given none."""
    return (type(grad) in (int, float) and grad == 1 and like.numel() == 1
            and like.is_floating_point())
