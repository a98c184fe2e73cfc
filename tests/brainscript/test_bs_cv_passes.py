"""A cvReader's order in each validation pass, as cntk.exe's (refs.json, made by CNTK 2.7's
Python: tests/fixtures/bs_cv_passes/make_refs.py, which says why).

cntk.exe sets its cvReader back to sample 0 for each pass; with more chunks than the
randomization window the first pass leaves chunks behind, so the second and later passes
shuffle the sweep's sequences anew with the seed 0 in place of ``randomizationSeed``
(SequenceRandomizer.cpp:281-288).  With a seed of 0 every pass is the first's order.  The
passes' sums are the same sequences', but the minibatches of ``minibatchSize`` samples differ:
``Final Results: Minibatch[1-N]`` counts them.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from stadyn.brainscript import parse_config, reader_config
from stadyn.brainscript._readers import make_source
from stadyn.brainscript._runner import run

REFS = json.loads((Path(__file__).parents[1] / "fixtures" / "bs_cv_passes" /
                   "refs.json").read_text())


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cv_passes") / "seqs.ctf"
    path.write_text("".join(f"{k} |x {k} |y {t}\n" for k, n in enumerate(REFS["lengths"])
                            for t in range(n)))
    return path


def _reader(path: Path, seed: int) -> str:
    return (f'readerType = "CNTKTextFormatReader" ; file = "{path}" ; '
            f'randomizationSeed = {seed} ; randomizationWindow = {REFS["window_chunks"]} ; '
            f'chunkSizeInBytes = {REFS["chunk_bytes"]} ; '
            'input = { x = { dim = 1 ; format = "dense" } ; y = { dim = 1 ; format = "dense" } }')


@pytest.mark.parametrize("seed", ["0", "11"])
def test_each_cv_pass_reads_cntks_order(data, seed):
    # the source a cvReader gets, set back to its start before each pass as Validation does
    block = reader_config(parse_config(f"cv = {{ {_reader(data, int(seed))} }}")["cv"])
    src = make_source(block, max_sweeps=1, evaluating=True, set_back=True)
    start = src.get_checkpoint_state()
    got = []
    for p in range(len(REFS["passes"][seed])):
        if p:
            src.restore_from_checkpoint(start)
        ids, samples = [], []
        for mb in iter(lambda: src.next_minibatch(REFS["minibatch"]), {}):
            ids += [int(s[0][0]) for s in mb["x"].as_sequences()]
            samples.append(mb["x"].num_samples)
        got.append({"ids": ids, "samples": samples})
    src.close()
    assert got == REFS["passes"][seed]


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
        se = SquareError (y, w .* x)
        featureNodes = (x) ; labelNodes = (y) ; criterionNodes = (se)
    }
    SGD = { epochSize = 0 ; minibatchSize = MB ; learningRatesPerSample = 0.001 ; maxEpochs = 3 }
    reader = { TRAIN }
    cvReader = { CV }
}
"""


@pytest.mark.parametrize("seed", ["0", "11"])
def test_cv_minibatch_counts_per_epoch_are_cntks(data, tmp_path, seed):
    config = tmp_path / "cv.cntk"
    config.write_text(CONFIG.replace("MB", str(REFS["minibatch"]))
                      .replace("TRAIN", _reader(data, 0).replace(
                          "randomizationSeed = 0", "randomize = false"))
                      .replace("CV", _reader(data, int(seed))))
    log = io.StringIO()
    run(config, [f"OutputDir={tmp_path}"], out=log)
    text = log.getvalue()
    counts = re.findall(r"^Final Results: Minibatch\[1-(\d+)\]: se = \S+ \* (\d+)\n"
                        r"Finished Epoch\[ \d of 3\]: \[Validate\]", text, re.M)
    samples = str(sum(REFS["lengths"]))
    assert counts == [(str(len(p["samples"])), samples) for p in REFS["passes"][seed]], text
