"""cntk.exe's own logs reproduced: configs of CNTK's end-to-end tests whose data is in CNTK's
repository, run by Stadyn's runner, print the criteria of the test's baseline log (written by
cntk.exe, CNTK 2.0 beta6: Simple2d's on the CPU, Image/QuickE2E's on a GPU with cuDNN).  The
config, data and log are read from a copy of CNTK (``STADYN_CNTK_SOURCE``, as
test_bs_legacy_readers.py); the test skips without one."""

from __future__ import annotations

import io
import re

import pytest

from stadyn.brainscript._runner import run
from cntk_repo_files import cntk_file, copy_cntk_file

SIMPLE2D = "Tests/EndToEndTests/Simple2d"
_MINIBATCH = re.compile(r"Epoch\[ 1 of \d+\]-Minibatch\[ *(\d+)- *(\d+)(?:, [0-9.]+%)?\]: "
                        r"CrossEntropyWithSoftmax = ([0-9.]+) \* 250; "
                        r"EvalClassificationError = ([0-9.]+) \* 250")


def _run_end_to_end(tmp_path, data_file: str, config_file: str, *settings: str) -> str:
    """Run CNTK's end-to-end test config ``config_file`` (copied into ``tmp_path``) on its data
    file ``data_file`` (copied into ``tmp_path/Data``, the config's ``DataDir``) with the
    command-line ``settings``; return what it logged."""
    data = tmp_path / "Data"
    data.mkdir()
    copy_cntk_file(data, data_file)
    config = copy_cntk_file(tmp_path, config_file)
    log = io.StringIO()
    run(str(config), [f"DataDir={data}", *settings], out=log)
    return log.getvalue()


def _train_simple2d_one_hidden(tmp_path, max_epochs: int, epoch_size: int) -> str:
    """Simple2d's OneHidden.cntk, its ``Simple_Demo_Train`` command on the CPU, for
    ``max_epochs`` epochs of ``epoch_size`` samples: what it logged."""
    return _run_end_to_end(tmp_path, f"{SIMPLE2D}/Data/SimpleDataTrain_cntk_text.txt",
                           f"{SIMPLE2D}/OneHidden.cntk", f"OutputDir={tmp_path}/out",
                           "DeviceId=-1", "command=Simple_Demo_Train",
                           f"Simple_Demo_Train=[SGD=[maxEpochs={max_epochs}]]",
                           f"Simple_Demo_Train=[SGD=[epochSize={epoch_size}]]")


def _baseline(path: str) -> str:
    """cntk.exe's log ``path`` in CNTK's repository (a test's baseline)."""
    return cntk_file(path).decode("utf-8", "replace")


def test_simple2d_one_hidden_logs_cntk_exes_first_minibatches(tmp_path):
    # Simple2d/OneHidden/baseline.cpu.txt: SimpleNetworkBuilder (2:50*2:2, Sigmoid,
    # uniformInit, mean/variance normalisation and prior: 3 precomputed nodes), the
    # CNTKTextFormatReader randomizing the 10000 samples, SGD with minibatches of 25 and
    # momentum 0.9: "Minibatch[   1-  10]: CrossEntropyWithSoftmax = 0.70050006 * 250;
    # EvalClassificationError = 0.53200000 * 250", ...  The first 500 samples: the initial
    # values, the randomized order and twenty momentum SGD steps all have to be cntk.exe's.
    log = _train_simple2d_one_hidden(tmp_path, max_epochs=1, epoch_size=500)
    ours = _MINIBATCH.findall(log)
    baseline = _MINIBATCH.findall(_baseline(f"{SIMPLE2D}/OneHidden/baseline.cpu.txt"))
    assert len(ours) == 2, log
    for (first, last, ce, err), (cfirst, clast, cce, cerr) in zip(ours, baseline[:2]):
        assert (first, last, err) == (cfirst, clast, cerr)
        assert float(ce) == pytest.approx(float(cce), rel=1e-6)


_RATE = re.compile(r"Finished Epoch\[ ?(\d+) of \d+\]: \[Training\] .*; "
                   r"learningRatePerSample = ([0-9.e-]+);")


def test_simple2d_logs_cntk_exes_rate_per_sample(tmp_path):
    # Simple2d/OneHidden/baseline.cpu.txt: learningRatesPerMB = 0.5:0.2*20:0.1 over
    # minibatches of 25: "learningRatePerSample = 0.02" at epoch 1, "0.0080000004" at epoch 2
    # (SGD.h:164 divides the float 0.2 by the size_t 25 in float: float32(0.008); Stadyn's
    # double quotient printed 0.0080000001 until bs40)
    log = _train_simple2d_one_hidden(tmp_path, max_epochs=2, epoch_size=100)
    baseline = _RATE.findall(_baseline(f"{SIMPLE2D}/OneHidden/baseline.cpu.txt"))
    assert _RATE.findall(log) == baseline[:2] == [("1", "0.02"), ("2", "0.0080000004")]


_EPOCH = re.compile(r"Finished Epoch\[ ?(\d) of \d\]: \[Training\] ce = ([0-9.]+) \* 1000; "
                    r"err = ([0-9.]+) \* 1000")


def test_image_quick_e2e_logs_cntk_exes_first_epochs(tmp_path):
    # Image/QuickE2E/baseline.txt: two raw Convolution nodes whose weights are
    # Parameter (outMap, kW * kH * inMap) matrices, initialised uniform(seed = 1, 2, ...):
    # "Finished Epoch[ 1 of 5]: [Training] ce = 2.33338428 * 1000; err = 0.90000000 * 1000"
    # (10 minibatches of 100, 9 SGD steps in it).  cntk.exe's engines read such a weight's
    # values kernel after kernel, not its rows as maps (read as rows, Stadyn logged
    # ce = 2.33413849, err = 1).
    log = _run_end_to_end(tmp_path, "Tests/EndToEndTests/Image/Data/Train_cntk_text.txt",
                          "Tests/EndToEndTests/Image/QuickE2E/cntk.cntk",
                          f"RunDir={tmp_path}/run", "DeviceId=-1", "command=train",
                          "train=[SGD=[maxEpochs=1]]")
    ours = _EPOCH.findall(log)
    baseline = _EPOCH.findall(_baseline("Tests/EndToEndTests/Image/QuickE2E/baseline.txt"))
    assert len(ours) == 1, log
    for (epoch, ce, err), (cepoch, cce, cerr) in zip(ours, baseline[:1]):
        assert (epoch, err) == (cepoch, cerr)
        assert float(ce) == pytest.approx(float(cce), rel=1e-6)
