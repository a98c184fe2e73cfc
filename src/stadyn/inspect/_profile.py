"""Time and memory per op and per scope: :func:`profile`, on ``torch.profiler``.

While a :func:`profile` block records, every op call runs inside a ``record_function`` range
named ``stadyn::<scope>/<op>`` — in dynamic mode as it is called, in static mode inside the
generated program of every plan built while recording (a plan built before the block is built
again, labelled, on its next forward).  :meth:`Profile.table` sums the ranges by op and by scope;
forward and backward times are apart.  In dynamic mode (and an eagerly run plan) a backward
kernel is attributed to the op whose forward recorded it (torch's autograd sequence numbers);
a static plan's backward program holds ranges of its own, ``stadyn::<scope>/<op> (backward)``,
around each op's backward kernels (``graph/_labels.py``).  Time in no op's range — feeding,
gradient accumulation, solver updates — is :attr:`Profile.other_ms`.
:meth:`Profile.export_chrome_trace` writes the trace that ``chrome://tracing`` and Perfetto open,
with Stadyn's ranges in it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import torch

from ..graph import BACKWARD_SUFFIX, LABEL_PREFIX, set_labels

__all__ = ["profile", "Profile", "ProfileRow"]



@dataclass
class ProfileRow:
    """One line of :meth:`Profile.table`: an op in a scope, or a scope's total."""

    scope: str
    op: str
    calls: int = 0
    forward_ms: float = 0.0
    backward_ms: float = 0.0
    memory_bytes: int = 0
    children: list = field(default_factory=list, repr=False)

    @property
    def total_ms(self) -> float:
        return self.forward_ms + self.backward_ms


class Profile:
    """What a :func:`profile` block recorded.  ``rows`` holds one :class:`ProfileRow` per
    (scope, op); :meth:`by_scope` sums them per scope; ``total_ms`` is the CPU time of every
    top-level event of the block (ops, backward, and what ran outside any op)."""

    def __init__(self, activities: list):
        self._torch = torch.profiler.profile(activities=activities, profile_memory=True)
        self.rows: list[ProfileRow] = []
        self.total_ms = 0.0
        self.other_ms = 0.0

    # -- recording --------------------------------------------------------------------------
    def __enter__(self) -> Profile:
        set_labels(True)
        try:
            self._torch.__enter__()
        except BaseException:
            set_labels(False)
            raise
        return self

    def __exit__(self, *exc) -> None:
        try:
            self._torch.__exit__(*exc)
        finally:
            set_labels(False)
        self._summarise()

    def _summarise(self) -> None:
        events = list(self._torch.events())
        rows: dict[tuple[str, str], ProfileRow] = {}
        owner: dict[int, ProfileRow] = {}        # autograd sequence number -> op row

        def row_of(label: str) -> ProfileRow:
            name = label[len(LABEL_PREFIX):].removesuffix(BACKWARD_SUFFIX)
            scope, _, op = name.rpartition("/")
            key = (scope, op)
            if key not in rows:
                rows[key] = ProfileRow(scope, op)
            return rows[key]

        def claim(event, row: ProfileRow) -> None:
            for child in event.cpu_children:
                if getattr(child, "sequence_nr", -1) >= 0:
                    owner.setdefault(child.sequence_nr, row)
                claim(child, row)

        labelled = [e for e in events if e.name.startswith(LABEL_PREFIX)
                    and not e.name.endswith(BACKWARD_SUFFIX)]
        for e in labelled:
            claim(e, row_of(e.name))

        def add_range(e) -> float:
            row, ms = row_of(e.name), e.cpu_time_total / 1e3
            if e.name.endswith(BACKWARD_SUFFIX):    # a static plan's backward of that op
                row.backward_ms += ms
                return ms
            row.calls += 1
            row.forward_ms += ms
            row.memory_bytes += max(0, _memory(e))
            return ms

        def attribute(e) -> float:
            """Credit ``e``'s time, or the parts of it that belong to ops, to their rows;
            return what was credited."""
            if e.name.startswith(LABEL_PREFIX):
                return add_range(e)
            if e.name.startswith("autograd::engine::evaluate_function"):
                seq = getattr(e, "sequence_nr", -1)
                if seq < 0:     # a node defined in Python (a torch.library op's autograd
                    # formula): the number is on the node's own event inside
                    seq = next((c.sequence_nr for c in e.cpu_children
                                if getattr(c, "sequence_nr", -1) >= 0), -1)
                row = owner.get(seq)
                if row is not None:
                    row.backward_ms += e.cpu_time_total / 1e3
                    return e.cpu_time_total / 1e3
            return sum(attribute(c) for c in e.cpu_children)

        # Each top-level event's time goes to exactly one place: an op's forward or its
        # backward in a static plan (a labelled range, outermost), an op's backward in
        # dynamic mode (autograd's evaluation of a node that op's forward recorded), or
        # outside the ops (feeding, gradient accumulation, solver updates: the rest).
        for e in (e for e in events if e.cpu_parent is None):
            ms = e.cpu_time_total / 1e3
            self.total_ms += ms
            self.other_ms += ms - attribute(e)
        self.rows = sorted(rows.values(), key=lambda r: -r.total_ms)

    # -- reading ----------------------------------------------------------------------------
    def by_scope(self, depth: int | None = None) -> list[ProfileRow]:
        """Rows summed per scope (cut to ``depth`` levels: ``'cnn/conv1'`` at depth 2)."""
        scopes: dict[str, ProfileRow] = {}
        for r in self.rows:
            scope = r.scope if depth is None else "/".join(r.scope.split("/")[:depth])
            s = scopes.setdefault(scope, ProfileRow(scope, ""))
            s.calls += r.calls
            s.forward_ms += r.forward_ms
            s.backward_ms += r.backward_ms
            s.memory_bytes += r.memory_bytes
            s.children.append(r)
        return sorted(scopes.values(), key=lambda r: -r.total_ms)

    def table(self, by: str = "op", depth: int | None = None, limit: int | None = None) -> str:
        """The rows as a text table sorted by total time; ``by='scope'`` sums per scope.

        Example:
            >>> import numpy as np, stadyn as sd, stadyn.functions as F
            >>> import stadyn.parametric_functions as PF
            >>> x = sd.Variable.from_numpy_array(np.ones((8, 4), np.float32))
            >>> with sd.parameter_registry(sd.ParameterRegistry()), sd.auto_forward():
            ...     with sd.profile() as prof:
            ...         with sd.parameter_scope("mlp"):
            ...             loss = F.sum(F.relu(PF.affine(x, 3, name="fc1")))
            ...         loss.backward()
            >>> lines = prof.table().splitlines()
            >>> print(lines[0])
            scope           op      calls  forward ms  backward ms  total ms
            >>> sorted((row.split()[0], row.split()[1]) for row in lines[1:-1])
            [('mlp', 'relu'), ('mlp', 'sum'), ('mlp/fc1/affine', 'affine')]
        """
        rows = self.by_scope(depth) if by == "scope" else self.rows
        rows = rows[:limit] if limit else rows
        head = ["scope", "op", "calls", "forward ms", "backward ms", "total ms"]
        body = [[r.scope or "(top)", r.op, str(r.calls), f"{r.forward_ms:.3f}",
                 f"{r.backward_ms:.3f}", f"{r.total_ms:.3f}"] for r in rows]
        if by == "scope":
            head.pop(1)
            for b in body:
                b.pop(1)
        widths = [max(len(x) for x in col) for col in zip(head, *body)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip()
                 for line in [head] + body]
        lines.append(f"in ops: {sum(r.total_ms for r in self.rows):.3f} ms; outside ops "
                     f"(feeding, gradient accumulation, solver updates): "
                     f"{self.other_ms:.3f} ms; total {self.total_ms:.3f} ms")
        return "\n".join(lines)

    def export_chrome_trace(self, path: str | os.PathLike) -> None:
        """Write the trace as Chrome trace-event JSON (``chrome://tracing``, Perfetto)."""
        self._torch.export_chrome_trace(os.fspath(path))


def _memory(event) -> int:
    return int(getattr(event, "cpu_memory_usage", 0) or 0)


def profile(cuda: bool | None = None) -> Profile:
    """Record time and memory per op and per scope while the block runs (both modes).

    ``cuda`` adds CUDA kernels to the trace (default: where CUDA is available).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.ones((2, 3), np.float32))
        >>> with sd.auto_forward(), sd.profile() as prof:
        ...     with sd.parameter_scope("net"):
        ...         y = F.relu(x) * 2.0
        >>> sorted((r.scope, r.op) for r in prof.rows)
        [('net', 'mul_scalar'), ('net', 'relu')]
    """
    activities = [torch.profiler.ProfilerActivity.CPU]
    if cuda or (cuda is None and torch.cuda.is_available()):
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    return Profile(activities)
