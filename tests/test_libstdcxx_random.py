"""``stadyn._libstdcxx_random``'s draws against libstdc++'s own: ``bernoulli_distribution``
(NNabla's dropout masks) and a ``normal_distribution<double>`` kept across calls (NNabla's
image augmentation), as the C++ program ``tests/fixtures/libstdcxx_draws/draws.cpp`` printed
them over ``std::mt19937(7)``; and the bernoulli comparison at its rounding boundary against
the definition (``generate_canonical<double, 53>`` in Python's doubles)."""

from pathlib import Path

import numpy as np
import pytest
import torch

from stadyn import _libstdcxx_random as std

_REFERENCE = Path(__file__).parent / "fixtures" / "libstdcxx_draws" / "reference.txt"


def _reference():
    bernoulli, normal, following = [], [], None
    for line in _REFERENCE.read_text().splitlines():
        fields = line.split()
        if fields[0] == "normal":
            normal.append(np.array([float.fromhex(v) for v in fields[2:]]))
        elif fields[0] == "next":
            following = int(fields[1])
        else:
            count = int(fields[1])
            bits = np.unpackbits(np.frombuffer(bytes.fromhex(fields[2]), np.uint8))[:count]
            bernoulli.append((float.fromhex(fields[0]), bits.astype(bool), int(fields[3])))
    return bernoulli, normal, following


_BERNOULLI, _NORMAL, _NEXT = _reference()


@pytest.mark.parametrize("p, expected, following", _BERNOULLI,
                         ids=[repr(p) for p, _, _ in _BERNOULLI])
def test_bernoulli_draws_what_libstdcxx_draws(p, expected, following):
    with std.WordSource(torch.Generator().manual_seed(7)) as take:
        drawn = std.bernoulli(take, p, expected.size)
        np.testing.assert_array_equal(drawn, expected)
        assert int(take(1)[0]) == following      # two numbers a draw, none more


def test_normal_doubles_kept_across_calls_draw_what_libstdcxx_draws():
    normal = std.NormalDoubles()
    with std.WordSource(torch.Generator().manual_seed(7)) as take:
        for expected in _NORMAL:
            # log and sqrt of doubles: NumPy's may differ from glibc's in the last bit
            np.testing.assert_allclose(normal.draw(take, expected.size), expected,
                                       rtol=4e-16, atol=0)
        assert int(take(1)[0]) == _NEXT          # no number drawn past the last pair kept


@pytest.mark.parametrize("p", [0.5, 0.1, 1 / 3, 0.7, 1 - 2.0 ** -53, 2.0 ** -60, 3 * 2.0 ** -66,
                               0.123456789])
def test_bernoulli_at_the_rounding_boundary_is_generate_canonical_against_p(p):
    """Pairs of numbers whose 64-bit join lies within a few thousand of ``p * 2**64``, where
    rounding the join to a double decides the draw: each draw is
    ``(w0 + w1 * 2**32) / 2**64 < p`` computed in Python's doubles (libstdc++'s sum, rounded
    once; the canonical value 1 replaced by the double below it)."""
    centre = int(p * 2.0 ** 64)
    joins = [min(max(centre + d, 0), 2 ** 64 - 1) for d in range(-4096, 4096, 3)]
    joins += [0, 1, 2 ** 64 - 1, 2 ** 64 - 1024]
    words = np.array(joins, np.uint64).view(np.uint32)
    position = [0]

    def take(count):
        out = words[position[0]:position[0] + count]
        position[0] += count
        return out

    def canonical(join):
        u = (float(join & 0xFFFFFFFF) + float(join >> 32) * 4294967296.0) * 2.0 ** -64
        return u if u < 1.0 else np.nextafter(1.0, 0.0)

    expected = [canonical(j) < p for j in joins]
    assert any(expected) and not all(expected)
    np.testing.assert_array_equal(std.bernoulli(take, p, len(joins)), expected)
