"""libstdc++'s random distributions over ``std::mt19937``, as NNabla 1.39's CPU kernels draw.

NNabla's random functions (``F.dropout``, ``F.rand``, ``F.randn``, ``F.randint``) draw from a
``std::mt19937``: the global one (``nn.seed(n)`` makes it ``std::mt19937(n)``) for
``seed=-1``, else one the function seeds with its own ``seed`` when it is set up.  A torch CPU
generator is the same engine (``manual_seed(n)`` seeds it as ``std::mt19937(n)`` is seeded), so
a :class:`torch.Generator` carries the state here: :func:`take_words` reads its 624 words and
position, draws 32-bit numbers with NumPy's ``MT19937`` (the same recurrence, in C) and writes
the advanced state back.  The distributions are those of the libstdc++ NNabla 1.39 was built
with (GCC 6.5, named in ``libnnabla.so``'s ``.comment``):

- ``generate_canonical<float, 24>``: one number ``w``, ``float(w) / 2**32`` (``float(w)``
  rounded to nearest), 1 replaced by the float below it;
- ``generate_canonical<double, 53>``: two numbers ``w0, w1``, ``(w0 + w1 * 2**32) / 2**64``
  (the sum rounded to a double);
- ``bernoulli_distribution(p)``: ``canonical double < p``;
- ``uniform_real_distribution<float>(a, b)``: ``canonical float * (b - a) + a`` in floats;
- ``normal_distribution<float>(mean, stddev)``: Marsaglia's polar method, pairs
  ``x, y = 2u - 1`` redrawn while ``r2 = x*x + y*y`` is ``> 1`` or ``0``, ``y * m`` returned and
  ``x * m`` kept for the next call (``m = sqrt(-2 log(r2) / r2)``), each times ``stddev`` plus
  ``mean``; NNabla makes a new distribution per forward, so the kept value of an odd count is
  dropped;
- ``uniform_int_distribution<int>(a, b)``: ``scale = (2**32 - 1) // (b - a + 1)``, a number
  redrawn while ``>= scale * (b - a + 1)``, then ``a + w // scale`` (GCC 11 and later divide
  otherwise).

``log`` is taken in double precision and rounded to float (the correctly rounded ``logf``;
glibc's ``logf`` is within 0.82 ulp, so a rare ``F.randn`` value may differ from NNabla's in its
last bit).

Example:
    >>> import torch
    >>> g = torch.Generator().manual_seed(5489)
    >>> take_words(g, 2).tolist()          # std::mt19937's first numbers for its default seed
    [3499211612, 581869302]
"""

from __future__ import annotations

import functools
import math
import threading

import numpy as np
import torch

__all__ = ["STATE_BYTES", "take_words", "skip_words", "words_drawn", "canonical_floats",
           "canonical_doubles", "bernoulli", "uniform_floats", "normal_floats", "uniform_ints",
           "weighted_choices", "erased_boxes", "WordSource", "NormalDoubles",
           "augmentation_draws"]

# torch's CPU generator state (CPUGeneratorImplState): the seed (u64), ``left`` (i32),
# ``seeded`` (i32), ``next`` (u64), then the 624 words, each in a u64.
_LEFT, _NEXT, _WORDS = 8, 16, 24


STATE_BYTES = 5056       # the size of a torch CPU generator's state (get_state())
_ENGINES = threading.local()


def _numpy_engine(generator: torch.Generator):
    state = generator.get_state().numpy().copy()
    if state.size != STATE_BYTES or generator.device.type != "cpu":
        raise RuntimeError(f"NNabla's random numbers need a torch CPU generator whose state is "
                           f"the {STATE_BYTES} bytes of torch 2's mt19937 layout; this one "
                           f"({generator.device}) has {state.size}")
    left = int(state[_LEFT:_LEFT + 4].view(np.int32)[0])
    nxt = int(state[_NEXT:_NEXT + 8].view(np.uint64)[0])
    key = state[_WORDS:_WORDS + 624 * 8].view(np.uint64).astype(np.uint32)
    engine = getattr(_ENGINES, "engine", None)
    if engine is None:      # made once a thread: a new one seeds itself from the OS (~0.1 ms)
        engine = _ENGINES.engine = np.random.MT19937(0)
    engine.state = {"bit_generator": "MT19937",
                    "state": {"key": key, "pos": 624 if left == 1 else nxt}}
    return engine, state


def _store(generator: torch.Generator, engine, state: np.ndarray) -> None:
    now = engine.state["state"]
    pos = int(now["pos"])
    state[_WORDS:_WORDS + 624 * 8] = np.asarray(now["key"], np.uint64).view(np.uint8)
    state[_LEFT:_LEFT + 4] = np.array([625 - pos], np.int32).view(np.uint8)
    state[_NEXT:_NEXT + 8] = np.array([pos], np.uint64).view(np.uint8)
    generator.set_state(torch.from_numpy(state))


def _words_of(engine):
    """A function giving ``engine``'s next ``count`` numbers as a uint32 array.  A NumPy
    ``Generator``'s ``integers`` over the whole uint32 range returns the engine's numbers
    themselves (one each, in order: NumPy's ``next_uint32``), written as uint32, which is
    three times as fast as ``random_raw``'s uint64 made uint32."""
    generator = getattr(_ENGINES, "generator", None)
    if generator is None or generator.bit_generator is not engine:
        generator = _ENGINES.generator = np.random.Generator(engine)
    return functools.partial(generator.integers, 0, 1 << 32, dtype=np.uint32)


class WordSource:
    """The 32-bit numbers of a torch CPU generator (``None``: torch's default one), drawn in
    order; :meth:`close` writes the advanced state back.  ``with WordSource(g) as take:``."""

    def __init__(self, generator: torch.Generator | None):
        self.generator = torch.default_generator if generator is None else generator
        self.engine, self.state = _numpy_engine(self.generator)
        self.words = _words_of(self.engine)

    def __call__(self, count: int) -> np.ndarray:
        if count <= 0:
            return np.zeros(0, np.uint32)
        return self.words(int(count))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _store(self.generator, self.engine, self.state)


def take_words(generator: torch.Generator | None, count: int) -> np.ndarray:
    """The next ``count`` numbers of ``generator`` (``std::mt19937``'s ``operator()``)."""
    with WordSource(generator) as take:
        return take(count)


def skip_words(generator: torch.Generator, count: int) -> None:
    """Advance ``generator`` by ``count`` 32-bit numbers (drawn and dropped in blocks, so a
    long skip holds little memory).

    Example:
        >>> import torch
        >>> a, b = torch.Generator().manual_seed(5489), torch.Generator().manual_seed(5489)
        >>> skip_words(a, 1000); bool((take_words(a, 3) == take_words(b, 1003)[1000:]).all())
        True
    """
    left = int(count)
    if left <= 0:
        return
    with WordSource(generator) as take:
        while left > 0:
            step = min(left, _SEARCH_BLOCK)
            take(step)
            left -= step


_SEARCH_BLOCK = 624 * 1024     # numbers drawn at once while skipping or searching (4 MiB)


def _tempered(words: np.ndarray) -> np.ndarray:
    """``std::mt19937``'s output of state words (its tempering)."""
    y = words.astype(np.uint32)
    y ^= y >> np.uint32(11)
    y ^= (y << np.uint32(7)) & np.uint32(0x9D2C5680)
    y ^= (y << np.uint32(15)) & np.uint32(0xEFC60000)
    return y ^ (y >> np.uint32(18))


def words_drawn(generator: torch.Generator, seed: int, limit: int = 1 << 30,
                since: tuple[int, torch.Tensor] | None = None) -> int | None:
    """How many 32-bit numbers ``generator`` (a torch CPU generator) has given since
    ``manual_seed(seed)``: where it stands in that seed's sequence.  Found by drawing the
    sequence again (the block of 624 numbers whose first ones are the tempered words of the
    generator's state, then its position in the block), from the seed or from ``since`` -- a
    position found before and the generator's state there (``get_state()``) -- up to ``limit``
    numbers on (about 10 ns each); None where the state is not found so (not on that
    sequence, or farther on).  What torch keeps of a normal pair outside the engine is no part
    of the position.

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(7)
        >>> words_drawn(g, 7), (take_words(g, 1300), words_drawn(g, 7))[1], words_drawn(g, 8)
        (0, 1300, None)
        >>> here = (1300, g.get_state()); _ = take_words(g, 5)
        >>> words_drawn(g, 7, since=here), words_drawn(g, 7, limit=1000, since=here)
        (1305, 1305)
    """
    state = generator.get_state().numpy()
    if state.size != STATE_BYTES or generator.device.type != "cpu":
        return None
    if since is None:
        start, replay = 0, torch.Generator().manual_seed(int(seed))
    else:
        start, replay = int(since[0]), torch.Generator()
        replay.set_state(since[1])
    known = replay.get_state().numpy()
    if np.array_equal(state[_WORDS:_STATE_END], known[_WORDS:_STATE_END]) and \
            np.array_equal(state[_LEFT:_WORDS], known[_LEFT:_WORDS]):
        return start
    position = int(state[_NEXT:_NEXT + 8].view(np.uint64)[0])      # in its block, 1..624
    if not 1 <= position <= 624:
        return None
    here = int(known[_NEXT:_NEXT + 8].view(np.uint64)[0])
    if np.array_equal(state[_WORDS:_STATE_END], known[_WORDS:_STATE_END]):
        return start + position - here if position >= here else None    # the replay's block
    key = state[_WORDS:_STATE_END].view(np.uint64).astype(np.uint32)
    wanted = _tempered(key[:4])
    with WordSource(replay) as take:
        # to the end of the replay's block: the numbers after it come a block at a time
        left = int(known[_LEFT:_LEFT + 4].view(np.int32)[0])
        first = left - 1
        take(first)
        drawn = start + first        # numbers given up to the start of the next block
        while drawn - start < limit:
            blocks = take(_SEARCH_BLOCK).reshape(-1, 624)
            hits = np.flatnonzero((blocks[:, :4] == wanted).all(axis=1))
            for hit in hits:
                if np.array_equal(_tempered(key), blocks[hit]):
                    return drawn + int(hit) * 624 + position
            drawn += blocks.shape[0] * 624
    return None


_STATE_END = _WORDS + 624 * 8        # then the normal values torch keeps


def canonical_floats(words: np.ndarray) -> np.ndarray:
    """``generate_canonical<float, 24>`` of one number each."""
    u = words.astype(np.float32) * np.float32(2.0 ** -32)
    return np.where(u >= 1, np.nextafter(np.float32(1), np.float32(0)), u).astype(np.float32)


def canonical_doubles(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """``generate_canonical<double, 53>`` of two numbers each."""
    u = (first.astype(np.float64) + second.astype(np.float64) * 4294967296.0) * 2.0 ** -64
    return np.where(u >= 1, np.nextafter(1.0, 0.0), u)


def bernoulli(take, p: float, count: int) -> np.ndarray:
    """``count`` draws of ``bernoulli_distribution(p)`` (bool), two numbers each.

    ``generate_canonical``'s sum ``w0 + w1 * 2**32`` rounded to a double is the 64-bit integer
    ``w1 << 32 | w0`` rounded to a double (both round the exact value once), so a draw is that
    integer rounded to a double against ``p * 2**64`` (exact); rounding keeps order, so that is
    the integer against the first integer whose double is not below ``p * 2**64``
    (:func:`_bernoulli_bound`), compared in uint64 a block at a time.  One rounded up to
    ``2**64`` (canonical value 1, replaced by the double below 1) is below ``p`` only for
    ``p = 1``; every draw is below a ``p`` above 1."""
    count = int(count)
    out = np.empty(count, bool)
    bound = None if float(p) >= 1.0 else np.uint64(_bernoulli_bound(float(p)))
    for at in range(0, count, _BLOCK):
        # each two numbers as one uint64, ``second << 32 | first`` (little-endian memory)
        joined = take(2 * min(_BLOCK, count - at)).astype(np.uint32, copy=False).view(np.uint64)
        if bound is None:
            out[at:at + joined.size] = True
        else:
            np.less(joined, bound, out=out[at:at + joined.size])
    return out


#: values drawn at a time by :func:`bernoulli` (its numbers then stay in the cache)
_BLOCK = 1 << 16


def _bernoulli_bound(p: float) -> int:
    """The least integer ``j`` whose double is ``>= p * 2**64`` (``0 <= p < 1``; 0 for a ``p``
    not above 0, NaN included): an integer ``w`` rounds below ``p * 2**64`` iff ``w < j``."""
    if not p > 0.0:
        return 0
    target = p * 2.0 ** 64
    low, high = 0, math.ceil(target)      # float(high) >= target: rounding keeps order
    while low < high:
        mid = (low + high) // 2
        if float(mid) >= target:
            high = mid
        else:
            low = mid + 1
    return low


def uniform_floats(take, low: float, high: float, count: int) -> np.ndarray:
    """``count`` draws of ``uniform_real_distribution<float>(low, high)``."""
    a, b = np.float32(low), np.float32(high)
    return (canonical_floats(take(count)) * (b - a) + a).astype(np.float32)


def normal_floats(take, mean: float, stddev: float, count: int) -> np.ndarray:
    """``count`` draws of one ``normal_distribution<float>(mean, stddev)`` (made for them)."""
    pairs = (int(count) + 1) // 2
    xs, ys = [], []
    while pairs > 0:   # ``pairs`` tries give at most ``pairs`` pairs: none is drawn too many
        w = take(2 * pairs).reshape(pairs, 2)
        x = np.float32(2) * canonical_floats(w[:, 0]) - np.float32(1)
        y = np.float32(2) * canonical_floats(w[:, 1]) - np.float32(1)
        r2 = x * x + y * y
        kept = (r2 <= 1) & (r2 != 0)
        xs.append(x[kept]), ys.append(y[kept])
        pairs -= int(kept.sum())
    x, y = np.concatenate(xs), np.concatenate(ys)
    r2 = x * x + y * y
    log = np.log(r2.astype(np.float64)).astype(np.float32)
    mult = np.sqrt(np.float32(-2) * log / r2)
    out = np.empty((x.size, 2), np.float32)
    out[:, 0], out[:, 1] = y * mult, x * mult
    return (out.reshape(-1)[:count] * np.float32(stddev) + np.float32(mean)).astype(np.float32)


def uniform_ints(take, low: int, high: int, count: int) -> np.ndarray:
    """``count`` draws of ``uniform_int_distribution<int>(low, high)`` (both included), as
    GCC 6's libstdc++ draws them (int64)."""
    span = int(high) - int(low) + 1
    if span > 0xFFFFFFFF:
        return (take(count).astype(np.int64) + int(low)).astype(np.int64)
    scale = 0xFFFFFFFF // span
    past = span * scale
    out = []
    need = int(count)
    while need > 0:    # ``need`` draws keep at most ``need``: none is drawn too many
        w = take(need)
        w = w[w < past]
        out.append(w.astype(np.int64) // scale + int(low))
        need -= w.size
    return np.concatenate(out) if out else np.zeros(0, np.int64)


def weighted_choices(take, weights: np.ndarray, count: int, replace: bool) -> np.ndarray:
    """The positions NNabla 1.39's ``RandomChoice`` CPU kernel draws (random_choice.cpp):
    ``count`` per row of ``weights`` (rows in order, float32).  Each draw is
    ``uniform_real_distribution<double>(0, total)`` (two numbers) rounded to float, ``total``
    the float running sum's last value, the position the first whose running sum exceeds it
    (the last if none does).  Without replacement a drawn position's weight becomes 0 and the
    draws still missing are drawn again from the new sums (a draw landing on a 0 weight is
    lost).  Returns int64 ``(rows, count)``."""
    weights = np.asarray(weights, np.float32)
    out = np.zeros((weights.shape[0], int(count)), np.int64)
    for b, row in enumerate(weights):
        if replace:
            sums = np.cumsum(row, dtype=np.float32)
            w = take(2 * int(count)).reshape(-1, 2)
            u = (canonical_doubles(w[:, 0], w[:, 1]) * float(sums[-1])).astype(np.float32)
            out[b] = np.minimum(np.searchsorted(sums, u, side="right"), row.size - 1)
            continue
        left, have = row.copy(), 0
        while have < count:
            sums = np.cumsum(left, dtype=np.float32)
            w = take(2 * (int(count) - have)).reshape(-1, 2)
            u = (canonical_doubles(w[:, 0], w[:, 1]) * float(sums[-1])).astype(np.float32)
            for at in np.searchsorted(sums, u, side="right").tolist():
                if at < row.size and left[at] > 0:
                    out[b, have] = at
                    left[at] = 0
                    have += 1
    return out


def erased_boxes(take, shape, prob: float, area_ratios, aspect_ratios, replacements, n: int,
                 share: bool) -> tuple[np.ndarray, np.ndarray]:
    """What NNabla 1.39's ``RandomErase`` CPU kernel draws (random_erase.cpp) for images of
    ``shape`` ``(B, C, H, W)``: ``(values, erased)``, float32 and bool of that shape.  First,
    for every try ``n``, image and (``share=False``) channel, a box: its area ``Se`` (a float
    draw from ``area_ratios`` times ``H * W``), ratio ``Re`` (from ``aspect_ratios``), height
    and width ``size_t(sqrtf(Se * Re))``, ``size_t(sqrtf(Se / Re))`` (at most ``H``, ``W``), a
    probability draw, then the top and left corners (``uniform_int_distribution`` over the
    positions that fit); then, try by try and image by image, every pixel of an erased box
    (rows and columns to the box's end inclusive), channel by channel in raster order, takes a
    float draw from ``replacements`` (a later try overwriting an earlier one)."""
    b_count, channels, height, width = (int(v) for v in shape)
    f = np.float32
    (a0, a1), (r0, r1), (v0, v1) = area_ratios, aspect_ratios, replacements
    per_image = 1 if share else channels
    boxes = []
    for _ in range(int(n) * b_count * per_image):
        se = f(uniform_floats(take, a0, a1, 1)[0] * f(height * width))
        re = uniform_floats(take, r0, r1, 1)[0]
        box_h = min(int(np.sqrt(f(se * re))), height)
        box_w = min(int(np.sqrt(f(se / re))), width)
        eprob = uniform_floats(take, 0.0, 1.0, 1)[0]
        top = int(uniform_ints(take, 0, height - box_h, 1)[0])
        left = int(uniform_ints(take, 0, width - box_w, 1)[0])
        boxes.append((eprob, top, left, top + box_h, left + box_w))
    values = np.zeros((b_count, channels, height, width), np.float32)
    erased = np.zeros(values.shape, bool)
    at = 0
    for _ in range(int(n)):
        for b in range(b_count):
            mine = boxes[at:at + per_image]
            at += per_image
            for c in range(channels):
                eprob, top, left, bottom, right = mine[0 if share else c]
                if not eprob <= f(prob):
                    continue
                rows = slice(top, min(bottom, height - 1) + 1)
                cols = slice(left, min(right, width - 1) + 1)
                cells = values[b, c, rows, cols]
                values[b, c, rows, cols] = uniform_floats(take, v0, v1, cells.size).reshape(
                    cells.shape)
                erased[b, c, rows, cols] = True
    return values, erased


class NormalDoubles:
    """One ``normal_distribution<double>(0, 1)`` kept across calls (its second value of a pair
    saved for the next call): :meth:`draw` gives the next ``count`` values (float64), each pair
    from four numbers (two ``generate_canonical<double, 53>``), by Marsaglia's polar method as
    :func:`normal_floats` describes."""

    def __init__(self):
        self.saved: float | None = None

    def draw(self, take, count: int) -> np.ndarray:
        out = np.empty(int(count), np.float64)
        at = 0
        if count > 0 and self.saved is not None:
            out[0], self.saved, at = self.saved, None, 1
        pairs = (int(count) - at + 1) // 2
        xs, ys = [], []
        while pairs > 0:   # ``pairs`` tries give at most ``pairs`` pairs: none is drawn too many
            w = take(4 * pairs).reshape(pairs, 4)
            x = 2.0 * canonical_doubles(w[:, 0], w[:, 1]) - 1.0
            y = 2.0 * canonical_doubles(w[:, 2], w[:, 3]) - 1.0
            r2 = x * x + y * y
            kept = (r2 <= 1.0) & (r2 != 0.0)
            xs.append(x[kept]), ys.append(y[kept])
            pairs -= int(kept.sum())
        if xs:
            x, y = np.concatenate(xs), np.concatenate(ys)
            r2 = x * x + y * y
            mult = np.sqrt(-2.0 * np.log(r2) / r2)
            both = np.stack([y * mult, x * mult], axis=1).reshape(-1)
            out[at:] = both[:out.size - at]
            if both.size > out.size - at:
                self.saved = float(both[-1])
        return out


def augmentation_draws(take, images: int, channels: int, pixels: int, brightness_each: bool,
                       contrast_each: bool, noise: float):
    """What NNabla 1.39's ``ImageAugmentation`` CPU kernel draws (image_augmentation.cpp, one
    thread), image by image: nine steps ``(w % 1001) * 0.001f`` -- scale, aspect, angle, the
    crop's x and y, then (after the two flips' ``w % 2``) brightness and contrast, then per
    channel a brightness (``brightness_each``) and a contrast (``contrast_each``) step, then
    distortion and the noise's standard deviation --, then, when that deviation
    (``step * noise``) is above 0, a ``normal_distribution<double>`` value per output pixel
    and channel (rows, columns, channels: its order), the distribution kept across images.
    Returns ``(steps (images, 9), flips (images, 2) bool, each (images, channels, 2), normals
    (images, channels, pixels) float64, of no pixels without noise)``; ``steps`` columns:
    scale, aspect, angle, x, y, brightness, contrast, distortion, noise.  ``take``: a
    :class:`WordSource`."""
    f = np.float32
    per_image = 11 + int(channels) * (int(bool(brightness_each)) + int(bool(contrast_each)))
    normals = np.zeros((images, channels, pixels if float(noise) > 0 else 0), np.float64)
    norm = NormalDoubles()
    if float(noise) > 0:        # the normal draws follow each image's own: image by image
        rows = np.zeros((images, per_image), np.int64)
        for i in range(int(images)):
            rows[i] = take(per_image)
            if f((rows[i, -1] % 1001) * f(0.001)) * f(noise) > 0:
                normals[i] = norm.draw(take, int(pixels) * int(channels)).reshape(
                    int(pixels), int(channels)).T
    else:
        rows = take(int(images) * per_image).astype(np.int64).reshape(int(images), per_image)
    steps = np.zeros((images, 9), np.float32)
    steps[:, :5] = (rows[:, :5] % 1001).astype(np.float32) * f(0.001)
    flips = (rows[:, 5:7] % 2) == 1
    steps[:, 5:7] = (rows[:, 7:9] % 1001).astype(np.float32) * f(0.001)
    steps[:, 7:9] = (rows[:, -2:] % 1001).astype(np.float32) * f(0.001)
    drawn_each = int(bool(brightness_each)) + int(bool(contrast_each))
    per_channel = rows[:, 9:-2].reshape(int(images), int(channels), drawn_each)
    each = np.zeros((images, channels, 2), np.float32)
    k = 0
    for j, drawn in enumerate((brightness_each, contrast_each)):
        if drawn:
            each[:, :, j] = (per_channel[:, :, k] % 1001).astype(np.float32) * f(0.001)
            k += 1
    return steps, flips, each, normals
