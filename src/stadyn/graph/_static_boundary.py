"""Dynamic ops over a static graph's outputs: the gradient carried back into the static part.

NNabla 1.39 has one graph whatever the mode: ``y = F.sum(x * 2); y.forward()`` and then, in
``auto_forward``, ``l = y * 3; l.backward()`` walks from ``l`` through ``y``'s function into
``x`` (``x.g == [6, 6]``).  A static plan's outputs are plain tensors without autograd history,
so a dynamic op reading one computes with a stand-in that needs a gradient
(:func:`boundary_value`: a detached alias of the output's value, one per value, kept with the
output); after the autograd backward from ``l`` the gradient gathered on each stand-in is the
seed of a backward into the static graph (:func:`static_seeds`, run by
``_runner.backward``), which adds into the static graph's leaves and gives the output its
gradient, as NNabla's ``y.g``.

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> x = sd.Variable.from_numpy_array(np.array([1.0, 2.0]), need_grad=True)
    >>> y = F.sum(x * 2.0)
    >>> y.forward()
    >>> with sd.auto_forward():
    ...     loss = y * 3.0
    >>> loss.backward()
    >>> x.g.tolist(), float(y.g)
    ([6.0, 6.0], 3.0)
"""

from __future__ import annotations

from typing import Sequence


import torch

from ._kept import keep_with, kept_with
from ._shared_values import set_grad
from ._tensors import grad_of
from ._variable import FunctionNode, topological_nodes, Variable
from ._identity_keys import IdentitySet

__all__ = ["boundary_value", "static_seeds", "seed_output", "stand_ins", "any_stand_in"]

_KEY = "static boundary"
# the static outputs holding a stand-in (weakly): with none, a backward has nothing to carry
# into a static graph and walks nothing for it (almost every dynamic backward)
_HOLDERS: "IdentitySet[Variable]" = IdentitySet()


def any_stand_in() -> bool:
    """Whether some static output holds a stand-in (:func:`boundary_value`) at all: the cheap
    test before a walk of a dynamic graph for them (:func:`static_seeds`, :func:`stand_ins`)."""
    return bool(_HOLDERS)


def boundary_value(v: Variable, t: torch.Tensor) -> torch.Tensor:
    """The tensor a dynamic op computes with for ``v``'s value ``t``: ``t`` itself, or, for a
    floating output of a static graph's op (no autograd history) that needs a gradient while
    grad mode is on, a detached alias of ``t`` that does (the same one for every read of this
    value: what the reads' backwards leave on it is ``v``'s gradient)."""
    if (t.requires_grad or v.parent is None or v.parent.ran_under is not None
            or not v._need_grad or v._stops_grad or not t.is_floating_point()
            or not torch.is_grad_enabled()):
        return t
    held = kept_with(v, _KEY)
    if held is not None and held[1] is t and held[2] == t._version:
        return held[0]
    alias = t.detach().requires_grad_(True)
    keep_with(v, _KEY, (alias, t, t._version))
    _HOLDERS.add(v)
    return alias


def static_seeds(nodes: Sequence[FunctionNode]) -> list[tuple[Variable, torch.Tensor, bool]]:
    """After an autograd backward through ``nodes``: each static output a node of them read
    through :func:`boundary_value` whose stand-in received a gradient, with that gradient
    (taken: the stand-in starts from none at the next backward) and whether the output lies
    below one listed before it, whose static backward adds into its gradient first.  Listed
    from the last computed, for ``_runner.backward`` to run each one's static backward in turn
    (NNabla's one walk gives an output below another the sum of both paths as its ``y.g``)."""
    seeds: dict[int, tuple[Variable, torch.Tensor]] = {}
    for node in nodes:
        for u in node.inputs:
            if not isinstance(u, Variable) or id(u) in seeds:
                continue
            held = getattr(u, "_kept", None) and kept_with(u, _KEY)
            if held is None or held[0].grad is None:
                continue
            seeds[id(u)] = (u, held[0].grad)
            held[0].grad = None
    if len(seeds) < 2:
        return [(u, g, False) for u, g in seeds.values()]
    order = {id(o): k for k, n in enumerate(topological_nodes([u for u, _ in seeds.values()]))
             for ref in n._outputs if (o := ref()) is not None}
    listed = sorted(seeds.values(), key=lambda s: -order.get(id(s[0]), -1))
    below: set[int] = set()
    out = []
    for u, g in listed:
        out.append((u, g, id(u) in below))
        below.update(id(o) for n in topological_nodes([u]) for ref in n._outputs
                     if (o := ref()) is not None and o is not u)
    return out


def seed_output(u: Variable, g: torch.Tensor, below: bool) -> None:
    """Give the static output ``u`` its gradient ``g`` from the dynamic ops (NNabla's ``y.g`` of
    an intermediate, which each backward writes anew), added to what the static backward of an
    output above it left where ``below``."""
    if below and (have := grad_of(u)) is not None and have.shape == g.shape:
        g = g + have
    set_grad(u, g)


def stand_ins(nodes: Sequence[FunctionNode]) -> list[tuple[Variable, torch.Tensor]]:
    """The static outputs that the dynamic ops among ``nodes`` read through a stand-in
    (:func:`boundary_value`), each once, with the stand-in last made: where a gradient of the
    dynamic graph (``nn.grad``) goes on into a static graph."""
    found: dict[int, tuple[Variable, torch.Tensor]] = {}
    for node in nodes:
        if node.ran_under is None:
            continue
        for u in node.inputs:
            if not isinstance(u, Variable) or id(u) in found or not getattr(u, "_kept", None):
                continue
            held = kept_with(u, _KEY)
            if held is not None:
                found[id(u)] = (u, held[0])
    return list(found.values())
