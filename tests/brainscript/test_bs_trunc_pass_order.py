"""Training epochs after a pre-computing pass over a truncated reader (``truncated = true``), as
cntk.exe's (refs.json made by CNTK 2.7's Python: tests/fixtures/bs_trunc_pass_order/make_refs.py).

Unlike a sequence-packed reader's (test_bs_mean_pass_order.py), epoch 1 after a whole-sweep pass
reads ``randomizationSeed``'s order, the order of a reader not read before: the truncated packer
asks the randomizer for one more sequence once the sweep is given out
(TruncatedBpttPacker.cpp:373-414), which prepares sweep 1 (BlockRandomizer.cpp:254, 102-121),
so epoch 1's ``SetState(0)`` randomizes sweep 0 afresh with ``randomizationSeed + 0``
(BlockRandomizer.cpp:471-484) rather than ``SequenceRandomizer::Seek``'s ``Reset(0)``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bs_pass_configs import XY_INPUT, mean_pass_config, run_config, write_mean_pass_data

REFS = json.loads((Path(__file__).parents[1] / "fixtures" / "bs_trunc_pass_order" /
                   "refs.json").read_text())


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return write_mean_pass_data(tmp_path_factory.mktemp("trunc_pass"), REFS["lengths"])


def _train(data: Path, tmp_path: Path, seed: str, epoch_size: int, epochs: int) -> list:
    """``Finished Epoch`` lines: (epoch, criterion, samples)."""
    reader = (f"truncated = true ; truncationLength = {REFS['truncation']} ; "
              f"randomizationSeed = {seed} ; randomizationWindow = {REFS['window_chunks']} ; "
              "sampleBasedRandomizationWindow = false ; "
              'deserializers = ({ type = "CNTKTextFormatDeserializer" ; '
              f'module = "CNTKTextFormatReader" ; file = "{data}" ; '
              f"chunkSizeInBytes = {REFS['chunk_bytes']} ; {XY_INPUT} }})")
    log = run_config(mean_pass_config(REFS, reader, epoch_size=epoch_size, epochs=epochs,
                                      all_data=epoch_size == 0), tmp_path)
    got = re.findall(r"^Finished Epoch\[ ?(\d) of \d\]: \[Training\] se = (\S+) \* (\d+);",
                     log, re.M)
    return [(int(e), float(c), int(n)) for e, c, n in got]


@pytest.mark.parametrize("seed", ["0", "11"])
def test_epochs_after_a_truncated_pass_read_cntks_order(data, tmp_path, seed):
    # a whole sweep read (epochSize = 0): epoch 1 in randomizationSeed's order, as unread
    ref = REFS["seeds"][seed]
    assert REFS["unread"]["11"] == REFS["seeds"]["11"]
    got = _train(data, tmp_path, seed, 0, 2)
    assert [e for e, _, _ in got] == [1, 2]
    assert [n for _, _, n in got] == [e["samples"] for e in ref["epochs"]]
    assert [c for _, c, _ in got] == pytest.approx(
        [e["criterion"] for e in ref["epochs"]], rel=2e-6)


@pytest.mark.parametrize("seed", ["0", "11"])
def test_epoch_1_after_a_truncated_pass_of_one_epoch_reads_cntks_order(data, tmp_path, seed):
    # UseAllDataForPreComputedNode = false, epochSize < a sweep: the pass stops inside sweep 0,
    # past the window, so epoch 1 starts sweep 0 over with the seed 0 (make_refs.run)
    ref = REFS["part"][seed]
    if seed != "0":     # (the case shows it: a reader not read before gives another order)
        assert ref["epochs"][0]["criterion"] != pytest.approx(
            REFS["part_unread"][seed]["epochs"][0]["criterion"], rel=1e-4)
    got = _train(data, tmp_path, seed, REFS["part_epoch"], 1)
    assert [(e, n) for e, _, n in got] == [(1, ref["epochs"][0]["samples"])]
    assert got[0][1] == pytest.approx(ref["epochs"][0]["criterion"], rel=2e-6)
