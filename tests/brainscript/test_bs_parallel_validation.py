"""A cvReader under ``stadyn train --nproc 2`` with a ``ParallelTrain`` block: cntk.exe's
workers read the validation set distributed (SimpleEvaluator.h:96-97), aggregate each
minibatch's sums over the workers (SimpleEvaluator.h:179-214) and loop until an aggregated
minibatch holds no sample; that last, empty one is counted too (SimpleEvaluator.h:124-126,
234-235), so ``Final Results: Minibatch[1-K+1]`` over the whole set's samples (cntk.exe's
Tests/EndToEndTests/Speech/DNN/ParallelCrossValidation baseline: 83,050 samples in minibatches
of 64, 256 and 1024 give Minibatch[1-1299], [1-326], [1-83]).

K here is CNTK 2.7's: its Python reader over the 11 samples 0-10 with minibatches of 4,
``next_minibatch(4, num_data_partitions=2, partition_index=r)`` for r = 0, 1, gives 3
minibatches that hold samples ([0, 2] + [1, 3], [4, 6] + [5, 7], [8, 10] + [9]), then none:
cntk.exe logs Minibatch[1-4], the criterion (a sample's value; w stays ~0) averaged over all
11 samples, 5.0.  Before bs41 Stadyn logged Minibatch[1-3]."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from stadyn.cli import main as cli_main
from bs_pass_configs import ctf_reader, sequences_ctf, train_config


def _train_two_workers(tmp_path, capsys, cv_lines, randomize):
    """Trains 8 samples on 2 workers (DataParallelSGD) with ``cv_lines`` as the cvReader's
    file, read with ``randomize``; returns what the command printed."""
    (tmp_path / "data.txt").write_text("".join(f"|features {i}\n" for i in range(8)))
    (tmp_path / "cv.txt").write_text("".join(cv_lines))
    (tmp_path / "cmd.cntk").write_text(f"""command = train
deviceId = -1 ; traceLevel = 1
modelPath = "{tmp_path}/Models/net"
train = [ action = "train"
  BrainScriptNetworkBuilder = [
    features = Input {{1}}
    w = ParameterTensor {{1, initValue = 0}}
    ce = ReduceSum (features + w)
    criterionNodes = (ce) ; outputNodes = (ce) ]
  SGD = [ minibatchSize = 4 ; learningRatesPerSample = 0.000001 ; maxEpochs = 1
    ParallelTrain = [ parallelizationMethod = DataParallelSGD
      DataParallelSGD = [ gradientBits = 32 ] ] ]
  reader = [ readerType = "CNTKTextFormatReader" ; file = "{tmp_path}/data.txt" ; randomize = false
    input = [ features = [ dim = 1 ; format = "dense" ] ] ]
  cvReader = [ readerType = "CNTKTextFormatReader" ; file = "{tmp_path}/cv.txt"
    randomize = {randomize}
    input = [ features = [ dim = 1 ; format = "dense" ] ] ] ]
""")
    assert cli_main(["train", str(tmp_path / "cmd.cntk"), "--nproc", "2",
                     "--timeout", "120"]) == 0
    return capsys.readouterr().out


def test_a_distributed_cv_pass_counts_the_empty_minibatch_that_ends_it(tmp_path, capsys):
    out = _train_two_workers(tmp_path, capsys, [f"|features {i}\n" for i in range(11)], "false")
    final = re.findall(r"Final Results: Minibatch\[1-(\d+)\]: ce = (\S+) \* (\d+)", out)
    assert [(int(m), int(n)) for m, _, n in final] == [(4, 11)], out
    assert float(final[0][1]) == pytest.approx(5.0, abs=1e-4)
    validate = re.findall(r"\[Validate\] ce = (\S+) \* (\d+)", out)
    assert [int(n) for _, n in validate] == [11]


# Each worker's share as CNTK 2.7's Python reader gives it (``next_minibatch(4,
# num_data_partitions=2, partition_index=r)``, max_sweeps=1;
# tests/fixtures/bs_parallel_validation/cntk_shares.py prints them):
# - the 11 samples 0-10 randomized: one chunk, which worker 0 takes whole: 6 minibatches of
#   2, 2, 2, 2, 2, 1 samples, worker 1 none; cntk.exe's loop runs 6 + 1 (not 3 + 1).
# - 9 sequences of 2, 1, 3, 1, 4, 4, 4, 4, 2 frames in order: worker 0 gets 5 minibatches,
#   worker 1 3; 5 + 1 (the single-process reader gives 7 minibatches: not 7 + 1).
_LENGTHS = [2, 1, 3, 1, 4, 4, 4, 4, 2]


@pytest.mark.parametrize("randomize, lines, expected", [
    ("true", [f"|features {i}\n" for i in range(11)], (7, 11, 5.0)),
    ("false", [f"{s} |features {s * 10 + j}\n" for s, n in enumerate(_LENGTHS)
               for j in range(n)], (6, 25, 1169 / 25)),
])
def test_a_distributed_cv_pass_counts_the_longest_share(tmp_path, capsys, randomize, lines,
                                                        expected):
    out = _train_two_workers(tmp_path, capsys, lines, randomize)
    final = re.findall(r"Final Results: Minibatch\[1-(\d+)\]: ce = (\S+) \* (\d+)", out)
    assert [(int(m), int(n)) for m, _, n in final] == [expected[:2]], out
    assert float(final[0][1]) == pytest.approx(expected[2], abs=1e-3)


def test_three_workers_count_each_passes_longest_share_as_cntk(tmp_path, capsys):
    # The cvReader of tests/fixtures/bs_cv_passes (24 sequences of 1-4 samples, chunks of 40
    # bytes, a window of 2, randomizationSeed 11, minibatches of 7) read by 3 workers, one
    # validation each of 2 epochs: CNTK 2.7's shares (share_refs.json["11/3"]) give the
    # longest 9 minibatches in the first pass and 8 in the set-back later ones, so cntk.exe
    # logs Minibatch[1-10], then [1-9], each over the whole set's 60 samples (the first
    # pass's order for both would log [1-10] twice).
    fixtures = Path(__file__).parents[1] / "fixtures" / "bs_cv_passes"
    refs = json.loads((fixtures / "refs.json").read_text())
    shares = json.loads((fixtures / "share_refs.json").read_text())["shares"]["11/3"]
    expected = [max(len(share[p]["samples"]) for share in shares) + 1 for p in range(2)]
    assert expected == [10, 9]
    (tmp_path / "cv.ctf").write_text(sequences_ctf(refs["lengths"], lambda k: k,
                                                   lambda t: t))
    (tmp_path / "train.ctf").write_text(sequences_ctf([1] * 6, lambda k: 0, lambda t: 0))
    sgd = (f"minibatchSize = {refs['minibatch']} ; learningRatesPerSample = 0.000001 ; "
           f"maxEpochs = {len(expected)} ; ParallelTrain = {{ parallelizationMethod = "
           f"DataParallelSGD ; DataParallelSGD = {{ gradientBits = 32 }} }}")
    text = train_config(criterion="w .* x", sgd=sgd,
                        reader=ctf_reader(tmp_path / "train.ctf", window=2, chunk=40),
                        cv_reader=ctf_reader(tmp_path / "cv.ctf", window=refs["window_chunks"],
                                             chunk=refs["chunk_bytes"], seed=11))
    (tmp_path / "cmd.cntk").write_text(text.replace("$OutputDir$", str(tmp_path)))
    assert cli_main(["train", str(tmp_path / "cmd.cntk"), "--nproc", "3",
                     "--timeout", "120"]) == 0
    out = capsys.readouterr().out
    final = re.findall(r"Final Results: Minibatch\[1-(\d+)\]: se = \S+ \* (\d+)", out)
    assert [(int(m), int(n)) for m, n in final] == [(m, sum(refs["lengths"]))
                                                    for m in expected], out
