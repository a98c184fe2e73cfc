"""Which values of a graph written to an ``.nnp`` file carry the batch axis first (written ``-1``).

The batch axis is followed from where it comes from, the data inputs, through every op: an op's
output has it when, with the batched inputs' first axis at another size (the *probe* size, one
no axis of the graph has), the op's shape inference (:meth:`~stadyn.graph.OpSpec.infer` on
``meta`` tensors) gives the output that size first and its other axes unchanged.  So a
``transpose`` keeps it only with ``axes[0] == 0``, a reduction over axis 0 or a product over
the batch axis (``x.T @ x``) drops it, and an axis that only has the batch's size (a
``transpose`` moving a 3-channel axis first in a batch of 3) never gets it.  The two ops whose
attributes hold a size that the file rewrites are decided by their own rule:

* ``reshape`` keeps the batch axis when its input has it and keeps its first size;
* ``broadcast`` to a first size of the batch's gives the batch axis when its input has it, or
  is computed from the data and has no first axis of its own to broadcast (size 1, or fewer
  axes): a statistic over the batch broadcast back to it (``x - mean(x, axis=0)``).

An op that cannot run with the batched inputs at the probe size while its other inputs are
parameters or constants (``add2(W, x)``, ``W`` a parameter of ``x``'s shape) gives the batch
axis to each output whose first size is the batch's, as NNabla does (the file runs at the saved
batch size only, either way).

NNabla 1.39's ``save`` (``nnabla/core/variable_batch_size.py``) decides by size instead: when
the network has a function with a ``base_axis`` it takes the batch size from that function's
input and writes ``-1`` for every first axis of that size, a transposed one too (so NNabla runs
such a file at another batch size to a silently wrong shape); without one, it writes no ``-1``.
Stadyn writes the batch axis in a network without a ``base_axis`` too, so its file runs at any
batch size where NNabla's own is fixed to the saved one (a known difference,
``tests/serialize/test_nnp_nnabla_batch_dims.py``).
"""

from __future__ import annotations

from typing import Any, Iterable

import torch

from .. import functions as F
from ..graph import Variable, output_key, value_key

__all__ = ["BatchAxis"]


class BatchAxis:
    """The values of one graph that carry the batch axis first.

    ``batch`` is the batch size the graph is built with; ``sizes`` every axis size of the
    graph's values (the probe size is none of them).  ``mark`` records a leaf (an input, a
    parameter, a constant); ``outputs`` decides an op node's outputs from its inputs'.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable((3, 3, 2))
        >>> t, y = F.transpose(x, (1, 0, 2)), F.tanh(x)
        >>> b = BatchAxis(3, [3, 2])
        >>> b.mark(x, True, from_data=True)
        >>> b.outputs(t.parent), b.outputs(y.parent)
        ([False], [True])
    """

    def __init__(self, batch: int, sizes: Iterable[int]):
        self.batch = int(batch)
        taken = {int(s) for s in sizes}
        probe = max(self.batch, 1) + 1
        while probe in taken:
            probe += 1
        self.probe = probe
        self._probe_shape: dict[Any, tuple[int, ...]] = {}   # batched values, at the probe size
        self._from_data: set[Any] = set()

    def mark(self, v: Variable, batched: bool, from_data: bool = False) -> None:
        """Record the leaf ``v``: whether its first axis is the batch axis, and whether it is
        (or is computed from) a data input."""
        self._record(value_key(v), tuple(v.shape), batched, from_data)

    def batched(self, v: Variable) -> bool:
        """Whether ``v`` (a value already recorded) has the batch axis first."""
        return value_key(v) in self._probe_shape

    def from_data(self, v: Variable) -> bool:
        """Whether ``v`` is computed from the data inputs (not from parameters and constants
        alone)."""
        return value_key(v) in self._from_data

    def _record(self, key: Any, shape: tuple[int, ...], batched: bool, from_data: bool) -> None:
        if batched:
            self._probe_shape[key] = (self.probe,) + tuple(shape[1:])
        if from_data or batched:
            self._from_data.add(key)

    def outputs(self, node: Any) -> list[bool]:
        """Whether each output of ``node`` has the batch axis first (and records them)."""
        ins = [v for v in node.spec.split_arguments(node.args, node.kwargs)[0]
               if isinstance(v, Variable)]
        outs = [ref() for ref in node._outputs]
        from_data = any(self.from_data(v) for v in ins)
        found = [False] * len(outs)
        if from_data:
            rule = _RULES.get(node.spec)
            found = (rule(self, node, ins, outs) if rule is not None
                     else self._inferred(node, ins, outs))
        for i, (v, batched) in enumerate(zip(outs, found)):
            if v is not None:
                self._record(output_key(node, i), tuple(v.shape), batched, from_data)
        return found

    def _inferred(self, node: Any, ins: list[Variable], outs: list) -> list[bool]:
        """The outputs of the op's shape inference with the batched inputs at the probe size."""
        none = [False] * len(outs)
        if not any(self.batched(v) for v in ins) or node.spec.value_shape:
            return none

        def meta(a: Any) -> Any:
            if isinstance(a, Variable):
                shape = self._probe_shape.get(value_key(a), tuple(a.shape))
                return torch.empty(shape, dtype=a.torch_dtype, device="meta")
            if isinstance(a, (list, tuple)) and any(isinstance(e, Variable) for e in a):
                return type(a)(meta(e) for e in a)
            return a

        try:
            with torch.no_grad():
                got = node.spec.infer([meta(a) for a in node.args],
                                      {k: meta(a) for k, a in node.kwargs.items()})
        except Exception:  # noqa: BLE001 - an op that cannot take another batch size
            if any(self.from_data(v) and not self.batched(v) for v in ins):
                return none     # an input computed from the data at a size not followed
            # batched inputs with parameters or constants fixed at the batch's size
            # (``add2(W, x)``): the op runs at the built batch size only, and NNabla 1.39
            # writes each output's first axis of the batch's size as the batch axis
            return [v is not None and bool(v.shape) and v.shape[0] == self.batch for v in outs]
        got = [got] if isinstance(got, torch.Tensor) else list(got)
        if len(got) != len(outs):
            return none
        return [v is not None and isinstance(p, torch.Tensor) and self._keeps(v.shape, p.shape)
                for v, p in zip(outs, got)]

    def _keeps(self, shape: tuple[int, ...], probed: tuple[int, ...]) -> bool:
        """Whether a value of ``shape`` at the batch size is ``probed`` at the probe size as a
        value with the batch axis first is: the probe size first, every other axis the same."""
        shape, probed = tuple(shape), tuple(probed)
        return (bool(shape) and len(shape) == len(probed) and shape[0] == self.batch
                and probed[0] == self.probe and shape[1:] == probed[1:])


def _reshape(b: BatchAxis, node: Any, ins: list[Variable], outs: list) -> list[bool]:
    x, y = ins[0], outs[0]
    return [y is not None and b.batched(x) and bool(y.shape) and y.shape[0] == x.shape[0]]


def _broadcast(b: BatchAxis, node: Any, ins: list[Variable], outs: list) -> list[bool]:
    x, y = ins[0], outs[0]
    if y is None or not y.shape or y.shape[0] != b.batch:
        return [False]
    xs, ys = tuple(x.shape), tuple(y.shape)
    # the axis of x broadcast to y's first: its own first, or none (fewer axes)
    own = len(xs) == len(ys)
    return [(own and b.batched(x)) or not own or xs[0] == 1]


# keyed by the op's spec (nothing is looked up by an op's name)
_RULES = {F.reshape.spec: _reshape, F.broadcast.spec: _broadcast}
