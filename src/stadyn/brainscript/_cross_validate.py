"""CNTK's ``cv`` action (``DoCrossValidate``, Source/ActionsLib/EvalActions.cpp): evaluate the
model files a training run wrote for a range of epochs on the ``reader`` set and name the best
one per evaluation node.

``crossValidationInterval = start:step:end`` lists the epochs; the model of epoch ``i`` is
``modelPath.<i>`` (``modelPath.0`` the untrained one).  The last epoch's model has no suffix:
the first epoch of the range whose file is missing is replaced by ``modelPath`` itself (once),
any other missing one is skipped, each with the line ``Model <path> does not exist.``.  Each model
evaluated prints ``Model <path> --> `` and then the test action's lines; at the end::

    Best models:
    ------------
    Based on Err[0]: Best model = <path> with min err 0.38685738

for each evaluation node in the order they were printed (the lowest average wins, the first
model on ties).  ``sleepTimeBetweenRuns`` (seconds, default 0) waits after each model, as
cntk.exe did.  Like cntk.exe, the interval is a vector whose last value repeats
(``crossValidationInterval = 3`` is ``3:3:3``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .._errors import ConfigError
from ._blocks import CommandConfig
from ._cntk_log import CNTKLog
from ._command_network import loc_of, record_loc

__all__ = ["CrossValidation", "cross_validate", "cv_epochs"]


@dataclass
class CrossValidation:
    """What a ``cv`` command found: per model evaluated, its path and results (an
    ``EvalResult``); per evaluation node, ``(node name, best model's path, its average)``."""

    models: list[tuple[str, object]] = field(default_factory=list)
    best: list[tuple[str, str, float]] = field(default_factory=list)


def cv_epochs(cmd: CommandConfig) -> range:
    """The epochs of ``crossValidationInterval`` (``start:step:end``; its last value repeats).

    >>> from stadyn.brainscript import parse_config
    >>> from stadyn.brainscript._blocks import command_config
    >>> root = parse_config('cv = [ action = "cv" ; crossValidationInterval = 0:2:7 ]')
    >>> list(cv_epochs(command_config(root, "cv")))
    [0, 2, 4, 6]
    """
    rec = cmd.record
    if "crossValidationInterval" not in rec:
        raise ConfigError(f"command '{cmd.name}' (action cv) needs crossValidationInterval = "
                          "start:step:end (the epochs whose models to evaluate)",
                          *record_loc(rec, "action"))
    values = list(rec.get_ints("crossValidationInterval"))
    start, step, end = (values[min(i, len(values) - 1)] for i in range(3))
    if start < 0 or step < 1:
        raise ConfigError("crossValidationInterval = start:step:end needs start >= 0 and "
                          f"step >= 1, got {start}:{step}:{end}",
                          *loc_of(rec.lookup("crossValidationInterval")))
    return range(start, end + 1, step)


def cross_validate(cmd: CommandConfig, evaluate: Callable[[str], object],
                   log: CNTKLog) -> CrossValidation:
    """Run the ``cv`` command ``cmd``: ``evaluate(model_path)`` evaluates one model file on the
    command's reader, printing the test action's lines, and returns its ``EvalResult``."""
    rec = cmd.record
    if cmd.model_path is None:
        raise ConfigError(f"command '{cmd.name}' (action cv) needs 'modelPath'",
                          *record_loc(rec, "action"))
    epochs = cv_epochs(cmd)
    sleep = rec.get_float("sleepTimeBetweenRuns", 0.0)
    if sleep < 0:
        raise ConfigError(f"sleepTimeBetweenRuns must be >= 0, got {sleep:g}",
                          *loc_of(rec.lookup("sleepTimeBetweenRuns")))
    result = CrossValidation()
    final_evaluated = False
    for epoch in epochs:
        path = f"{cmd.model_path}.{epoch}"
        if not os.path.exists(path):
            log.raw(f"Model {path} does not exist.")
            if final_evaluated or not os.path.exists(cmd.model_path):
                continue
            path, final_evaluated = cmd.model_path, True
        log.raw(f"Model {path} --> ")
        result.models.append((path, evaluate(path)))
        if sleep:
            time.sleep(sleep)
    if not result.models:
        raise ConfigError(f"No model is evaluated: none of the models of crossValidationInterval "
                          f"({cmd.model_path}.{epochs.start} to .{epochs[-1] if epochs else '-'},"
                          f" or {cmd.model_path}) exists",
                          *loc_of(rec.lookup("crossValidationInterval")))
    names = list(result.models[0][1].values)
    log.raw("Best models:")
    log.raw("------------")
    for i, name in enumerate(names):
        best_path, best = result.models[0][0], result.models[0][1].values[name][0]
        for path, res in result.models[1:]:
            if res.values[name][0] < best:
                best_path, best = path, res.values[name][0]
        result.best.append((name, best_path, best))
        log.raw(f"Based on Err[{i}]: Best model = {best_path} with min err {best:.8g}")
    return result
