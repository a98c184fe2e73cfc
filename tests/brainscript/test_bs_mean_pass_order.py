"""Training epoch 1's order after a pre-computing pass, as cntk.exe's (refs.json, made by CNTK
2.7's Python: tests/fixtures/bs_mean_pass_order/make_refs.py, which says why).

cntk.exe's ``Mean`` / ``InvStdDev`` / ``LogPrior`` pass reads the training reader's whole
sweep, then the first epoch sets that reader back to sample 0; with more chunks than the
randomization window the pass left chunks behind, so epoch 1's sequences are shuffled anew with
the seed 0 in place of ``randomizationSeed`` (SequenceRandomizer.cpp:281-288).  Epoch 2 (sweep
1) is ``randomizationSeed + 1``'s as always.  With a seed of 0 both orders are the same.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from stadyn.brainscript._runner import run

REFS = json.loads((Path(__file__).parents[1] / "fixtures" / "bs_mean_pass_order" /
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
          momentumPerMB = 0 ; maxEpochs = 2 ; UseAllDataForPreComputedNode = @ALL@ }
    reader = {
        readerType = "CNTKTextFormatReader" ; file = "@DATA@"
        randomizationSeed = @SEED@ ; randomizationWindow = @WINDOW@ ; chunkSizeInBytes = @CHUNK@
        input = { x = { dim = 1 ; format = "dense" } ; y = { dim = 1 ; format = "dense" } }
    }
}
"""


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("mean_pass") / "seqs.ctf"
    path.write_text("".join(f"{k} |x {k / 4:g} |y {t - 1}\n"
                            for k, n in enumerate(REFS["lengths"]) for t in range(n)))
    return path


def _train(data: Path, tmp_path: Path, seed: str, epoch_size: int, all_data: bool) -> str:
    config = tmp_path / "mean.cntk"
    text = CONFIG
    for key, value in (("EPOCH", epoch_size), ("MB", REFS["minibatch"]),
                       ("RATE", REFS["rate"]), ("SEED", seed), ("DATA", data),
                       ("ALL", str(all_data).lower()),
                       ("WINDOW", REFS["window_chunks"]), ("CHUNK", REFS["chunk_bytes"])):
        text = text.replace(f"@{key}@", str(value))
    config.write_text(text)
    log = io.StringIO()
    run(config, [f"OutputDir={tmp_path}"], out=log)
    return log.getvalue()


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
