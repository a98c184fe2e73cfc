"""``nnabla.utils.callback``: NNabla 1.39's hooks for a host application (Neural Network
Console).  ``callback_list`` holds the modules named by the configuration's
``[CALLBACK] util_callback_module`` (``[a, b]``; none, or one that fails to import: an empty
list, as NNabla's); a program may append its own module (or any object) to it.  Each function
here asks the first of them that has a function of its name and returns what that answers;
with none, NNabla's default (None, ``-1``, ``True``, ``(None, None)``).  Stadyn asks them where
NNabla does: ``data_source_loader.load(ext)`` takes ``get_load_image_func(ext)``'s loader
first, and ``progress.progress`` reports through ``update_progress``.

Example:
    >>> import types
    >>> import stadyn.compat.nnabla.utils.callback as callback
    >>> hooks = types.SimpleNamespace(get_timelimit=lambda args: 60)
    >>> callback.callback_list.append(hooks)
    >>> callback.get_timelimit(None), callback.get_callback_version()
    (60, None)
    >>> callback.callback_list.remove(hooks)
"""

import importlib
from typing import Any

from ..config import nnabla_config

__all__ = ["callback_list", "alternative_cli", "get_callback_version", "get_best_from_status",
           "update_time_train", "save_train_snapshot", "update_status", "add_train_command_arg",
           "get_timelimit", "process_evaluation_result", "update_forward_time",
           "check_training_time", "result_base", "update_progress", "get_load_image_func"]


def _configured() -> list:
    try:
        listed = nnabla_config.get("CALLBACK", "util_callback_module")
        return [importlib.import_module(m) for m in listed.strip("[]").replace(" ", "").split(",")]
    except Exception:                   # noqa: BLE001 (NNabla: any failure, no callbacks)
        return []


callback_list: list = _configured()


def _get_callback(func_name: str) -> Any:
    """The first of :data:`callback_list` that has ``func_name``, or None."""
    return next((c for c in callback_list if func_name in dir(c)), None)


def _ask(func_name: str, default: Any, *args: Any) -> Any:
    found = _get_callback(func_name)
    return default if found is None else getattr(found, func_name)(*args)


def alternative_cli(args: Any) -> Any:
    """The callbacks' own command line run for ``args``, or None.

    >>> alternative_cli(None) is None
    True
    """
    return _ask("alternative_cli", None, args)


def get_callback_version() -> Any:
    """The callbacks' version, or None.

    >>> get_callback_version() is None
    True
    """
    return _ask("get_callback_version", None)


def get_best_from_status(args: Any) -> Any:
    """The callbacks' best result so far, or ``(None, None)``.

    >>> get_best_from_status(None)
    (None, None)
    """
    return _ask("get_best_from_status", (None, None), args)


def update_time_train(prediction: Any = None) -> None:
    """Tell the callbacks the training time (and ``prediction``).

    >>> update_time_train()
    """
    _ask("update_time_train", None, prediction)


def save_train_snapshot() -> None:
    """Ask the callbacks to save a snapshot of the training.

    >>> save_train_snapshot()
    """
    _ask("save_train_snapshot", None)


def update_status(state: Any = None, start: bool = False, start_time: Any = None) -> None:
    """Tell the callbacks the training's status.

    >>> update_status("processing")
    """
    _ask("update_status", None, state, start, start_time)


def add_train_command_arg(subparser: Any) -> None:
    """Let the callbacks add arguments to the ``train`` command's parser.

    >>> add_train_command_arg(None)
    """
    _ask("add_train_command_arg", None, subparser)


def get_timelimit(args: Any) -> Any:
    """The callbacks' time limit of the training, or ``-1`` (none).

    >>> get_timelimit(None)
    -1
    """
    return _ask("get_timelimit", -1, args)


def process_evaluation_result(outdir: Any, filename: Any) -> None:
    """Hand the callbacks an evaluation's result file.

    >>> process_evaluation_result(".", "result.csv")
    """
    _ask("process_evaluation_result", None, outdir, filename)


def update_forward_time() -> None:
    """Tell the callbacks a forward ran.

    >>> update_forward_time()
    """
    _ask("update_forward_time", None)


def check_training_time(args: Any, config: Any, timeinfo: Any, epoch: Any,
                        last_epoch: Any) -> Any:
    """Whether the callbacks let the training go on (True without them).

    >>> check_training_time(None, None, None, 1, 10)
    True
    """
    return _ask("check_training_time", True, args, config, timeinfo, epoch, last_epoch)


def result_base(base: Any, suffix: Any, outdir: Any) -> Any:
    """The callbacks' base name of a result file, or None.

    >>> result_base("out", ".csv", ".") is None
    True
    """
    return _ask("result_base", None, base, suffix, outdir)


def update_progress(text: str) -> None:
    """Tell the callbacks the progress, as text (``'Training (50.00%)'``).

    >>> update_progress("Training (50.00%)")
    """
    _ask("update_progress", None, text)


def get_load_image_func(ext: str) -> Any:
    """The callbacks' reader of files with the extension ``ext`` (``'.png'``), or None
    (``data_source_loader.load`` then gives NNabla's own).

    >>> get_load_image_func(".png") is None
    True
    """
    return _ask("get_load_image_func", None, ext)
