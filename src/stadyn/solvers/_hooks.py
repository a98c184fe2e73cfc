"""NNabla's solver hooks (``nn.set_solver_pre_hook`` and the rest): callables without
arguments that a solver calls before and after its share of work on each parameter, in every
method NNabla calls them in (``update``, ``weight_decay``, ``clip_grad_by_norm``,
``scale_grad``, the gradient checks).  Hooks are global, keyed by a name, called in the order
they were set.  While any is set, a solver works one parameter at a time (the same results, as
each parameter's update depends only on its own gradient and state).

Example:
    >>> import numpy as np, stadyn as sd, stadyn.solvers as S
    >>> w = sd.Variable.from_numpy_array(np.ones(2), need_grad=True)
    >>> w.g = 1.0
    >>> solver = S.Sgd(0.1)
    >>> solver.set_parameters({"w": w})
    >>> calls = []
    >>> S.set_solver_pre_hook("count", lambda: calls.append("pre"))
    >>> solver.update()
    >>> S.unset_solver_pre_hook("count")
    >>> calls, w.d.tolist()
    (['pre'], [0.8999999761581421, 0.8999999761581421])
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from typing import Any, Callable, Iterable, Mapping

__all__ = ["set_solver_pre_hook", "set_solver_post_hook", "unset_solver_pre_hook",
           "unset_solver_post_hook", "add_update_listener", "remove_update_listener"]

_PRE: "OrderedDict[str, Callable[[], None]]" = OrderedDict()
_POST: "OrderedDict[str, Callable[[], None]]" = OrderedDict()


def _checked(key, hook, which):
    if not callable(hook):
        raise TypeError(f"set_solver_{which}_hook({key!r}, ...): the hook must be callable "
                        f"(without arguments), got {type(hook).__name__}")
    return hook


def set_solver_pre_hook(key: str, hook: Callable[[], None]) -> None:
    """Call ``hook()`` before a solver's work on each parameter (``key`` names it for
    :func:`unset_solver_pre_hook`; setting a key again replaces its hook)."""
    _PRE[key] = _checked(key, hook, "pre")


def set_solver_post_hook(key: str, hook: Callable[[], None]) -> None:
    """Call ``hook()`` after a solver's work on each parameter."""
    _POST[key] = _checked(key, hook, "post")


def unset_solver_pre_hook(key: str) -> None:
    """Remove the pre hook ``key`` (an unknown key is ignored, as in NNabla)."""
    _PRE.pop(key, None)


def unset_solver_post_hook(key: str) -> None:
    """Remove the post hook ``key`` (an unknown key is ignored, as in NNabla)."""
    _POST.pop(key, None)


def hooked(method):
    """Run the solver method ``method`` once per parameter between the hooks while any is set
    (results or-ed: the gradient checks); else as it is."""
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        if not (_PRE or _POST) or not self._params:
            return method(self, *args, **kwargs)
        params, decay, result = self._params, self._next_decay, None
        try:
            for name, var in list(params.items()):
                self._params = OrderedDict([(name, var)])
                self._next_decay = decay
                for hook in list(_PRE.values()):
                    hook()
                out = method(self, *args, **kwargs)
                result = out if result is None else (result or out)
                for hook in list(_POST.values()):
                    hook()
        finally:
            self._params = params
        return result
    return run


# Stadyn's own (not NNabla's): called after an update with the parameter Variables it wrote.
_UPDATED: "list[Callable[[Iterable], None]]" = []


def add_update_listener(listener: Callable[[Iterable], None]) -> None:
    """Call ``listener(variables)`` after each solver update (``update`` / ``step``) with an
    iterable of the parameter Variables it wrote (compat.nnabla lets go of the arrays it kept
    of them in NNabla's dtype, which the update made dead: ``compat/nnabla/_kept_dtypes.py``).
    A listener added twice is called once.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.solvers as S
        >>> w = sd.Variable.from_numpy_array(np.ones(2), need_grad=True); w.g = 1.0
        >>> solver = S.Sgd(0.1); solver.set_parameters({"w": w})
        >>> seen = []
        >>> listen = lambda variables: seen.extend(v is w for v in variables)
        >>> S.add_update_listener(listen); solver.update(); S.remove_update_listener(listen)
        >>> seen
        [True]
    """
    if listener not in _UPDATED:
        _UPDATED.append(listener)


def remove_update_listener(listener: Callable[[Iterable], None]) -> None:
    """Stop calling ``listener`` (:func:`add_update_listener`; one not added is ignored)."""
    if listener in _UPDATED:
        _UPDATED.remove(listener)


def updated(params: Mapping[str, Any], names: Iterable[str]) -> None:
    """Tell the listeners that an update wrote the parameters ``names`` of ``params``."""
    for listener in list(_UPDATED):
        listener(params[n] for n in names)
