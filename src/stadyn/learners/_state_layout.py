"""Where a CNTK learner's per-parameter tensors lie: its states (momentum, Adam's moments, ...)
and update()'s gradient copies of contiguous CPU floating-point parameters are views of one
buffer per dtype, end to end in the parameters' order (:func:`stadyn.solvers.end_to_end`, which
NNabla's solvers use too).  The exact CPU blocks (``solvers/_float32_blocks.py``) then take a run
of small parameters' states as one array, read in place, instead of copying them in and out on
every update.

Example:
    >>> import torch
    >>> a, b = end_to_end([torch.zeros(2), torch.zeros(3)], 1.0)
    >>> b.data_ptr() == a.data_ptr() + 2 * a.element_size(), b.tolist()
    (True, [1.0, 1.0, 1.0])
"""

from __future__ import annotations

from typing import Mapping

import torch

from ..solvers import end_to_end

__all__ = ["end_to_end", "new_states"]


def new_states(params: list[torch.Tensor], names, init: Mapping[str, float]) -> list[dict]:
    """Each parameter's state tensors, ``{name: tensor}`` for ``names``, filled with
    ``init``'s value (else 0), each state's tensors :func:`end_to_end`.

    Example:
        >>> import torch
        >>> states = new_states([torch.zeros(2)], ("m", "v"), {"v": 0.5})
        >>> states[0]["m"].tolist(), states[0]["v"].tolist()
        ([0.0, 0.0], [0.5, 0.5])
    """
    states: list[dict] = [{} for _ in params]
    for k in names:
        for state, t in zip(states, end_to_end(params, init.get(k, 0.0))):
            state[k] = t
    return states
