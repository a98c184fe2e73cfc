"""Random sources: ``rand``, ``randn``, ``randint`` (NNabla's names, arguments and defaults).

They take no inputs and draw an array of ``shape``.  With ``seed=-1`` (the default) they draw
from torch's generator, which :func:`stadyn.seed` seeds, in both modes.  With a seed of their
own they draw from a generator seeded with it when the op first runs -- NNabla's rule: in
dynamic mode each call draws the same values, a static graph's op draws the next values of its
stream on every ``forward()``, however the graph runs (a plan, an eager trial, op by op), and
starts it again when its own inputs change shape or the graph is rebuilt
(``graph/_own_streams.py``).

With ``rule="nnabla"`` (compat.nnabla's functions) a CPU draw is NNabla 1.39's own: the
numbers of its ``std::mt19937`` through libstdc++'s distributions (``stadyn._libstdcxx_random``),
from the same generators (a torch CPU generator is a ``std::mt19937``: torch's default one is
NNabla's global generator, which ``nn.seed(n)`` seeds; a ``seed`` of the op's own seeds a fresh
one as NNabla's function does).  The draw is the operator ``stadyn_kernels::nnabla_draw``, so a
static graph's plan draws again on each run.  Other devices draw torch's numbers.
"""

from __future__ import annotations

import numpy as np
import torch

from .. import _libstdcxx_random as _std
from ..graph import GeneratorSeed, NodeSeed, get_current_context
from ._kernels import kernel_op
from ._registry import op

_C = "random"


def _shape(shape) -> tuple[int, ...]:
    if isinstance(shape, int):
        return (int(shape),)
    return tuple(int(s) for s in shape)


class RandomStream(GeneratorSeed):
    """A seed that carries its stream: passed as a random op's ``seed``, every run of that op
    node -- dynamic or static, replayed, re-traced or interpreted -- draws the next values of
    one generator seeded with it, where a plain seed starts a fresh generator per call (NNabla's
    rule).  CNTK's random Functions are built with its subclass :class:`stadyn.ops.CNTKStream`,
    which draws CNTK 2.7's own numbers (every evaluation new values).  It
    is an ``int`` (the seed); ``offset`` starts it that many 32-bit numbers into the seed's
    sequence on the CPU (CNTK's ``rngOffset``).

    Files keep where the stream stands, so the loaded graph draws on from there, as CNTK 2.7's
    loaded models do: a Stadyn model file its CPU generator's state (:meth:`state`), a CNTK
    file its :meth:`position` -- the count of 32-bit numbers the CPU generator gave, one a
    value for the uniform draws (``rand_like``, ``bernoulli_like``, ``gumbel_like``, dropout's
    mask); a normal draw takes torch's count, and a normal draw of fewer than 16 values keeps
    half a pair beside it, which a CNTK file cannot hold (a :class:`~stadyn.ops.CNTKStream`
    counts as CNTK does).  A stream that drew on another device is kept where its CPU
    generator stands.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.zeros(3, np.float32))
        >>> s = sd.ops.RandomStream(7)
        >>> with sd.auto_forward():
        ...     a, b = F.rand_like(x, seed=s).d, F.rand_like(x, seed=s).d
        ...     c = F.rand_like(x, seed=7).d
        ...     moved = sd.ops.RandomStream(7, offset=s.position())   # where s stands
        ...     d, e = F.rand_like(x, seed=s).d, F.rand_like(x, seed=moved).d
        >>> bool((a == c).all()), bool((a == b).all()), int(s), bool((d == e).all())
        (True, False, 7, True)
    """

    #: the kinds of stream whose :meth:`state` starts with a prefix of their own (a subclass
    #: names it: ``class S(RandomStream, state_prefix="...")``), which :meth:`restored` makes
    _KINDS: dict = {}

    def __init_subclass__(cls, state_prefix: str | None = None, **kwargs):
        super().__init_subclass__(**kwargs)
        if state_prefix is not None:
            RandomStream._KINDS[state_prefix] = cls

    def __new__(cls, seed: int, offset: int = 0):
        if int(seed) < 0:
            raise ValueError(f"a random stream's seed must be >= 0, got {seed}")
        if int(offset) < 0:
            raise ValueError(f"a random stream's offset must be >= 0, got {offset}")
        self = super().__new__(cls, int(seed))
        self._offset = int(offset)
        self._known = None      # (a position found, the CPU generator's state there)
        self._saved = None      # the CPU generator's state at the stream's last save
        self._saved_at = None   # its position there, where found
        if self._offset:        # moved on now: a graph being traced may make it first
            self.generator(torch.device("cpu"))
        return self

    def _started(self, generator: torch.Generator) -> None:
        """A generator of the stream just made and seeded: on the CPU, moved on by ``offset``
        numbers."""
        if generator.device.type == "cpu" and self._offset:
            _std.skip_words(generator, self._offset)
            self._known = (self._offset, generator.get_state())

    def position(self) -> int | None:
        """How many 32-bit numbers of its seed's sequence the stream's CPU generator has
        given (CNTK's ``rngOffset``): found by drawing the sequence again from the last
        position found, else from the seed (``_libstdcxx_random.words_drawn``, ~10 ns a
        number), None where that takes more than 2**30 numbers (or the generator's state was
        set to another sequence's)."""
        generator = self.generator(torch.device("cpu"))
        drawn = _std.words_drawn(generator, int(self), since=self._known)
        if drawn is None and self._known is not None:   # (a state put back: from the seed)
            drawn = _std.words_drawn(generator, int(self))
        if drawn is not None:
            self._known = (drawn, generator.get_state())
        return drawn

    def state(self) -> str:
        """The stream's CPU generator's state (torch's ``get_state()``) as hex: what a Stadyn
        model file keeps (:meth:`restored` makes the stream again)."""
        return self.generator(torch.device("cpu")).get_state().numpy().tobytes().hex()

    @classmethod
    def restored(cls, seed: int, state: str) -> "RandomStream":
        """The stream of ``seed`` whose CPU generator is in ``state`` (:meth:`state`'s);
        a ValueError where ``state`` is not a torch CPU generator's state of that seed.  The
        state of another kind of stream (a prefix of its own) makes a stream of that kind.

        Example:
            >>> s = RandomStream(5, offset=10)
            >>> RandomStream.restored(5, s.state()).position()
            10
        """
        for prefix, kind in RandomStream._KINDS.items():
            if cls is RandomStream and isinstance(state, str) and state.startswith(prefix):
                return kind.restored(seed, state)
        stream = cls(seed)
        try:
            tensor = torch.frombuffer(bytearray.fromhex(state), dtype=torch.uint8)
        except (TypeError, ValueError):
            tensor = None
        if tensor is None or tensor.numel() != _std.STATE_BYTES or \
                int.from_bytes(bytes(tensor[:8].tolist()), "little") != int(seed):
            raise ValueError(f"not the state of a CPU generator seeded {int(seed)}")
        stream.generator(torch.device("cpu")).set_state(tensor.clone())
        return stream

    def mark_saved(self, position: int | None = None) -> None:
        """Record where the stream stands as the place of its last save: where a copy of its
        op starts (:meth:`restarted`; CNTK 2.7's clone copies the ``rngOffset`` its function
        last saved); ``position``: the stream's :meth:`position` there, where known."""
        self._saved = self.state()
        self._saved_at = position

    def saved_offset(self) -> int:
        """The offset a CNTK Function shows as its ``rngOffset`` attribute: where the stream
        stood at its last save (:meth:`mark_saved`), else the offset it was made with (a
        loaded file's ``rngOffset``, a copy's of its original's), as CNTK 2.7 updates the
        attribute only when the Function is saved.  0 where that place cannot be counted
        (:meth:`position`).

        Example:
            >>> s = RandomStream(4, offset=6)
            >>> _ = torch.rand(1, generator=s.generator(torch.device("cpu")))
            >>> s.saved_offset(), s.position()
            (6, 7)
            >>> s.mark_saved(); s.saved_offset(), RandomStream(4).restarted().saved_offset()
            (7, 0)
        """
        if self._saved is None:
            return self._offset
        if self._saved_at is None:
            self._saved_at = RandomStream.restored(int(self), self._saved).position()
        return self._saved_at or 0

    def restarted(self) -> "RandomStream":
        """A stream of its own for a copy of the op: the same seed, where this stream stood
        at its last save (:meth:`mark_saved`; where it was made if never saved), as CNTK
        2.7's ``clone`` starts the copy's random functions (and shows that place as its
        :meth:`saved_offset`)."""
        if self._saved is None:
            return RandomStream(int(self), self._offset)
        copy = RandomStream.restored(int(self), self._saved)
        copy._saved, copy._saved_at = self._saved, self._saved_at
        return copy

    def __reduce__(self):
        return (_unpickled, (int(self), self.state(), self._offset, self._saved, self._saved_at))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


def _unpickled(seed: int, state: str, offset: int, saved: str | None,
               saved_at: int | None) -> RandomStream:
    """A pickled :class:`RandomStream` again: its CPU generator's state, the offset it was made
    with and its last save (what :meth:`~RandomStream.saved_offset` and
    :meth:`~RandomStream.restarted` read)."""
    stream = RandomStream.restored(seed, state)
    stream._offset, stream._saved, stream._saved_at = int(offset), saved, saved_at
    return stream


def _generator(seed: int, device: torch.device) -> torch.Generator | None:
    """None (torch's own generator) for ``seed == -1``, a :class:`RandomStream`'s own
    generator, else a fresh generator seeded ``seed``."""
    if isinstance(seed, (RandomStream, NodeSeed)):    # (NodeSeed: a static graph's node's)
        return seed.generator(device)
    if int(seed) == -1:
        return None
    if int(seed) < 0:
        raise ValueError(f"seed must be -1 (the global generator) or >= 0, got {seed}")
    generator = torch.Generator(device=device)
    generator.manual_seed(int(seed))
    return generator


#: the distributions of :func:`nnabla_draw` by name (its ``kind``)
_KINDS = ("bernoulli", "uniform", "normal", "int", "words")


def _draw_impl(kind: int, a: float, b: float, shape: list[int],
               generator: torch.Generator | None = None) -> torch.Tensor:
    count = int(np.prod(shape)) if len(shape) else 1
    with _std.WordSource(generator) as take:
        if kind == 0:
            out = _std.bernoulli(take, a, count).astype(np.float32)
        elif kind == 1:
            out = _std.uniform_floats(take, a, b, count)
        elif kind == 2:
            out = _std.normal_floats(take, a, b, count)
        elif kind == 3:
            out = _std.uniform_ints(take, int(a), int(b), count).astype(np.int32)
        else:
            out = take(count).astype(np.int64)
    return torch.from_numpy(out.reshape(tuple(shape)))


def _draw_fake(kind: int, a: float, b: float, shape: list[int],
               generator: torch.Generator | None = None) -> torch.Tensor:
    dtype = {3: torch.int32, 4: torch.int64}.get(kind, torch.float32)
    return torch.empty(tuple(shape), dtype=dtype)


_nnabla_draw = kernel_op("stadyn_kernels::nnabla_draw",
                         "(int kind, float a, float b, int[] shape, Generator? generator=None)"
                         " -> Tensor", _draw_impl, _draw_fake,
                         tags=(torch.Tag.nondeterministic_seeded,))


def nnabla_draw(kind: str, a: float, b: float, shape, seed=-1) -> torch.Tensor:
    """A CPU tensor of ``shape`` drawn as NNabla 1.39's CPU kernels draw it: ``kind``
    ``"bernoulli"`` (1.0 with probability ``a``, else 0.0: a dropout mask), ``"uniform"`` (floats
    on ``[a, b)``), ``"normal"`` (mean ``a``, standard deviation ``b``), ``"int"`` (int32 in
    ``a..b``, both included) or ``"words"`` (the engine's 32-bit numbers, int64), from the
    generator ``seed`` names (as the random ops' ``seed``).

    Example:
        >>> import torch
        >>> u = nnabla_draw("uniform", 0.0, 1.0, (3,), seed=11)   # F.rand(shape=(3,), seed=11)
        >>> [round(v, 7) for v in u.tolist()]
        [0.1802697, 0.0683068, 0.0194752]
    """
    return _nnabla_draw(_KINDS.index(kind), float(a), float(b), list(_shape(shape)),
                        _generator(seed, torch.device("cpu")))


def _nnabla_cpu(rule: str, device) -> bool:
    """Whether a draw follows NNabla's CPU kernels (``rule="nnabla"`` on the CPU)."""
    if rule not in ("torch", "nnabla"):
        raise ValueError(f"rule must be 'torch' or 'nnabla', got {rule!r}")
    return rule == "nnabla" and torch.device(device).type == "cpu"


def _uniform_shape(low=0.0, high=1.0, shape=(), seed=-1, rule="torch"):
    """Shape rules: the output without drawing, which would advance the generator."""
    return torch.empty(_shape(shape), device="meta")


def _normal_shape(mu=0.0, sigma=1.0, shape=(), seed=-1, rule="torch"):
    return torch.empty(_shape(shape), device="meta")


def _int_shape(low=0, high=1, shape=(), seed=-1, rule="torch"):
    return torch.empty(_shape(shape), device="meta", dtype=torch.int32)


@op(0, category=_C, shape=_uniform_shape)
def rand(low=0.0, high=1.0, shape=(), seed=-1, rule="torch"):
    """Uniform samples on ``[low, high)`` of ``shape`` (float32).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     u = F.rand(-1.0, 1.0, shape=(1000,))
        >>> bool((u.d >= -1).all() and (u.d < 1).all()), u.shape
        (True, (1000,))
    """
    device = get_current_context().device
    if _nnabla_cpu(rule, device):
        return nnabla_draw("uniform", low, high, shape, seed)
    u = torch.rand(_shape(shape), generator=_generator(seed, device), device=device)
    return u * (float(high) - float(low)) + float(low)


@op(0, category=_C, shape=_normal_shape)
def randn(mu=0.0, sigma=1.0, shape=(), seed=-1, rule="torch"):
    """Normal samples with mean ``mu`` and standard deviation ``sigma`` of ``shape`` (float32).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     a, b = F.randn(shape=(3,), seed=7), F.randn(shape=(3,), seed=7)
        >>> bool((a.d == b.d).all())
        True
    """
    device = get_current_context().device
    if _nnabla_cpu(rule, device):
        return nnabla_draw("normal", mu, sigma, shape, seed)
    z = torch.randn(_shape(shape), generator=_generator(seed, device), device=device)
    return z * float(sigma) + float(mu)


@op(0, category=_C, shape=_int_shape)
def randint(low=0, high=1, shape=(), seed=-1, rule="torch"):
    """Integers drawn uniformly from ``[low, high)`` of ``shape`` (int32, as NNabla's).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     k = F.randint(2, 5, shape=(100,))
        >>> sorted(set(k.d.tolist())), k.d.dtype
        ([2, 3, 4], dtype('int32'))
    """
    if int(high) <= int(low):
        raise ValueError(f"randint: high ({high}) must be greater than low ({low})")
    device = get_current_context().device
    if _nnabla_cpu(rule, device):
        return nnabla_draw("int", low, int(high) - 1, shape, seed)
    return torch.randint(int(low), int(high), _shape(shape), generator=_generator(seed, device),
                         device=device, dtype=torch.int32)
