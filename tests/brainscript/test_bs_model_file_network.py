"""A test, eval or write command whose network only its model file holds: a config of its own
with ``modelPath`` and a reader but no network, the model trained by another config (CNTK's
TIMIT_EvalSimpleNetwork, TIMIT_WriteScaledLogLike, TIMIT_CrossValidateSimpleNetwork, run
after TIMIT_TrainSimpleNetwork).  cntk.exe read the network from the file; bbd61c07 refused
('no block of the config builds the model').  The eval gives what the training config's own
test command gives (its network rebuilt from the description), and the write the network's
output computed in NumPy from the trained parameters."""

from __future__ import annotations

import io

import numpy as np
import pytest

import stadyn as sd
from stadyn._errors import ConfigError
from stadyn.brainscript import run

_READER = """reader = [ readerType = "CNTKTextFormatReader" ; file = "{data}" ; randomize = false
    input = [ features = [ dim = 3 ; format = "dense" ] ;
              labels = [ dim = 2 ; format = "dense" ] ] ]"""


def _data(folder) -> str:
    rng = np.random.default_rng(7)
    x = rng.normal(size=(40, 3))
    k = (x[:, 0] - x[:, 2] > 0).astype(int)
    path = folder / "data.txt"
    path.write_text("".join(f"|features {' '.join(f'{v:.4f}' for v in row)} |labels {1 - c} {c}\n"
                            for row, c in zip(x, k)))
    return str(path)


def _train_config(folder, data: str) -> str:
    path = folder / "train.cntk"
    path.write_text(f"""command = train:test
deviceId = -1 ; traceLevel = 0
modelPath = "{folder}/Models/net"
train = [ action = "train"
  BrainScriptNetworkBuilder = [
    features = Input {{3}} ; labels = Input {{2}}
    z = DenseLayer {{2}} (DenseLayer {{4, activation = Tanh}} (features))
    ce = CrossEntropyWithSoftmax (labels, z)
    errs = ClassificationError (labels, z)
    criterionNodes = (ce) ; evaluationNodes = (errs) ; outputNodes = (z) ]
  SGD = [ epochSize = 0 ; minibatchSize = 8 ; learningRatesPerSample = 0.05 ; maxEpochs = 2 ]
  {_READER.format(data=data)} ]
test = [ action = "test" ; minibatchSize = 16 ; {_READER.format(data=data)} ]
""")
    return str(path)


def _other_config(folder, data: str, action: str) -> str:
    path = folder / f"{action}.cntk"
    extra = f'outputPath = "{folder}/out" ; outputNodeNames = (z)' if action == "write" else ""
    path.write_text(f"""command = only
deviceId = -1 ; traceLevel = 0
only = [ action = "{action}" ; modelPath = "{folder}/Models/net" ; minibatchSize = 16 ; {extra}
  {_READER.format(data=data)} ]
""")
    return str(path)


@pytest.fixture
def trained(tmp_path):
    data = _data(tmp_path)
    result = run(_train_config(tmp_path, data), out=io.StringIO())
    return tmp_path, data, result.commands["test"]


def test_eval_of_a_model_another_config_trained(trained):
    folder, data, theirs = trained
    ours = run(_other_config(folder, data, "eval"), out=io.StringIO()).commands["only"]
    assert sorted(ours.values) == ["ce", "errs"]
    for name in ("ce", "errs"):
        assert ours.values[name][1] == theirs.values[name][1] == 40
        assert ours.values[name][0] == pytest.approx(theirs.values[name][0], rel=1e-6)


def test_write_of_a_model_another_config_trained(trained):
    folder, data, _ = trained
    run(_other_config(folder, data, "write"), out=io.StringIO())
    written = np.loadtxt(f"{folder}/out.z", ndmin=2)
    params = {k: v.d for k, v in sd.load(f"{folder}/Models/net").parameters.items()}
    x = np.array([[float(v) for v in line.split("|")[1].split()[1:]]
                  for line in open(data).read().splitlines()])
    hidden = np.tanh(x @ params["z.x.arrayOfFunctions[0].W"] + params["z.x.arrayOfFunctions[0].b"])
    want = hidden @ params["z.arrayOfFunctions[0].W"] + params["z.arrayOfFunctions[0].b"]
    np.testing.assert_allclose(written, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("action", ["eval", "write"])
def test_a_missing_model_file_is_named(tmp_path, action):
    """cntk.exe opens ``modelPath`` before anything else of the command (GetModelFromConfig,
    NetworkFactory.cpp:180 -> ComputationNetwork::Read, ComputationNetwork.cpp:277: fopenOrDie's
    "error opening file", fileutil.cpp:274); Stadyn said "no block of the config builds the
    model", which does not say that the file is missing.  Now: the file, and modelPath's line."""
    data = _data(tmp_path)
    config = _other_config(tmp_path, data, action)
    with pytest.raises(ConfigError, match=f"model file '{tmp_path}/Models/net' does not "
                       r"exist \(modelPath") as err:
        run(config, out=io.StringIO())
    assert (err.value.path, err.value.line) == (config, 3)


@pytest.mark.parametrize("content", [b"|features 1 2 3\n", b"PK\x03\x04 truncated"],
                         ids=["text", "truncated"])
def test_a_file_that_is_not_a_model_is_named_at_model_path(tmp_path, content):
    """A test command whose network the config's train block rebuilds, its model file text or
    a truncated archive: one error naming the file and modelPath's line (was the action's
    line, "cannot load the model: ...")."""
    data = _data(tmp_path)
    config = _train_config(tmp_path, data)
    (tmp_path / "Models").mkdir()
    (tmp_path / "Models" / "net").write_bytes(content)
    with pytest.raises(ConfigError, match=f"modelPath is not a model file: "
                       f"{tmp_path}/Models/net: ") as err:
        run(config, ["command=test"], out=io.StringIO())
    assert (err.value.path, err.value.line) == (config, 3)
    assert str(err.value).count(f"{tmp_path}/Models/net") == 1
