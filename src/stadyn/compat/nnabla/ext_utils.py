"""``nnabla.ext_utils``: extension contexts map to Stadyn contexts."""

from __future__ import annotations

from ...graph import Context, context

__all__ = ["get_extension_context"]

_TYPE_CONFIG = {"float": "float32", "half": "float16", "mixed_half": "float16",
                "bfloat16": "bfloat16"}


def get_extension_context(ext_name: str = "cpu", device_id: int | str = 0,
                          type_config: str = "float") -> Context:
    """NNabla's ``get_extension_context``: ``'cpu'``, ``'cuda'`` or ``'cudnn'``.

    Without CUDA, ``'cuda'``/``'cudnn'`` fall back to the CPU with a warning, so GPU scripts run.

    Example:
        >>> from stadyn.compat.nnabla.ext_utils import get_extension_context
        >>> get_extension_context('cpu').backend
        'cpu'
    """
    return context(ext_name, int(device_id), _TYPE_CONFIG.get(type_config, type_config))
