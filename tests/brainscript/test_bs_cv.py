"""The ``cv`` action (cntk.exe's ``DoCrossValidate``, Source/ActionsLib/EvalActions.cpp).

Expected lines follow cntk.exe's printf formats there (``"Model %ls --> \\n"``, ``"Model %ls does
not exist.\\n"``, ``"Best models:\\n"``, ``"------------\\n"``, ``"Based on Err[%d]: Best model =
%ls with min err %.8g\\n"``) and its log Tests/EndToEndTests/Examples/Speech/TIMIT/
CrossValidateSimpleNetwork/baseline.txt (lines 3892-3908, 4797-4800)::

    Model .../cntkSpeech.dnn.0 -->
    evalNodeNames are not specified, using all the default evalnodes and training criterion nodes.
    ...
    Final Results: Minibatch[1-3]: EvalClassificationError = 0.99774670 * 122487; ...
    Best models:
    ------------
    Based on Err[0]: Best model = .../cntkSpeech.dnn.20 with min err 0.38685738
    Based on Err[1]: Best model = .../cntkSpeech.dnn.22 with min err 1.2308783

The values evaluated are checked against NumPy on the parameters of each model file.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pytest

import stadyn as sd
from stadyn import ConfigError
from stadyn.brainscript._runner import run

CONFIG = """command = train:cv
modelPath = "$OutputDir$/Models/reg"
deviceId = -1 ; traceLevel = 1
cv = {
    action = "cv"
    crossValidationInterval = INTERVAL
    sleepTimeBetweenRuns = 0
    READER
}
train = {
    action = "train"
    SGD = {
        epochSize = 0 ; maxEpochs = 3 ; minibatchSize = 4
        learningRatesPerSample = 0.05 ; momentumAsTimeConstant = 0
    }
    BrainScriptNetworkBuilder = {
        features = Input {3} ; target = Input {1}
        weights = ParameterTensor {(1:3), init = "fixedValue", value = 0}
        offset = ParameterTensor {1, init = "fixedValue", value = 0}
        prediction = weights * features + offset
        miss = prediction - target
        sqerr = miss .* miss
        absErr = Abs (miss)
        featureNodes = (features) ; labelNodes = (target) ; criterionNodes = (sqerr)
        evaluationNodes = (absErr) ; outputNodes = (prediction)
    }
    READER
}
"""
READER = """reader = {
        readerType = "CNTKTextFormatReader"
        file = "$DataDir$/data.txt"
        randomize = false
        input = {
            features = { dim = 3 ; format = "dense" } ; target = { dim = 1 ; format = "dense" }
        }
    }"""


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[Path, Path, np.ndarray, np.ndarray]:
    folder = tmp_path_factory.mktemp("cv")
    rng = np.random.default_rng(3)
    x = rng.normal(0, 1.0, (24, 3)).round(3)
    y = (x @ np.array([1.0, -0.5, 0.2]) + 0.25 + rng.normal(0, 0.1, 24)).round(3)
    (folder / "data.txt").write_text("".join(f"|features {' '.join(map(str, row))} |target {c}\n"
                                             for row, c in zip(x, y)))
    _run(folder, "0:1:3", "command=train")
    return folder, folder / "Models", x, y


def _run(folder: Path, interval: str, *extra: str) -> tuple[str, object]:
    path = folder / "cv.cntk"
    path.write_text(CONFIG.replace("INTERVAL", interval).replace("READER", READER))
    log = io.StringIO()
    given = [] if any(e.startswith("modelPath=") for e in extra) else [f"OutputDir={folder}"]
    result = run(path, [f"DataDir={folder}", *given, *extra], out=log)
    return log.getvalue(), result


def _numpy_errors(model: Path, x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(mean |z - y|, mean (z - y)^2) with the model file's weights and offset."""
    params = sd.load(model).parameters
    w = next(np.asarray(p.d, np.float64) for p in params.values() if p.size == 3).reshape(3)
    b = next(float(np.asarray(p.d).reshape(())) for p in params.values() if p.size == 1)
    d = x @ w + b - y
    return float(np.abs(d).mean()), float((d * d).mean())


def test_cv_evaluates_each_epochs_model_and_names_the_best(trained):
    folder, models, x, y = trained
    text, result = _run(folder, "0:1:3", "command=cv")
    # epoch 3 is the last: its model is modelPath itself (cntk.exe: "Model ... does not exist."
    # for modelPath.3, then the final model instead)
    paths = [f"{models}/reg.0", f"{models}/reg.1", f"{models}/reg.2", f"{models}/reg"]
    cv = result.commands["cv"]
    assert [p for p, _ in cv.models] == paths
    expected = [_numpy_errors(Path(p), x, y) for p in paths]
    for (_, res), (abs_err, sq_err) in zip(cv.models, expected):
        assert list(res.values) == ["absErr", "sqerr"]      # evaluation nodes, then criteria
        assert res.values["absErr"][0] == pytest.approx(abs_err, rel=1e-5)
        assert res.values["sqerr"][0] == pytest.approx(sq_err, rel=1e-5)
        assert res.values["sqerr"][1] == 24
    # each model's block: the header line, then the test action's lines
    blocks = re.findall(r"^Model (\S+) --> \nevalNodeNames are not specified, using all the "
                        r"default evalnodes and training criterion nodes.\n"
                        r"Minibatch\[1-1\]: absErr = (\S+) \* 24; sqerr = (\S+) \* 24\n"
                        r"Final Results: Minibatch\[1-1\]: absErr = \2 \* 24; "
                        r"sqerr = \3 \* 24$", text, re.M)
    assert [b[0] for b in blocks] == paths
    assert f"Model {models}/reg.3 does not exist.\nModel {models}/reg --> \n" in text
    best = [min(range(4), key=lambda i: expected[i][k]) for k in (0, 1)]
    tail = text[text.index("Best models:"):].splitlines()
    assert tail[:4] == [
        "Best models:", "------------",
        f"Based on Err[0]: Best model = {paths[best[0]]} with min err "
        f"{cv.models[best[0]][1].values['absErr'][0]:.8g}",
        f"Based on Err[1]: Best model = {paths[best[1]]} with min err "
        f"{cv.models[best[1]][1].values['sqerr'][0]:.8g}"]
    assert cv.best[1] == ("sqerr", paths[best[1]], pytest.approx(min(e[1] for e in expected),
                                                                  rel=1e-5))
    # the untrained model (W = 0, b = 0) is the worst: training lowered the loss
    assert best[1] != 0 and 'Action "cv" complete.' in text


def test_cv_steps_and_skips_missing_models_as_cntk(trained):
    folder, models, _, _ = trained
    # 1, 3, 5: reg.1 is there; reg.3 is missing and replaced by the final model; reg.5 is
    # missing and skipped (the final model is evaluated once)
    text, result = _run(folder, "1:2:5", "command=cv")
    assert [p for p, _ in result.commands["cv"].models] == [f"{models}/reg.1", f"{models}/reg"]
    assert f"Model {models}/reg.5 does not exist.\nBest models:\n" in text
    # a single value repeats (cntk.exe's argvector): 2 is 2:2:2
    text, result = _run(folder, "2", "command=cv")
    assert [p for p, _ in result.commands["cv"].models] == [f"{models}/reg.2"]


@pytest.mark.parametrize("interval, model, message", [
    ("0:1:3", "none", "No model is evaluated"),    # no none.0 .. none.3, no final model
    ("0:0:3", "reg", "step >= 1")])
def test_cv_errors_name_the_interval_line(trained, interval, model, message):
    folder, models, _, _ = trained
    with pytest.raises(ConfigError, match=message) as err:
        _run(folder, interval, "command=cv", f"modelPath={models}/{model}")
    written = (folder / "cv.cntk").read_text().splitlines()
    assert err.value.line == written.index(f"    crossValidationInterval = {interval}") + 1
