"""``cntk.eval.evaluator``: where CNTK defines the Evaluator (Stadyn's is
:class:`stadyn.compat.cntk._function_training.Evaluator`)."""

from .._function_training import Evaluator

__all__ = ["Evaluator"]
