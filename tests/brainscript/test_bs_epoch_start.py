"""One worker's epochs of ``epochSize`` samples start where cntk.exe's reader starts them:
at ``epoch x epochSize`` samples from the start of the data (SGD.cpp's ``StartMinibatchLoop``
-> ``NoRandomizer::StartEpoch``, Source/Readers/ReaderLib: ``minibatchSourcePosition =
epochSize x epochIndex``, then the first sequence that starts there or after).  cntk.exe keeps no
reader position in its checkpoints, so a restart from ``modelPath.<n>`` reads epoch ``n`` from
``n x epochSize`` samples as well -- counted in samples (a sequence's rows), not sequences.

The data: 10 sequences of 3 rows, the rows' values 0..29; the criterion is the sum of the
values (w stays ~0: a learning rate of 1e-6), so an epoch's average is the mean of the rows it
read.  Epochs of 12 samples read rows 0-11, 12-23, then 24-29 and 0-5 (means 5.5, 17.5, 14.5).
On 2f8d9b80 a restart after epoch 1 whose checkpoint file is gone ("Checkpoint file is
missing") put the reader at sequence 12 (row 36, i.e. row 6 of the second sweep): epoch 2
averaged 11.5."""

from __future__ import annotations

import re

import pytest

from stadyn.brainscript import run

_EPOCH = re.compile(r"Finished Epoch\[ *(\d+) of \d+\]: \[Training\] ce = (\S+) \* (\d+);")


def _config(tmp_path, max_epochs: int) -> str:
    (tmp_path / "data.txt").write_text(
        "".join(f"{i // 3} |features {i}\n" for i in range(30)))
    path = tmp_path / "cmd.cntk"
    path.write_text(f"""command = train
deviceId = -1 ; traceLevel = 1
modelPath = "{tmp_path}/Models/net"
train = [ action = "train"
  BrainScriptNetworkBuilder = [
    t = DynamicAxis {{}}
    features = Input {{1, dynamicAxis = t}}
    w = ParameterTensor {{1, initValue = 0}}
    ce = ReduceSum (features + w)
    criterionNodes = (ce) ; outputNodes = (ce) ]
  SGD = [ epochSize = 12 ; minibatchSize = 6 ; learningRatesPerSample = 0.000001
          maxEpochs = {max_epochs} ]
  reader = [ readerType = "CNTKTextFormatReader" ; file = "{tmp_path}/data.txt"
    randomize = false ; input = [ features = [ dim = 1 ; format = "dense" ] ] ] ]
""")
    return str(path)


def _epochs(text: str) -> list[tuple[int, float, int]]:
    return [(int(e), float(v), int(n)) for e, v, n in _EPOCH.findall(text)]


def _expected(epoch: int, epoch_size: int = 12, rows: int = 30) -> float:
    """The mean of the rows epoch ``epoch`` (from 1) reads, as cntk.exe's reader walks them."""
    return sum((i % rows) for i in range((epoch - 1) * epoch_size, epoch * epoch_size)) / \
        epoch_size


def test_one_workers_epochs_read_epoch_times_epoch_size_onwards(tmp_path):
    import io
    out = io.StringIO()
    run(_config(tmp_path, 3), out=out)
    epochs = _epochs(out.getvalue())
    assert [n for _, _, n in epochs] == [12, 12, 12]
    assert [v for _, v, _ in epochs] == pytest.approx([_expected(e) for e in (1, 2, 3)],
                                                       abs=1e-4)


def test_a_restart_without_checkpoint_reads_from_epoch_times_epoch_size_samples(tmp_path):
    import io
    run(_config(tmp_path, 3), out=io.StringIO())
    # back to the model after epoch 1, whose checkpoint cntk.exe removed (keepCheckPointFiles)
    models = tmp_path / "Models"
    assert {"net", "net.1", "net.2", "net.ckp"} <= {p.name for p in models.iterdir()}
    for name in ("net", "net.2", "net.ckp"):
        (models / name).unlink()
    out = io.StringIO()
    run(_config(tmp_path, 3), out=out)
    assert "Checkpoint file is missing" in out.getvalue()
    epochs = _epochs(out.getvalue())
    assert [e for e, _, _ in epochs] == [2, 3]
    assert [v for _, v, _ in epochs] == pytest.approx([_expected(2), _expected(3)], abs=1e-4)
