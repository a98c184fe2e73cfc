"""Optional dependencies: a feature that needs a package from one of Stadyn's extras imports it
through :func:`require`, which names the extra to install when the package is missing.

The extras (``pyproject.toml``): ``onnx`` (ONNX export, import and ``stadyn convert``),
``tensorboard`` (:class:`~stadyn.train.TensorBoardProgressWriter`), ``demo`` (scikit-learn's
digits data set and matplotlib's plots: ``stadyn demo``, ``stadyn bench``, NNabla's tutorial
helpers) and ``all`` (the three).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ._errors import StadynError

__all__ = ["MissingDependencyError", "require"]


class MissingDependencyError(StadynError, ImportError):
    """A feature needs a package of one of Stadyn's extras that is not installed."""


def require(module: str, extra: str, feature: str) -> ModuleType:
    """Import ``module`` for ``feature``; if it is not installed, a
    :class:`MissingDependencyError` says which extra brings it.

    Example:
        >>> from stadyn._extras import require
        >>> require("json", "none", "reading JSON").__name__
        'json'
        >>> require("no_such_module_here", "onnx", "ONNX export")
        Traceback (most recent call last):
        ...
        stadyn._extras.MissingDependencyError: ONNX export needs ... pip install 'stadyn[onnx]'
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        if exc.name is not None and exc.name.split(".")[0] != top:
            raise                          # the package is there; something it imports is not
        raise MissingDependencyError(f"{feature} needs the package '{top}', which is not "
                                     f"installed: pip install 'stadyn[{extra}]'") from None
