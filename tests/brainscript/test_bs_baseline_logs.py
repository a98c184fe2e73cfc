"""cntk.exe's own logs reproduced: a config of CNTK's end-to-end tests whose data is in CNTK's
repository, run by Stadyn's runner, prints the minibatch criteria of the test's baseline log
(written by cntk.exe, CNTK 2.0 beta6, on the CPU).  The config, data and log are read from a
copy of CNTK (``STADYN_CNTK_SOURCE``, as test_bs_legacy_readers.py); the test skips without
one."""

from __future__ import annotations

import io
import re

import pytest

from stadyn.brainscript._runner import run
from test_bs_legacy_readers import _cntk_file, _copy

SIMPLE2D = "Tests/EndToEndTests/Simple2d"
_MINIBATCH = re.compile(r"Epoch\[ 1 of \d+\]-Minibatch\[ *(\d+)- *(\d+)(?:, [0-9.]+%)?\]: "
                        r"CrossEntropyWithSoftmax = ([0-9.]+) \* 250; "
                        r"EvalClassificationError = ([0-9.]+) \* 250")


def test_simple2d_one_hidden_logs_cntk_exes_first_minibatches(tmp_path):
    # Simple2d/OneHidden/baseline.cpu.txt: SimpleNetworkBuilder (2:50*2:2, Sigmoid,
    # uniformInit, mean/variance normalisation and prior: 3 precomputed nodes), the
    # CNTKTextFormatReader randomizing the 10000 samples, SGD with minibatches of 25 and
    # momentum 0.9: "Minibatch[   1-  10]: CrossEntropyWithSoftmax = 0.70050006 * 250;
    # EvalClassificationError = 0.53200000 * 250", ...  The first 500 samples: the initial
    # values, the randomized order and twenty momentum SGD steps all have to be cntk.exe's.
    data = tmp_path / "Data"
    data.mkdir()
    _copy(data, f"{SIMPLE2D}/Data/SimpleDataTrain_cntk_text.txt")
    config = _copy(tmp_path, f"{SIMPLE2D}/OneHidden.cntk")
    log = io.StringIO()
    run(str(config), [f"DataDir={data}", f"OutputDir={tmp_path}/out", "DeviceId=-1",
                      "command=Simple_Demo_Train",
                      "Simple_Demo_Train=[SGD=[maxEpochs=1]]",
                      "Simple_Demo_Train=[SGD=[epochSize=500]]"], out=log)
    ours = _MINIBATCH.findall(log.getvalue())
    baseline = _MINIBATCH.findall(
        _cntk_file(f"{SIMPLE2D}/OneHidden/baseline.cpu.txt").decode("utf-8", "replace"))
    assert len(ours) == 2, log.getvalue()
    for (first, last, ce, err), (cfirst, clast, cce, cerr) in zip(ours, baseline[:2]):
        assert (first, last, err) == (cfirst, clast, cerr)
        assert float(ce) == pytest.approx(float(cce), rel=1e-6)
