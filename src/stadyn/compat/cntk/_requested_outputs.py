"""CNTK 2.7's refusals of the outputs a Function's run requests (CompositeFunction::Forward):
one outside the graph of the Function's outputs, and, once a training-phase run has compiled
the graph for its requested outputs, any other output in a later run."""

from __future__ import annotations

from ...graph import graph_version, topological_nodes
from ._adapt import unwrap

__all__ = ["RequestedOutputs"]


class RequestedOutputs:
    """What a Function's runs keep of the outputs they requested: the set its first
    training-phase run (``forward`` with ``keep_for_backward``, ``grad``) compiled the graph
    for, and the ids of the graph's variables (per graph version).

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> x = C.input_variable(1, needs_gradient=True)
        >>> h = C.sqrt(x); f = h * 3
        >>> _ = f.grad({x: np.ones((1, 1), np.float32)}, outputs=[f])
        >>> f.eval({x: np.ones((1, 1), np.float32)}, [h.output])
        Traceback (most recent call last):
        RuntimeError: ...
    """

    __slots__ = ("compiled", "members")

    def __init__(self):
        self.compiled: dict | None = None       # {id: output as the user gave it}
        self.members: tuple | None = None       # (graph version, ids of the graph's variables)

    def check(self, function, wanted: list, keep: bool) -> None:
        """Refuse ``function``'s run requesting ``wanted``: a ValueError for an output not in
        the graph of its outputs; after a training-phase run, a RuntimeError for one that run
        did not compile the graph for.  A training-phase run (``keep``) that is the first
        compiles it for ``wanted`` and the Function's own outputs."""
        roots = function._roots()
        own = {id(r) for r in roots}
        extra = {id(unwrap(o)): o for o in wanted if id(unwrap(o)) not in own}
        if extra:
            version = graph_version()
            if self.members is None or self.members[0] != version:
                ids = set(own)
                for node in topological_nodes(roots):
                    ids.update(id(v) for v in node.inputs)
                    ids.update(id(v) for v in node.outputs)
                self.members = (version, ids)
            for i, o in extra.items():
                if i not in self.members[1]:
                    raise ValueError(
                        f"One of the requested outputs '{o!r}' for the Function "
                        f"'{function!r}' forward computation is not part of the graph "
                        "underlying the Function.")
        if self.compiled is not None:
            for i, o in extra.items():
                if i not in self.compiled:
                    listed = ", ".join(repr(v) for v in self.compiled.values())
                    raise RuntimeError(
                        f"Function '{function!r}': Requested output '{o!r}' is not part of the "
                        f"list of outputs '{listed}' that the Function was initially compiled "
                        "for. Changing requested outputs across different Forward calls is "
                        "currently unsupported.")
        elif keep:
            self.compiled = {**extra, **{id(unwrap(o)): o for o in function.outputs}}
