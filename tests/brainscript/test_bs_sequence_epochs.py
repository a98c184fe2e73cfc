"""Epochs of a sequence classifier's BrainScript config (examples/brainscript/SimpleExample.cntk:
features on their own dynamic axis, one label per sequence), where the trainer counts labels
(sequences) and the reader and the minibatch size count rows.  As cntk.exe, an epoch is
epochSize reader samples, a sequence counting its rows: SGD::TrainOneEpoch loops until the
reader has no more (SGD.cpp ``if (!wasDataRead ...) break; // end of epoch``), the reader
starts epoch k at k x epochSize samples and ends it at the next (StartEpoch), and the text
reader's index counts a sequence's lines (TextInputIndexBuilder::PopulateImpl), the bundler
the longest stream.  A progress line's percentage is cntk.exe's too: minibatches run x
minibatchSize / epochSize (SGD.cpp: ``numMBPerEpoch = m_maxComputedEpochSize / tunedMBSize``),
whatever the trainer counted.  epochSize = 0 is one sweep of the reader, read once per
epoch."""

from __future__ import annotations

import io
import itertools
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

from stadyn.brainscript import run
from stadyn.io import CTFDeserializer

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "brainscript"
sys.path.insert(0, str(EXAMPLES))
import make_data  # noqa: E402  (the example's own generator)

SEQUENCES = 60
_LINE = re.compile(r"Epoch\[ *(\d+) of \d+\]-Minibatch\[ *\d+- *\d+(?:, ([\d.]+)%)?\]: "
                   r"ce = [\d.]+ \* (\d+);")


def _train(tmp_path: Path, *overrides: str):
    make_data.classification(str(tmp_path / "Train.ctf"), SEQUENCES, 3, lengths=(2, 5))
    out = io.StringIO()
    result = run(EXAMPLES / "SimpleExample.cntk",
                 [f"DataDir={tmp_path}", f"OutputDir={tmp_path / 'out'}", "command=Train",
                  "Train.SGD.minibatchSize=40", "Train.SGD.numMBsToShowResult=1",
                  *overrides], out=out)
    lines = [(int(e), float(p) if p else None, int(n))
             for e, p, n in _LINE.findall(out.getvalue())]
    return result.commands["Train"], lines


def test_an_epoch_is_epoch_size_rows_of_the_reader_as_cntk_exe(tmp_path):
    epochs, lines = _train(tmp_path, "Train.SGD.maxEpochs=3", "Train.SGD.epochSize=60",
                           "Train.reader.randomize=false")
    # the rows of each sequence, from the file; the data repeats sweep after sweep
    ids = [line.split("\t")[0] for line in (tmp_path / "Train.ctf").read_text().splitlines()]
    rows = [len(list(group)) for _, group in itertools.groupby(ids)]
    assert len(rows) == SEQUENCES
    starts, at = [], 0
    for n in rows * 3:
        starts.append(at)
        at += n
    for k, result in enumerate(epochs):
        # epoch k: the sequences that start within rows [60 k, 60 (k + 1))
        assert result.samples == sum(60 * k <= s < 60 * (k + 1) for s in starts), k
        ours = [(p, n) for e, p, n in lines if e == k + 1]
        assert sum(n for _, n in ours) == result.samples
        # minibatches of 40 rows: 2/3 of the epoch each
        assert [p for p, _ in ours] == [pytest.approx(100.0 * 40 * (m + 1) / 60, abs=0.01)
                                        for m in range(len(ours))]
    assert all(r.samples < 30 for r in epochs)    # 60 rows: some 20 labels, not 60


def test_an_epoch_of_one_sweep_reads_the_data_once_per_epoch(tmp_path, monkeypatch):
    parsed = Counter()         # sequences the reader delivered, from the file
    read_batch = CTFDeserializer.read_batch

    def counting(self, ids, rngs):
        parsed.update(int(i) for i in ids)
        return read_batch(self, ids, rngs)
    monkeypatch.setattr(CTFDeserializer, "read_batch", counting)
    epochs, _ = _train(tmp_path, "Train.SGD.maxEpochs=2", "Train.SGD.epochSize=0")
    # each epoch is exactly one sweep of the 60 sequences ...
    assert [e.samples for e in epochs] == [SEQUENCES, SEQUENCES]
    # ... and each sequence of the file is read once per epoch, not once more to count a sweep
    assert sorted(parsed) == list(range(SEQUENCES))
    assert set(parsed.values()) == {2}


def test_each_epoch_of_rows_trains_at_its_own_learning_rate(tmp_path, monkeypatch):
    # cntk.exe sets the rate at each epoch's start (SGD::TrainOrAdaptModel); the learners'
    # schedules count labels, some 20 an epoch of 60 rows here, so the epoch's rate is set
    from stadyn.brainscript._train_progress import CNTKProgress
    used = {}
    seen = CNTKProgress.on_minibatch_end

    def record(self, trainer, step):
        used.setdefault(step["epoch"], set()).add(
            round(trainer.parameter_learners[0].learning_rate(), 6))
        return seen(self, trainer, step)
    monkeypatch.setattr(CNTKProgress, "on_minibatch_end", record)
    _train(tmp_path, "Train.SGD.maxEpochs=3", "Train.SGD.epochSize=60",
           "Train.SGD.learningRatesPerSample=0.1*1:0.05*1:0.01")
    assert used == {0: {0.1}, 1: {0.05}, 2: {0.01}}


def test_each_epoch_of_rows_trains_at_its_own_momentum(tmp_path, monkeypatch):
    # cntk.exe reads the momentum of every minibatch from the epoch's entry (SGD.cpp:1396,
    # GetMomentumPerSample(epochNumber, ...) in TrainOneEpoch), not from the samples counted:
    # an epoch of 60 rows has some 20 labels here, so a schedule moving every 60 labels would
    # still be at its first entry in the third epoch
    from stadyn.brainscript._train_progress import CNTKProgress
    used = {}
    seen = CNTKProgress.on_minibatch_end

    def record(self, trainer, step):
        value, _ = trainer.parameter_learners[0].schedule_value("momentum")
        used.setdefault(step["epoch"], set()).add(round(value, 6))
        return seen(self, trainer, step)
    monkeypatch.setattr(CNTKProgress, "on_minibatch_end", record)
    _train(tmp_path, "Train.SGD.maxEpochs=3", "Train.SGD.epochSize=60",
           "Train.SGD.learningRatesPerSample=0.1",
           "Train.SGD.momentumPerMB=0.9*1:0.5*1:0.25")
    # momentumPerMB m over minibatches of 40 rows: m ** (1/40) per sample (SGD.h)
    assert used == {0: {0.997369}, 1: {0.982821}, 2: {0.965936}}
