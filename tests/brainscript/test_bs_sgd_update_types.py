"""``gradUpdateType`` (AdaGrad, FSAdaGrad, RmsProp), ``useNAG`` and ``ParallelTrain`` in an SGD
block, against CNTK 2.7's learners on the same gradients (``refgen_bs_sgd.py`` wrote the
references: CNTK's BrainScript trainer used the same update kernels)."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest
import torch

import stadyn as sd
from stadyn import ConfigError
from stadyn.brainscript import parse_config, sgd_config
from stadyn.brainscript._sgd import make_learner, parallel_train

REFS = json.loads((pathlib.Path(__file__).parent.parent / "fixtures" / "brainscript" /
                   "sgd_update_types.json").read_text())


def _sgd(text: str):
    rec = parse_config(f"SGD = {{ maxEpochs = 3 ; {text} }}", "sgd.cntk")["SGD"]
    return sgd_config(rec), rec


@pytest.mark.parametrize("case", sorted(REFS["cases"]))
def test_update_type_matches_cntk(case):
    ref = REFS["cases"][case]
    sgd, rec = _sgd(ref["sgd"])
    w = sd.Variable.from_numpy_array(np.array(REFS["init"], np.float32), need_grad=True)
    learner = make_learner({"w": w}, sgd, rec, epoch_size=1000)
    for k, (grad, samples) in enumerate(zip(REFS["gradients"], REFS["steps"])):
        w.grad = torch.tensor(grad, dtype=torch.float32)
        learner.update(samples)
        np.testing.assert_allclose(w.d, np.array(ref["values"][k]), rtol=2e-5, atol=2e-6,
                                   err_msg=f"{case}, step {k + 1}")


def test_learner_kinds():
    w = sd.Variable.from_numpy_array(np.zeros(2, np.float32), need_grad=True)
    kinds = {ref["sgd"]: make_learner([w], *_sgd(ref["sgd"]), epoch_size=10).name
             for ref in REFS["cases"].values()}
    assert sorted(set(kinds.values())) == ["adagrad", "fsadagrad", "nesterov", "rmsprop"]


def test_unknown_update_type_is_named_where_written():
    sgd, rec = _sgd("learningRatesPerSample = 0.1\ngradUpdateType = Adam")
    w = sd.Variable.from_numpy_array(np.ones(1, np.float32), need_grad=True)
    with pytest.raises(ConfigError, match="gradUpdateType = 'Adam' is not known") as err:
        make_learner([w], sgd, rec, epoch_size=10)
    assert (err.value.line, err.value.column) == (2, 1)
    sgd, rec = _sgd("learningRatesPerSample = 0.1 ; gradUpdateType = RmsProp ; rms_gamma = x")
    with pytest.raises(ConfigError, match="rms_gamma' must be > 0, got 'x'"):
        make_learner([w], sgd, rec, epoch_size=10)


PARALLEL = ("learningRatesPerSample = 0.1\nParallelTrain = [ parallelizationMethod = {method}\n"
            "    DataParallelSGD = [ gradientBits = {bits} ] ]")


def test_parallel_train_is_ignored_in_one_process_as_cntk_did():
    sgd, rec = _sgd(PARALLEL.format(method="DataParallelSGD", bits=1))
    assert parallel_train(sgd, rec, 1) == ("parallelTrain option is not enabled. ParallelTrain "
                                           "config will be ignored.")
    w = sd.Variable.from_numpy_array(np.ones(1, np.float32), need_grad=True)
    assert make_learner([w], sgd, rec, epoch_size=10).name == "momentum_sgd"


def test_parallel_train_with_workers_runs_data_parallel_sgd_or_block_momentum():
    sgd, rec = _sgd(PARALLEL.format(method="DataParallelSGD", bits=32))
    assert parallel_train(sgd, rec, 2) is None
    # 1-bit SGD runs (tests/brainscript/test_bs_one_bit_sgd.py); bits the quantizer lacks
    # are refused at their line
    sgd, rec = _sgd(PARALLEL.format(method="DataParallelSGD", bits=1))
    assert parallel_train(sgd, rec, 2) is None
    sgd, rec = _sgd(PARALLEL.format(method="DataParallelSGD", bits=3))
    with pytest.raises(ConfigError, match="gradientBits = 3 is not supported") as err:
        parallel_train(sgd, rec, 2)
    assert (err.value.line, err.value.column) == (3, 25)        # gradientBits's own place
    sgd, rec = _sgd(PARALLEL.format(method="ModelAveragingSGD", bits=32))
    with pytest.raises(ConfigError, match="ModelAveragingSGD is not supported"):
        # (BlockMomentumSGD: tests/brainscript/test_bs_block_momentum.py)
        parallel_train(sgd, rec, 2)


def test_load_best_model_in_the_sgd_block_has_no_effect_as_in_cntk():
    # ATIS.cntk writes SGD.loadBestModel = true; CNTK read it only inside AutoAdjust
    sgd, rec = _sgd("learningRatesPerSample = 0.1 ; loadBestModel = true")
    w = sd.Variable.from_numpy_array(np.ones(1, np.float32), need_grad=True)
    assert make_learner([w], sgd, rec, epoch_size=10).name == "momentum_sgd"


def test_batch_norm_parameters_can_be_exempt_from_regularisation():
    # CNTK: disableRegInBatchNormalization = true (or a layer's disableRegularization = true)
    # sets the scale's and bias's regularisation multiplier to 0 (ResNet*_ImageNet1K.cntk)
    from stadyn.brainscript import build_network
    from stadyn.brainscript._sgd import disable_reg_in_batch_norm, make_learners
    from stadyn.brainscript._stadyn_library import StadynLibrary

    text = ("{ x = Input{4:4:2} ; a = BatchNormalizationLayer{spatialRank = 2}(x)\n"
            "  b = BatchNormalizationLayer{spatialRank = 2, disableRegularization = true}(a)\n"
            "  z = DenseLayer{3}(b) }")
    for every, expected in ((False, 1), (True, 2)):
        with sd.parameter_registry(sd.ParameterRegistry()):
            lib = StadynLibrary()
            build_network(text, lib)
            exempt = lib.unregularized(every)
            names = sorted(k for k, p in sd.get_parameters().items() if id(p) in exempt)
            assert len(names) == 2 * expected and all(     # CNTK.core.bs's scale and bias
                n.endswith((".bias", ".scale")) for n in names)
    sgd, rec = _sgd("learningRatesPerSample = 0.5 ; momentumAsTimeConstant = 0 ; "
                    "L2RegWeight = 0.1 ; disableRegInBatchNormalization = true")
    assert disable_reg_in_batch_norm(sgd, rec)
    w = sd.Variable.from_numpy_array(np.full(2, 2.0, np.float32), need_grad=True)
    g = sd.Variable.from_numpy_array(np.full(2, 2.0, np.float32), need_grad=True)
    learners = make_learners({"dense/W": w, "bn/gamma": g}, sgd, rec, 100, {"bn/gamma"})
    assert len(learners) == 2
    for p in (w, g):
        p.grad = torch.ones(2)
    for learner in learners:
        learner.update(4)
    # one step of 4 samples, no momentum: w -= 0.5 * (1 + 0.1 * 4 * 2); gamma -= 0.5 * 1
    np.testing.assert_allclose(w.d, 2.0 - 0.5 * (1 + 0.8), rtol=1e-6)
    np.testing.assert_allclose(g.d, 2.0 - 0.5, rtol=1e-6)
    sgd, rec = _sgd("learningRatesPerSample = 0.5 ; disableRegInBatchNormalization = true")
    assert len(make_learners({"dense/W": w, "bn/gamma": g}, sgd, rec, 100, {"bn/gamma"})) == 1
