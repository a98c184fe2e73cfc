"""``PFC.Module``: the mix-in of NNabla's parametric function classes.  A layer object holds
its parameters as plain Variables in its attributes (not in the parameter registry);
:meth:`Module.get_parameters` names them by the attribute path (``conv0/W``; a Variable of the
outermost module itself is ``/W``, as NNabla 1.39 names it).

Example:
    >>> import stadyn.compat.nnabla.experimental.parametric_function_classes as PFC
    >>> class Net(PFC.Module):
    ...     def __init__(self):
    ...         self.fc = PFC.Affine(3, 2)
    ...         self.bn = PFC.BatchNorm1d(2)
    >>> list(Net().get_parameters())
    ['fc/W', 'fc/b', 'bn/beta', 'bn/gamma']
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Iterator

from ..... import parametric as _parametric
from .....graph import Variable as _Core
from .....serialize import load_parameters as _load, save_parameters as _save
from ...logger import logger

__all__ = ["Module"]


class Module:
    """Module mix-in for the parametric function classes (``PFC.Affine``, ``PFC.Conv2d``...):
    a subclass assigns layers and Variables to attributes in ``__init__``."""

    def __init__(self) -> None:
        pass

    def get_modules(self, memo: set | None = None, prefix: str = "") -> Iterator[tuple]:
        """``(prefix, module)`` for this module and, depth first in attribute order, every
        module held in an attribute (``conv0``, ``block/conv0``); each module once."""
        memo = set() if memo is None else memo
        if self in memo:
            return
        memo.add(self)
        yield prefix, self
        for k, v in list(self.__dict__.items()):
            if isinstance(v, Module):
                yield from v.get_modules(memo, f"{prefix}/{k}" if prefix else k)

    def _variables(self) -> Iterator[tuple[str, Any]]:
        for prefix, module in self.get_modules():
            for k, v in list(module.__dict__.items()):
                if isinstance(v, _Core):
                    yield f"{prefix}/{k}", v

    def get_parameters(self, grad_only: bool = True) -> "OrderedDict[str, Any]":
        """Name -> Variable of every Variable the modules hold; with ``grad_only`` only those
        with ``need_grad`` (so not a batch normalisation's running statistics)."""
        return OrderedDict((name, v) for name, v in self._variables()
                           if not grad_only or v.need_grad)

    def save_parameters(self, path: Any, grad_only: bool = False) -> None:
        """Write :meth:`get_parameters` (all of them by default) to ``path`` (``.h5`` is
        NNabla's layout)."""
        _save(path, self.get_parameters(grad_only=grad_only))

    def load_parameters(self, path: Any) -> None:
        """Set every Variable the modules hold from the file's parameter of the same name
        (under the current parameter scope).  As NNabla's, the values the module takes are not
        left in the parameter registry; the file's others are.  A Variable the file lacks is a
        ``ValueError`` naming the file and the parameter, before any value is set."""
        loaded = _parametric.ParameterRegistry()
        with _parametric.parameter_registry(loaded):
            _load(path)
            found = [(name, v, _parametric.get_parameter(name)) for name, v in self._variables()]
        missing = [name for name, _, p in found if p is None]
        if missing:
            raise ValueError(f"{path}: the file has no parameter {missing[0]!r} "
                             f"(the module's {', '.join(missing)})")
        taken = set()
        for name, var, p in found:
            var.d = p.d.copy()
            taken.add(id(p))
            logger.info("`{}` loaded.)".format(name))
        for key, p in loaded.items():
            if id(p) not in taken:
                _parametric.current_registry().set(key, p)
