"""``cntk.eval``: the Evaluator (``C.eval.Evaluator(metric, progress_writers)``, as CNTK 303's
notebook writes it; also ``C.Evaluator`` and ``C.eval.evaluator.Evaluator``), and, as CNTK's
module hands them out, ``MinibatchData`` and ``use_default_device`` (``cntk``'s own).

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> z, t = C.input_variable(3), C.input_variable(3)
    >>> ev = C.eval.Evaluator(C.classification_error(z, t))
    >>> ev.test_minibatch({z: np.eye(3, dtype=np.float32), t: np.eye(3, dtype=np.float32)})
    0.0
"""

from ..device import use_default_device
from ..io import MinibatchData
from . import evaluator
from .evaluator import Evaluator

__all__ = ["Evaluator", "evaluator", "MinibatchData", "use_default_device"]
