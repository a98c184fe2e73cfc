"""``cntk.metrics``: ``classification_error``, ``ndcg_at_1``, ``edit_distance_error``.

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> z, t = C.input_variable(3), C.input_variable(3)
    >>> C.metrics.classification_error(z, t).eval({
    ...     z: np.array([[0.1, 0.7, 0.2]], np.float32),
    ...     t: np.array([[0.0, 0.0, 1.0]], np.float32)}).tolist()
    [[1.0]]
"""

from ._ops_ctc import edit_distance_error
from ._ops_losses import classification_error
from ._ops_ranking import ndcg_at_1

__all__ = ["classification_error", "ndcg_at_1", "edit_distance_error"]
