"""A command's ``reader`` (and ``cvReader``) is looked up in the blocks around it, as cntk.exe's
``config(L"reader")`` finds it (ConfigParameters::TryFind walks to the parent block,
Source/Common/Include/Config.h:992-1003; DoEval and DoTrain read it so, EvalActions.cpp:91,
TrainActions.cpp:178/184): a top-level reader serves every command without its own."""
from __future__ import annotations

import io
import re

import numpy as np

from stadyn.brainscript._runner import run

_NETWORK = """BrainScriptNetworkBuilder = [
    features = Input {3} ; labels = Input {3}
    W = ParameterTensor {(3:3)} ; b = ParameterTensor {3}
    z = W * features + b
    ce = CrossEntropyWithSoftmax (labels, z)
    criterionNodes = (ce) ; outputNodes = (z) ]"""
_READER = """reader = [ readerType = "CNTKTextFormatReader" ; file = "FILE" ; randomize = false
    input = [ features = [ dim = 3 ; format = "dense" ] ;
              labels = [ dim = 3 ; format = "dense" ] ] ]"""


def _config(top: str, train_reader: str, test_reader: str) -> str:
    return f"""deviceId = -1
modelPath = "Models/net"
command = train:test
{top}
train = [ action = "train"
  {_NETWORK}
  SGD = [ epochSize = 0 ; minibatchSize = 8 ; learningRatesPerSample = 0.01 ; maxEpochs = 1 ]
  {train_reader} ]
test = [ action = "test" ; minibatchSize = 8
  {test_reader} ]
"""


def _data(path, seed, n):
    rng = np.random.default_rng(seed)
    path.write_text("".join(
        f"|features {' '.join(f'{v:.3f}' for v in rng.normal(size=3))} |labels 0 1 0\n"
        for _ in range(n)))


def _final(tmp_path, monkeypatch, text, name) -> str:
    folder = tmp_path / name
    folder.mkdir()
    _data(folder / "data.txt", 0, 16)
    _data(folder / "other.txt", 1, 24)
    (folder / "cmd.cntk").write_text(text)
    out = io.StringIO()
    monkeypatch.chdir(folder)
    run(str(folder / "cmd.cntk"), out=out)
    found = re.findall(r"Final Results: Minibatch\[[0-9-]+\]: ce = [0-9.]+ \* [0-9]+",
                       out.getvalue())
    assert found, out.getvalue()
    return found[-1]


def test_a_top_level_reader_serves_commands_without_their_own(tmp_path, monkeypatch):
    own = _READER.replace("FILE", "data.txt")
    inline = _final(tmp_path, monkeypatch, _config("", own, own), "inline")
    top = _final(tmp_path, monkeypatch, _config(own, "", ""), "top")
    assert top == inline and inline.endswith("* 16")
    # a command's own reader comes first: the top-level one (other.txt, 24 samples) is not read
    mixed = _final(tmp_path, monkeypatch,
                   _config(_READER.replace("FILE", "other.txt"), own, own), "mixed")
    assert mixed == inline
    # and the test command alone finds it: trained on data.txt, tested on other.txt
    other = _final(tmp_path, monkeypatch,
                   _config(_READER.replace("FILE", "other.txt"), own, ""), "other")
    assert other.endswith("* 24")
