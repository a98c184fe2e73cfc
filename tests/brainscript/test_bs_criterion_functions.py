"""A function of a per-sample criterion trained as cntk.exe trains it: cntk.exe's
``SquareError`` is one ``[1]`` value for the minibatch, so ``Exp (SquareError (out, lab) *
0.1)`` is ``exp (0.1 sum se)`` per minibatch (not ``sum exp (0.1 se)``), its gradient that
number times ``0.1 d(sum se)``, and the epoch's line ``ce = total / N * N`` with ``N`` the
network's samples (a criterion with no MBLayout: ``GetNumSamplesWithLabelOfNetwork``).  The
expectation is a NumPy rewrite of plain SGD (``w -= learningRatePerSample * gradient`` of the
criterion's value) on a linear model whose gradients are written out by hand."""

from __future__ import annotations

import io
import re

import numpy as np

from stadyn.brainscript._runner import run
from stadyn.parametric import ParameterRegistry
from stadyn.serialize import load

CONFIG = """command = train
deviceId = -1
precision = "float"
traceLevel = 1
modelPath = "$OutputDir$/Models/crit"
train = {
    action = "train"
    BrainScriptNetworkBuilder = {
        feat = Input {2} ; lab = Input {1}
        W = ParameterTensor {(1:2), init = "fixedValue", value = 0.5}
        b = ParameterTensor {1, init = "fixedValue", value = -0.25}
        out = W * feat + b
        ce = Exp (SquareError (out, lab) * 0.1)
        featureNodes = (feat) ; labelNodes = (lab) ; criterionNodes = (ce)
    }
    SGD = {
        epochSize = 0 ; minibatchSize = 4 ; learningRatesPerSample = 0.01 ; maxEpochs = 1
        momentumAsTimeConstant = 0
    }
    reader = {
        readerType = "CNTKTextFormatReader" ; file = "$DataDir$/data.txt" ; randomize = false
        input = { feat = { dim = 2 ; format = "dense" } ; lab = { dim = 1 ; format = "dense" } }
    }
}
"""


def test_exp_of_a_criterion_trains_on_the_minibatch_sum_and_logs_it_per_sample(tmp_path):
    x = np.array([[0.5, -1.0], [1.0, 2.0], [0.0, 3.0], [-1.5, 0.25],
                  [2.0, 0.5], [-0.5, -0.5], [1.5, 1.0], [0.25, -2.0]])
    y = np.array([0.5, -1.0, 2.0, 0.0, 1.0, 0.5, -0.25, 1.5])
    (tmp_path / "data.txt").write_text("".join(f"|feat {a} {c} |lab {d}\n"
                                               for (a, c), d in zip(x, y)))
    (tmp_path / "crit.cntk").write_text(CONFIG)
    log = io.StringIO()
    run(tmp_path / "crit.cntk", [f"DataDir={tmp_path}", f"OutputDir={tmp_path}"], out=log)
    w, b, total = np.array([0.5, 0.5]), -0.25, 0.0
    for first in (0, 4):                        # two minibatches of 4, updated after each
        xs, ys = x[first:first + 4], y[first:first + 4]
        r = xs @ w + b - ys
        c = np.exp(0.1 * (r ** 2).sum())        # the criterion: one number for the minibatch
        total += c
        w, b = w - 0.01 * c * 0.2 * (r @ xs), b - 0.01 * c * 0.2 * r.sum()
    line = re.search(r"^Finished Epoch\[ 1 of 1\]: \[Training\] ce = (\S+) \* 8; "
                     r"totalSamplesSeen = 8;", log.getvalue(), re.M)
    assert line, log.getvalue()
    np.testing.assert_allclose(float(line.group(1)), total / 8, rtol=1e-6)
    found = ParameterRegistry()
    load(str(tmp_path / "Models" / "crit"), registry=found)
    values = {name: np.asarray(v.d, np.float64).ravel() for name, v in found.items()}
    np.testing.assert_allclose(values["W"], w, rtol=1e-5)
    np.testing.assert_allclose(values["b"], [b], rtol=1e-5)
