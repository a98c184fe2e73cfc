"""Data-parallel epochs of ``epochSize`` samples: cntk.exe's reader starts epoch ``e`` at
``e x epochSize`` samples and ends it at the next, on every worker (SGD.cpp's
``StartDistributedMinibatchLoop`` -> ``NoRandomizer::StartEpoch``, Source/Readers/ReaderLib:
``minibatchSourcePosition = epochSize x epochIndex``), so the workers' shares of an epoch are
the epoch's samples, as one worker's are.  Stadyn's workers read on from their own cursors,
cut to the epoch's count: with 5-sample minibatches (shares of 3 and 2) over 12-sample epochs
they read ahead of each other, and epochs 1-3 averaged 5.583, 17.917, 15.25 of the sample
values where the samples are 0-11, 12-23 and 24-29 with 0-5 (5.5, 17.5, 14.5)."""

from __future__ import annotations

import re

import pytest

from stadyn.cli import main as cli_main


def test_data_parallel_epochs_read_the_epochs_samples_as_cntk_exe(tmp_path, capsys):
    (tmp_path / "data.txt").write_text("".join(f"|features {i}\n" for i in range(30)))
    # the criterion is the sample's value (w stays ~0: a learning rate of 1e-6)
    (tmp_path / "cmd.cntk").write_text(f"""command = train
deviceId = -1 ; traceLevel = 1
modelPath = "{tmp_path}/Models/net"
train = [ action = "train"
  BrainScriptNetworkBuilder = [
    features = Input {{1}}
    w = ParameterTensor {{1, initValue = 0}}
    ce = ReduceSum (features + w)
    criterionNodes = (ce) ; outputNodes = (ce) ]
  SGD = [ epochSize = 12 ; minibatchSize = 5 ; learningRatesPerSample = 0.000001 ; maxEpochs = 3 ]
  reader = [ readerType = "CNTKTextFormatReader" ; file = "{tmp_path}/data.txt" ; randomize = false
    input = [ features = [ dim = 1 ; format = "dense" ] ] ] ]
""")
    assert cli_main(["train", str(tmp_path / "cmd.cntk"), "--nproc", "2",
                     "--timeout", "120"]) == 0
    out = capsys.readouterr().out
    assert "Data-parallel training on 2 workers." in out
    epochs = re.findall(r"Finished Epoch\[ *\d+ of 3\]: \[Training\] ce = (\S+) \* (\d+);", out)
    assert [int(n) for _, n in epochs] == [12, 12, 12]
    assert [float(v) for v, _ in epochs] == pytest.approx([5.5, 17.5, 14.5], abs=1e-4)
