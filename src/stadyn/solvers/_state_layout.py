"""Where an optimizer's per-parameter tensors lie: a state (momentum, Adam's moments, ...) of
contiguous CPU parameters is made as views of one buffer per dtype, end to end in the
parameters' order.  The exact CPU blocks (``_float32_blocks.py``) then take a run of small
parameters' states as one array, read in place, instead of copying them in and out on every
update.  NNabla's solvers (``_solver.py``) and CNTK's learners (``learners/``) lay their states
out here (:func:`new_states`).

Example:
    >>> import torch
    >>> a, b = end_to_end([torch.zeros(2), torch.zeros(3)], 1.0)
    >>> b.data_ptr() == a.data_ptr() + 2 * a.element_size(), b.tolist()
    (True, [1.0, 1.0, 1.0])
"""

from __future__ import annotations

from typing import Iterable, Mapping

import torch

__all__ = ["end_to_end", "new_states"]


def end_to_end(params: list[torch.Tensor], value: float | None,
               dtype: torch.dtype | None = None) -> list[torch.Tensor]:
    """A tensor like each of ``params`` (of ``dtype``, else the parameter's), filled with
    ``value`` (``None``: left uninitialised); those of contiguous CPU parameters whose tensor is
    floating point views of one buffer per dtype, end to end in the parameters' order, the
    others made alone (``full_like``, their layout).

    Example:
        >>> import torch
        >>> [t.dtype for t in end_to_end([torch.zeros(2, dtype=torch.int32)], 0.0,
        ...                              torch.float32)]
        [torch.float32]
    """
    out: list = [None] * len(params)
    runs: dict[torch.dtype, list[int]] = {}
    for i, p in enumerate(params):
        kind = p.dtype if dtype is None else dtype
        if p.is_cpu and p.is_contiguous() and kind.is_floating_point:
            runs.setdefault(kind, []).append(i)
        elif value is None:
            out[i] = torch.empty_like(p, dtype=kind)
        else:
            out[i] = torch.full_like(p, value, dtype=kind)
    for kind, idx in runs.items():
        n = sum(params[i].numel() for i in idx)
        flat = torch.empty(n, dtype=kind) if value is None else torch.full((n,), value,
                                                                             dtype=kind)
        for i, view in zip(idx, flat.split([params[i].numel() for i in idx])):
            out[i] = view.view(params[i].shape)
    return out


def new_states(params: list[torch.Tensor], names: Iterable[str],
               init: Mapping[str, float] | None = None,
               dtype: torch.dtype | None = None) -> list[dict]:
    """Each parameter's state tensors, ``{name: tensor}`` for ``names`` (the dicts list them in
    that order), filled with ``init``'s value (else 0), of ``dtype`` (else the parameter's),
    each state's tensors :func:`end_to_end`.

    Example:
        >>> import torch
        >>> states = new_states([torch.zeros(2)], ("m", "v"), {"v": 0.5})
        >>> states[0]["m"].tolist(), states[0]["v"].tolist()
        ([0.0, 0.0], [0.5, 0.5])
        >>> new_states([torch.zeros(2, dtype=torch.int32)], ("m",), dtype=torch.float32)[0]["m"]
        tensor([0., 0.])
    """
    init = init or {}
    states: list[dict] = [{} for _ in params]
    for k in names:
        for state, t in zip(states, end_to_end(params, init.get(k, 0.0), dtype)):
            state[k] = t
    return states
