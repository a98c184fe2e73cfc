"""The tensors behind a Variable, whatever its class.

Stadyn's ``Variable.data`` and ``.grad`` are torch tensors; NNabla's compat Variable
(``stadyn.compat.nnabla.Variable``, a subclass) gives NdArrays from them instead, as NNabla
does.  Stadyn's own code, which may be handed either, reads values and gradients through
:func:`data_of` and :func:`grad_of`, never through ``.data`` / ``.grad``.
"""

from __future__ import annotations

import torch

from ._variable import Variable

__all__ = ["data_of", "grad_of"]


def data_of(v: Variable) -> torch.Tensor:
    """The torch tensor holding ``v``'s value (allocated with zeros if the graph has not run),
    whatever ``v``'s class.

    Example:
        >>> import numpy as np, stadyn as sd
        >>> from stadyn.graph import data_of
        >>> data_of(sd.Variable.from_numpy_array(np.ones(2))).tolist()
        [1.0, 1.0]
    """
    return Variable.data.fget(v)


def grad_of(v: Variable) -> torch.Tensor | None:
    """The torch tensor holding ``v``'s gradient (None before a backward computes one),
    whatever ``v``'s class.

    Example:
        >>> import stadyn as sd
        >>> from stadyn.graph import grad_of
        >>> grad_of(sd.Variable((2,), need_grad=True)) is None
        True
    """
    return Variable.grad.fget(v)
