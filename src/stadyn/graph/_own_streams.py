"""The generators of random ops with a plain seed of their own in a static graph.

NNabla's rule: a random function given ``seed=n`` seeds a generator of its own when it is set
up, draws on from it on every forward, and is set up again -- its generator seeded anew --
only when the shapes of its inputs change.  A static graph's op node therefore keeps one
generator (:class:`NodeSeed`, what the node's op is called with in place of its ``seed``)
whichever way it runs: a plan built for one leaf signature, another for the next one, an
eager trial, a run op by op.  Each call with input shapes other than the last reseeds it
(:meth:`NodeSeed.setup`); a plan replayed from the cache (which calls no Python per op) is
set up by the runner before it runs (:func:`set_up`, from the shapes its last run recorded,
:func:`record`).  A dynamic-mode call makes a node per call: the same draws each time; it
draws from its node's generator (:func:`seeded_arguments`), so a static run of the graph after
it (``s.forward()``) draws on from there, as NNabla's function does.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from ._identity_keys import IdentityKeyDict

__all__ = ["GeneratorSeed", "NodeSeed", "held_seed", "hold_seed", "node_seed", "own_seed",
           "own_seed_nodes", "record", "seeded_arguments", "set_up"]

_SEEDS: "IdentityKeyDict" = IdentityKeyDict()


class GeneratorSeed(int):
    """An ``int`` (the seed) that holds its own generators, one per device, each made and
    seeded with it on first use; a subclass moves a new generator on in :meth:`_started`.
    What a random op is called with in place of a plain seed to draw on from run to run
    (:class:`NodeSeed`, ``stadyn.ops.RandomStream``).

    Example:
        >>> s = GeneratorSeed(3)
        >>> s.generator("cpu") is s.generator(torch.device("cpu")), int(s)
        (True, 3)
        >>> a = torch.rand(2, generator=s.generator("cpu"))
        >>> bool((a == torch.rand(2, generator=torch.Generator().manual_seed(3))).all())
        True
    """

    _generators: dict

    def __new__(cls, seed: int):
        self = super().__new__(cls, int(seed))
        self._generators = {}
        return self

    def generator(self, device) -> torch.Generator:
        """The generator on ``device`` (made, seeded, on first use)."""
        key = str(torch.device(device))
        generator = self._generators.get(key)
        if generator is None:
            generator = torch.Generator(device=device)
            generator.manual_seed(int(self))
            self._started(generator)
            self._generators[key] = generator
        return generator

    def _started(self, generator: torch.Generator) -> None:
        """A generator just made and seeded (nothing more to do here)."""


class NodeSeed(GeneratorSeed):
    """The seed of one op node, with that node's generators (one per device): an ``int`` (the
    seed) to everything that reads it as one.

    Example:
        >>> s = NodeSeed(7)
        >>> s.setup(((3,),)); a = torch.rand(2, generator=s.generator("cpu"))
        >>> s.setup(((3,),)); b = torch.rand(2, generator=s.generator("cpu"))   # draws on
        >>> s.setup(((4,),)); c = torch.rand(2, generator=s.generator("cpu"))   # seeded anew
        >>> bool((a == b).all()), bool((a == c).all()), int(s)
        (False, True, 7)
    """

    def __new__(cls, seed: int):
        self = super().__new__(cls, seed)
        self._shapes: Any = None
        return self

    def setup(self, shapes: tuple) -> None:
        """The node runs on inputs of ``shapes``: other shapes than its last run's reseed its
        generators (NNabla sets the function up again)."""
        if shapes != self._shapes:
            if self._shapes is not None:
                for generator in self._generators.values():
                    generator.manual_seed(int(self))
            self._shapes = shapes

    def __reduce__(self):
        return (int, (int(self),))

    def __copy__(self):
        return int(self)

    def __deepcopy__(self, memo):
        return int(self)


def own_seed(node) -> tuple[Any, bool] | None:
    """``(seed, plain)`` where ``node`` draws from a generator of its own seed -- its random
    op's ``seed`` other than a plain -1; ``plain``: a Python or NumPy integer, not a stream that
    carries its generator (an ``int`` subclass) -- else None.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.ones(3, np.float32))
        >>> own_seed(F.dropout(x, 0.5, seed=7).parent), own_seed(F.dropout(x, 0.5).parent)
        ((7, True), None)
    """
    if "seed" not in node.spec.attrs:
        return None
    seed = node.attrs.get("seed", -1)
    plain = type(seed) is int or isinstance(seed, np.integer)
    return None if plain and int(seed) == -1 else (seed, plain)


def _plain_seed(node) -> int | None:
    """``node``'s seed if it is a plain seed of its own (an ``int`` other than -1, not a stream
    that carries its generator), else None."""
    found = own_seed(node)
    if found is not None and found[1] and int(found[0]) >= 0:
        return int(found[0])
    return None


def node_seed(node) -> NodeSeed | None:
    """The :class:`NodeSeed` ``node`` runs with in a static graph (made on first use), or None
    where its op has no plain seed of its own."""
    seed = _plain_seed(node)
    if seed is None:
        return None
    held = _SEEDS.get(node)
    if held is None or int(held) != seed:           # (a seed attribute set since)
        held = _SEEDS[node] = NodeSeed(seed)
    return held


def held_seed(node) -> NodeSeed | None:
    """The :class:`NodeSeed` ``node`` holds now (None where none was made)."""
    return _SEEDS.get(node)


def hold_seed(node, seed: NodeSeed | None) -> None:
    """Make ``seed`` the one ``node`` holds (:func:`held_seed`; None: none), so that
    :func:`node_seed` gives it back while ``node``'s seed attribute is ``int(seed)``."""
    if seed is None:
        _SEEDS.pop(node, None)
    else:
        _SEEDS[node] = seed


def seeded_arguments(node, args: list, kwargs: dict, shapes: tuple) -> tuple[list, dict]:
    """The arguments ``node``'s op is called with, a plain seed of its own replaced by the
    node's :class:`NodeSeed`, set up for inputs of ``shapes`` (unchanged where the op has no
    plain seed of its own).  A dynamic-mode call draws from it as the static runs of the node
    do after it: ``s.forward()`` of a graph built in dynamic mode draws on from the draw the
    call made, as NNabla's function draws on from its generator.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.ones(3, np.float32))
        >>> node = F.dropout(x, 0.5, seed=7).parent
        >>> args, kwargs = seeded_arguments(node, [x], {"seed": 7}, ((3,),))
        >>> kwargs["seed"] is node_seed(node), int(kwargs["seed"])
        (True, 7)
    """
    seed = node_seed(node)
    if seed is None:
        return args, kwargs
    seed.setup(shapes)
    k = node.spec.position_of("seed")
    if not node.spec.variadic and k < len(args):
        args = [*args[:k], seed, *args[k + 1:]]
    else:
        kwargs = {**kwargs, "seed": seed}
    return args, kwargs


def own_seed_nodes(nodes) -> list:
    """The nodes among ``nodes`` whose op has a plain seed of its own."""
    return [n for n in nodes if _plain_seed(n) is not None]


def record(nodes) -> list:
    """For each of ``nodes`` (:func:`own_seed_nodes`' of a graph that just ran), its seed and
    its inputs' shapes in that run: what :func:`set_up` sets them up with before the same plan
    runs again."""
    return [(node_seed(n), tuple(tuple(v.shape) for v in n.inputs)) for n in nodes]


def set_up(recorded: list) -> None:
    """Set up the seeds of a plan about to replay on the shapes its last run :func:`record`-ed."""
    for seed, shapes in recorded:
        seed.setup(shapes)
