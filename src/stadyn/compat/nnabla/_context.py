"""NNabla's ``nn.Context`` and the functions that set and read the current one.

NNabla's context is a plain record of three fields, which nnabla-examples' shared helpers read
and write: ``backend`` (a list of ``'extension:type'`` strings, ``['cpu:float']``; the first
one is the one that runs), ``array_class`` (a name, bookkeeping here) and ``device_id`` (a
string; ``''`` for the CPU extension's context).  ``neu``'s ``CommunicatorWrapper`` does
``len(ctx.device_id)``, ``ctx.device_id = str(...)`` and
``get_extension_context(ctx.backend[0].split(':')[0], device_id=ctx.device_id)``.

Stadyn's own :class:`stadyn.graph.Context` (backend, device index, dtype) is what ops read; an
NNabla context is turned into one where it is made current (``set_default_context``,
``context_scope``), and ``get_current_context`` gives back the NNabla context that was set (or
one describing the native context that is current, when Stadyn's own API set it).

Example:
    >>> import stadyn.compat.nnabla as nn
    >>> from stadyn.compat.nnabla.ext_utils import get_extension_context
    >>> ctx = get_extension_context("cpu", type_config="half")
    >>> ctx
    Context(backend=['cpu:half', 'cpu:float'], array_class='CpuCachedArray', device_id='')
    >>> with nn.context_scope(ctx):
    ...     nn.get_current_context() is ctx, ctx._to_stadyn().dtype
    (True, 'float16')
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from ... import graph

__all__ = ["Context", "bound_context", "context_scope", "get_current_context",
           "set_default_context"]

# NNabla's type configurations and the dtype Stadyn computes in for each, and the type
# configuration a context of each dtype names (``mixed_half`` computes in float16 too).  The
# one table of ``ext_utils``, ``communicators`` and this module.
DTYPES = {"float": "float32", "half": "float16", "mixed_half": "float16", "bfloat16": "bfloat16"}
TYPE_CONFIGS = {"float32": "float", "float16": "half", "bfloat16": "bfloat16"}


def backends_for(extension: str, kind: str) -> list[str]:
    """The backends of NNabla's context of ``extension`` (``'cpu'``, ``'cuda'`` or
    ``'cudnn'``) with type configuration ``kind``, as NNabla 1.39's extensions list them (the
    CPU's float last, to fall back on).

    Example:
        >>> backends_for("cpu", "half"), backends_for("cudnn", "float")
        (['cpu:half', 'cpu:float'], ['cudnn:float', 'cuda:float', 'cpu:float'])
    """
    if extension == "cpu":
        return [f"cpu:{kind}"] + (["cpu:float"] if kind != "float" else [])
    backend = ([f"cudnn:{kind}"] if extension == "cudnn" else []) + [f"cuda:{kind}"]
    return backend + (["cpu:float"] if kind == "float" else [f"cpu:{kind}", "cpu:float"])


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"Expected str, got {type(value).__name__}")
    return value


class Context:
    """NNabla's context: ``Context(backend=None, array_class='', device_id='0')``.

    ``backend`` becomes a list (of any iterable, as NNabla's does: a string gives its
    characters); ``array_class`` and ``device_id`` must be strings (NNabla's ``TypeError``
    otherwise).  Contexts are compared by identity, as NNabla's are.

    Example:
        >>> ctx = Context()
        >>> ctx
        Context(backend=['cpu:float'], array_class='', device_id='0')
        >>> ctx.device_id = "1"; ctx.backend[0].split(":")
        ['cpu', 'float']
    """

    __slots__ = ("_backend", "_array_class", "_device_id", "_native", "_frozen")

    def __init__(self, backend: Any = None, array_class: str = "", device_id: str = "0"):
        self.backend = ["cpu:float"] if backend is None else backend
        self.array_class = array_class
        self.device_id = device_id
        self._native: tuple | None = None
        self._frozen: tuple | None = None

    backend = property(lambda self: self._backend,
                       lambda self, value: setattr(self, "_backend", [_text(v) for v in value]),
                       doc="The backends, ``'extension:type'`` strings, the first one used.")
    array_class = property(lambda self: self._array_class,
                           lambda self, value: setattr(self, "_array_class", _text(value)),
                           doc="The array class's name (NNabla's bookkeeping).")
    device_id = property(lambda self: self._device_id,
                         lambda self, value: setattr(self, "_device_id", _text(value)),
                         doc="The device, a string (``''`` in the CPU extension's context).")

    def __repr__(self) -> str:
        return (f"Context(backend={self.backend!r}, array_class={self.array_class!r}, "
                f"device_id={self.device_id!r})")

    __str__ = __repr__

    def _to_stadyn(self) -> graph.Context:
        """The Stadyn context this one runs ops in: the first backend's extension (``cudnn``
        and ``cuda`` are torch's CUDA device, falling back to the CPU with a warning where
        there is none) and type, on ``device_id``.  Made once for each value of the fields."""
        key = (tuple(self.backend), self.device_id)
        if self._native is None or self._native[0] != key:
            first = self.backend[0] if self.backend else "cpu:float"
            extension, _, kind = first.partition(":")
            if kind not in DTYPES:
                raise ValueError(f"{self!r}: unknown type {kind!r} in backend {first!r}; "
                                 f"expected one of {sorted(DTYPES)}")
            native = graph.context(extension, self.device_id or None, DTYPES[kind])
            self._native = (key, native)
        return self._native[1]

    def _snapshot(self) -> "Context":
        """A copy of this context as it is now, the same one while its fields stay the same
        (a function binds its context when it is made, as NNabla's: a later change of the
        fields changes no function made before; and graphs rebuilt in it stay comparable)."""
        key = (tuple(self.backend), self.array_class, self.device_id)
        if self._frozen is None or self._frozen[0] != key:
            copy = _Bound(list(self.backend), self.array_class, self.device_id)
            copy._native = ((key[0], key[2]), self._to_stadyn())
            self._frozen = (key, copy)
        return self._frozen[1]


class _Bound(Context):
    """The context a function binds (``y.parent.context``): NNabla's, and what Stadyn's graph
    reads of ``FunctionNode.context`` (``half_dtype``)."""

    __slots__ = ()

    @property
    def half_dtype(self):
        """The half type the function computes in (None in float)."""
        return self._to_stadyn().half_dtype


def describe(native: graph.Context) -> Context:
    """The NNabla context naming Stadyn's ``native`` one (NNabla's default for the default)."""
    kind = TYPE_CONFIGS.get(native.dtype, "float")
    backend = backends_for("cpu" if native.backend == "cpu" else "cudnn", kind)
    ctx = Context(backend, "", str(native.device_id))
    ctx._native = ((tuple(backend), ctx.device_id), native)
    return ctx


def _native(ctx: Any) -> graph.Context:
    if isinstance(ctx, Context):
        return ctx._to_stadyn()
    if isinstance(ctx, graph.Context):
        return ctx
    raise TypeError(f"expected a Context, got {type(ctx).__name__}")


# The NNabla contexts made current through this module, innermost last (``get_current_context``
# gives the last one back while the native context it was turned into is still current).
_set: list[Context] = []
_KEEP = 32          # set_default_context keeps the last ones it was given


def set_default_context(ctx: Context | graph.Context) -> None:
    """Make ``ctx`` (NNabla's context, or Stadyn's) the current one."""
    graph.set_default_context(_native(ctx))
    if isinstance(ctx, Context):
        _set[:] = [c for c in _set if c is not ctx][-_KEEP:] + [ctx]


@contextlib.contextmanager
def context_scope(ctx: Context | graph.Context) -> Iterator[Context | graph.Context]:
    """Use ``ctx`` inside a ``with`` block."""
    with graph.context_scope(_native(ctx)):
        if isinstance(ctx, Context):
            _set.append(ctx)
        try:
            yield ctx
        finally:
            for k in range(len(_set) - 1, -1, -1):
                if _set[k] is ctx:
                    del _set[k]
                    break


def bound_context() -> Context | graph.Context:
    """The context a function made now binds (``y.parent.context``): the NNabla context made
    current (``nn.context_scope(ctx)``, ``nn.set_default_context(ctx)``), as it is now, as
    NNabla 1.39's ``str(y.parent.context) == str(ctx)``; else Stadyn's current context.

    Example:
        >>> import stadyn.compat.nnabla as nn
        >>> ctx = nn.Context(device_id="1")
        >>> with nn.context_scope(ctx):
        ...     str(bound_context()) == str(ctx)
        True
    """
    native = graph.get_current_context()
    for ctx in reversed(_set):
        if ctx._native is not None and ctx._native[1] is native:
            return ctx._snapshot()
    return native


def get_current_context() -> Context:
    """The current context as NNabla's: the NNabla context that was made current, while the
    Stadyn context it stands for still is; else one describing Stadyn's current context."""
    native = graph.get_current_context()
    for ctx in reversed(_set):
        if ctx._native is not None and ctx._native[1] is native:
            return ctx
    return describe(native)
