"""``stadyn train --nproc 2`` of a config whose edit action writes the train command's
``modelPath.0`` (cntk.exe's pattern for a network made before training): every worker must start
from that file.  Workers other than rank 0 skip the edit action; without a barrier before the
train command looks for its checkpoints, rank 1 found no ``.0`` and trained a virgin network
while rank 0 loaded the file, and their gradients were averaged (a review found it)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from stadyn.cli import main as cli_main

_NET = """BrainScriptNetworkBuilder = [
    features = Input {3} ; labels = Input {2}
    z = DenseLayer {2} (DenseLayer {4, activation = Tanh} (MeanVarNorm (features)))
    ce = CrossEntropyWithSoftmax (labels, z)
    errs = ClassificationError (labels, z)
    criterionNodes = (ce) ; evaluationNodes = (errs) ; outputNodes = (z) ]
"""


def _config(folder) -> str:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(64, 3)) * [1, 20, 0.1] + [5, 100, -1]
    y = (x[:, 0] - 5 + (x[:, 1] - 100) / 20 > 0).astype(int)
    (folder / "data.txt").write_text("".join(
        f"|features {' '.join(f'{v:.4f}' for v in row)} |labels {1 - k} {k}\n"
        for row, k in zip(x, y)))
    path = folder / "cmd.cntk"
    # the edit action's network draws its weights after a different number of earlier seeds
    # than a virgin train network would (a Parameter nobody uses, made first by name)
    path.write_text(f"""command = make:train
deviceId = -1 ; traceLevel = 1
modelPath = "{folder}/Models/net"
make = [ action = "edit" ; outputModelPath = "{folder}/Models/net.0"
BrainScriptNetworkBuilder = [
    a = ParameterTensor {{5}}
    features = Input {{3}} ; labels = Input {{2}}
    z = DenseLayer {{2}} (DenseLayer {{4, activation = Tanh}} (MeanVarNorm (features)))
    ce = CrossEntropyWithSoftmax (labels, z)
    errs = ClassificationError (labels, z)
    criterionNodes = (ce) ; evaluationNodes = (errs) ; outputNodes = (z) ] ]
train = [ action = "train"
{_NET}
  SGD = [ epochSize = 0 ; minibatchSize = 16 ; learningRatesPerSample = 0.02 ; maxEpochs = 2 ]
  reader = [ readerType = "CNTKTextFormatReader" ; file = "{folder}/data.txt" ; randomize = false
    input = [ features = [ dim = 3 ; format = "dense" ] ;
              labels = [ dim = 2 ; format = "dense" ] ] ] ]
""")
    return str(path)


def _epochs(out: str) -> list[tuple[str, ...]]:
    return re.findall(r"Finished Epoch\[ *(\d+) of \d+\]: \[Training\] ce = (\S+) \* (\d+); "
                      r"errs = (\S+)% \* (\d+)", out)


def test_workers_start_from_the_edit_actions_model(tmp_path, capsys):
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    assert cli_main(["train", _config(tmp_path / "one")]) == 0
    one = capsys.readouterr().out
    assert "Starting from checkpoint. Loading network from" in one
    assert cli_main(["train", _config(tmp_path / "two"), "--nproc", "2",
                     "--timeout", "120"]) == 0
    two = capsys.readouterr().out
    assert "Data-parallel training on 2 workers." in two
    a, b = _epochs(one), _epochs(two)
    assert len(a) == len(b) == 2
    for x, y in zip(a, b):
        assert x[0] == y[0] and x[2:] == y[2:]
        assert float(y[1]) == pytest.approx(float(x[1]), abs=1e-5)
