"""The random generators' states before the last static forward that drew, kept per graph of
random op nodes, so that a forward run again for a backward draws what that forward drew.

A backward from a Variable that was not a root of its last forward (``y.backward()`` after
``loss.forward()``) runs the forward of ``y``'s graph again (``_runner.backward``).  NNabla runs
no forward there: its backward reads the dropout masks (and the other draws) of the forward that
ran, and leaves the generators where that forward left them.  So :func:`keep` notes, before each
static run of a graph holding random ops, the states of the generators they draw from (torch's
own, for ``seed=-1``; a node's or a stream's own generators, ``_own_streams.py``), and
:func:`same_draws` sets them back for the run again when one run ran all the random ops of the
graph run again, and restores the states of now (of every generator of that run) after it.

Ops with ``seed=-1`` share torch's generator: each drew where the ops before it in that run
left it.  Where ``y``'s such ops drew one after another in that run, in ``y``'s order, the run
again starts from the state before the first of them; else (another op drew between them, or
the run drew them in another order) it runs op by op, each of ``y``'s drawing from the state it
drew from in that run.  Those states are found by drawing again, from the noted state, what the
ops of that run before it drew (on their inputs' values of now: a draw's length depends on its
shapes, not on the values; where one cannot draw on them, ``y``'s draw on from now).

A node whose seed was set since that run (``set_attribute``) is given the seed and the
generator it drew from for the run again, and its new ones back after it (NNabla's backward
reads the draws of the forward that ran, whatever changed since).

Only a front end whose backward reads the forward's values (NNabla's, ``reads_held_values``)
has the states noted (:func:`drawing` is None for others): a CNTK ``Trainer`` pays nothing, and
Stadyn's own Variables (which warn that the forward runs again) draw anew there.

Example:
    >>> import numpy as np, stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
    >>> from stadyn.graph import topological_nodes
    >>> x = nn.Variable.from_numpy_array(np.ones(6, np.float32), need_grad=True)
    >>> a = F.dropout(x, 0.5); y = F.dropout(x, 0.5)
    >>> loss = F.sum(a) + F.sum(y * y)
    >>> loss.forward(); mask = (y.d != 0).tolist()
    >>> with same_draws(topological_nodes([y])) as hook:
    ...     y.forward(function_pre_hook=hook)
    >>> (y.d != 0).tolist() == mask
    True
"""

from __future__ import annotations

import contextlib
import itertools
import weakref
from typing import Any, Callable, Sequence

import torch

from ._own_streams import GeneratorSeed, held_seed, hold_seed, node_seed
from ._variable import FunctionNode, Variable
from ._identity_keys import IdentityKeyDict

__all__ = ["Drawing", "drawing", "keep", "replays", "same_draws"]

#: node -> the :class:`Drawing` s (weak) of the graphs that hold it
_HOLDING: "IdentityKeyDict" = IdentityKeyDict()
#: numbers the runs, to tell the last of a node's graphs that ran
_RUNS = itertools.count(1)
#: while :func:`same_draws` runs a forward again: that run notes nothing (the states noted are
#: still those of the run it repeats)
_again = [0]


class Drawing:
    """The random op nodes of one graph in the order its runs run them, the seeds holding
    generators of their own that they draw from (a node's plain seed, a stream), and those
    drawing from torch's own; found once per graph (a node's ``attrs`` cost a signature
    binding each: :func:`keep` runs before every forward).  ``given``: each node's seed
    attribute and the :class:`NodeSeed` it held when found (a seed set since, by
    ``set_attribute``, rebuilds the graph's plan and so its ``Drawing``: these are the run's).
    ``last``: ``(run, states)`` of its last static run (None before one)."""

    __slots__ = ("nodes", "seeds", "shared", "given", "last", "__weakref__")

    def __init__(self, nodes: tuple, seeds: tuple, shared: tuple, given: dict):
        self.nodes, self.seeds, self.shared, self.given = nodes, seeds, shared, given
        self.last: tuple | None = None


def _random_nodes(nodes: Sequence[FunctionNode]) -> list:
    return [n for n in nodes if "seed" in n.spec.attrs]


def drawing(nodes: Sequence[FunctionNode], roots: Sequence[Variable] = ()) -> Drawing | None:
    """The :class:`Drawing` of the nodes among ``nodes`` (a graph's, in run order) whose op
    draws random numbers (it has a ``seed``), or None where none does or where none of
    ``roots`` is of a class whose backward reads the forward's values
    (``Variable.reads_held_values``: NNabla's; nothing to note for the others)."""
    if not any(type(r).reads_held_values for r in roots):
        return None
    found = tuple(_random_nodes(nodes))
    if not found:
        return None
    own = {n: _own_seed(n) for n in found}
    seeds = {id(s): s for s in own.values() if s is not None}
    given = {id(n): (n.attrs.get("seed", -1), held_seed(n)) for n in found}
    made = Drawing(found, tuple(seeds.values()), tuple(n for n in found if own[n] is None),
                   given)
    ref = weakref.ref(made)
    for n in found:             # (the graphs gone since dropped: a rebuilt entry adds one)
        _HOLDING[n] = [r for r in _HOLDING.get(n, ()) if r() is not None] + [ref]
    return made


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
    nothing to note): note their generators' states for :func:`same_draws`."""
    if found is not None and not _again[0]:
        found.last = (next(_RUNS), _states(found.seeds))


def _last_run(node: FunctionNode) -> Drawing | None:
    """The graph holding ``node`` that ran last (None where none ran)."""
    runs = [d for ref in _HOLDING.get(node, ()) if (d := ref()) is not None and d.last]
    return max(runs, key=lambda d: d.last[0]) if runs else None


def _shared_states(run: Drawing, upto: int) -> list:
    """The states of torch's generators (CPU, CUDA) before each of the first ``upto`` ops of
    ``run`` drawing from them, found by drawing again from the state before ``run`` what the
    ops before it drew (the generators are then set back by the caller)."""
    cpu, cuda, _ = run.last[1]
    _set((cpu, cuda, []))
    found = []
    for node in run.shared[:upto]:
        found.append(_states(()))
        if len(found) < upto:
            _draw_again(node)
    return found


def _draw_again(node: FunctionNode) -> None:
    """Call ``node``'s op on its inputs' values of now (zeros where one holds none), for the
    numbers it draws."""
    def value(v: Any) -> Any:
        if not isinstance(v, Variable):
            return v
        t = v._data
        return torch.zeros(v.shape) if t is None else t.detach()
    kwargs = {k: value(v) for k, v in (node.kwargs or {}).items()}
    if node.state is not None:
        kwargs["state"] = node.state
    with torch.no_grad():
        node.spec.impl(*[value(a) for a in node.args], **kwargs)


def _the_run(mine: Sequence[FunctionNode]) -> Drawing | None:
    """The one noted run that ran all of the random op nodes ``mine`` last, or None."""
    runs = {id(r): r for r in map(_last_run, mine)}
    return runs.popitem()[1] if mine and len(runs) == 1 else None


def replays(nodes: Sequence[FunctionNode]) -> bool:
    """Whether :func:`same_draws` gives a forward of the graph of ``nodes`` the draws of its
    last run (one noted run ran all its random ops).

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> y = F.dropout(nn.Variable.from_numpy_array(np.ones(4, np.float32)), 0.5)
        >>> replays([y.parent]); y.forward(); replays([y.parent])
        False
        True
    """
    return _the_run(_random_nodes(nodes)) is not None


@contextlib.contextmanager
def same_draws(nodes: Sequence[FunctionNode]):
    """Within it, a forward of the graph of ``nodes`` (in run order) draws what the last static
    run of its random ops drew, where one run ran them all (else it draws on, as before); at
    its end, the generators of that run are where they were at its start.  It gives the
    function pre-hook that forward runs with (op by op), or None (where it needs none)."""
    mine = _random_nodes(nodes or ())
    run = _the_run(mine)
    if run is None:
        yield None
        return
    with _seeds_of(run, mine):
        with _drawn_again(run, mine) as hook:
            yield hook


def _changed(then: Any, now: Any) -> bool:
    return now is not then and not (type(now) is type(then) is int and now == then)


@contextlib.contextmanager
def _seeds_of(run: Drawing, mine: Sequence[FunctionNode]):
    """Within it, the nodes ``mine`` whose seed was set since ``run`` ran (``set_attribute``)
    have the seeds (and hold the generators) they drew from in it, as NNabla's backward reads
    the draws of the forward that ran whatever was changed since; set back at its end."""
    back = []
    for n in mine:
        then, seed = run.given[id(n)]
        now = n.attrs.get("seed", -1)
        if _changed(then, now):
            back.append((n, now, held_seed(n)))
            n.set_attribute("seed", then)
            hold_seed(n, seed)
    try:
        yield
    finally:
        for n, now, seed in back:
            n.set_attribute("seed", now)
            hold_seed(n, seed)


@contextlib.contextmanager
def _drawn_again(run: Drawing, mine: Sequence[FunctionNode]):
    """:func:`same_draws` for ``run``, the run that drew the random op nodes ``mine``."""
    now = _states(run.seeds)
    where = {id(n): i for i, n in enumerate(run.shared)}   # (the run's seeds: _seeds_of)
    shared = [n for n in mine if id(n) in where]
    at = [where[id(n)] for n in shared]
    hook: Callable | None = None
    cpu, cuda, own = run.last[1]
    try:
        try:
            if at and at != list(range(at[0], at[0] + len(at))):   # apart, or in another order
                states = _shared_states(run, max(at) + 1)
                by_node = {id(n): states[i] for n, i in zip(shared, at)}

                def hook(node: FunctionNode) -> None:
                    if id(node) in by_node:
                        _set(by_node[id(node)])
            elif at and at[0] > 0:          # one after another, after others
                cpu, cuda, _ = _shared_states(run, at[0] + 1)[-1]
        except Exception:   # an op before them that cannot draw on the values of now (its
            _set(now)       # input cleared: zeros): y's shared draws go on from now, as before
            hook, (cpu, cuda) = None, now[:2]
        _set((cpu, cuda, own))
        _again[0] += 1
        try:
            yield hook
        finally:
            _again[0] -= 1
    finally:
        _set(now)
