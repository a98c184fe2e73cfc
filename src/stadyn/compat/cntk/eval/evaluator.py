"""``cntk.eval.evaluator``: where CNTK defines the Evaluator (Stadyn's is
:class:`stadyn.compat.cntk._training.Evaluator`)."""

from .._training import Evaluator

__all__ = ["Evaluator"]
