"""BrainScript's ``ParallelTrain = [ parallelizationMethod = DataParallelSGD ;
DataParallelSGD = [ gradientBits = 1 ] ]`` (1-bit SGD): ``stadyn train --nproc 2`` of a tiny
config (a linear softmax classifier of 3 classes, parameters starting at zero, the data in
order) ends with the parameters that cntk.exe's quantized aggregation gives, written out in
NumPy here: SGD.cpp:2267-2286 (InitDistGradAgg: the zero threshold for 1 bit, each worker's
own stripe quantized too), the residuals kept from one minibatch to the next and started afresh
where an epoch's ``gradientBits`` change (SGD.cpp:517-529), an epoch of 32 bits summed in full
precision.  The quantizer itself is checked against CNTK 2.7's in
tests/distributed/test_dist_mpiexec.py.  One 2-worker job (``one_bit_job``, about 6 s of CPU
each) serves the parameters and the log lines cntk.exe prints for DataParallelSGD."""

from __future__ import annotations

import numpy as np
import pytest

import stadyn as sd
from stadyn._errors import ConfigError
from stadyn.brainscript._blocks import sgd_config
from stadyn.brainscript._config import parse_config
from stadyn.brainscript._sgd import (data_parallel_bits, distributed_reading, parallel_train,
                                     quantized_bits)
from stadyn.cli import main as cli_main


def _data(folder) -> str:
    rng = np.random.default_rng(11)
    x = rng.normal(size=(96, 4))
    k = np.argmax(x[:, :3] + 0.3 * x[:, 3:], axis=1)
    path = folder / "data.txt"
    path.write_text("".join(f"|features {' '.join(f'{v:.4f}' for v in row)} |labels "
                            f"{' '.join('1' if j == c else '0' for j in range(3))}\n"
                            for row, c in zip(x, k)))
    return str(path)


def _config(folder, data: str, bits: str) -> str:
    path = folder / "onebit.cntk"
    path.write_text(f"""command = train
deviceId = -1 ; traceLevel = 1 ; stderr = "{folder}/out"
train = [ action = "train" ; modelPath = "{folder}/Models/onebit"
  BrainScriptNetworkBuilder = [
    features = Input {{4}} ; labels = Input {{3}}
    W = ParameterTensor {{(3:4), init = "fixedValue", value = 0}}
    b = ParameterTensor {{3, init = "fixedValue", value = 0}}
    z = W * features + b
    ce = CrossEntropyWithSoftmax (labels, z)
    criterionNodes = (ce) ; outputNodes = (z) ]
  SGD = [ epochSize = 32 ; maxEpochs = 3 ; learningRatesPerSample = 0.05
    minibatchSize = 16 ; momentumPerMB = 0
    ParallelTrain = [ parallelizationMethod = DataParallelSGD
      DataParallelSGD = [ gradientBits = {bits} ] ] ]
  reader = [ readerType = "CNTKTextFormatReader" ; file = "{data}" ; randomize = false
    input = [ features = [ dim = 4 ; format = "dense" ] ;
              labels = [ dim = 3 ; format = "dense" ] ] ] ]
""")
    return str(path)


def _one_bit(m: np.ndarray) -> np.ndarray:
    """1-bit quantization of each column of the matrix ``m`` (rows x columns) with the zero
    threshold: a value >= 0 becomes the mean of its column's values >= 0, one below the mean
    of those below (CNTK's ColumnQuantizer with zeroThresholdFor1Bit: the two levels are
    ``mid -+ radius / 2`` about the midpoint of the two means, which are the means)."""
    up = m >= 0
    mean_up = np.where(up, m, 0).sum(0) / np.maximum(up.sum(0), 1)
    mean_down = np.where(~up, m, 0).sum(0) / np.maximum((~up).sum(0), 1)
    return np.where(up, mean_up, mean_down)


def _quantized_sum(grads: list[np.ndarray], residual: dict, key) -> np.ndarray:
    """Two workers' gradients (CNTK matrices) summed as cntk.exe's quantized all-reduce:
    each worker quantizes gradient + residual (the rest its new residual); worker w adds the
    two quantized copies of its stripe of columns (C // 2, the first one more), quantizes the
    sum with a residual of its own, and both read every stripe's quantized sum."""
    quantized = []
    for r, g in enumerate(grads):
        v = g + residual.get((r, key), 0)
        quantized.append(_one_bit(v))
        residual[r, key] = v - quantized[-1]
    cols = grads[0].shape[1]
    out = np.zeros_like(grads[0])
    for w in range(2):
        start = 0 if w == 0 else (cols + 1) // 2
        stop = (cols + 1) // 2 if w == 0 else cols
        if start == stop:
            continue
        v = quantized[0][:, start:stop] + quantized[1][:, start:stop] + \
            residual.get(("stripe", w, key), 0)
        out[:, start:stop] = _one_bit(v)
        residual["stripe", w, key] = v - out[:, start:stop]
    return out


def _numpy_one_bit_sgd(data: str, bits_per_epoch, rate=0.05, minibatch=16, epoch=32):
    """Plain SGD on the workers' summed gradient (the sum over samples, a rate per sample):
    worker r's gradient is of samples r, r + 2, ... of each minibatch; an epoch of 1 bit sums
    them quantized (``_quantized_sum``), the residuals zeroed where the bits change."""
    rows = [line.split("|")[1:] for line in open(data).read().splitlines()]
    x = np.array([[float(v) for v in r[0].split()[1:]] for r in rows])
    y = np.array([[float(v) for v in r[1].split()[1:]] for r in rows])
    w, b = np.zeros((4, 3)), np.zeros(3)
    residual: dict = {}
    previous = None
    for first in range(0, len(x), minibatch):
        bits = bits_per_epoch[min(first // epoch, len(bits_per_epoch) - 1)]
        if bits != previous:
            residual = {}
            previous = bits
        gw, gb = [], []
        for r in range(2):
            idx = list(range(first + r, first + minibatch, 2))
            z = x[idx] @ w + b
            p = np.exp(z - z.max(1, keepdims=True))
            g = p / p.sum(1, keepdims=True) - y[idx]
            # as CNTK matrices: rows the classes (the last axis), a column per feature
            gw.append((x[idx].T @ g).T)
            gb.append(g.sum(0)[:, None])
        if bits == 32:
            sw, sb = sum(gw), sum(gb)
        else:
            sw, sb = _quantized_sum(gw, residual, "W"), _quantized_sum(gb, residual, "b")
        w -= rate * sw.T
        b -= rate * sb[:, 0]
    return w, b


@pytest.fixture(scope="module")
def one_bit_job(tmp_path_factory):
    """``stadyn train --nproc 2`` of three epochs of 32 samples, gradientBits = 1:32:1:
    quantized, full precision, then quantized again from fresh residuals (bbd61c07..1d1a81d4
    refused gradientBits below 32): the data file, the model folder, rank 0's log (cntk.exe's
    ``stderr`` file itself, without ``timestamping``: CNTK.cpp:686-691)."""
    folder = tmp_path_factory.mktemp("onebit")
    data = _data(folder)
    status = cli_main(["train", _config(folder, data, "1:32:1"), "--nproc", "2",
                       "--timeout", "120"])
    assert status == 0
    return data, folder, (folder / "out").read_text()


def test_two_workers_train_what_cntk_exes_one_bit_sgd_gives(one_bit_job):
    data, folder, _ = one_bit_job
    ours = {k: v.d for k, v in sd.load(str(folder / "Models" / "onebit")).parameters.items()}
    want_w, want_b = _numpy_one_bit_sgd(data, (1, 32, 1))
    np.testing.assert_allclose(ours["W"].reshape(4, 3), want_w, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ours["b"].reshape(3), want_b, rtol=1e-4, atol=1e-5)
    # the quantization shows: full precision all through ends elsewhere
    plain_w, _ = _numpy_one_bit_sgd(data, (32,))
    assert not np.allclose(want_w, plain_w, atol=1e-3)


def test_rank_0_logs_cntk_exes_data_parallel_sgd_lines(one_bit_job):
    """cntk.exe's lines with traceLevel > 0 (Source/SGDLib/SGD.cpp): distributed reading
    defaulted on for a reader that is not a legacy one (:230-237, after the training
    criterion), the aggregation set up before the first epoch (:398-402, after the parameters)
    and again where an epoch's bits change (:524-529, InitDistGradAgg's words :2271-2289), the
    minibatch loop's line with rank, workers and bits (:1078-1112).  (Rank 0 writes the log.)"""
    lines = one_bit_job[2].splitlines()
    assert lines[lines.index("Training criterion:   ce = CrossEntropyWithSoftmax") + 1] == \
        "\"distributedMBReading\" is not explicitly specified, defaulting to 'true'."
    init = [i for i, ln in enumerate(lines) if ln.startswith("Initializing dataParallelSGD")]
    assert [lines[i] for i in init] == [
        "Initializing dataParallelSGD for 1-bit quantization.",
        "Initializing dataParallelSGD with FP32 aggregation.",
        "Initializing dataParallelSGD for 1-bit quantization."]
    assert lines[init[0] - 2].startswith("\tNode 'b' ") and lines[init[0] - 1] == ""
    assert lines[init[1] - 1].startswith("SGD: Saving checkpoint model") and \
        lines[init[1] + 2].startswith("Starting Epoch 2:")
    assert [ln for ln in lines if ln.startswith("Starting minibatch loop")] == [
        "Starting minibatch loop, DataParallelSGD training (myRank = 0, numNodes = 2, "
        f"numGradientBits = {b}), distributed reading is ENABLED." for b in (1, 32, 1)]


def test_every_worker_writes_its_own_log_as_cntk_exe_names_it(one_bit_job):
    """cntk.exe's ``stderr`` for a data-parallel job (``wmainOldCNTKConfig``, Source/CNTK/
    CNTK.cpp:686-691): "for MPI workers except main, append .rankN" -- rank 1 writes
    ``out.rank1``, its own minibatch loop lines (myRank = 1) in it; rank 0 ``out``."""
    folder = one_bit_job[1]
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith("out")) == \
        ["out", "out.rank1"]
    lines = (folder / "out.rank1").read_text().splitlines()
    assert [ln for ln in lines if ln.startswith("Starting minibatch loop")] == [
        "Starting minibatch loop, DataParallelSGD training (myRank = 1, numNodes = 2, "
        f"numGradientBits = {b}), distributed reading is ENABLED." for b in (1, 32, 1)]
    assert lines[-1] == "__COMPLETED__"
    # the workers train the same model: their epochs' criteria are of their own shares
    assert sum(ln.startswith("Finished Epoch[") for ln in lines) == 3


def test_distributed_reading_as_cntk_exe_decides_it():
    """SGD.cpp:230-237, :1041-1043, :3153-3154: unset, on for a reader that is not a legacy
    one (with the "defaulting" line); set, as set, where the legacy reader can read a share."""
    def reading(text, reader):
        return distributed_reading(_sgd(text)[0], reader)
    assert reading("", "CNTKTextFormatReader") == (True, True)
    assert reading("", None) == (True, True)                     # deserializers = (...)
    assert reading("", "UCIFastReader") == (False, False)
    assert reading("distributedMBReading = false", "ImageReader") == (False, False)
    assert reading("distributedMBReading = true", "HTKMLFReader") == (True, False)
    assert reading("distributedMBReading = true", "LMSequenceReader") == (False, False)


def _sgd(text: str):
    rec = parse_config("SGD = [ maxEpochs = 1 ; learningRatesPerSample = 0.1 ; ParallelTrain = "
                       f"[ parallelizationMethod = DataParallelSGD ; {text} ] ]")["SGD"]
    return sgd_config(rec), rec


def _gradient_bits(sgd, workers):
    """Each epoch's bits, as the runner reads them (``_runner.py``: the block's bits, None where
    every epoch sums in full precision)."""
    return quantized_bits(data_parallel_bits(sgd, workers))


def test_gradient_bits_per_epoch_as_cntk_reads_them():
    """SGD.cpp:3161: an array, one entry an epoch (``1*2:32``: 1 bit for two epochs); 32, the
    default, is full precision; alone (one worker) nothing is quantized."""
    sgd, rec = _sgd("DataParallelSGD = [ gradientBits = 1*2:32 ]")
    assert _gradient_bits(sgd, 2) == [1, 1, 32]
    assert parallel_train(sgd, rec, 2) is None
    assert _gradient_bits(sgd, 1) is None
    assert _gradient_bits(*_sgd("DataParallelSGD = [ gradientBits = 32 ]")[:1], 2) is None
    assert _gradient_bits(*_sgd("")[:1], 2) is None
    # the zero threshold is 1-bit quantization's: another setting of it does not matter to 8
    assert _gradient_bits(_sgd("DataParallelSGD = [ gradientBits = 8 ; "
                              "useZeroThresholdFor1BitQuantization = false ]")[0], 2) == [8]


@pytest.mark.parametrize("text, message", [
    ("gradientBits = 0", r"must be in the range \[1, 32\]"),          # CNTK's words
    ("gradientBits = 64", r"must be in the range \[1, 32\]"),
    ("gradientBits = 3", "1, 2, 4, 8 or 16 bits"),
    ("gradientBits = 1 ; useZeroThresholdFor1BitQuantization = false",
     "useZeroThresholdFor1BitQuantization = False is not supported"),
    ("gradientBits = 1 ; useBufferedAsyncGradientAggregation = true",
     "useBufferedAsyncGradientAggregation = True is not supported"),
    # cntk.exe's 32 bits with it (SimpleDistGradAggregator.h:47-110) apply each minibatch's
    # update from the gradients of the minibatch before: not silently summed as usual
    ("useBufferedAsyncGradientAggregation = true",
     "useBufferedAsyncGradientAggregation = True is not supported"),
    ("gradientBits = 32 ; useBufferedAsyncGradientAggregation = true",
     "gradients of the minibatch before"),
])
def test_settings_stadyn_cannot_run_are_refused_at_their_line(text, message):
    sgd, rec = _sgd(f"DataParallelSGD = [ {text} ]")
    with pytest.raises(ConfigError, match=message) as e:
        parallel_train(sgd, rec, 2)
    assert e.value.line == 1
