"""NNabla's solver hooks (``nn.set_solver_pre_hook`` and the rest): callables without
arguments that a solver calls before and after its share of work on each parameter, in every
method NNabla calls them in (``update``, ``weight_decay``, ``clip_grad_by_norm``,
``scale_grad``, the gradient checks).  Hooks are global, keyed by a name, called in the order
they were set; a method's own hooks (``update(update_pre_hook, update_post_hook)``,
``weight_decay(rate, pre_hook, post_hook)``, ...) are called between them.  While any is set,
a solver works one parameter at a time, in NNabla's order (the same results, as each
parameter's update depends only on its own gradient and state).

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
import inspect
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
    :func:`unset_solver_pre_hook`; a key already set keeps its first hook, as NNabla 1.39's
    ``GlobalSolverCallback::set_pre_hook`` does: it only logs a warning)."""
    _PRE.setdefault(key, _checked(key, hook, "pre"))


def set_solver_post_hook(key: str, hook: Callable[[], None]) -> None:
    """Call ``hook()`` after the solver's pre hooks for each parameter (NNabla calls both
    before the parameter's work: :func:`hooked`); a key already set keeps its first hook."""
    _POST.setdefault(key, _checked(key, hook, "post"))


def unset_solver_pre_hook(key: str) -> None:
    """Remove the pre hook ``key`` (an unknown key is ignored, as in NNabla)."""
    _PRE.pop(key, None)


def unset_solver_post_hook(key: str) -> None:
    """Remove the post hook ``key`` (an unknown key is ignored, as in NNabla)."""
    _POST.pop(key, None)


def hooked(method=None, *, local: tuple[str, str] = ("pre_hook", "post_hook"),
           unless: Callable[..., bool] | None = None):
    """Run the solver method ``method`` as NNabla 1.39's ``Solver`` runs it while hooks are
    set (``src/nbla/solver.cpp:186-340``): once per parameter, in NNabla's order
    (``solver._hook_order()``: its map's, those whose gradient is not ``zeroing``), each time
    after the global pre hooks, the call's own ``local`` pre and post hook (NNabla's
    ``update(update_pre_hook, update_post_hook)``, ``weight_decay(rate, pre_hook,
    post_hook)``, ...) and the global post hooks: NNabla's ``ScopedCallback`` is a temporary
    that ends before the work, so its post hooks run before it too.  A check stops at the
    first parameter that gives True; where ``unless(solver, *args)`` holds (``weight_decay(0)``,
    a fused one, ``clip_grad_by_norm(0)``) NNabla returns before its loop and calls no hook.
    Without hooks the method runs as it is, on all parameters at once.

    A hook that raises (or is no callable without arguments) does not stop the work: NNabla's
    C++ callback leaves the Python error set and goes on, and the method then raises
    ``SystemError`` ("returned a result with an exception set") once it has done all of it;
    here the hooks after the first error are not called (NNabla's calls of them fail at once
    on the error left set) and the ``SystemError`` names the method, the hook's error its
    cause.  More positional arguments than the method and its two hooks take is NNabla's
    ``TypeError`` (``update() takes at most 2 positional arguments (3 given)``)."""
    if method is None:
        return functools.partial(hooked, local=local, unless=unless)
    own = len(inspect.signature(method).parameters) - 1        # (without self)

    @functools.wraps(method)
    def run(self, *args, **kwargs):
        pre, post = (kwargs.pop(name, None) for name in local)
        extra, args = args[own:], args[:own]       # the local hooks given by position
        if len(extra) > 2:
            raise TypeError(f"{method.__name__}() takes at most {own + 2} positional arguments "
                            f"({own + len(extra)} given)")
        if extra:
            pre = extra[0]
        if len(extra) > 1:
            post = extra[1]
        calls = list(_PRE.values()) + [h for h in (pre, post) if h is not None] + \
            list(_POST.values())
        if not calls or not self._params or (unless is not None and unless(self, *args,
                                                                           **kwargs)):
            return method(self, *args, **kwargs)
        params, decay, result, names = self._params, self._next_decay, None, self._hook_order()
        failed: list[BaseException] = []
        try:
            for name in names:
                self._params = OrderedDict([(name, params[name])])
                self._next_decay = decay
                _call_hooks(calls, failed)
                result = method(self, *args, **kwargs)
                if result is True:
                    break
            if not names:                          # (what the method does with none)
                self._params = OrderedDict()
                result = method(self, *args, **kwargs)
        finally:
            self._params = params
        if failed:
            raise SystemError(f"{method.__name__}: a solver hook raised "
                              f"{type(failed[0]).__name__}: {failed[0]} (NNabla 1.39 does the "
                              "work and then raises SystemError: returned a result with an "
                              "exception set)") from failed[0]
        return result
    return run


def _call_hooks(calls: list, failed: list) -> None:
    """Call each hook of ``calls`` until one raises (its error appended to ``failed``); none
    once ``failed`` holds one (NNabla's calls fail on the error it left set)."""
    if failed:
        return
    for hook in calls:
        try:
            hook()
        except Exception as exc:                   # (kept, raised once the work is done)
            failed.append(exc)
            return


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
