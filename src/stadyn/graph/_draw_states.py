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
from typing import NamedTuple, Sequence

import torch

from ._own_streams import GeneratorSeed, node_seed
from ._variable import FunctionNode

__all__ = ["Drawing", "drawing", "keep", "same_draws"]

#: node -> the states before the last static run that ran it (one object shared by that run's
#: nodes: ``same_draws`` tells one run from two by identity)
_BEFORE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
#: while :func:`same_draws` runs a forward again: that run notes nothing (the states noted are
#: still those of the run it repeats)
_again = [0]


class Drawing(NamedTuple):
    """The random op nodes of a graph and the seeds holding generators of their own that they
    draw from (a node's plain seed, a stream), found once per graph (a node's ``attrs`` cost a
    signature binding each: :func:`keep` runs before every forward)."""

    nodes: tuple
    seeds: tuple


def drawing(nodes: Sequence[FunctionNode]) -> Drawing | None:
    """The :class:`Drawing` of the nodes among ``nodes`` whose op draws random numbers (it has
    a ``seed``), or None where none does."""
    found = tuple(n for n in nodes if "seed" in n.spec.attrs)
    if not found:
        return None
    seeds = {id(s): s for n in found if (s := _own_seed(n)) is not None}
    return Drawing(found, tuple(seeds.values()))


def _own_seed(node: FunctionNode) -> GeneratorSeed | None:
    """The seed holding the generators ``node`` draws from (its node's, or a stream's), or
    None where it draws from torch's own."""
    seed = node.attrs.get("seed", -1)
    return seed if isinstance(seed, GeneratorSeed) else node_seed(node)


def _states(seeds: Sequence[GeneratorSeed]) -> tuple:
    cuda = ([torch.cuda.get_rng_state(d) for d in range(torch.cuda.device_count())]
            if torch.cuda.is_initialized() else None)
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


def keep(found: Drawing | None) -> None:
    """Before a static run of a graph whose random ops are ``found`` (:func:`drawing`; None:
    it has none): note their generators' states for :func:`same_draws`."""
    if found is not None and not _again[0]:
        states = _states(found.seeds)
        for n in found.nodes:
            _BEFORE[n] = states


@contextlib.contextmanager
def same_draws(nodes: Sequence[FunctionNode]):
    """Within it, a forward of a graph whose random op nodes are among ``nodes`` draws what
    the last static run of them drew, where one run ran them all (else it draws on, as
    before); at its end, the generators are where they were at its start."""
    found = drawing(nodes or ())
    before = {} if found is None else {id(_BEFORE.get(n)): _BEFORE.get(n) for n in found.nodes}
    if len(before) != 1 or None in before.values():
        yield
        return
    (states,) = before.values()
    now = _states(found.seeds)
    _set(states)
    _again[0] += 1
    try:
        yield
    finally:
        _again[0] -= 1
        _set(now)
