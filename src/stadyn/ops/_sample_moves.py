"""``random_shift`` moves along the sample axes (those before ``base_axis``), as NNabla 1.39's
CPU kernel makes them (random_shift.cpp, ``shift_recursive``).

NNabla draws one table of moves per sample (one move for each entry of ``shifts``) and walks
the input axis by axis: the table an axis reads is the one current when the walk enters that
axis, and the current table steps once per index of every axis before ``base_axis`` (the
inner axes' steps included, modulo the number of samples).  A move along a sample axis makes a
sample read another sample (clamped, reflected, or the constant outside), as a move along a
later axis makes a position read another position.  Which table each axis of each sample
reads depends on the shape alone (:func:`sample_walk`); the moves are tensors, so a graph
holding them still traces.

Example:
    >>> from stadyn.ops._sample_moves import sample_walk
    >>> positions, entries, rows = sample_walk((3, 2), 1, 3)
    >>> positions, entries, rows
    ([[0], [1], [2]], [[0], [0], [0]], [0, 1, 2])
"""

from __future__ import annotations

import functools

import torch

__all__ = ["move_samples", "sample_walk"]


@functools.lru_cache(maxsize=64)
def sample_walk(shape: tuple, base_axis: int, samples: int):
    """NNabla's walk over the sample axes of ``shape``: for each sample (in order) its index
    along each sample axis, the table each of those axes reads, and the table its later axes
    read (lists: ``samples`` lists of ``base_axis`` numbers twice, ``samples`` numbers).

    Example:
        >>> sample_walk((2, 2), 2, 4)[1]
        [[0, 0], [0, 0], [0, 3], [0, 3]]
    """
    positions: list[list[int]] = []
    entries: list[list[int]] = []
    rows: list[int] = []
    at = 0

    def visit(dim: int, where: list[int], entered: list[int]) -> None:
        nonlocal at
        if dim == base_axis:
            positions.append(where)
            entries.append(entered)
            rows.append(at)
            return
        entered = entered + [at]
        for i in range(shape[dim]):
            visit(dim + 1, where + [i], entered)
            at = (at + 1) % samples

    visit(0, [], [])
    return positions, entries, rows


def move_samples(x: torch.Tensor, y: torch.Tensor, table: torch.Tensor, moves, base_axis: int,
                 border_mode: str, constant_value: float) -> tuple[torch.Tensor, torch.Tensor]:
    """``y`` (``x`` with its samples flattened first) with each sample replaced by the one it
    reads, and the moves each sample's later axes make: ``table`` holds one row of moves per
    table (a column per ``(axis, largest move)`` of ``moves``).

    Example:
        >>> import torch
        >>> x = torch.arange(3.0).reshape(3, 1)
        >>> y, drawn = move_samples(x, x, torch.tensor([[1], [0], [0]]), [(0, 1)], 1,
        ...                         "constant", -1.0)
        >>> y.flatten().tolist(), drawn.flatten().tolist()
        ([-1.0, 0.0, 1.0], [1, 0, 0])
    """
    samples = y.shape[0]
    positions, entries, rows = (torch.tensor(t, dtype=torch.long, device=table.device)
                                for t in sample_walk(tuple(x.shape), base_axis, samples))
    column = {d: k for k, (d, _) in enumerate(moves)}
    source = torch.zeros(samples, dtype=torch.long, device=table.device)
    inside = torch.ones(samples, dtype=torch.bool, device=table.device)
    for d in range(base_axis):
        size = x.shape[d]
        k = positions[:, d]
        if d in column:
            k = k - table[entries[:, d], column[d]]
        if border_mode == "reflect":
            a = (k + 2 * size).abs() % (2 * size)
            j = torch.where(a >= size, 2 * size - 1 - a, a) if size > 1 else k * 0
        else:
            if border_mode == "constant":
                inside = inside & (k >= 0) & (k < size)
            j = k.clamp(0, size - 1)
        source = source * size + j
    moved = y[source.to(y.device)]
    if border_mode == "constant":
        shape = [samples] + [1] * (y.dim() - 1)
        moved = torch.where(inside.to(y.device).reshape(shape), moved,
                            torch.full((), float(constant_value), dtype=y.dtype,
                                       device=y.device))
    return moved, table[rows]
