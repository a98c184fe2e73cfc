"""NNabla 1.39's ``need_grad`` of a registered parameter, as distinct from the graphs'.

NNabla's parametric functions never put the registered parameter itself in a graph: each call
gives the graph a new Variable viewing its arrays (``get_unlinked_variable``) with a
``need_grad`` of its own.  So ``nn.get_parameters()["fc/affine/W"].need_grad = False`` after
the graph was built changes the registered flag only: ``nn.get_parameters()`` (and a solver
given it afterwards) leaves the parameter out, but a backward through the graphs already built
still writes its gradient, and a solver given it before still updates it (checked on NNabla
1.39, static and dynamic: case ``nnabla_fidelity_5.parameter_need_grad_after_build__update``).
Building again with a parametric function sets the registered flag back to what that
function asks (``need_grad=True``).

Stadyn's parametric functions put the registered parameter itself in the graph, so here a
flag a program sets on a registered parameter is kept apart (:data:`REGISTERED_FLAGS`, what
``need_grad`` reads) and the Variable the graphs hold keeps computing its gradient.  What
Stadyn's own code sets (the registry when a parametric function asks for the parameter with
another ``need_grad``, the loaders) is what the graphs compute with, and ends the separate
flag (:func:`set_by_stadyn`).

A registered parameter a program puts in a graph itself (``F.affine(x,
nn.get_parameters()["W"])``) is the registered Variable in NNabla's graph, so its flag is read
when the backward runs: set False after the graph was built, NNabla writes no gradient (and a
solver, finding none, leaves the parameter); set True again, it writes one.  Here every ``F``
function is given, for such a parameter, the parameter's *program view*
(:func:`program_view`, around every ``F`` function: :func:`honouring_registered_flags`): one
Variable viewing its value and gradient whose own ``need_grad`` is the program's flag, set
again each time the program sets the flag (:func:`follow_flag`).  Stadyn's graphs read a
leaf's ``need_grad`` when the backward runs, static and dynamic, so the graphs the program
built see the flag as NNabla's see it, while the parametric functions' graphs (NNabla's views)
do not.  A parameter is recognised by its name (the registry names it: ``registry.get(v.graph_name)
is v``), one dictionary look-up per Variable argument.

Example:
    >>> import numpy as np, stadyn as sd, stadyn.compat.nnabla as nn
    >>> with sd.parameter_registry(sd.ParameterRegistry()):
    ...     _ = nn.parameter.get_parameter_or_create("W", (2,))
    ...     w = nn.get_parameters()["W"]
    ...     w.need_grad = False
    ...     w.need_grad, sorted(nn.get_parameters()), sd.Variable.need_grad.fget(w)
    (False, [], True)
"""

from __future__ import annotations

import functools
import os
import weakref
from typing import Any, Callable

from ...graph import Variable as _Variable, data_of, get_auto_forward
from ...parametric import current_registry
from ._names import same_name_as
from ...graph import IdentityKeyDict

__all__ = ["REGISTERED_FLAGS", "is_registered", "set_by_stadyn", "program_view", "follow_flag",
           "honouring_registered_flags", "live_program_view"]

_STADYN = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep

# The registered flag of a parameter where it differs from what its Variable computes with.
REGISTERED_FLAGS: "IdentityKeyDict[Any, bool]" = IdentityKeyDict()


def is_registered(v: Any) -> bool:
    """Whether ``v`` is itself a parameter of the current registry (not a view of one): the
    registry names what it holds (``ParameterRegistry.set``), so this is one look-up.

    Example:
        >>> import stadyn as sd
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     w = sd.get_parameter_or_create("W", (2,))
        ...     is_registered(w), is_registered(sd.Variable((2,)))
        (True, False)
    """
    if v.parent is not None:
        return False
    name = v.graph_name
    return isinstance(name, str) and current_registry().get(name) is v


def set_by_stadyn(frame: Any) -> bool:
    """Whether the code of ``frame`` (the one setting a flag) is Stadyn's own, not a program's
    (a doctest's examples count as a program's).

    Example:
        >>> import sys
        >>> set_by_stadyn(sys._getframe())
        False
    """
    return frame.f_code.co_filename.startswith(_STADYN)


# Each registered parameter's program view while a graph (or anything else) holds it.
_PROGRAM_VIEWS: "IdentityKeyDict[Any, weakref.ref]" = IdentityKeyDict()


def _program_flag(v: Any) -> bool:
    flag = REGISTERED_FLAGS.get(v)
    return _Variable.need_grad.fget(v) if flag is None else flag


def program_view(v: Any) -> Any:
    """The Variable a program's ``F`` call puts in its graph for the registered parameter
    ``v``: one view of ``v``'s value and gradient (the same one while any graph holds it)
    whose ``need_grad`` is the flag the program sees on ``v``.

    Example:
        >>> import stadyn as sd
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     w = sd.get_parameter_or_create("W", (2,))
        ...     u = program_view(w)
        ...     u is program_view(w), u.need_grad, u.parent is None
        (True, True, True)
    """
    ref = _PROGRAM_VIEWS.get(v)
    view = ref() if ref is not None else None
    flag = _program_flag(v)
    if view is None:
        view = v.unlinked(flag)                     # of v's class (NNabla's or Stadyn's)
        # the graph knows it by the parameter's last path element; NNabla's input is the
        # registered Variable itself, so the view shows (and sets) its name
        view.graph_name = v.graph_name.rsplit("/", 1)[-1]
        same_name_as(view, v)
        _PROGRAM_VIEWS[v] = weakref.ref(view)
    elif _Variable.need_grad.fget(view) != flag:
        _Variable.need_grad.fset(view, flag)
    return view


def live_program_view(v: Any) -> Any:
    """The program view a graph holds for ``v`` (a registered parameter), or None: where a
    program put ``v`` in a graph itself, the graph reads the view, not ``v``.

    Example:
        >>> import stadyn as sd
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     w = sd.get_parameter_or_create("W", (2,))
        ...     before = live_program_view(w)
        ...     u = program_view(w)
        ...     before is None, live_program_view(w) is u
        (True, True)
    """
    if not (isinstance(v, _Variable) and is_registered(v)):
        return None
    ref = _PROGRAM_VIEWS.get(v)
    return ref() if ref is not None else None


def follow_flag(v: Any) -> None:
    """Give ``v``'s program view (if a graph holds one) the flag the program now sees on
    ``v``, for the backward of the graphs built on it to read.

    Example:
        >>> import stadyn as sd
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     w = sd.get_parameter_or_create("W", (2,))
        ...     u = program_view(w)
        ...     REGISTERED_FLAGS[w] = False; follow_flag(w); del REGISTERED_FLAGS[w]
        ...     u.need_grad
        False
    """
    ref = _PROGRAM_VIEWS.get(v)
    view = ref() if ref is not None else None
    if view is not None:
        _Variable.need_grad.fset(view, _program_flag(v))


def _as_given(v: Any, given: list) -> Any:
    """``v``, or its program view where ``v`` is a registered parameter (the Variable
    NNabla's graph would hold, its ``need_grad`` read at the backward), noted in ``given``."""
    if isinstance(v, _Variable) and v.parent is None:
        name = v.graph_name
        if isinstance(name, str) and current_registry().get(name) is v:
            view = program_view(v)
            given.append((v, view))
            return view
    return v


def _off_in_a_taking_part_op(given: list, args: tuple, kwargs: dict) -> list:
    """The program views among ``given`` whose ``need_grad`` is False given to a dynamic op
    that takes part in a backward all the same (another input needs a gradient): NNabla reads
    their flag when the backward reaches the op, so one set True before then gets a gradient.
    The op is recorded with them needing one, and :func:`_cut_when_off` stops it while off."""
    off = [view for _, view in given if not _Variable.need_grad.fget(view)]
    if not off:
        return off
    views = {id(view) for _, view in given}
    for a in (*args, *kwargs.values()):
        if isinstance(a, _Variable) and id(a) not in views and (
                _Variable.need_grad.fget(a) if a.parent is None else data_of(a).requires_grad):
            return off
    return []


def _cut_when_off(outputs: Any, given: list, args: tuple, kwargs: dict,
                  recorded: list = ()) -> None:
    """After a dynamic op ran on program views that need a gradient (its autograd graph then
    goes into each parameter's own tensor), hook each autograd step of the op that passes a
    gradient to such a parameter so that it passes none while the view's ``need_grad`` is
    False when the backward runs (NNabla reads the flag then).  Only the op's own steps are
    searched: the walk stops at its inputs' tensors."""
    targets = {}
    for param, view in given:
        if _Variable.need_grad.fget(view) or any(view is v for v in recorded):
            t = data_of(param)
            if t.requires_grad:
                targets[id(t)] = view
    if not targets:
        return
    outs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    stop = {id(data_of(a).grad_fn) for a in (*args, *kwargs.values())
            if isinstance(a, _Variable) and a.parent is not None}
    stack = [data_of(o).grad_fn for o in outs if isinstance(o, _Variable)]
    seen = set()
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen or id(fn) in stop:
            continue
        seen.add(id(fn))
        cut = []
        for k, (nxt, _) in enumerate(fn.next_functions):
            held = getattr(nxt, "variable", None)
            if held is not None and id(held) in targets:
                cut.append((k, targets[id(held)]))
            elif nxt is not None:
                stack.append(nxt)
        if cut:
            fn.register_hook(functools.partial(_passing_when_on, tuple(cut)))


def _passing_when_on(cut: tuple, grad_inputs: tuple, grad_outputs: tuple) -> tuple:
    off = {k for k, view in cut if not _Variable.need_grad.fget(view)}
    if not off:
        return grad_inputs
    return tuple(None if k in off else g for k, g in enumerate(grad_inputs))


def honouring_registered_flags(fn: Callable) -> Callable:
    """``fn`` (an ``F`` function) given, for each registered parameter, its program view
    (:func:`program_view`), whose ``need_grad`` follows the flag a program sets on the
    parameter before or after the graph was built, as NNabla 1.39's graph on the registered
    Variable reads it (a static graph reads it at the backward; a dynamic op's gradient to
    the parameter is hooked to stop while it is False: :func:`_cut_when_off`).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.compat.nnabla as nn
        >>> import stadyn.compat.nnabla.functions as F
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     _ = nn.parameter.get_parameter_or_create("W", (2,))
        ...     w = nn.get_parameters()["W"]
        ...     y = F.mul2(nn.Variable.from_numpy_array(np.ones(2), need_grad=True), w)
        ...     w.need_grad = False
        ...     y.parent.inputs[1] is w, y.parent.inputs[1].need_grad
        (False, False)
    """
    @functools.wraps(fn)
    def call(*args, **kwargs):
        given: list = []
        args = tuple([_as_given(a, given) if isinstance(a, _Variable) and a.parent is None
                      else a for a in args])
        if kwargs:
            kwargs = {k: _as_given(v, given) for k, v in kwargs.items()}
        if not (given and get_auto_forward()):
            return fn(*args, **kwargs)
        off = _off_in_a_taking_part_op(given, args, kwargs)
        for view in off:                     # recorded, for a flag set True before the backward
            _Variable.need_grad.fset(view, True)
        try:
            out = fn(*args, **kwargs)
        finally:
            for view in off:
                _Variable.need_grad.fset(view, False)
        _cut_when_off(out, given, args, kwargs, off)
        return out
    return call
