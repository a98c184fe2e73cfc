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

import io
import json
import re
from pathlib import Path

import pytest

from stadyn.brainscript._runner import run

REFS = json.loads((Path(__file__).parents[1] / "fixtures" / "bs_trunc_pass_order" /
                   "refs.json").read_text())

CONFIG = """command = train
deviceId = -1
precision = "float"
train = {
    action = "train"
    modelPath = "$OutputDir$/m"
    BrainScriptNetworkBuilder = {
        x = Input {1}
        y = Input {1}
        w = ParameterTensor {1, initValue = 0.5}
        se = SquareError (y, w .* (x - Mean (x)))
        featureNodes = (x) ; labelNodes = (y) ; criterionNodes = (se)
    }
    SGD = { epochSize = @EPOCH@ ; minibatchSize = @MB@ ; learningRatesPerSample = @RATE@
          momentumPerMB = 0 ; maxEpochs = @EPOCHS@ ; UseAllDataForPreComputedNode = @ALL@ }
    reader = {
        truncated = true ; truncationLength = @TRUNC@
        randomizationSeed = @SEED@ ; randomizationWindow = @WINDOW@
        sampleBasedRandomizationWindow = false
        deserializers = ({ type = "CNTKTextFormatDeserializer" ; module = "CNTKTextFormatReader"
            file = "@DATA@" ; chunkSizeInBytes = @CHUNK@
            input = { x = { dim = 1 ; format = "dense" } ; y = { dim = 1 ; format = "dense" } } })
    }
}
"""


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("trunc_pass") / "seqs.ctf"
    path.write_text("".join(f"{k} |x {k / 4:g} |y {t - 1}\n"
                            for k, n in enumerate(REFS["lengths"]) for t in range(n)))
    return path


def _train(data: Path, tmp_path: Path, seed: str, epoch_size: int, epochs: int) -> list:
    """``Finished Epoch`` lines: (epoch, criterion, samples)."""
    config = tmp_path / "trunc.cntk"
    text = CONFIG
    for key, value in (("MB", REFS["minibatch"]), ("RATE", REFS["rate"]), ("SEED", seed),
                       ("EPOCH", epoch_size), ("EPOCHS", epochs),
                       ("ALL", str(epoch_size == 0).lower()),
                       ("DATA", data), ("TRUNC", REFS["truncation"]),
                       ("WINDOW", REFS["window_chunks"]), ("CHUNK", REFS["chunk_bytes"])):
        text = text.replace(f"@{key}@", str(value))
    config.write_text(text)
    log = io.StringIO()
    run(config, [f"OutputDir={tmp_path}"], out=log)
    got = re.findall(r"^Finished Epoch\[ ?(\d) of \d\]: \[Training\] se = (\S+) \* (\d+);",
                     log.getvalue(), re.M)
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
