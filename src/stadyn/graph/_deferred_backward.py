"""A plan's backward built when a backward is first asked for, not with its first forward.

A graph whose leaves need gradients (its parameters) may never be differentiated: a validation
or test loss shares the training graph's parameters and is only ever run forward (nnabla-examples'
PTB LSTM builds three such graphs: training, validation and test).  Lowering it with its
backward traces the whole joint program, more than twice the cost of the forward alone (the
20-step PTB LSTM: 3.2 CPU s against 1.4 s).  Which graph will be differentiated is not known
at its first forward; the runner (``_runner.py``) takes this sign: a graph built while every
parameter it needs a gradient for holds one already, not all zeros (:func:`deferrable`), comes
after another graph of those parameters was differentiated, and is an evaluation graph far
more often than not, while a training graph's first forward finds none (or none since
``zero_grad``, which releases them, or zeros).  Such a graph gets its forward only, and the
plan is marked :class:`Deferred`; the first ``backward()`` from one of its roots builds the
plan with its backward (for the flags of that forward: grad mode, phase, context, buffer
flags) and runs that forward again before differentiating, and the roots' later plans are
built with their backward at once.

Running the forward again gives the values the first run gave: the same programs on the same
leaves, with what the first run changed put back first.  Such a plan keeps, before each run,
the random generators' states when its program draws (ops with ``seed=-1``), and the values of
the leaves its program writes (a batch normalization's running statistics); before the second
run they are set back, and after it the states of just before the backward are restored, so
the backward leaves them as it found them.  A graph with an op seeded by its own ``seed`` (whose
generator the program holds) or labelled for the profiler is built with its backward at once.
What the user changes between the forward and the backward (a leaf's value) is read by the run
again, as by a backward from a Variable that was not a root of its last forward.  The values the
first run gave NNabla's Variables (whose class sets ``Variable.reads_held_values``) stay as they
were, with what the user wrote there (``y.d = v``): NNabla's backward runs no forward and reads
the arrays the Variables hold (:func:`outputs_held`; the backward reads them
through ``_shared_values.saved_as_held``).  So does the runner for a backward from a Variable
that was not a root of its last forward.

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> w = sd.Variable.from_numpy_array(np.array([1.0, 2.0]), need_grad=True)
    >>> train = F.sum(w * w)
    >>> train.forward(); train.backward()          # w holds a gradient now
    >>> (train._plan.has_backward, train._plan.deferred)
    (True, None)
    >>> valid = F.sum(w * 3.0)                     # built after: its forward only
    >>> valid.forward()
    >>> valid._plan.has_backward, valid._plan.deferred is not None
    (False, True)
    >>> w.g = 0
    >>> valid.backward()                           # now built with its backward
    >>> valid._plan.has_backward, w.g.tolist()
    (True, [3.0, 3.0])
"""

from __future__ import annotations

import contextlib
from typing import Any, Sequence

import torch
import torch.fx as fx

from ._shared_values import handed_out, set_output
from ._subgraph import leaf_tensor
from ._tensors import grad_of
from ._variable import FunctionNode, Variable

__all__ = ["Deferred", "deferrable", "outputs_held"]


def deferrable(leaves: Sequence[Variable], nodes: Sequence[FunctionNode]) -> bool:
    """Whether a plan of a graph (that may be differentiated) builds its forward only: every
    leaf that needs a gradient holds one already, not all zeros (the graph is built after
    another graph of the same parameters was differentiated: an evaluation graph beside a
    training graph, whose parameters hold the last step's gradients; a training graph's first
    forward finds none, none since ``zero_grad``, or zeros), and no op draws from a generator
    of its own seed (one the program would hold and advance again on a second run)."""
    needing = [v for v in leaves if v._need_grad]
    if not needing or any((g := grad_of(v)) is None or not bool(g.any()) for v in needing):
        return False
    for node in nodes:
        if "seed" in node.spec.attrs:
            seed = node.attrs.get("seed", -1)
            if not (type(seed) is int and seed == -1):
                return False
    return True


@contextlib.contextmanager
def outputs_held(variables: Sequence[Variable | None]):
    """Within it, a forward run again leaves the values of the op outputs among ``variables``
    whose class reads held values (NNabla's) as they are: each takes back, at its end, the
    value it held at its start, where the run gave it another of the same shape, dtype and
    device (kept as a copy where its memory was handed to the user, which the run writes into:
    ``_shared_values.set_output``).

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> y = F.tanh(nn.Variable.from_numpy_array(np.zeros(2)))
        >>> y.forward(); y.d = np.ones(2)
        >>> with outputs_held([y]):
        ...     y.forward(); run = y.d.tolist()
        >>> run, y.d.tolist()
        ([0.0, 0.0], [1.0, 1.0])
    """
    held = []
    for v in variables:
        t = v._data if v is not None else None
        if t is not None and v.parent is not None and type(v).reads_held_values:
            held.append((v, t.detach().clone() if handed_out(t) else t))
    try:
        yield
    finally:
        for v, t in held:
            now = v._data
            if (now is not None and now is not t and now.shape == t.shape
                    and now.dtype == t.dtype and now.device == t.device):
                set_output(v, t)


def _written_leaves(gm: fx.GraphModule, n_leaves: int) -> list[int]:
    """The positions of the leaves the program ``gm`` writes in place (through views)."""
    placeholders = {n: k for k, n in enumerate(n for n in gm.graph.nodes
                                               if n.op == "placeholder")}
    written: set[int] = set()
    for node in gm.graph.nodes:
        schema = getattr(node.target, "_schema", None)
        if node.op != "call_function" or schema is None or not schema.is_mutable:
            continue
        for arg, formal in zip(node.args, schema.arguments):
            if not (isinstance(arg, fx.Node) and formal.alias_info is not None
                    and formal.alias_info.is_write):
                continue
            while arg.op == "call_function" and _is_view(arg):
                arg = arg.args[0]
            k = placeholders.get(arg)
            if k is not None and k < n_leaves:
                written.add(k)
    return sorted(written)


def _is_view(node: fx.Node) -> bool:
    schema = getattr(node.target, "_schema", None)
    return (schema is not None and bool(schema.returns) and node.args
            and isinstance(node.args[0], fx.Node)
            and schema.returns[0].alias_info is not None
            and not schema.returns[0].alias_info.is_write)


def _draws(gm: fx.GraphModule) -> bool:
    return any(node.op == "call_function"
               and torch.Tag.nondeterministic_seeded in getattr(node.target, "tags", ())
               for node in gm.graph.nodes)


class Deferred:
    """What a forward-only plan of a graph that may be differentiated keeps for building its
    backward later: the runner's cache ``entry`` and ``key`` the plan is filed under, the
    ``flags`` of its forwards, and, before each run, the generator states and written leaves
    (see the module docstring)."""

    __slots__ = ("entry", "key", "flags", "written", "draws", "devices", "before")

    def __init__(self, entry: Any, key: tuple, flags: tuple, plan: Any):
        self.entry, self.key, self.flags = entry, key, flags
        self.written = _written_leaves(plan.fw, len(plan.leaves))
        self.draws = _draws(plan.fw)
        self.devices = sorted({t.device.index or 0 for v in plan.leaves
                               if (t := leaf_tensor(v)).device.type == "cuda"})
        self.before: tuple | None = None

    def state(self, plan: Any) -> tuple:
        """The generator states and written leaves' values now."""
        rng = None
        if self.draws:
            rng = (torch.get_rng_state(), [torch.cuda.get_rng_state(d) for d in self.devices])
        return rng, [leaf_tensor(plan.leaves[k]).detach().clone() for k in self.written]

    def keep(self, plan: Any) -> None:
        """Called before each forward run of the plan."""
        if self.draws or self.written:
            self.before = self.state(plan)

    def put_back(self, plan: Any, state: tuple | None) -> None:
        """Set the generator states and written leaves to ``state`` (from :meth:`state`)."""
        if state is None:
            return
        rng, values = state
        if rng is not None:
            torch.set_rng_state(rng[0])
            for d, s in zip(self.devices, rng[1]):
                torch.cuda.set_rng_state(s, d)
        with torch.no_grad():
            for k, value in zip(self.written, values):
                leaf_tensor(plan.leaves[k]).copy_(value)
