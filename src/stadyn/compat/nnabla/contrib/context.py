"""``nnabla.contrib.context``: NNabla's deprecated ``extension_context`` (nnabla-examples' SAGAN
and MUNIT still call it: ``extension_context('cudnn', device_id=...)``).

Example:
    >>> from stadyn.compat.nnabla.contrib.context import extension_context
    >>> extension_context('cpu')
    Context(backend=['cpu:float'], array_class='CpuCachedArray', device_id='')
"""

from __future__ import annotations

from typing import Any

from ..ext_utils import get_extension_context
from ..logger import logger

__all__ = ["extension_context"]


def extension_context(extension_name: str = "cpu", **kw: Any):
    """The context of the extension ``extension_name`` (``get_extension_context``'s, with
    NNabla's deprecation warning)."""
    logger.warning("Deprecated API. Use `nnabla.ext_util.get_extension_context(ext_name, **kw)`.")
    return get_extension_context(extension_name, **kw)
