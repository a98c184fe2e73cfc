"""The parameter registry: every parameter keyed by its scope path (``cnn/conv1/conv/W``).

One registry holds the parameters of PF functions, layers and BrainScript networks alike, so
solvers, checkpoints, model files and ONNX see one set.  The current registry is held in a
context variable (a process-wide default unless :func:`parameter_registry` swaps it), and the
current scope is the graph's name scope.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections import OrderedDict
from typing import Any, Iterator, Sequence

import numpy as np

from .._errors import ParameterError
from ..graph import Variable, current_scope, is_no_grad, name_scope

__all__ = [
    "ParameterRegistry", "parameter_scope", "parameter_registry", "get_parameters",
    "clear_parameters", "get_parameter_or_create", "get_parameter", "set_parameter",
    "current_registry", "default_registry", "InitializerShapeError",
]


class InitializerShapeError(AssertionError, ParameterError):
    """An array initializer of another shape than the parameter's: NNabla 1.39 asserts the
    shapes equal (``parameter.py``, ``_create_parameter_by_initializer``), so it is an
    ``AssertionError`` as well as Stadyn's ``ParameterError`` (a ``ValueError``).

    Example:
        >>> import numpy as np
        >>> get_parameter_or_create("w_bad_init", (2, 2), np.ones((3, 2)))
        Traceback (most recent call last):
        ...
        stadyn.parametric._registry.InitializerShapeError: parameter 'w_bad_init': ...
    """


class ParameterRegistry:
    """An ordered mapping from full scope paths to parameter Variables.

    Example:
        >>> import stadyn as sd
        >>> reg = sd.ParameterRegistry()
        >>> with sd.parameter_registry(reg), sd.parameter_scope("net"):
        ...     w = sd.get_parameter_or_create("W", (2, 3))
        >>> list(reg)
        ['net/W']
    """

    def __init__(self) -> None:
        self._params: OrderedDict[str, Variable] = OrderedDict()
        self._claimed: set[str] = set()
        # each scope path above a parameter's path -> the paths set below it, so that a claim
        # need not read every parameter (a subclass may leave dead paths there: _holds_under)
        self._below: dict[str, set[str]] = {}
        # prefix -> a k below which claim's candidates (prefix, prefix_1, ...) were all taken
        # when it was noted; dropped when a name is freed (pop, remove, rename)
        self._taken_below: dict[str, int] = {}
        # each scope path entered (parameter_scope), first time, -> the newest parameter's path
        # then (None: before all): NNabla 1.39 makes a scope's dict when it is entered, which
        # places it among its siblings (compat.nnabla's get_parameters order, _scope_order.py)
        self.entered: OrderedDict[str, str | None] = OrderedDict()

    def note_entered(self, scope: str) -> None:
        """Note ``scope`` (a path; each scope above it too) as entered now, after the newest
        parameter, unless it was entered before (:attr:`entered`).

        >>> reg = ParameterRegistry()
        >>> reg.note_entered("b"); reg.set("x", Variable((1,))); reg.note_entered("b/c")
        >>> dict(reg.entered)
        {'b': None, 'b/c': 'x'}
        """
        if not scope or scope in self.entered:
            return
        try:
            last = next(reversed(self._params), None)
        except TypeError:               # (a mapping with no reversed(): a weak one)
            keys = list(self._params)
            last = keys[-1] if keys else None
        parts = scope.split("/")
        for k in range(1, len(parts) + 1):
            self.entered.setdefault("/".join(parts[:k]), last)

    def claim(self, prefix: str) -> str:
        """A scope path for a new layer: ``prefix``, or ``prefix_1``, ``prefix_2``, ... if taken
        (by another layer or by parameters already under it)."""
        k = self._taken_below.get(prefix, 0)
        while True:
            candidate = f"{prefix}_{k}" if k else prefix
            if candidate not in self._claimed and not self._holds_under(candidate):
                break
            k += 1
        self._taken_below[prefix] = k + 1
        self._claimed.add(candidate)
        return candidate

    def _index(self, name: str, add: bool = True) -> None:
        """Note ``name`` (``add``) or drop it from the paths below each scope above it."""
        parts = name.split("/")
        for k in range(1, len(parts)):
            scope = "/".join(parts[:k])
            if add:
                self._below.setdefault(scope, set()).add(name)
                continue
            names = self._below.get(scope)
            if names is not None:
                names.discard(name)
                if not names:
                    del self._below[scope]

    def _holds_under(self, scope: str) -> bool:
        """Whether a parameter's path is below ``scope`` (``items(scope)`` not empty)."""
        key = scope.rstrip("/")
        return bool(self._below.get(key)) if key else len(self._params) > 0

    def _freed(self) -> None:
        """A name may be free again: claim's notes of taken candidates no longer hold."""
        self._taken_below.clear()

    def __iter__(self) -> Iterator[str]:
        return iter(self._params)

    def __reversed__(self) -> Iterator[str]:
        """The paths, newest first (a new path goes last; a parameter set again under its path
        keeps its place): the parameters a call made are the first ``len`` grew by.

        >>> reg = ParameterRegistry()
        >>> reg.set("a", Variable((1,))); reg.set("b", Variable((1,)))
        >>> list(reversed(reg))
        ['b', 'a']
        """
        return reversed(self._params)

    def __len__(self) -> int:
        return len(self._params)

    def __contains__(self, name: str) -> bool:
        return name in self._params

    def get(self, name: str) -> Variable | None:
        return self._params.get(name)

    def set(self, name: str, var: Variable) -> None:
        var.graph_name = name
        self._params[name] = var
        self._index(name)

    def rename(self, old: str, new: str) -> None:
        """Give the parameter ``old`` the name ``new``, keeping its place in the order; a
        ``KeyError`` if ``old`` is missing or ``new`` is taken by another parameter.

        >>> reg = ParameterRegistry()
        >>> reg.set("a", Variable((1,))); reg.set("b", Variable((1,)))
        >>> reg.rename("a", "c"); list(reg), reg.get("c").name
        (['c', 'b'], 'c')
        """
        self.rename_all([(old, new)])

    def rename_all(self, renames: Sequence[tuple[str, str]]) -> None:
        """:meth:`rename` each ``(old, new)`` pair in turn, the order rebuilt once (renaming
        n parameters one by one rebuilds it n times); nothing is renamed if one pair is a
        ``KeyError``.

        >>> reg = ParameterRegistry()
        >>> for k in "abc": reg.set(k, Variable((1,)))
        >>> reg.rename_all([("a", "x"), ("c", "a")]); list(reg)
        ['x', 'b', 'a']
        """
        renames = list(renames)
        if not renames:
            return
        # the same kind of mapping (a weak one in a subclass), read whole before it is rebuilt
        entries = list(self._params.items())
        at = {k: i for i, (k, _) in enumerate(entries)}
        touched = set()
        for old, new in renames:
            if old not in at:
                raise KeyError(old)
            if new != old and new in at:
                raise KeyError(f"parameter name {new!r} is taken")
            touched.add(i := at.pop(old))
            at[new] = i
        named = {i: k for k, i in at.items() if i in touched}
        self._params = type(self._params)(
            [(named.get(i, k), v) for i, (k, v) in enumerate(entries)])
        moves = []
        for i in sorted(touched):
            (old, var), new = entries[i], named[i]
            var.graph_name = new
            if new != old:
                moves.append((old, new))
        self._renamed(moves)
        self._freed()

    def _renamed(self, moves: list[tuple[str, str]]) -> None:
        """The index follows the parameters renamed ``(old, new)``: every old path dropped
        before a new one is noted (a pair's new path may be an earlier pair's old one, a
        parameter later in the order taking the path of one moved away)."""
        for old, _ in moves:
            self._index(old, add=False)
        for _, new in moves:
            self._index(new)

    def items(self, prefix: str = "") -> list[tuple[str, Variable]]:
        """``(path, variable)`` for every parameter at or below ``prefix``."""
        if not prefix:
            return list(self._params.items())
        head = prefix.rstrip("/") + "/"
        return [(k, v) for k, v in self._params.items() if k.startswith(head)]

    def pop(self, name: str) -> Variable | None:
        """Remove the parameter ``name`` (a full path) and return it; None if there is none.

        >>> reg = ParameterRegistry()
        >>> reg.set("a", Variable((1,))); reg.pop("a").name, reg.pop("a"), list(reg)
        ('a', None, [])
        """
        var = self._params.pop(name, None)
        if var is not None:
            self._index(name, add=False)
            self._freed()
        return var

    def remove(self, prefix: str = "") -> None:
        for k, _ in self.items(prefix):
            del self._params[k]
            self._index(k, add=False)
        self._freed()
        head = prefix.rstrip("/") + "/" if prefix else ""
        self._claimed = {c for c in self._claimed if prefix and not (c == prefix or
                                                                     c.startswith(head))}


_DEFAULT = ParameterRegistry()
_current: contextvars.ContextVar[ParameterRegistry] = contextvars.ContextVar(
    "stadyn_parameters", default=_DEFAULT)


def current_registry() -> ParameterRegistry:
    """The registry new parameters go to."""
    return _current.get()


def default_registry() -> ParameterRegistry:
    """The process-wide registry: the current one unless :func:`parameter_registry` swaps it."""
    return _DEFAULT


@contextlib.contextmanager
def parameter_registry(registry: ParameterRegistry):
    """Create and look up parameters in ``registry`` inside a ``with`` block."""
    token = _current.set(registry)
    try:
        yield registry
    finally:
        _current.reset(token)


@contextlib.contextmanager
def parameter_scope(name: str, scope: Any = None):
    """Nest parameter (and op) names under ``name``; ``'a/b'`` equals two nested scopes.

    Example:
        >>> import stadyn as sd
        >>> with sd.parameter_scope("cnn"), sd.parameter_scope("conv1/conv"):
        ...     sd.get_parameter_or_create("W", (1,)).name
        'cnn/conv1/conv/W'
    """
    if scope is not None:
        raise ParameterError("parameter_scope(name, scope_dict) is not supported; use "
                             "stadyn.parameter_registry(ParameterRegistry()) to keep parameters "
                             "apart")
    with name_scope(name):
        _current.get().note_entered(current_scope())
        yield


def _full(name: str) -> str:
    scope = current_scope()
    return f"{scope}/{name}" if scope else name


def _initial_value(initializer: Any, shape: Sequence[int], name: str,
                   dtype: Any = None) -> np.ndarray:
    dtype = np.float32 if dtype is None else dtype
    if initializer is None:
        return np.zeros(tuple(shape), dtype=dtype)
    if isinstance(initializer, (np.ndarray, list, tuple)):
        value = np.asarray(initializer, dtype=dtype)
    elif isinstance(initializer, (int, float)):
        value = np.full(tuple(shape), float(initializer), dtype=dtype)
    elif callable(initializer):
        value = np.asarray(initializer(tuple(shape)))
    else:
        raise ParameterError(f"parameter '{name}': cannot initialise from "
                             f"{type(initializer).__name__}")
    if value.shape != tuple(shape):
        # an array of the wrong shape is NNabla's assertion; a callable's result is not checked
        # there (a plain ParameterError here)
        error = ParameterError if callable(initializer) else InitializerShapeError
        raise error(f"parameter '{name}': initializer gave shape {value.shape}, "
                    f"expected {tuple(shape)}")
    return value


def get_parameter_or_create(name: str, shape: Sequence[int] | None = None,
                            initializer: Any = None, need_grad: bool = True,
                            as_need_grad: bool | None = None, dtype: Any = None, *,
                            overwrite_need_grad: bool = False) -> Variable:
    """The parameter ``name`` in the current scope, created with ``initializer`` if missing.

    Asking for an existing parameter with another shape is an error naming it.  ``as_need_grad``
    returns a view of the parameter with that ``need_grad`` (e.g. to freeze it in one graph);
    inside ``stadyn.graph.no_grad`` it is always a view without gradient.  ``dtype`` is a new
    parameter's element type (default float32; ``np.float64`` for CNTK's double parameters);
    a new parameter needing no gradient made from an integer or bool NumPy array keeps the
    array's type, as NNabla 1.39's does (batch normalisation's running statistics given as
    ``param_init``, ``nn.parameter.get_parameter_or_create``); one needing a gradient is
    float32, as torch computes gradients of floating-point tensors only.
    With ``overwrite_need_grad`` (NNabla's rule, which its parametric functions and
    ``nnabla.parameter.get_parameter_or_create`` follow), asking for an existing parameter with
    another ``need_grad`` sets the registered parameter's flag to it; without, an existing
    parameter keeps its own.

    Example:
        >>> import stadyn as sd
        >>> with sd.parameter_scope("demo_gpoc"):
        ...     a = sd.get_parameter_or_create("W", (2, 2))
        ...     b = sd.get_parameter_or_create("W", (2, 2))
        >>> a is b
        True
    """
    path = _full(name)
    if is_no_grad():
        as_need_grad = False
    registry = _current.get()
    var = registry.get(path)
    if var is not None:
        if shape is not None and tuple(int(s) for s in shape) != var.shape:
            raise ParameterError(f"parameter '{path}' exists with shape {var.shape}; it was asked "
                                 f"for again with shape {tuple(shape)}")
        if overwrite_need_grad and var.need_grad != bool(need_grad):
            var.need_grad = bool(need_grad)
        if as_need_grad is not None and bool(as_need_grad) != var.need_grad:
            return _frozen_view(var, path, bool(as_need_grad))
        return var
    if shape is None:
        raise ParameterError(f"parameter '{path}' does not exist and no shape was given")
    if (dtype is None and not need_grad and isinstance(initializer, np.ndarray)
            and initializer.dtype.kind in "biu"):
        dtype = initializer.dtype
    value = _initial_value(initializer, shape, path, dtype)
    var = Variable.from_numpy_array(value, need_grad=need_grad, dtype=dtype)
    registry.set(path, var)
    if as_need_grad is not None and bool(as_need_grad) != var.need_grad:
        return _frozen_view(var, path, bool(as_need_grad))
    return var


def _frozen_view(var: Variable, path: str, as_need_grad: bool) -> Variable:
    if as_need_grad:
        raise ParameterError(f"parameter '{path}' has need_grad=False; as_need_grad=True cannot "
                             "make it trainable")
    return var.unlinked(need_grad=False)


def get_parameter(name: str) -> Variable | None:
    """The parameter ``name`` in the current scope, or None."""
    return _current.get().get(_full(name))


def set_parameter(name: str, var: Variable) -> None:
    """Register ``var`` as the parameter ``name`` in the current scope."""
    _current.get().set(_full(name), var)


def get_parameters(params: Any = None, path: str = "", grad_only: bool = True
                   ) -> "OrderedDict[str, Variable]":
    """The parameters under the current scope (and ``path``), keys relative to it.

    ``grad_only`` skips parameters with ``need_grad=False`` (batch-norm running statistics).

    Example:
        >>> import stadyn as sd, stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     _ = PF.affine(sd.Variable((4, 3)), 2, name="fc")
        ...     list(sd.get_parameters())
        ['fc/affine/W', 'fc/affine/b']
    """
    if params is not None:
        raise ParameterError("get_parameters(params=...) is not supported; pass path= instead")
    prefix = current_scope()
    if path:
        prefix = f"{prefix}/{path.strip('/')}" if prefix else path.strip("/")
    cut = len(current_scope()) + 1 if current_scope() else 0
    out: OrderedDict[str, Variable] = OrderedDict()
    for key, var in _current.get().items(prefix):
        if grad_only and not var.need_grad:
            continue
        out[key[cut:]] = var
    return out


def clear_parameters() -> None:
    """Remove every parameter under the current scope (all of them at the top level)."""
    _current.get().remove(current_scope())

