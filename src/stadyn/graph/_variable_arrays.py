"""A Variable's arrays: its value and gradient as torch tensors (``.data``, ``.grad``) and as
NumPy arrays (``.d``, ``.g``), and how an array assigned to them is written.

:class:`VariableArrays` is mixed into :class:`~stadyn.graph.Variable` (``_variable.py``), whose
slots hold what it reads; it holds no state of its own.

Example:
    >>> import numpy as np, stadyn as sd
    >>> x = sd.Variable((2,))
    >>> x.d = [1, 2]; x.g = 0.5
    >>> x.data.tolist(), x.g.tolist()
    ([1.0, 2.0], [0.5, 0.5])
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import torch

from .._errors import ShapeError, StadynError
from ._context import get_current_context
from ._deferred_layout import settled
from ._numpy_readers import numpy_reader
from ._versions import _layout, layout_changed, shapes_changed
from ._identity_keys import IdentitySet

__all__ = ["VariableArrays", "grad_follows_alias", "keep_own_grad", "drop_own_grad"]

# Leaves viewing another Variable's value but keeping a gradient of their own (NNabla's
# ``v.data = h.data``: one data array, two gradient arrays): :func:`keep_own_grad`.
_OWN_GRAD: "IdentitySet" = IdentitySet()


def keep_own_grad(v: Any) -> None:
    """Make the view ``v`` (a leaf reading another Variable's value: ``read_value_of``) keep a
    gradient of its own instead of sharing its source's.

    Example:
        >>> import stadyn as sd
        >>> v = sd.Variable((2,)); keep_own_grad(v); grad_follows_alias(v)
        False
    """
    _OWN_GRAD.add(v)


def drop_own_grad(v: Any) -> None:
    """Undo :func:`keep_own_grad`: the view ``v`` shares its source's gradient again.

    Example:
        >>> import stadyn as sd
        >>> v = sd.Variable((2,)).unlinked(); keep_own_grad(v); drop_own_grad(v)
        >>> grad_follows_alias(v)
        True
    """
    _OWN_GRAD.discard(v)


def grad_follows_alias(v: Any) -> bool:
    """Whether ``v``'s gradient is its source's: a view (``Variable.unlinked``) not marked by
    :func:`keep_own_grad`.

    Example:
        >>> import stadyn as sd
        >>> grad_follows_alias(sd.Variable((2,)).unlinked())
        True
    """
    return v._alias is not None and v not in _OWN_GRAD


def _zeros(shape: Sequence[int], dtype: torch.dtype, requires_grad: bool) -> torch.Tensor:
    _layout[0] += 1
    t = torch.zeros(tuple(shape), dtype=dtype, device=get_current_context().device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _as_numpy(t: torch.Tensor, share: Callable | None = None) -> np.ndarray:
    """``t``'s memory as NumPy (``share(t)`` makes the array), or a copy in bf16 / off the CPU."""
    if t.dtype != torch.bfloat16 and t.device.type == "cpu":
        return share(t) if share is not None else t.detach().numpy()
    return (t.detach().float() if t.dtype == torch.bfloat16 else t.detach()).cpu().numpy()


class VariableArrays:
    """The value and gradient accessors of :class:`~stadyn.graph.Variable` (mixed into it).

    Example:
        >>> import stadyn as sd
        >>> isinstance(sd.Variable((1,)), VariableArrays)
        True
    """

    __slots__ = ()

    # -- data -----------------------------------------------------------------------------------
    @property
    def data(self) -> torch.Tensor:
        """The torch tensor holding the value (allocated with zeros if the graph has not run)."""
        if self._alias is not None:
            return VariableArrays.data.fget(self._alias).detach()
        if self._data is None:
            self._data = _zeros(self._shape, self._dtype, False)
        return settled(self)

    @data.setter
    def data(self, value: Any) -> None:
        if isinstance(value, torch.Tensor):
            if self.parent is None:
                need = self._need_grad and value.dtype.is_floating_point
                value = value.detach().requires_grad_(need)
                layout_changed()
            if self.shape != tuple(value.shape):
                shapes_changed()
            self._data = value
            self._shape = tuple(value.shape)
            self._dtype = value.dtype
        else:
            self.d = value

    @property
    def d(self) -> np.ndarray:
        """The value as a NumPy array (a view sharing memory on CPU)."""
        return _as_numpy(VariableArrays.data.fget(self))

    @d.setter
    def d(self, value: Any) -> None:
        if self._seq is not None and isinstance(value, (list, tuple)):
            self._set_sequences(value)
            return
        self._assign(VariableArrays.data.fget(self), value, "d")

    @property
    def grad(self) -> torch.Tensor | None:
        """The gradient tensor (None until a backward pass computes one); an unlinked one's is
        its source's."""
        if grad_follows_alias(self):
            return VariableArrays.grad.fget(self._alias)
        if self.parent is None and self._data is not None and self._data.requires_grad:
            return self._data.grad
        return self._grad

    @grad.setter
    def grad(self, value: torch.Tensor | None) -> None:
        if grad_follows_alias(self):
            VariableArrays.grad.fset(self._alias, value)
        elif self.parent is None and self._data is not None and self._data.requires_grad:
            self._data.grad = value
        else:
            self._grad = value

    def _grad_buffer(self) -> torch.Tensor:
        g = VariableArrays.grad.fget(self)   # (one of an earlier shape: NNabla's is resized too)
        if g is None or (not grad_follows_alias(self) and tuple(g.shape) != tuple(self._shape)):
            g = torch.zeros_like(VariableArrays.data.fget(self), requires_grad=False)
            VariableArrays.grad.fset(self, g)
        return g

    @property
    def g(self) -> np.ndarray:
        """The gradient as a NumPy array (allocated with zeros if none was computed yet); one
        kept keeps its values through ``zero_grad`` and backward (``_grad_buffers.py``)."""
        return _as_numpy(self._grad_buffer(), numpy_reader)

    @g.setter
    def g(self, value: Any) -> None:
        self._assign(self._grad_buffer(), value, "g")

    def _assign(self, buffer: torch.Tensor, value: Any, what: str) -> None:
        if isinstance(value, torch.Tensor):
            src = value.detach()
        else:
            arr = np.asarray(value)
            if arr.dtype == object:
                raise StadynError(f"cannot assign {type(value).__name__} to Variable.{what}")
            src = (torch.from_numpy(np.ascontiguousarray(arr)) if arr.ndim
                   else torch.tensor(arr.item()))
        if src.ndim and tuple(src.shape) != tuple(buffer.shape):
            label = f" {self.graph_name!r}" if self.graph_name else ""
            raise ShapeError(f"cannot assign an array of shape {tuple(src.shape)} to Variable"
                             f"{label}.{what} of shape {tuple(buffer.shape)}")
        with torch.no_grad():
            if src.ndim:
                buffer.copy_(src)
            else:
                buffer.fill_(src.item())
