"""LMSequenceReader's sentence order is cntk.exe's: each block of lines (``cacheBlockSize``
words) shuffled by ``std::shuffle`` with ``std::mt19937(++m_randomSeed)``, the seed set to the
epoch when it starts (SequenceReader.cpp, StartMinibatchLoop and GetMinibatchData).  The
orders are those the C++ program tests/fixtures/std_shuffle/std_shuffle.cpp printed
(reference.txt) with the real std::mt19937 and GCC 5's std::shuffle, CNTK 2.7's compiler."""

from __future__ import annotations

from pathlib import Path

import pytest

from stadyn import io
from test_bs_lm_truncated_bptt import lm_source
from test_bs_truncated_bptt import _Utterances

_REFERENCE = Path(__file__).parents[1] / "fixtures" / "std_shuffle" / "reference.txt"


def _cpp_order(n, seed):
    for line in _REFERENCE.read_text().splitlines():
        if line.startswith(f"gcc5 n={n} seed={seed}:"):
            return [int(v) for v in line.split(":", 1)[1].split()]
    raise KeyError((n, seed))


def _read(source, epoch, epoch_size=0):
    """The lengths of the sentences read, one a minibatch (distinct lengths, N = 1)."""
    source.start_epoch(epoch, epoch_size, 1000)
    out = []
    while mb := source.next_minibatch(1000):
        out += mb["x"].lengths.tolist()
    return out


@pytest.mark.parametrize("epoch", [0, 1, 2])
def test_an_epochs_order_is_std_shuffle_seeded_with_the_epoch_plus_one(epoch):
    # sentence k has k + 1 steps, so the lengths read give the order
    source = io.LMSentenceSource(_Utterances(range(1, 11)), 1)
    assert [n - 1 for n in _read(source, epoch)] == _cpp_order(10, epoch + 1)


def test_blocks_are_shuffled_one_after_the_other_with_the_next_seed():
    # sentences of 1..20 steps (2..21 words): blocks of 65 words are sentences 0-9 (65 words
    # after the tenth line), 10-14 (70) and 15-19, shuffled with seeds 1, 2 and 3 in epoch 0
    lengths = list(range(1, 21))
    order = [n - 1 for n in _read(io.LMSentenceSource(_Utterances(lengths), 1, block_words=65),
                                  0)]
    assert order == (_cpp_order(10, 1) + [10 + k for k in _cpp_order(5, 2)]
                     + [15 + k for k in _cpp_order(5, 3)])
    # a block ends once it holds block_words words or more: 64 cuts the same blocks (54 words
    # after 9 lines, 65 after 10); 66 takes an eleventh line into the first
    assert [n - 1 for n in _read(io.LMSentenceSource(_Utterances(lengths), 1, block_words=64),
                                 0)] == order
    wider = [n - 1 for n in _read(io.LMSentenceSource(_Utterances(lengths), 1, block_words=66),
                                  0)]
    assert sorted(wider[:11]) == list(range(11)) and wider[:11] == _cpp_order(11, 1)


def test_an_epoch_cut_by_its_size_has_cntk_exes_sample_count():
    # seed 1's order begins 6, 9, 7: 7 samples (<= 10, read on), then 10 more: 17 > 10 stops
    source = io.LMSentenceSource(_Utterances(range(1, 11)), 1)
    assert _read(source, 0, 10) == [7, 10]
    assert _read(source, 1, 10) == [4, 1, 2, 8]      # seed 2: 3, 0, 1, 7 -> 4+1+2 <= 10


def test_cache_block_size_reaches_the_source(tmp_path):
    # rnn.cntk's write command: "cacheBlockSize = 1  # workaround to disable randomization"
    # (every line a block of its own); without it, cntk.exe's 50000 words
    (tmp_path / "v.txt").write_text("0 9 </s> 0\n1 5 a 0\n2 3 b 1\n")
    (tmp_path / "t.txt").write_text("".join(f"</s> {'a ' * k}</s>\n" for k in range(1, 11)))

    def source(extra):
        return lm_source(tmp_path, extra, 3)

    def lengths(s):
        s.start_epoch(0, 0, 100)
        out = []
        while mb := s.next_minibatch(100):
            out += mb["words"].lengths.tolist()
        return out

    # sentence k (from 0) has k + 3 words, k + 2 steps
    assert lengths(source("cacheBlockSize = 1")) == list(range(2, 12))
    assert [n - 2 for n in lengths(source(""))] == _cpp_order(10, 1)
    with pytest.raises(Exception, match="'cacheBlockSize' must be a whole number >= 1"):
        source("cacheBlockSize = 0")
