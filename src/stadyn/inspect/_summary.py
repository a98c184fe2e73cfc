"""``sd.summary``: a network as a table -- scope, op, output shape, parameters, multiply-adds --
with totals, as Keras's ``Model.summary()`` prints a model."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._errors import StadynError
from ._view import GraphView, Param, shape_text

__all__ = ["Summary", "SummaryRow", "summary", "summarize_view"]


@dataclass
class SummaryRow:
    """One line of the table: a scope (``cnn/conv1/conv``), its op or ops, the output shape of
    its last op, the parameters first used there (elements) and its multiply-adds (``None``
    where not counted: ops of another framework's file)."""

    scope: str
    op: str
    output_shape: tuple[int, ...] | None
    parameters: int
    macs: int | None


@dataclass
class Summary:
    """What :func:`summary` gives: the rows, the parameter totals (every parameter once; running
    statistics count as non-trainable), the multiply-adds of the whole graph as built and the
    batch size they are for (``None`` if the inputs do not share a leading dimension).
    ``str(summary)`` is the table.

    Example:
        >>> import stadyn as sd, stadyn.functions as F, stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()), sd.parameter_scope("net"):
        ...     y = F.relu(PF.affine(sd.Variable((4, 3)), 2))
        >>> s = sd.summary(y)
        >>> s.total_parameters, s.total_macs, [r.op for r in s.rows]
        (8, 24, ['affine', 'relu'])
        >>> print(s)
        Scope       Op      Output shape  Params  Mult-adds
        ===================================================
        net/affine  affine  4×2                8         24
        net         relu    4×2                0          0
        ===================================================
        Total params: 8 (32 bytes)
        Trainable params: 8
        Non-trainable params: 0
        Mult-adds: 24 for a batch of 4 (6 per sample)
    """

    rows: list[SummaryRow]
    total_parameters: int
    trainable_parameters: int
    parameter_bytes: int
    total_macs: int | None
    batch_size: int | None = None
    title: str = ""
    parameters: "OrderedDict[str, Param]" = field(default_factory=OrderedDict)

    @property
    def non_trainable_parameters(self) -> int:
        return self.total_parameters - self.trainable_parameters

    def __str__(self) -> str:
        head = ("Scope", "Op", "Output shape", "Params", "Mult-adds")
        body = [(r.scope or "(top)", r.op, shape_text(r.output_shape), f"{r.parameters:,}",
                 "-" if r.macs is None else f"{r.macs:,}") for r in self.rows]
        widths = [max(len(row[i]) for row in [head, *body]) for i in range(5)]
        right = (False, False, False, True, True)

        def line(cells) -> str:
            return "  ".join(c.rjust(w) if r else c.ljust(w)
                             for c, w, r in zip(cells, widths, right)).rstrip()
        rule = "=" * len(line(head))
        out = [f"Model: {self.title}"] if self.title else []
        out += [line(head), rule, *(line(b) for b in body), rule]
        out.append(f"Total params: {self.total_parameters:,} ({_bytes(self.parameter_bytes)})")
        out.append(f"Trainable params: {self.trainable_parameters:,}")
        out.append(f"Non-trainable params: {self.non_trainable_parameters:,}")
        if self.total_macs is None:
            out.append("Mult-adds: not counted (ops of another framework's file)")
        else:
            text = f"Mult-adds: {self.total_macs:,}{_si(self.total_macs)}"
            if self.batch_size:
                per = self.total_macs // self.batch_size
                text += f" for a batch of {self.batch_size} ({per:,}{_si(per)} per sample)"
            out.append(text)
        return "\n".join(out)

    __repr__ = __str__


def _si(n: int) -> str:
    for div, unit in ((10 ** 12, "T"), (10 ** 9, "G"), (10 ** 6, "M"), (10 ** 3, "k")):
        if n >= div:
            return f" ({n / div:.2f} {unit})"
    return ""


def _bytes(n: int) -> str:
    for div, unit in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if n >= div:
            return f"{n / div:.2f} {unit}"
    return f"{n} bytes"


def _itemsize(dtype: str) -> int:
    try:
        return np.dtype(dtype).itemsize
    except TypeError:
        return 2 if "16" in dtype else 4     # bfloat16 and other names NumPy lacks


def summarize_view(view: GraphView, depth: int | None = None) -> Summary:
    """The :class:`Summary` of a :class:`GraphView`: one row per op, or with ``depth`` one per
    scope cut to that many levels (``depth=2``: ``cnn/conv1``), ops in graph order."""
    if depth is not None and (not isinstance(depth, int) or depth < 1):
        raise StadynError(f"depth must be a whole number >= 1, got {depth!r}")
    counted: set[str] = set()
    fed_by: dict[str, list[str]] = {}
    for e in view.edges:
        if view.boxes[e.src].kind == "parameter":
            fed_by.setdefault(e.dst, []).append(e.src)
    groups: OrderedDict[str, list] = OrderedDict()
    for key, box in view.boxes.items():
        if box.kind != "op":
            continue
        params = list(box.params) + [p for k in fed_by.get(key, ()) for p in view.boxes[k].params]
        new = [p for p in params if p.name not in counted]
        counted.update(p.name for p in new)
        scope = box.scope.strip("/")
        group = scope if depth is None else "/".join(scope.split("/")[:depth])
        gkey = key if depth is None else group
        groups.setdefault(gkey, []).append((group, box, sum(p.size for p in new)))
    rows = []
    for entries in groups.values():
        ops: list[str] = []
        for _, box, _ in entries:
            if box.label not in ops:
                ops.append(box.label)
        last = entries[-1][1]
        macs = [b.macs for _, b, _ in entries]
        rows.append(SummaryRow(entries[0][0], ", ".join(ops),
                               last.outputs[0].shape if last.outputs else None,
                               sum(n for _, _, n in entries),
                               None if any(m is None for m in macs) else sum(macs)))
    params = view.parameters()
    shapes = [b.outputs[0].shape for b in view.boxes.values()
              if b.kind == "input" and b.outputs and b.outputs[0].shape]
    leading = {s[0] for s in shapes if s and s[0] > 0}
    op_macs = [b.macs for b in view.boxes.values() if b.kind == "op"]
    return Summary(rows, sum(p.size for p in params.values()),
                   sum(p.size for p in params.values() if p.trainable),
                   sum(p.size * _itemsize(p.dtype) for p in params.values()),
                   None if any(m is None for m in op_macs) else sum(op_macs),
                   leading.pop() if len(leading) == 1 else None, view.title, params)


def summary(what: Any, *, inputs: Any = None, depth: int | None = None,
            network: str | None = None) -> Summary:
    """A Keras-style table of the network that computes ``what`` (output Variables, a
    :class:`stadyn.serialize.Network`, a decoded NNabla/CNTK model or a model file's path, as
    for :func:`stadyn.show`): for each op (or, with ``depth``, each scope cut to that many
    levels) its scope, output shape, parameters and multiply-adds, then the totals.  Print it
    (``print(sd.summary(y))``); the numbers are attributes of the :class:`Summary`.

    Parameters are counted once, in the row of the op that first uses them; the total is every
    parameter the outputs depend on, running statistics included (Keras's non-trainable ones).
    Multiply-adds count matrix products and convolutions over the batch the graph was built
    with (see :mod:`stadyn.inspect._macs`).

    Example:
        >>> import stadyn as sd
        >>> from stadyn.models import digits_mlp
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     s = sd.summary(digits_mlp(sd.Variable((8, 64))), depth=2)
        >>> [(r.scope, r.parameters) for r in s.rows]
        [('mlp/fc1', 16640), ('mlp/fc2', 65792), ('mlp/out', 2570)]
    """
    from ._show import graph_view
    return summarize_view(graph_view(what, inputs, network), depth)
