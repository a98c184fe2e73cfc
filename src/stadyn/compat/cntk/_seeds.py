"""CNTK's seed rules for its random Functions (``cntk.random``, dropout, the samplers).

A Function made with an explicit ``seed`` draws from a stream seeded with it (every evaluation
draws the stream's next values); ``seed=auto_select`` (CNTK's sentinel, the default) takes the
seed ``cntk.cntk_py.set_fixed_random_seed`` fixed, else the next of a fixed sequence of seeds
(:func:`stadyn._random.auto_seed`), so a CNTK program's run repeats from one process to the
next, as it does in CNTK 2.7 (checked: the same losses with dropout, the same ``uniform``
values, in two processes).  Among ``N`` distributed workers, worker ``r`` takes ``N * s + r``
for the sequence's ``s`` (CNTK's ``GenerateRandomSeed(perWorkerLocalValue=true)``), so the
workers draw different dropout masks and samples.

Example:
    >>> from stadyn.compat.cntk._seeds import resolved_seed
    >>> int(resolved_seed(5))
    5
"""

from __future__ import annotations

from ... import distributed
from ..._random import auto_seed, fixed_seed
from ...graph import Subgraph
from ...ops import CNTKStream

__all__ = ["SentinelValueForAutoSelectRandomSeed", "resolved_seed", "drawn_seed",
           "rewind_streams"]

SentinelValueForAutoSelectRandomSeed = 2 ** 64 - 3


def resolved_seed(seed) -> CNTKStream:
    """The stream of one random Function by CNTK's seed rules (see the module docstring):
    CNTK 2.7's own engine and draws (:class:`stadyn.ops.CNTKStream`)."""
    return CNTKStream(drawn_seed(seed) % 2 ** 64)


def drawn_seed(seed) -> int:
    """The seed of one random Function by CNTK's seed rules, drawn now: CNTK 2.7 draws it as
    the op is made, before the initializers of parameters made after it, also for an op
    whose operand has no shape yet (built later here): the ``as_called`` hooks of the random
    ops (``_deferrable.deferrable``) put it in place of their ``seed`` argument.

    Example:
        >>> drawn_seed(7)
        7
    """
    if seed is None or int(seed) == SentinelValueForAutoSelectRandomSeed:
        seed = fixed_seed()
    if seed is None:
        seed = auto_seed() * distributed.size() + distributed.rank()
    if int(seed) < 0:
        raise ValueError(f"cntk.random: seed must be >= 0, got {seed}")
    return int(seed)


def rewind_streams(roots) -> None:
    """Move the streams of the random ops computing ``roots`` (``cntk.random``'s, dropout,
    the samplers) back to where the Function's attributes say they stand (their offset at
    the last save, else 0), as CNTK 2.7 does when a Function's first training-phase run
    (``forward`` with ``keep_for_backward``, ``grad``) comes after runs for evaluation only:
    it builds the network again (CompositeFunction::GetComputationNetwork purges the one
    compiled for evaluation) and gives each RngUser node the engine of its attributes'
    rngSeed and rngOffset (CompositeFunction.cpp:1183-1188), which the evaluations' draws
    did not move: ``eval``, ``grad``, ``eval`` draw the stream's first, first and second
    values.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> s = C.random_sample(np.ones(50, np.float32), 1, True, seed=7)
        >>> first = s.eval().argmax()
        >>> rewind_streams(s._roots()); bool(s.eval().argmax() == first)
        True
    """
    for node in Subgraph(list(roots)).nodes:
        seed = node.spec.split_arguments(node.args, node.kwargs)[1].get("seed")
        if isinstance(seed, CNTKStream):
            seed.rewind()
