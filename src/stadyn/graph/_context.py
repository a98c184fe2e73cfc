"""Execution contexts: which device ops run on and in which precision.

A :class:`Context` names a backend (``'cpu'`` or ``'cuda'``), a device id and a compute dtype.
``float32`` runs everything in fp32; ``bfloat16`` / ``float16`` run matrix products,
convolutions and the element-wise ops between them in half precision while parameters,
gradients and solver state stay fp32 (master weights); each op's declared precision says how
it casts (see :mod:`stadyn.graph._precision`).

The current context lives in a :class:`contextvars.ContextVar`, so threads and async tasks each
see their own. ``with sd.context('cuda'):`` (or ``with sd.context_scope(ctx):``, NNabla's name)
uses a context inside a block and restores the previous one after it;
:func:`set_default_context` sets it from then on. :func:`context` itself only makes a context:
called as a statement of its own it changes nothing, and warns.
"""

from __future__ import annotations

import contextlib
import contextvars
import dis
import sys
import warnings
from dataclasses import dataclass

import torch

from .._errors import StadynError

__all__ = ["Context", "context", "set_default_context", "get_current_context", "context_scope"]

_DTYPES = {"float32": torch.float32, "float": torch.float32, "half": torch.float16,
           "float16": torch.float16, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16}
_BACKENDS = {"cpu": "cpu", "cuda": "cuda", "cudnn": "cuda", "gpu": "cuda"}


@dataclass(frozen=True)
class Context:
    """Where and in which precision ops run.

    A context is also a context manager: ``with ctx:`` makes it the current context inside the
    block and restores the previous one after it (as :func:`context_scope` does).

    Example:
        >>> import stadyn as sd
        >>> ctx = sd.context('cpu', dtype='bfloat16')
        >>> ctx.device, ctx.compute_dtype
        (device(type='cpu'), torch.bfloat16)
        >>> with ctx:
        ...     sd.get_current_context().dtype
        'bfloat16'
        >>> sd.get_current_context().dtype
        'float32'
    """

    backend: str = "cpu"
    device_id: int = 0
    dtype: str = "float32"

    @property
    def device(self) -> torch.device:
        if self.backend == "cpu":
            return torch.device("cpu")
        return torch.device(self.backend, self.device_id)

    @property
    def compute_dtype(self) -> torch.dtype:
        return _DTYPES[self.dtype]

    @property
    def mixed_precision(self) -> bool:
        """True when ops run in half precision (parameters stay fp32)."""
        return self.compute_dtype != torch.float32

    @property
    def half_dtype(self) -> torch.dtype | None:
        """The half type ops of declared precision cast to, or None in fp32."""
        dtype = self.compute_dtype
        return dtype if dtype != torch.float32 else None

    def __enter__(self) -> Context:
        _entered.set(_entered.get() + (_current.set(self),))
        return self

    def __exit__(self, *exc_info) -> None:
        tokens = _entered.get()
        _entered.set(tokens[:-1])
        _current.reset(tokens[-1])


def context(backend: str = "cpu", device_id: int | str | None = None, dtype: str = "float32",
            *, fallback: bool = True) -> Context:
    """Make a :class:`Context`.

    ``backend`` is ``'cpu'`` or ``'cuda'`` (NNabla's ``'cudnn'`` means ``'cuda'``), optionally
    with a device index as torch writes it (``'cuda:1'``); ``device_id`` gives the index too
    (default 0; the CPU has one).  A GPU the machine does not have is an error naming those it
    has.  Asking for CUDA on a machine without it falls back to the CPU with a warning when
    ``fallback`` is true (so NNabla scripts written for a GPU still run), and raises otherwise.

    The context is returned, not made current: use it as ``with sd.context(...):`` for a block
    or pass it to :func:`set_default_context`. A call whose result is thrown away (a statement
    of its own) warns, since it would change nothing.

    Example:
        >>> import stadyn as sd
        >>> sd.context('cpu').device
        device(type='cpu')
        >>> with sd.context('cpu', dtype='bfloat16'):
        ...     sd.get_current_context().dtype
        'bfloat16'
    """
    if _result_discarded(sys._getframe(1)):
        warnings.warn("sd.context(...) only makes a Context and changes nothing by itself: use "
                      "'with sd.context(...):' for a block or "
                      "'sd.set_default_context(sd.context(...))' from here on", UserWarning,
                      stacklevel=2)
    name, _, index = str(backend).lower().partition(":")
    if name not in _BACKENDS:
        raise StadynError(f"unknown backend {backend!r}; expected one of {sorted(_BACKENDS)}")
    if str(dtype).lower() not in _DTYPES:
        raise StadynError(f"unknown dtype {dtype!r}; expected one of {sorted(_DTYPES)}")
    dtype = {"float": "float32", "half": "float16", "bf16": "bfloat16"}.get(str(dtype).lower(),
                                                                          str(dtype).lower())
    resolved = _BACKENDS[name]
    device = _device_index(backend, index, device_id) if resolved == "cuda" else 0
    if resolved == "cuda" and not torch.cuda.is_available():
        if not fallback:
            raise StadynError(f"backend {backend!r} asked for, but CUDA is not available")
        warnings.warn(f"backend {backend!r} asked for, but CUDA is not available; using the CPU",
                      RuntimeWarning, stacklevel=2)
        resolved = "cpu"
        if dtype == "float16":
            dtype = "float32"
    if resolved == "cuda" and device >= torch.cuda.device_count():
        count = torch.cuda.device_count()
        raise StadynError(f"backend {backend!r} with device {device}: this machine has {count} "
                          f"CUDA device(s) (cuda:0{f' to cuda:{count - 1}' if count > 1 else ''})")
    return Context(resolved, device if resolved == "cuda" else 0, dtype)


def _device_index(backend: str, index: str, device_id: int | str | None) -> int:
    """The device index of ``'cuda:N'`` and ``device_id`` (which must agree when both say)."""
    ids = []
    for text, what in ((index, f"backend {backend!r}"), (device_id, f"device_id {device_id!r}")):
        if text is None or text == "":
            continue
        try:
            value = int(text)
        except (TypeError, ValueError):
            raise StadynError(f"{what}: the device index must be a whole number") from None
        if value < 0:
            raise StadynError(f"{what}: the device index must be >= 0")
        ids.append(value)
    if len(ids) == 2 and ids[0] != ids[1]:
        raise StadynError(f"backend {backend!r} and device_id {device_id!r} name different "
                          "devices")
    return ids[0] if ids else 0


_current: contextvars.ContextVar[Context] = contextvars.ContextVar("stadyn_context",
                                                                  default=Context())
# The tokens of the ``with ctx:`` blocks open in this context, innermost last.
_entered: contextvars.ContextVar[tuple] = contextvars.ContextVar("stadyn_context_entered",
                                                                 default=())


def get_current_context() -> Context:
    """The context new variables, parameters and graphs use."""
    return _current.get()


def set_default_context(ctx: Context) -> None:
    """Make ``ctx`` the current context (for this thread / async context)."""
    if not isinstance(ctx, Context):
        raise TypeError(f"expected a stadyn Context, got {type(ctx).__name__}")
    _current.set(ctx)


@contextlib.contextmanager
def context_scope(ctx: Context):
    """Use ``ctx`` inside a ``with`` block.

    Example:
        >>> import stadyn as sd
        >>> with sd.context_scope(sd.context('cpu', dtype='bfloat16')):
        ...     sd.get_current_context().dtype
        'bfloat16'
    """
    token = _current.set(ctx)
    try:
        yield ctx
    finally:
        _current.reset(token)


def _result_discarded(frame) -> bool:
    """True when the call running in ``frame`` is a statement of its own: the instruction after
    the call (CPython 3.10-3.13 bytecode) pops its result.  Unknown bytecode counts as used."""
    try:
        lasti = frame.f_lasti
        current = following = None
        for ins in dis.get_instructions(frame.f_code):
            if ins.opname == "CACHE":
                continue
            if ins.offset <= lasti:
                current = ins
            else:
                following = ins
                break
        return (current is not None and current.opname.startswith("CALL")
                and following is not None and following.opname == "POP_TOP")
    except Exception:                      # a frame or bytecode this reading does not know
        return False
    finally:
        del frame
