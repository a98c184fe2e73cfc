"""CNTK's pre-computed nodes (``Mean``, ``InvStdDev``, ``MeanVarNorm``, ``LogPrior``,
``FeatureMVNLayer``) and the data pass before training that sets them.

The running estimates are checked against NumPy over the same samples; the whole pass, in a
run of CNTK's end-to-end test Tests/EndToEndTests/Speech/Simple (its data is in CNTK's
repository, ``$STADYN_CNTK_SOURCE``; without it that test skips), against cntk.exe's baseline
log: the precompute lines, the momentum CNTK logged, and the losses and errors of the first two
epochs.  The config is CNTK's own, its ``SimpleNetworkBuilder`` network included: features
normalised by ``Mean``/``InvStdDev``, two sigmoid layers of 50,
``ScaledLogLikelihood = HLast - Log(Mean(labels))``.
"""

from __future__ import annotations

import io as pyio
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

import stadyn as sd
from stadyn import ConfigError
from stadyn.brainscript import StadynLibrary, build_network, run
from stadyn.brainscript._model_files import load_model_parameters
from stadyn.brainscript._precompute import RunningStatistics
from stadyn.brainscript._sgd_rates import momenta_per_sample
from stadyn.brainscript import SGDConfig
from stadyn.train import feed
from cntk_repo_files import cntk_file, copy_cntk_file
from test_bs_legacy_readers import quick_e2e  # noqa: F401 (a fixture)

SIMPLE = "Tests/EndToEndTests/Speech/Simple"


# ---------------------------------------------------------------------------------------------
# The running estimates
# ---------------------------------------------------------------------------------------------
def test_running_mean_and_inv_std_dev_are_numpys_over_all_samples():
    rng = np.random.RandomState(0)
    x = (rng.randn(1000, 5) * [1, 10, 0.1, 3, 0] + [0, 5, -2, 100, 7]).astype(np.float32)
    mean, inv = RunningStatistics((5,), False), RunningStatistics((5,), True)
    start = 0
    for size in [1, 7, 256, 100, 300, 336]:            # uneven minibatches, 1000 samples
        mean.add(x[start:start + size])
        inv.add(x[start:start + size])
        start += size
    want = x.astype(np.float64)
    np.testing.assert_allclose(mean.mean, want.mean(0), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(inv.mean, want.mean(0), rtol=1e-6, atol=1e-6)
    # the variance divides by the sample count; a constant column is floored at 1e-10
    std = want.std(0)
    np.testing.assert_allclose(inv.inv_std_dev()[:4], 1 / std[:4], rtol=1e-5)
    assert inv.inv_std_dev()[4] == np.float32(1e5)


def test_one_minibatch_gives_cntk_27s_own_nodes_values():
    # CNTK 2.7's Mean and InvStdDev nodes (cntk.exe's) over 50 samples in one minibatch
    # (refgen_bs_precompute.py); the third value is constant: 1 / sqrt(1e-10)
    ref = json.loads((Path(__file__).parents[1] / "fixtures" / "brainscript" /
                      "precompute_cntk27.json").read_text())
    stats = RunningStatistics((3,), True)
    stats.add(np.array(ref["samples"], np.float32))
    assert stats.mean.tolist() == ref["mean"]                  # to the bit
    assert stats.inv_std_dev().tolist() == ref["inv_std_dev"]
    assert ref["inv_std_dev"][2] == 1e5


# ---------------------------------------------------------------------------------------------
# The BrainScript names
# ---------------------------------------------------------------------------------------------
def test_the_names_build_cntks_definitions():
    with sd.parameter_registry(sd.ParameterRegistry()):
        lib = StadynLibrary()
        net = build_network("""{ features = Input {3} ; labels = Input {4}
            a = MeanVarNorm (features) ; b = FeatureMVNLayer {} (features)
            m = Mean (features) ; s = InvStdDev (features)
            c = PerDimMeanVarNormalization (features, m, s)
            d = PerDimMeanVarDeNormalization (c, m, s)
            p = LogPrior (labels) ; q = LogPriorLayer {} (labels) }""", lib)
        assert [n.operation for n in lib.precompute_nodes] == \
            ["Mean", "InvStdDev", "Mean", "InvStdDev", "Mean", "InvStdDev", "Mean", "Mean"]
        assert not sd.get_parameters()                 # nothing learnable
        for n in lib.precompute_nodes:                 # set them as the pass would
            n.value.d = np.full(n.value.shape, 2.0 if n.operation == "Mean" else 4.0)
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        feed(net.nodes["features"], x)
        for name, want in (("a", (x - 2) * 4), ("b", (x - 2) * 4), ("c", (x - 2) * 4),
                           ("d", x)):
            net.nodes[name].forward()
            np.testing.assert_allclose(net.nodes[name].d, want)
        net.nodes["p"].forward()
        np.testing.assert_allclose(net.nodes["p"].d, np.log(np.full(4, 2.0)))
        assert net.nodes["p"].shape == (4,)            # no batch axis: one prior


def test_a_precomputed_node_needs_data():
    with sd.parameter_registry(sd.ParameterRegistry()):
        with pytest.raises(ConfigError, match="Mean: its input must come in minibatches") as e:
            build_network("{ w = ParameterTensor {3}\n m = Mean (w) }", StadynLibrary())
    assert e.value.line == 2


# ---------------------------------------------------------------------------------------------
# The momentum CNTK applied: its per-sample value kept as a float32
# ---------------------------------------------------------------------------------------------
def test_a_momentum_time_constant_is_rounded_to_float_as_cntk_did():
    # Speech/Simple's baseline: "effective momentum = 0.950085  momentum as time constant =
    # 2499.8 samples" for momentumAsTimeConstant = 2500, minibatchSize = 128; in double it
    # would be exp(-128/2500) = 0.950089
    m = momenta_per_sample(SGDConfig(1, minibatch_size=(128,), momentum_as_time_constant=(2500,)))
    assert f"{m[0] ** 128:f} {-1 / np.log(m[0]):.1f}" == "0.950085 2499.8"
    assert f"{np.exp(-128 / 2500):f}" == "0.950089"


# ---------------------------------------------------------------------------------------------
# Speech/Simple against cntk.exe's log
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def simple(tmp_path_factory):
    data = tmp_path_factory.mktemp("simple")
    config = copy_cntk_file(data, f"{SIMPLE}/cntk.cntk")
    train = copy_cntk_file(data, "Tests/EndToEndTests/Speech/Data/SimpleDataTrain_cntk_text.txt")
    # the config unchanged but for its command (the write action is a test of its own)
    config.write_text(config.read_text().replace("command=Simple_Demo:Simple_Demo_Output",
                                                 "command=Simple_Demo"))
    log = cntk_file(f"{SIMPLE}/baseline.cpu.txt").decode("utf-8", "replace")
    rows = [ln.split() for ln in train.read_text().splitlines() if ln.strip()]
    labels = np.array([[float(v) for v in r[1:3]] for r in rows])
    features = np.array([[float(v) for v in r[4:6]] for r in rows])
    out = pyio.StringIO()
    run(str(config), [f"DataDir={data}", f"RunDir={data}/run", "makeMode=true",
                      "Simple_Demo=[SGD=[maxEpochs=2]]"], out=out)
    return dict(data=data, config=config, log=log, ours=out.getvalue(), labels=labels,
                features=features)


def _numbers(line: str) -> list[str]:
    return re.findall(r"= (\d+\.\d+) \* (\d+)", line)


def test_speech_simple_precomputes_and_trains_as_cntk_exe(simple):
    ours, theirs = simple["ours"], simple["log"]
    # the pass, in cntk.exe's words
    pass_lines = re.compile(r"Precomputing --> .*|\t\w+ = (?:Mean|InvStdDev)\(\)")
    first_run = theirs[:theirs.index("Finished Epoch[ 1 of 50]")]
    assert pass_lines.findall(re.sub(r"^\S+ \S+: ", "", first_run, flags=re.M)) == \
        pass_lines.findall(ours) == [
            "Precomputing --> 3 PreCompute nodes found.", "\tMeanOfFeatures = Mean()",
            "\tInvStdOfFeatures = InvStdDev()", "\tPrior = Mean()", "Precomputing --> Completed."]
    # ... with its blank lines, up to the first epoch
    block = re.compile(r"\n\nPrecomputing --> 3.*?Starting Epoch 1:", re.S)
    assert block.findall(ours) == block.findall(re.sub(r"^\S+ \S+: ", "", theirs, flags=re.M))[:1]
    assert "effective momentum = 0.950085  momentum as time constant = 2499.8 samples" in ours
    # Losses and errors of the first two epochs: 14 minibatch lines and 2 epoch lines.  The
    # error counts are cntk.exe's exactly.  The losses are float32 sums in another order than
    # cntk.exe's (MKL's): in epoch 1 they agree to 1e-6 (the printed 8th decimal differs by
    # up to 3e-7); in epoch 2, where the network leaves its plateau (0.71 -> 0.21), the
    # difference grows to 1.3e-5.
    line = re.compile(r"(?:Epoch\[ [12] of \d+\]-Minibatch\[.*|Finished Epoch\[ [12] of "
                      r"\d+\]: \[Training\].*)")
    mine, cntk = line.findall(ours), line.findall(theirs)[:16]
    assert len(mine) == len(cntk) == 16
    for i, (a, b) in enumerate(zip(mine, cntk)):
        (loss_a, n_a), (err_a, m_a) = _numbers(a)[:2]
        (loss_b, n_b), (err_b, m_b) = _numbers(b)[:2]
        assert (err_a, n_a, m_a) == (err_b, n_b, m_b)
        assert float(loss_a) == pytest.approx(float(loss_b), abs=1e-6 if i < 8 else 2e-5)


def test_precomputed_values_are_numpys_and_saved_in_the_model(simple):
    with sd.parameter_registry(sd.ParameterRegistry()):
        load_model_parameters(str(simple["data"] / "run" / "models" / "simple.dnn.0"))
        values = sd.get_parameters(grad_only=False)
        # cntk.exe's node names (SimpleNetworkBuilder's: TIMIT CrossValidateSimpleNetwork's
        # baseline.txt lists MeanOfFeatures = Mean(), InvStdOfFeatures = InvStdDev(), Prior)
        mean, inv, prior = values["MeanOfFeatures"], values["InvStdOfFeatures"], \
            values["Prior"]
        np.testing.assert_allclose(mean.d, simple["features"].mean(0), rtol=1e-6)
        np.testing.assert_allclose(inv.d, 1 / simple["features"].std(0), rtol=1e-6)
        np.testing.assert_allclose(prior.d, simple["labels"].mean(0), rtol=1e-6)


def test_a_restart_reads_the_values_from_the_model_file(simple):
    os.remove(simple["data"] / "run" / "models" / "simple.dnn")
    out = pyio.StringIO()
    run(str(simple["config"]), [f"DataDir={simple['data']}", f"RunDir={simple['data']}/run",
                                "makeMode=true", "Simple_Demo=[SGD=[maxEpochs=2]]"], out=out)
    log = out.getvalue()
    assert "Starting from checkpoint" in log and "Precomputing -->" not in log
    assert "No PreCompute nodes found, or all already computed. Skipping pre-computation " \
        "step.\n\nStarting Epoch 2:" in log      # one blank line, as CNTK's logs have it
    # the same second epoch as the run that computed them
    second = re.compile(r"Finished Epoch\[ 2 of 2\].*?;.*?;")
    assert second.findall(log) == second.findall(simple["ours"])


def test_the_write_action_reads_the_prior_from_the_model_file(simple):
    # Speech/Simple's second command writes ScaledLogLikelihood = HLast - Log(Prior) of the
    # test set; with the prior not read back it would be log(0): infinite
    test = copy_cntk_file(simple["data"],
                          "Tests/EndToEndTests/Speech/Data/SimpleDataTest_cntk_text.txt")
    run(str(simple["config"]), [f"DataDir={simple['data']}", f"RunDir={simple['data']}/run",
                                "command=Simple_Demo_Output"], out=pyio.StringIO())
    written = np.loadtxt(simple["data"] / "run" / "SimpleOutput.ScaledLogLikelihood")
    rows = [ln for ln in test.read_text().splitlines() if ln.strip()]
    assert written.shape == (len(rows), 2) and np.isfinite(written).all()


# ---------------------------------------------------------------------------------------------
# Sequences: every step counts once, the padding never
# ---------------------------------------------------------------------------------------------
_SEQUENCE_CONFIG = """
command = Train ; deviceId = -1 ; makeMode = false ; traceLevel = 1
modelPath = "$OutputDir$/seq.dnn"
Train = [
    action = "train"
    BrainScriptNetworkBuilder = [
        t = DynamicAxis{}
        features = Input {3, dynamicAxis = t} ; labels = Input {2}
        norm = MeanVarNorm (features)
        twice = Mean (features .* 2) ; shifted = features - twice
        z = DenseLayer {2} (BS.Sequences.Last (norm))
        prior = LogPrior (labels)
        ce = CrossEntropyWithSoftmax (labels, z)
        criterionNodes = (ce) ; outputNodes = (z)
    ]
    SGD = [ minibatchSize = 7 ; learningRatesPerSample = 0.01 ; maxEpochs = 1 ]
    reader = [
        readerType = "CNTKTextFormatReader" ; file = "$DataDir$/seq.ctf" ; randomize = true
        input = [ features = [ dim = 3 ; format = "dense" ] ;
                  labels = [ dim = 2 ; format = "dense" ] ]
    ]
]
"""


def test_a_sequences_steps_are_its_samples(tmp_path):
    rng = np.random.RandomState(1)
    frames, labels = [], []
    with open(tmp_path / "seq.ctf", "w") as f:
        for s in range(9):
            label = [1, 0] if s % 3 else [0, 1]
            labels.append(label)
            for t in range(1 + s % 4):                     # 1 to 4 steps: padded minibatches
                x = rng.randn(3) * [1, 5, 0.2] + [3, -1, 0]
                frames.append(x)
                y = f"\t|labels {label[0]} {label[1]}" if t == 0 else ""
                f.write(f"{s}\t|features {x[0]:.6f} {x[1]:.6f} {x[2]:.6f}{y}\n")
    (tmp_path / "seq.cntk").write_text(_SEQUENCE_CONFIG)
    frames = np.round(np.array(frames), 6)
    out = pyio.StringIO()
    run(str(tmp_path / "seq.cntk"), [f"DataDir={tmp_path}", f"OutputDir={tmp_path}"], out=out)
    assert "Precomputing --> 4 PreCompute nodes found." in out.getvalue()
    for line in ("\tnorm.mean = Mean()", "\tnorm.invStdDev = InvStdDev()", "\ttwice = Mean()",
                 "\tprior._ = Mean()"):
        assert line in out.getvalue()
    with sd.parameter_registry(sd.ParameterRegistry()):
        load_model_parameters(str(tmp_path / "seq.dnn.0"))
        values = sd.get_parameters(grad_only=False)
        np.testing.assert_allclose(values["norm.mean"].d, frames.mean(0), rtol=1e-5)
        np.testing.assert_allclose(values["norm.invStdDev"].d, 1 / frames.std(0), rtol=1e-5)
        np.testing.assert_allclose(values["twice"].d, 2 * frames.mean(0), rtol=1e-5)
        # one label per sequence: the prior counts sequences
        np.testing.assert_allclose(values["prior._"].d, np.mean(labels, 0), rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# QuickE2E's own BrainScript network (FeatureMVNLayer{}, LogPrior) on its HTKMLFReader block
# ---------------------------------------------------------------------------------------------
def test_quick_e2e_feature_mvn_layer_over_one_epoch_of_frames(quick_e2e, monkeypatch,  # noqa: F811
                                                              tmp_path):
    # The AN4 features are not in CNTK's repository (a stand-in with known values in its first
    # utterances), so its losses cannot be compared with the baseline's; the pass can.  Its
    # SimpleNetworkBuilder is switched off as its NOTE says, and of its two BrainScript
    # versions the "plain" one (MeanVarNorm, LogPrior) is switched on.
    monkeypatch.chdir(quick_e2e["data"])
    config = quick_e2e["config"]
    text = config.read_text().replace("    SimpleNetworkBuilder = [", "    Simple_off = [")
    text = text.replace("    BrainScriptNetworkBuilder = (", "    Composed_off = (").replace(
        "    BrainScriptNetworkBuilder_plain = [", "    BrainScriptNetworkBuilder = [")
    (tmp_path / "bs.cntk").write_text(text)
    out = pyio.StringIO()
    run(str(tmp_path / "bs.cntk"), [
        f"DataDir={quick_e2e['data']}", f"RunDir={tmp_path}", "DeviceId=-1",
        'speechTrain=[reader=[readMethod="none"]]', "speechTrain=[SGD=[maxEpochs=1]]",
        "speechTrain=[SGD=[epochSize=640]]",
        "speechTrain=[SGD=[UseAllDataForPreComputedNode=false]]"], out=out)
    log = out.getvalue()
    # cntk.exe's count for its SimpleNetworkBuilder twin: 516740 parameters, 3 such nodes
    assert "Training 516740 parameters in 6 out of 6 parameter tensors" in log
    assert "Precomputing --> 3 PreCompute nodes found." in log
    frames = quick_e2e["values"][:640].astype(np.float64)   # epochSize frames, in file order
    labels = np.concatenate([quick_e2e["labels"][k] for k in quick_e2e["keys"][:3]])[:640]
    with sd.parameter_registry(sd.ParameterRegistry()):
        load_model_parameters(str(tmp_path / "models" / "cntkSpeech.dnn.0"))
        values = sd.get_parameters(grad_only=False)
        np.testing.assert_allclose(values["featNorm.mean"].d, frames.mean(0), rtol=1e-6)
        np.testing.assert_allclose(values["featNorm.invStdDev"].d, 1 / frames.std(0), rtol=1e-5)
        np.testing.assert_allclose(values["logPrior._"].d,
                                   np.bincount(labels, minlength=132) / 640, atol=1e-7)


def test_a_normalisation_of_a_normalisation_reads_cntks_zeros_during_the_pass(tmp_path):
    # Values not computed are NaN, but while the pass runs they are 0, as CNTK's
    # MarkComputed(false) sets them (InvStdDev stays 0 until the end): the outer MeanVarNorm
    # sees (x - mean) * 0 = 0, so its mean is 0 and its InvStdDev 1 / sqrt(1e-10)
    (tmp_path / "d.ctf").write_text("".join(f"|x {k} {k * k} |y {k % 2} {1 - k % 2}\n"
                                            for k in range(8)))
    (tmp_path / "n.cntk").write_text(f"""command = T ; deviceId = -1 ; makeMode = false
T = [ action = "train" ; modelPath = "{tmp_path}/m"
  BrainScriptNetworkBuilder = [ x = Input {{2}} ; y = Input {{2}}
    n = MeanVarNorm (MeanVarNorm (x)) ; z = DenseLayer {{2}} (n)
    ce = CrossEntropyWithSoftmax (y, z) ; criterionNodes = (ce) ]
  SGD = [ minibatchSize = 3 ; learningRatesPerSample = 0.001 ; maxEpochs = 1 ]
  reader = [ readerType = "CNTKTextFormatReader" ; file = "{tmp_path}/d.ctf"
             input = [ x = [ dim = 2 ; format = "dense" ] ; y = [ dim = 2 ; format = "dense" ] ] ] ]
""")
    run(str(tmp_path / "n.cntk"), out=pyio.StringIO())
    with sd.parameter_registry(sd.ParameterRegistry()):
        load_model_parameters(str(tmp_path / "m.0"))
        values = sd.get_parameters(grad_only=False)
        x = np.array([[k, k * k] for k in range(8)], np.float64)
        # cntk.exe's names are expression paths (BrainScriptEvaluator.cpp:703, 730, 655: an
        # argument is evaluated at the call's path plus its parameter's name, a macro's body at
        # the call's path): the inner pair is n.feat.mean (MeanVarNorm's parameter is feat),
        # the outer n.mean
        np.testing.assert_allclose(values["n.feat.mean"].d, x.mean(0), rtol=1e-6)
        np.testing.assert_allclose(values["n.feat.invStdDev"].d, 1 / x.std(0), rtol=1e-6)
        assert values["n.mean"].d.tolist() == [0, 0]
        assert values["n.invStdDev"].d.tolist() == [1e5, 1e5]
