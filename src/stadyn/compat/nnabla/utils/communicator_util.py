"""``nnabla.utils.communicator_util`` on Stadyn: the communicator a training script made with
:func:`create_communicator`, and :func:`single_or_rankzero` for the work only one worker does
(printing, saving).

As NNabla's, :func:`create_communicator` makes one only under a launcher (NNabla's looks for
``mpirun``'s ``OMPI_COMM_WORLD_SIZE``; Stadyn's also for ``torchrun``'s and its own
launcher's ``WORLD_SIZE``), and keeps none when the run has a single worker.

Example:
    >>> from stadyn.compat.nnabla.utils.communicator_util import (create_communicator,
    ...     current_communicator, single_or_rankzero)
    >>> create_communicator() is None, current_communicator(), single_or_rankzero()
    (True, None, True)
"""

from __future__ import annotations

import os
from typing import Any

from .. import communicators as C
from ..logger import logger

__all__ = ["current_communicator", "create_communicator", "single_or_rankzero"]

_state: dict = {"comm": None}


def current_communicator() -> Any:
    """The communicator :func:`create_communicator` made (None when running alone).

    Example:
        >>> current_communicator() is None
        True
    """
    return _state["comm"]


def create_communicator(ignore_error: bool = False, extension_module: str = "cudnn",
                        type_config: str = "float") -> Any:
    """Make and keep the multi-process communicator when launched with several workers (its
    context's ``device_id`` set to the worker's rank modulo the worker count, as NNabla's);
    else keep none.  ``ignore_error`` logs a failure instead of raising it.

    Example:
        >>> create_communicator() is None
        True
    """
    launched = any(os.environ.get(k) is not None for k in ("OMPI_COMM_WORLD_SIZE", "WORLD_SIZE"))
    comm = None
    if launched:
        from ..ext_utils import get_extension_context
        context = get_extension_context(extension_module, type_config=type_config)
        try:
            logger.log(99, f"Create communicator with contexts {context}")
            comm = C.MultiProcessCommunicator(context)
            comm.init()
            context.device_id = str(comm.rank % comm.size)
            if comm.size == 1:
                comm = None
        except Exception:
            if not ignore_error:
                raise
            logger.warning("Failed to initialize nnabla.communicators.")
            comm = None
    _state["comm"] = comm
    return comm


def single_or_rankzero() -> bool:
    """True when running alone or as rank 0.

    Example:
        >>> single_or_rankzero()
        True
    """
    comm = _state["comm"]
    return not comm or comm.rank == 0
