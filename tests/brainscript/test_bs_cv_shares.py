"""Each worker's share of a distributed cvReader in each validation pass, as CNTK 2.7's reader
gives it (share_refs.json, made by tests/fixtures/bs_cv_passes/make_share_refs.py, which says
why).

cntk.exe's workers set their cvReader back to epoch 0 before each pass; with a nonzero
``randomizationSeed`` a share's later passes can read another order, and another number of
minibatches, than its first.  ``Final Results: Minibatch[1-M+1]`` counts M, the most minibatches
a share gives in that pass (seed 11, 3 workers: 9 in the first pass, 8 in the later ones).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stadyn import io
from stadyn.brainscript import parse_config, reader_config
from stadyn.brainscript._command_network import SharedMinibatches
from stadyn.brainscript._readers import make_source
from bs_pass_configs import ctf_reader, sequences_ctf

FIXTURES = Path(__file__).parents[1] / "fixtures" / "bs_cv_passes"
REFS = json.loads((FIXTURES / "refs.json").read_text())
SHARES = json.loads((FIXTURES / "share_refs.json").read_text())["shares"]


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cv_shares") / "seqs.ctf"
    path.write_text(sequences_ctf(REFS["lengths"], lambda k: k, lambda t: t))
    return path


def _reader(path: Path, seed: int):
    text = ctf_reader(path, window=REFS["window_chunks"], chunk=REFS["chunk_bytes"], seed=seed)
    return reader_config(parse_config(f"cv = {{ {text} }}")["cv"])


@pytest.mark.parametrize("key", sorted(SHARES))
def test_each_share_reads_cntks_order_in_each_pass(data, key):
    seed, workers = map(int, key.split("/"))
    for rank, passes in enumerate(SHARES[key]):
        src = make_source(_reader(data, seed), max_sweeps=1, evaluating=True, set_back=True)
        start = src.get_checkpoint_state()
        got = []
        for p in range(len(passes)):
            if p:
                src.restore_from_checkpoint(start)
            ids, samples = [], []
            for mb in iter(lambda: src.next_minibatch(REFS["minibatch"],
                                                      num_data_partitions=workers,
                                                      partition_index=rank), {}):
                ids += [int(s[0][0]) for s in mb["x"].as_sequences()]
                samples.append(mb["x"].num_samples)
            got.append({"ids": ids, "samples": samples})
        src.close()
        assert got == passes, (key, rank)


@pytest.mark.parametrize("key", sorted(SHARES))
def test_the_longest_share_is_counted_in_each_pass_as_cntk(data, key):
    seed, workers = map(int, key.split("/"))
    expected = [max(len(share[p]["samples"]) for share in SHARES[key])
                for p in range(len(SHARES[key][0]))]
    shares = SharedMinibatches(_reader(data, seed), workers, evaluating=True)
    # (one pass more than the refs: the later passes' count is read once and kept)
    got = [shares.most(REFS["minibatch"]) for _ in range(len(expected) + 1)]
    shares.close()
    assert got == expected + expected[-1:]
    if key == "11/3":
        assert expected == [9, 8, 8]      # the case the first pass's order would miscount


def test_shares_are_counted_without_reading_as_reading_counts_them(data):
    # (io.count_minibatches walks the lengths: each share, each pass after a set back, other
    # minibatch sizes than the refs', gives the count next_minibatch's reading gives)
    for seed, workers, size in ((11, 3, 3), (0, 2, 7), (5, 3, 1)):
        for rank in range(workers):
            sources = [make_source(_reader(data, seed), max_sweeps=1, evaluating=True,
                                   set_back=True) for _ in range(2)]
            starts = [s.get_checkpoint_state() for s in sources]
            got = []
            for _ in range(2):        # (the first pass; the later ones read alike)
                read, counted = sources
                for s, start in zip(sources, starts):
                    s.restore_from_checkpoint(start)
                n = sum(1 for _ in iter(lambda: read.next_minibatch(
                    size, num_data_partitions=workers, partition_index=rank), {}))
                got.append((n, io.count_minibatches(counted, size, workers, rank)))
            for s in sources:
                s.close()
            assert all(a == b for a, b in got), (seed, workers, size, rank, got)
