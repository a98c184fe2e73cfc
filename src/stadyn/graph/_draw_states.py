"""The random generators' states before the last static forward that drew, kept per random op
node, so that a forward run again for a backward draws what that forward drew.

A backward from a Variable that was not a root of its last forward (``y.backward()`` after
``loss.forward()``) runs the forward of ``y``'s graph again (``_runner.backward``).  NNabla runs
no forward there: its backward reads the dropout masks (and the other draws) of the forward that
ran, and leaves the generators where that forward left them.  So :func:`keep` notes, before each
static run of a graph holding random ops, the states of the generators they draw from (torch's
own, for ``seed=-1``; a node's or a stream's own generators, ``_own_streams.py``), and
:func:`same_draws` sets them back for the run again when one run's states cover all the random
ops of the graph run again (its draws come first in that run: a random op that is not
among them but drew before them in the order of that run would shift a ``seed=-1`` draw), and
restores the states of now after it.

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> x = sd.Variable.from_numpy_array(np.ones(6, np.float32), need_grad=True)
    >>> y = F.dropout(x, 0.5, seed=3)
    >>> loss = F.sum(y * y)
    >>> loss.forward(); mask = (y.d != 0).tolist()
    >>> with same_draws(y.parent and [y.parent]):
    ...     y.forward()
    >>> (y.d != 0).tolist() == mask
    True
"""

from __future__ import annotations

import contextlib
import weakref
from typing import Sequence

import torch

from ._own_streams import GeneratorSeed, node_seed
from ._variable import FunctionNode

__all__ = ["drawing_nodes", "keep", "same_draws"]

#: node -> the states before the last static run that ran it (one object shared by that run's
#: nodes: ``same_draws`` tells one run from two by identity)
_BEFORE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
#: while :func:`same_draws` runs a forward again: that run notes nothing (the states noted are
#: still those of the run it repeats)
_again = [0]


def drawing_nodes(nodes: Sequence[FunctionNode]) -> list[FunctionNode]:
    """The nodes among ``nodes`` whose op draws random numbers (it has a ``seed``)."""
    return [n for n in nodes if "seed" in n.spec.attrs]


def _own_seed(node: FunctionNode) -> GeneratorSeed | None:
    """The seed holding the generators ``node`` draws from (its node's, or a stream's), or
    None where it draws from torch's own."""
    seed = node.attrs.get("seed", -1)
    return seed if isinstance(seed, GeneratorSeed) else node_seed(node)


def _states(nodes: Sequence[FunctionNode]) -> tuple:
    cuda = ([torch.cuda.get_rng_state(d) for d in range(torch.cuda.device_count())]
            if torch.cuda.is_initialized() else None)
    seeds = {id(s): s for n in nodes if (s := _own_seed(n)) is not None}.values()
    own = [(s, {k: g.get_state() for k, g in s._generators.items()}) for s in seeds]
    return torch.get_rng_state(), cuda, own


def _set(states: tuple) -> None:
    cpu, cuda, own = states
    torch.set_rng_state(cpu)
    if cuda is not None:
        for d, s in enumerate(cuda):
            torch.cuda.set_rng_state(s, d)
    for seed, kept in own:
        for key, g in seed._generators.items():
            if key in kept:
                g.set_state(kept[key])
            else:               # made since: as it was made (seeded, started)
                g.manual_seed(int(seed))
                seed._started(g)


def keep(nodes: Sequence[FunctionNode]) -> None:
    """Before a static run of a graph whose random op nodes are ``nodes``: note their
    generators' states for :func:`same_draws` (nothing for no nodes)."""
    if nodes and not _again[0]:
        states = _states(nodes)
        for n in nodes:
            _BEFORE[n] = states


@contextlib.contextmanager
def same_draws(nodes: Sequence[FunctionNode]):
    """Within it, a forward of a graph whose random op nodes are among ``nodes`` draws what
    the last static run of them drew, where one run ran them all (else it draws on, as
    before); at its end, the generators are where they were at its start."""
    drawing = drawing_nodes(nodes or ())
    before = {id(_BEFORE.get(n)): _BEFORE.get(n) for n in drawing}
    if not drawing or len(before) != 1 or None in before.values():
        yield
        return
    (states,) = before.values()
    now = _states(drawing)
    _set(states)
    _again[0] += 1
    try:
        yield
    finally:
        _again[0] -= 1
        _set(now)
