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

__all__ = ["backward_seed", "is_unit_seed", "input_seeds", "unit_inputs", "filled_with_ones"]


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


def unit_inputs(root: Variable) -> list[Variable]:
    """The inputs whose gradients a backward from ``root`` fills with 1: where ``root``'s op
    declares ``OpSpec.seeds_inputs`` and it does not hold for the call (NNabla 1.39's
    ``sink(one_input_grad=True)``, whose ``Sink::backward_impl`` runs ``inp->grad()->fill(1)``
    on each input, src/nbla/function/generic/sink.cpp:41: the value is set, not added, a leaf's
    too, and the functions below add to it), each input once.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> a, b = sd.Variable((2,)), sd.Variable(())
        >>> none = unit_inputs(F.sink(a, one_input_grad=False))
        >>> [v is a for v in unit_inputs(F.sink(a, b, a))], none
        ([True, False], [])
    """
    node = root.parent
    if node is None or node.spec.seeds_inputs is None or node.spec.seeds_inputs(node.attrs):
        return []
    return list({id(v): v for v in node.inputs if isinstance(v, Variable)}.values())


class filled_with_ones:
    """Around a backward from a root whose inputs' gradients its op fills with 1
    (:func:`unit_inputs`): a leaf input's gradient is zeroed first (the backward then adds the 1
    and what the functions below give into it), and an op output's that the backward did not
    write (the root's forward ran the input as a root of its own, whose gradient a plan keeps
    only where another of its roots reads it: ``_intermediate_grads.roots_read``) is filled
    with 1 after.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.ones(2), need_grad=True)
        >>> x.g = 5.0
        >>> l = F.sum(x * 2.0); s = F.sink(l, x)
        >>> s.forward()
        >>> with filled_with_ones(unit_inputs(s)):
        ...     s.backward()
        >>> x.g.tolist(), float(l.g)
        ([3.0, 3.0], 1.0)
    """

    __slots__ = ("inputs", "before")

    def __init__(self, inputs: list[Variable]):
        self.inputs = inputs
        self.before: list = []

    def __enter__(self) -> "filled_with_ones":
        for v in self.inputs:
            g = Variable.grad.fget(v)
            if v.parent is None and v._data is not None and v._data.requires_grad \
                    and g is not None:
                with torch.no_grad():
                    g.zero_()
            self.before.append((g, None if g is None else g._version))
        return self

    def __exit__(self, *exc) -> None:
        if exc[0] is not None:
            return
        for v, (g, version) in zip(self.inputs, self.before):
            if v.parent is None or v._data is None or not v._data.is_floating_point():
                continue
            if v._grad is not g or (g is not None and g._version != version):
                continue                    # written by the backward
            if g is not None and g.shape == v._data.shape:
                with torch.no_grad():
                    g.fill_(1)
            else:
                v._grad = torch.ones_like(v._data.detach())


def is_unit_seed(grad: Any, like: torch.Tensor) -> bool:
    """Whether ``grad`` seeds a one-element floating-point ``like`` with exactly 1, the seed
    ``torch.autograd.backward`` makes when given none."""
    return (type(grad) in (int, float) and grad == 1 and like.numel() == 1
            and like.is_floating_point())
