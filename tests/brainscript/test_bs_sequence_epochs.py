"""Epochs of a sequence classifier's BrainScript config (examples/brainscript/SimpleExample.cntk:
features on their own dynamic axis, one label per sequence), where the trainer counts labels
(sequences) and the reader and the minibatch size count steps.  epochSize is in label samples
(CNTK's documented rule), so a progress line's percentage is the labels trained so far over
epochSize; epochSize = 0 is one sweep of the reader, read once per epoch."""

from __future__ import annotations

import io
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


def test_progress_percentage_counts_labels_with_one_label_per_sequence(tmp_path):
    epochs, lines = _train(tmp_path, "Train.SGD.maxEpochs=2",
                           f"Train.SGD.epochSize={SEQUENCES}")
    assert len(lines) >= 4
    for epoch, result in zip((1, 2), epochs):
        ours = [(p, n) for e, p, n in lines if e == epoch]
        trained = 0
        for percent, labels in ours:
            trained += labels          # minibatches of up to 40 steps: ~14 sequences each
            assert percent == pytest.approx(100.0 * trained / SEQUENCES, abs=0.01)
        # the epoch ends with the minibatch that reaches epochSize labels (a minibatch size
        # counts steps: it is not cut to a few steps to end on the label)
        assert trained == result.samples
        assert SEQUENCES <= trained < SEQUENCES + ours[-1][1]


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
