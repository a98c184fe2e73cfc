"""``nnabla.utils.progress`` on Stadyn: a training script's progress line, written to a state
file (:func:`configure_progress`; at most once a second, NNabla's rule) and handed to a
callback (and to the callback modules' ``update_progress``, ``nnabla.utils.callback``), then,
where ``psutil`` can be imported (``cpu_load_backend_ok``, NNabla 1.39's flag of
``nnabla.utils.cli.utility``, which this module imports), the callback modules'
``update_status()`` with no arguments, as NNabla's ``progress`` calls it (case
``nnabla_fidelity_25.progress__update_status``).  NNabla's data sources and its console tool
report through it.

Example:
    >>> import os, tempfile
    >>> from stadyn.compat.nnabla.utils.progress import configure_progress, progress
    >>> seen = {}                   # (the callback stays set: NNabla has no way to unset it)
    >>> path = os.path.join(tempfile.mkdtemp(), "state.txt")
    >>> configure_progress(path, seen.__setitem__)
    >>> progress("Creating cache", 0.25); seen["Creating cache"]
    0.25
    >>> configure_progress("")
"""

from __future__ import annotations

import importlib.util
import time
from datetime import datetime, timedelta
from typing import Any, Callable

from ..logger import logger
from . import callback

__all__ = ["configure_progress", "progress"]

#: whether ``psutil`` can be imported (NNabla measures the CPU load with it then, and its
#: ``progress`` calls the callback modules' ``update_status()``)
cpu_load_backend_ok = importlib.util.find_spec("psutil") is not None

_state: dict = {"file": "", "last": datetime.now(), "callback": None}


def configure_progress(file_name: str | None, cb: Callable[[Any, float], Any] | None = None
                       ) -> None:
    """Write progress to ``file_name`` (``''``: to no file; None keeps the one set) and call
    ``cb(state, progress)`` on every report (None keeps the one set); then clear the file.

    Example:
        >>> configure_progress("")
    """
    if file_name is not None:
        _state["file"] = file_name
    if cb is not None:
        _state["callback"] = cb
    progress(None)


def progress(state: str | None, progress: float = 0.0) -> None:
    """Report ``state`` at ``progress`` (0 to 1): the state file gets ``'<state> (<percent>%)'``
    unless it was written less than a second ago (``state=None`` empties it at once), and the
    callback gets ``(state, progress)``; the callback modules' ``update_progress``, the line.

    Example:
        >>> progress("Training", 0.5)
    """
    path = _state["file"]
    if path:
        now = datetime.now()
        if _state["last"] < now - timedelta(milliseconds=1000) or state is None:
            _state["last"] = now
            for attempt in range(100):
                try:
                    with open(path, "w") as f:
                        if state is not None:
                            f.write(f"{state} ({progress * 100:3.2f}%)")
                    break
                except OSError:
                    if attempt == 99:
                        logger.critical(f"Failed to write to {path}.")
                        raise
                    time.sleep(0.1)
    callback.update_progress(f"{state} ({progress * 100:3.2f}%)")   # the callback modules'
    if cpu_load_backend_ok:
        callback.update_status()
    if _state["callback"] is not None:
        _state["callback"](state, progress)
