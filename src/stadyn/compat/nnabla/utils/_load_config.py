"""The contexts NNabla 1.39's ``load`` gives a file: ``info.global_config`` (an object whose
``default_context`` is an NNabla :class:`~stadyn.compat.nnabla.Context`) and
``info.default_context``.

NNabla's rules (``nnabla.utils.load.base_load``):

* a file with a ``global_config`` section makes its ``default_context`` the current context
  (``nn.set_default_context``), and that context is ``info.default_context``;
* a file without one leaves the current context alone; ``info.default_context`` is then the CPU
  extension's context (``Context(['cpu:float'], 'CpuCachedArray', '')``);
* ``load(context='cpu')`` or ``'cudnn[:N]'`` gives that extension's context as
  ``info.default_context`` and ``global_config.default_context`` -- and a file's
  ``global_config`` still becomes the current context (NNabla sets it while reading the
  section).

A file's old-style context (``backend: "cpu|cuda"``, ``compute_backend: "default|cudnn"``, no
``backends``) is read as NNabla updates it: the CPU's, CUDA's or cuDNN's extension context.
"""

from __future__ import annotations

from typing import Any

from .._context import Context, set_default_context
from ..ext_utils import get_extension_context
from ..logger import logger

__all__ = ["GlobalConfig", "load_contexts"]


class GlobalConfig:
    """``info.global_config``: NNabla's ``default_context`` attribute."""

    def __init__(self, default_context: Context):
        self.default_context = default_context

    def __repr__(self) -> str:
        return f"<GlobalConfig default_context={self.default_context!r}>"


def _file_context(fields: dict) -> Context:
    """The ``default_context`` message of a file's ``global_config`` as NNabla's Context."""
    backends = fields.get("backends") or []
    if isinstance(backends, str):
        backends = [backends]
    if not backends:
        old = [b.strip() for b in str(fields.get("backend", "")).split("|")]
        compute = [b.strip() for b in str(fields.get("compute_backend", "")).split("|")]
        if "cuda" in old:
            if "cudnn" not in compute and "default" not in compute:
                raise ValueError(f"Invalid compute_backend {fields.get('compute_backend')}")
            ctx = get_extension_context("cudnn" if "cudnn" in compute else "cuda",
                                        device_id=str(fields.get("device_id", "0")))
        elif "cpu" in old:
            ctx = get_extension_context("cpu")
        else:
            raise ValueError(f"Invalid context {fields}")
        ctx.array_class = str(fields.get("array_class", ""))
        return ctx
    return Context(list(backends), str(fields.get("array_class", "")),
                   str(fields.get("device_id", "")))


def _asked_context(context: str) -> Context | None:
    """``load(context=...)``'s context: ``'cpu'`` or ``'cudnn[:device]'``."""
    if context == "cpu":
        return get_extension_context("cpu")
    ext, _, device = str(context).partition(":")
    if ext == "cudnn":
        return get_extension_context("cudnn", device_id=str(int(device or 0)))
    logger.warning(f"Invalid context [{context}]")
    return None


def load_contexts(fields: dict | None, context: Any = None) -> tuple[GlobalConfig, Context]:
    """``(info.global_config, info.default_context)`` for a file whose ``global_config``
    section is ``fields`` (None where it has none) and ``load``'s ``context`` argument; the
    file's context is made the current one, as NNabla's ``load`` makes it (see the module
    docstring).

    Example:
        >>> import stadyn.compat.nnabla as nn
        >>> config, ctx = load_contexts(None)
        >>> ctx, config.default_context is ctx
        (Context(backend=['cpu:float'], array_class='CpuCachedArray', device_id=''), True)
    """
    asked = _asked_context(context) if context else None
    if fields is not None:
        file_ctx = _file_context(fields.get("default_context") or {})
        set_default_context(file_ctx)
        ctx = asked if asked is not None else file_ctx
    else:
        ctx = asked if asked is not None else get_extension_context("cpu")
    return GlobalConfig(ctx), ctx
