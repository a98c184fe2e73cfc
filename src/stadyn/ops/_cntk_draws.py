"""CNTK 2.7's own random numbers for its random Functions (``cntk.random``, ``dropout``,
``random_sample``): a :class:`CNTKStream` is the seed compat.cntk gives them.

CNTK 2.7 gives each such node a ``std::mt19937_64`` seeded with its ``rngSeed`` and moved on
by ``discard(rngOffset)`` when the node first draws, and draws on from it on every evaluation
through Boost's distributions, in double (float32 values are the doubles rounded, from the
arguments rounded to float32).  Its ``rngOffset`` counts values, not the engine's numbers:
each draw adds its count of values (a normal draw its count rounded up to even, as CNTK draws
normals in pairs; ``random_sample`` its tries), so a loaded or cloned node (seeded again and
moved on by that count) does not always take up where the engine stood.  The numbers are
``stadyn._mt19937``'s engine's through ``_cntk_distributions.py``, exact to the bit against
CNTK 2.7 on the CPU; they are drawn on the CPU whatever the device (CNTK's GPU draws, from
cuRAND, differ).

A draw is the operator ``stadyn_kernels::cntk_draw`` (``cntk_sample`` for ``random_sample``),
made by ``kernel_op`` and tagged ``nondeterministic_seeded``; it takes a CPU
``torch.Generator`` that stands for the stream's engine (found by its seed, a number of its
own, in a table the generator's end clears; the operator gets another Python object of the
same generator, so the object itself cannot be the key), so a
static plan keeps the handle and draws on from the engine on each run, as it does with torch's
generators.
"""

from __future__ import annotations

import itertools
import math
import threading
import weakref

import numpy as np
import torch

from .. import _mt19937 as _mt
from . import _cntk_distributions as _dist
from ._kernels import kernel_op
from ._random import RandomStream

__all__ = ["CNTKStream", "cntk_draw", "cntk_inclusion_frequency", "cntk_sample"]

_STATE_PREFIX = "cntk-mt19937-64:"


class _Engine:
    """A stream's engine, CNTK's count of the values it drew (its ``rngOffset``) and the lock
    a draw holds (threads drawing from one stream each get numbers of their own, as from a
    torch generator); ``computed``: an inclusion frequency's last value and what it was of
    (CNTK 2.7 computes one again only when its weights change)."""

    __slots__ = ("rng", "count", "lock", "computed")

    def __init__(self, rng: _mt.MT19937_64, count: int):
        self.rng, self.count = rng, int(count)
        self.lock = threading.Lock()
        self.computed: tuple | None = None


#: the engine of each stream's handle (a CPU ``torch.Generator`` the kernels take), by the
#: handle's seed
_ENGINES: dict[int, _Engine] = {}
_KEYS = itertools.count(1)
_MAKING = threading.Lock()     # (held while a stream makes its engine: one per stream)


def _handle_of(engine: _Engine) -> torch.Generator:
    """A new handle for ``engine``: a CPU generator seeded with a number of its own."""
    key = next(_KEYS)
    handle = torch.Generator()
    handle.manual_seed(key)
    _ENGINES[key] = engine
    weakref.finalize(handle, _ENGINES.pop, key, None)
    return handle


def _engine_of(handle: torch.Generator) -> _Engine:
    return _ENGINES[handle.initial_seed()]


class CNTKStream(RandomStream, state_prefix=_STATE_PREFIX):
    """The stream of one CNTK random Function: ``std::mt19937_64(seed)`` moved on by
    ``offset`` numbers (CNTK's ``rngSeed`` and ``rngOffset``), from which ``rand_like``,
    ``randn_like``, ``gumbel_like``, ``bernoulli_like``, ``dropout`` and ``random_sample``
    draw CNTK 2.7's values.  Its :meth:`position` is CNTK's count of the values drawn (what a
    CNTK file keeps as ``rngOffset``); a Stadyn model file keeps its engine's state
    (:meth:`state`); a copy of its op starts from its seed moved on by the offset of its last
    save (:meth:`restarted`), as CNTK 2.7's clone does.  ``time_major``: its op's operand has
    a sequence axis (``(batch, time, ...)``), whose values CNTK draws time step by time step
    (its minibatch's columns are ``t * sequences + s``, the padding included).  Other ops given
    it draw from its torch generator (:meth:`RandomStream.generator`).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.zeros(3, np.float32))
        >>> s = CNTKStream(5)
        >>> with sd.auto_forward():
        ...     a = F.rand_like(x, -1.0, 2.0, seed=s).d     # C.random.uniform(3, -1, 2, seed=5)
        >>> a.tolist(), s.position()
        ([1.0191947221755981, -0.884516179561615, -0.32413432002067566], 3)
    """

    def __new__(cls, seed: int, offset: int = 0, time_major: bool = False):
        if int(offset) < 0:
            raise ValueError(f"a random stream's offset must be >= 0, got {offset}")
        self = super().__new__(cls, seed)
        self._offset = int(offset)
        self.time_major = bool(time_major)
        self._handle: torch.Generator | None = None
        return self

    def _engine(self) -> _Engine:
        if self._handle is None:
            with _MAKING:
                if self._handle is None:
                    rng = _mt.MT19937_64(int(self))
                    rng.discard(self._offset)
                    self._handle = _handle_of(_Engine(rng, self._offset))
        return _engine_of(self._handle)

    def handle(self) -> torch.Generator:
        """The CPU generator that stands for this stream's engine in the draws' operators."""
        self._engine()
        return self._handle

    def position(self) -> int:
        """CNTK's count of the values the stream drew since its seed (its ``rngOffset``);
        known however far it drew (a torch stream's is found by drawing its numbers again)."""
        return self._offset if self._handle is None else self._engine().count

    def state(self) -> str:
        """The seed, the count, ``time_major`` and the engine's state, as text
        (:meth:`RandomStream.restored` reads it)."""
        engine = self._engine()
        with engine.lock:
            words = np.concatenate([np.array([int(self), engine.count, int(self.time_major)],
                                             np.uint64), engine.rng.state()])
        return _STATE_PREFIX + words.astype("<u8").tobytes().hex()

    @classmethod
    def restored(cls, seed: int, state: str) -> "CNTKStream":
        """The stream of ``seed`` whose engine is in ``state`` (:meth:`state`'s); a ValueError
        where ``state`` is not one.

        Example:
            >>> s = CNTKStream(5, offset=10)
            >>> CNTKStream.restored(5, s.state()).position()
            10
        """
        try:
            words = np.frombuffer(bytes.fromhex(state[len(_STATE_PREFIX):]), "<u8")
            if not state.startswith(_STATE_PREFIX) or len(words) < 3 or \
                    int(words[0]) != int(seed):
                raise ValueError
            rng = _mt.MT19937_64.from_state(words[3:])
        except (TypeError, ValueError):
            raise ValueError(f"not the state of a CNTK stream seeded {int(seed)}") from None
        stream = cls(seed, time_major=bool(words[2]))
        stream._handle = _handle_of(_Engine(rng, int(words[1])))
        return stream

    def mark_saved(self, position: int | None = None) -> None:
        """Record the stream's :meth:`position` (or ``position``) as where it stood at its
        last save: the offset its Function shows and a copy starts from."""
        self._saved_at = self.position() if position is None else int(position)

    def saved_offset(self) -> int:
        """Where the stream stood at its last save, else the offset it was made with."""
        return self._offset if self._saved_at is None else self._saved_at

    def for_operand(self, operand) -> "CNTKStream":
        """This stream set to draw for an op on ``operand`` (a Variable) as CNTK 2.7 draws:
        time step by time step (:attr:`time_major`) where it has a sequence axis.  Returns
        the stream.

        Example:
            >>> from stadyn.graph import sequence_input
            >>> CNTKStream(1).for_operand(sequence_input((2,))).time_major
            True
        """
        self.time_major = getattr(operand, "sequence_lengths", None) is not None
        return self

    def rewind(self) -> None:
        """Move this stream back to where a copy would start (:meth:`saved_offset`), in place:
        the engine CNTK 2.7 gives an op's node when it builds its network again.

        Example:
            >>> import numpy as np, stadyn as sd, stadyn.functions as F
            >>> s = CNTKStream(5)
            >>> with sd.auto_forward():
            ...     _ = F.rand_like(sd.Variable.from_numpy_array(np.zeros(3)), seed=s)
            >>> before = s.position(); s.rewind()
            >>> before, s.position()
            (3, 0)
        """
        offset = self.saved_offset()
        if self._handle is None:
            self._offset = offset
            return
        rng = _mt.MT19937_64(int(self))
        rng.discard(offset)
        engine = self._engine()         # (its handle stays: the kernels may hold it)
        with engine.lock:
            engine.rng, engine.count, engine.computed = rng, offset, None

    def restarted(self) -> "CNTKStream":
        """A stream of its own for a copy of the op: the seed moved on by the offset of the
        last save (:meth:`saved_offset`), as CNTK 2.7's clone makes the copy's engine."""
        return CNTKStream(int(self), self.saved_offset(), self.time_major)

    def __reduce__(self):
        return (_unpickled, (int(self), self.state(), self._offset, self._saved_at))


def _unpickled(seed: int, state: str, offset: int, saved_at: int | None) -> CNTKStream:
    stream = CNTKStream.restored(seed, state)
    stream._offset = int(offset)
    if saved_at is not None:
        stream.mark_saved(saved_at)
    return stream


# ---------------------------------------------------------------------------------------------
# The draws
# ---------------------------------------------------------------------------------------------
_KINDS = ("uniform", "normal", "gumbel", "mask")


def _values(kind: str, rng: _mt.MT19937_64, a: float, b: float, count: int,
            double: bool) -> tuple[np.ndarray, int]:
    """The doubles of one draw and CNTK's count of it."""
    if kind == "uniform":
        return _dist.uniform_doubles(rng, count, a, b), count
    if kind == "normal":
        return _dist.normal_draw(rng, count, a, b), _dist.normal_count(count)
    if kind == "gumbel":
        return _dist.gumbel_doubles(rng, count, a, b, exact=double), count
    return _dist.mask_doubles(rng, count, a), count


def _draw_impl(kind: int, a: float, b: float, shape: list[int], dtype: torch.dtype,
               generator: torch.Generator) -> torch.Tensor:
    engine = _engine_of(generator)
    count = math.prod(shape)
    with engine.lock:
        values, counted = _values(_KINDS[kind], engine.rng, a, b, count, dtype == torch.float64)
        engine.count += counted
    return torch.from_numpy(values.reshape(tuple(shape))).to(dtype)


def _engine_op(qualname: str, schema: str, impl, fake):
    """The operator ``qualname``: a draw from the engine of its ``Generator`` argument, tagged
    ``nondeterministic_seeded`` as torch's own random operators are."""
    return kernel_op(qualname, schema, impl, fake,
                     tags=(torch.Tag.nondeterministic_seeded,))


# the schema of the operators that draw classes by weight
_SAMPLING_SCHEMA = ("(Tensor weights, int num_samples, bool allow_duplicates, "
                    "Generator generator) -> Tensor")


def _draw_fake(kind: int, a: float, b: float, shape: list[int], dtype: torch.dtype,
               generator: torch.Generator) -> torch.Tensor:
    return torch.empty(tuple(shape), dtype=dtype)


_cntk_draw = _engine_op("stadyn_kernels::cntk_draw",
                        "(int kind, float a, float b, int[] shape, ScalarType dtype, "
                        "Generator generator) -> Tensor", _draw_impl, _draw_fake)


def _in(dtype: torch.dtype, value: float) -> float:
    """An argument as CNTK's node of ``dtype`` holds it (rounded to float32 in a float32
    node; its draws then compute in double)."""
    return float(value) if dtype == torch.float64 else float(np.float32(value))


def cntk_draw(kind: str, a: float, b: float, shape, dtype: torch.dtype, stream: CNTKStream,
              device=None) -> torch.Tensor:
    """A tensor of ``shape`` and ``dtype`` (float32 or float64) drawn as CNTK 2.7's CPU node
    draws it from ``stream``: ``kind`` ``"uniform"`` (on ``[a, b)``), ``"normal"`` (mean
    ``a``, standard deviation ``b``), ``"gumbel"`` (location ``a``, scale ``b``), ``"bernoulli"``
    (1 with probability ``a``) or ``"dropout"`` (a mask of 0 where a value is dropped with
    probability ``a``, else 1); on ``device`` (the CPU's numbers; on ``"meta"``, as a shape
    pass asks, an empty tensor, the stream left as it was).  A ``time_major`` stream
    draws ``shape``'s first two axes (batch, time) time step by time step, as CNTK does.

    Example:
        >>> import torch
        >>> cntk_draw("dropout", 0.5, 0.0, (6,), torch.float32, CNTKStream(7)).tolist()
        [1.0, 1.0, 0.0, 1.0, 0.0, 0.0]
    """
    if kind == "bernoulli":     # CNTK: a mask dropping with probability 1 - mean, kept as 1
        kind, a = "mask", _in(dtype, 1.0 - _in(dtype, a))
    elif kind == "dropout":
        kind, a = "mask", _in(dtype, a)
    else:
        a, b = _in(dtype, a), _in(dtype, b)
    shape = [int(s) for s in shape]
    if device is not None and torch.device(device).type == "meta":
        return torch.empty(shape, dtype=dtype, device="meta")   # (a shape pass: no draw)
    swap = stream.time_major and len(shape) >= 2
    drawn = [shape[1], shape[0], *shape[2:]] if swap else shape
    out = _cntk_draw(_KINDS.index(kind), a, b, drawn, dtype, stream.handle())
    if swap:
        out = out.transpose(0, 1).contiguous()
    return out if device is None else out.to(device)


def _sample_impl(weights: torch.Tensor, num_samples: int, allow_duplicates: bool,
                 generator: torch.Generator) -> torch.Tensor:
    engine = _engine_of(generator)
    w = weights.detach().cpu().numpy()
    with engine.lock:
        picks, tries = _dist.sample_classes(engine.rng, w, num_samples, allow_duplicates)
        engine.count += tries
    return torch.from_numpy(picks)


def _sample_fake(weights: torch.Tensor, num_samples: int, allow_duplicates: bool,
                 generator: torch.Generator) -> torch.Tensor:
    return torch.empty((int(num_samples),), dtype=torch.int64)


_cntk_sample = _engine_op("stadyn_kernels::cntk_sample", _SAMPLING_SCHEMA, _sample_impl,
                          _sample_fake)


def cntk_sample(weights: torch.Tensor, num_samples: int, allow_duplicates: bool,
                stream: CNTKStream) -> torch.Tensor:
    """The classes (int64, on the weights' device) CNTK 2.7's ``RandomSample`` draws from
    ``stream`` by ``weights`` (a vector): ``num_samples`` of them, distinct unless
    ``allow_duplicates``.

    Example:
        >>> import torch
        >>> w = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0])
        >>> cntk_sample(w, 3, True, CNTKStream(3)).tolist()   # C.random_sample(w, 3, True, seed=3)
        [3, 1, 3]
    """
    if weights.device.type == "meta":                      # (a shape pass: no draw)
        return torch.empty((int(num_samples),), dtype=torch.int64, device="meta")
    picks = _cntk_sample(weights, int(num_samples), bool(allow_duplicates), stream.handle())
    return picks.to(weights.device)


def _frequency_impl(weights: torch.Tensor, num_samples: int, allow_duplicates: bool,
                    generator: torch.Generator) -> torch.Tensor:
    engine = _engine_of(generator)
    w = weights.detach().cpu().numpy()
    key = (w.tobytes(), w.dtype.str, int(num_samples), bool(allow_duplicates))
    with engine.lock:
        if engine.computed is None or engine.computed[0] != key:
            values, tries = _dist.inclusion_frequencies(engine.rng, w, num_samples,
                                                        allow_duplicates)
            engine.count += tries
            engine.computed = (key, values)
        values = engine.computed[1]
    return torch.from_numpy(values.copy())


def _frequency_fake(weights: torch.Tensor, num_samples: int, allow_duplicates: bool,
                    generator: torch.Generator) -> torch.Tensor:
    return torch.empty((weights.shape[0],), dtype=torch.float64)


_cntk_frequency = _engine_op("stadyn_kernels::cntk_inclusion_frequency", _SAMPLING_SCHEMA,
                             _frequency_impl, _frequency_fake)


def cntk_inclusion_frequency(weights: torch.Tensor, num_samples: int, allow_duplicates: bool,
                             stream: CNTKStream) -> torch.Tensor:
    """CNTK 2.7's ``RandomSampleInclusionFrequency`` of ``weights`` (a vector) with
    ``stream``'s engine (float64, on the weights' device): how often each class is expected
    among :func:`cntk_sample`'s ``num_samples``, from CNTK's estimate of the tries a set takes
    (ten samplings, drawn from the stream); computed again only when the weights (or the
    arguments) change, as CNTK's node is, else the last values.

    Example:
        >>> import torch
        >>> w = torch.tensor([1.0, 2.0, 3.0, 4.0, 0.0, 10.0])
        >>> s = CNTKStream(1)
        >>> f = cntk_inclusion_frequency(w, 3, False, s)
        >>> [round(v, 6) for v in f.tolist()], s.position()
        ([0.234116, 0.421823, 0.570485, 0.686622, 0.0, 0.972795], 52)
    """
    if weights.device.type == "meta":                      # (a shape pass: no draw)
        return torch.empty((weights.shape[0],), dtype=torch.float64, device="meta")
    values = _cntk_frequency(weights, int(num_samples), bool(allow_duplicates), stream.handle())
    return values.to(weights.device)
