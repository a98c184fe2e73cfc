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

import json
import re
from pathlib import Path

import numpy as np
import pytest

from stadyn.brainscript import parse_config, reader_config
from stadyn.brainscript._readers import make_source
from bs_pass_configs import XY_INPUT, ctf_reader, run_config, sequences_ctf, train_config

REFS = json.loads((Path(__file__).parents[1] / "fixtures" / "bs_cv_passes" /
                   "refs.json").read_text())


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cv_passes") / "seqs.ctf"
    path.write_text(sequences_ctf(REFS["lengths"], lambda k: k, lambda t: t))
    return path


def _reader(path: Path, seed: int | None) -> str:
    return ctf_reader(path, window=REFS["window_chunks"], chunk=REFS["chunk_bytes"], seed=seed)


def _cv_passes(reader_text: str, passes: int, minibatch: int, per_pass):
    """``per_pass(minibatches)`` of each of ``passes`` passes over the source a cvReader block
    ``reader_text`` gets, set back to its start before each pass as Validation does."""
    block = reader_config(parse_config(f"cv = {{ {reader_text} }}")["cv"])
    src = make_source(block, max_sweeps=1, evaluating=True, set_back=True)
    start = src.get_checkpoint_state()
    got = []
    for p in range(passes):
        if p:
            src.restore_from_checkpoint(start)
        got.append(per_pass(list(iter(lambda: src.next_minibatch(minibatch), {}))))
    src.close()
    return got


@pytest.mark.parametrize("seed", ["0", "11"])
def test_each_cv_pass_reads_cntks_order(data, seed):
    def ids_and_samples(mbs):
        return {"ids": [int(s[0][0]) for mb in mbs for s in mb["x"].as_sequences()],
                "samples": [mb["x"].num_samples for mb in mbs]}
    got = _cv_passes(_reader(data, int(seed)), len(REFS["passes"][seed]), REFS["minibatch"],
                     ids_and_samples)
    assert got == REFS["passes"][seed]


@pytest.mark.parametrize("seed", ["0", "11"])
def test_cv_minibatch_counts_per_epoch_are_cntks(data, tmp_path, seed):
    text = run_config(train_config(
        criterion="w .* x",
        sgd=(f"epochSize = 0 ; minibatchSize = {REFS['minibatch']} ; "
             "learningRatesPerSample = 0.001 ; maxEpochs = 3"),
        reader=_reader(data, None), cv_reader=_reader(data, int(seed))), tmp_path)
    counts = re.findall(r"^Final Results: Minibatch\[1-(\d+)\]: se = \S+ \* (\d+)\n"
                        r"Finished Epoch\[ \d of 3\]: \[Validate\]", text, re.M)
    samples = str(sum(REFS["lengths"]))
    assert counts == [(str(len(p["samples"])), samples) for p in REFS["passes"][seed]], text


TRUNC_REFS = json.loads((Path(__file__).parents[1] / "fixtures" / "bs_cv_passes" /
                         "trunc_refs.json").read_text())


@pytest.mark.parametrize("seed", ["0", "11"])
def test_a_truncated_cv_readers_passes_read_cntks_pieces(data, seed):
    # a deserializers list with truncated = true (tests/fixtures/bs_cv_passes/
    # make_trunc_refs.py): every pass in the first pass's order, seed 11 too
    text = (f"truncated = true ; truncationLength = {TRUNC_REFS['truncation']} ; "
            f"randomizationSeed = {seed} ; randomizationWindow = {REFS['window_chunks']} ; "
            "sampleBasedRandomizationWindow = false ; "
            f'deserializers = ({{ type = "CNTKTextFormatDeserializer" ; file = "{data}" ; '
            f"chunkSizeInBytes = {REFS['chunk_bytes']} ; {XY_INPUT} }})")
    def rows(mbs):
        out = []
        for mb in mbs:
            x = np.concatenate([np.asarray(s).reshape(-1) for s in mb["x"].as_sequences()])
            y = np.concatenate([np.asarray(s).reshape(-1) for s in mb["y"].as_sequences()])
            out.append([mb["x"].num_samples, float((x * x).sum()),
                        float((x * 100 + y + 1).sum())])
        return out
    got = _cv_passes(text, len(TRUNC_REFS["passes"][seed]), TRUNC_REFS["minibatch"], rows)
    assert got == TRUNC_REFS["passes"][seed]
