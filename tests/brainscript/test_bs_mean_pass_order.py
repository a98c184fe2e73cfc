"""Training epoch 1's order after a pre-computing pass, as cntk.exe's (refs.json, made by CNTK
2.7's Python: tests/fixtures/bs_mean_pass_order/make_refs.py, which says why).

cntk.exe's ``Mean`` / ``InvStdDev`` / ``LogPrior`` pass reads the training reader's whole
sweep, then the first epoch sets that reader back to sample 0; with more chunks than the
randomization window the pass left chunks behind, so epoch 1's sequences are shuffled anew with
the seed 0 in place of ``randomizationSeed`` (SequenceRandomizer.cpp:281-288).  Epoch 2 (sweep
1) is ``randomizationSeed + 1``'s as always.  With a seed of 0 both orders are the same.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bs_pass_configs import ctf_reader, mean_pass_config, run_config, write_mean_pass_data

REFS = json.loads((Path(__file__).parents[1] / "fixtures" / "bs_mean_pass_order" /
                   "refs.json").read_text())


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return write_mean_pass_data(tmp_path_factory.mktemp("mean_pass"), REFS["lengths"])


def _train(data: Path, tmp_path: Path, seed: str, epoch_size: int, all_data: bool) -> str:
    reader = ctf_reader(data, window=REFS["window_chunks"], chunk=REFS["chunk_bytes"],
                        seed=int(seed))
    return run_config(mean_pass_config(REFS, reader, epoch_size=epoch_size, epochs=2,
                                       all_data=all_data), tmp_path)


# UseAllDataForPreComputedNode = false reads the first epochSize samples: with epochSize = 0
# a sweep too (cntk.exe's requestDataSize, SGD.cpp:2941-2944): the same pass
@pytest.mark.parametrize("epoch_size, all_data", [(0, True), ("sweep", True), (0, False)])
@pytest.mark.parametrize("seed", ["0", "11"])
def test_epochs_after_the_mean_pass_read_cntks_order(data, tmp_path, seed, epoch_size, all_data):
    ref = REFS["seeds"][seed]
    if seed != "0":     # (the case shows it: a reader read before gives another order)
        assert ref["epochs"][0]["ids"] != ref["unread_order"]
    sweep = sum(REFS["lengths"])
    text = _train(data, tmp_path, seed, sweep if epoch_size == "sweep" else 0, all_data)
    got = re.findall(r"^Finished Epoch\[ ?(\d) of 2\]: \[Training\] se = (\S+) \* (\d+);",
                     text, re.M)
    assert [int(e) for e, _, _ in got] == [1, 2], text
    assert [int(n) for _, _, n in got] == [e["samples"] for e in ref["epochs"]]
    assert [float(c) for _, c, _ in got] == pytest.approx(
        [e["criterion"] for e in ref["epochs"]], rel=2e-6), text
