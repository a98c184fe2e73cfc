"""The CNTK tutorial-style programs of examples/cntk, each run unchanged (its import line is
``import stadyn.compat.cntk as C``) at a tiny size on the scikit-learn digits written by
examples/cntk/prepare_digits.py, checked for learning and, where the run is deterministic,
against CNTK 2.7's own output of the same run (refs/cntk27_*.txt, made by
refs/make_cntk_gallery_refs.py)."""

import importlib.util
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import fork_server
import stadyn as sd
import stadyn.compat.cntk as C
from fork_server import ForkServer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples", "cntk")
REFS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "refs")
TINY = json.load(open(os.path.join(REFS, "tiny_runs.json")))


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    """The digits in CNTK's text format, as prepare_digits.py writes them."""
    pytest.importorskip("sklearn")
    folder = tmp_path_factory.mktemp("digits")
    subprocess.run([sys.executable, os.path.join(EXAMPLES, "prepare_digits.py"), "--out",
                    str(folder)], check=True, capture_output=True, timeout=300)
    return folder


@pytest.fixture(scope="module")
def sequences(tmp_path_factory):
    """ATIS- and CMUDict-shaped CTF files, as prepare_sequences.py writes them."""
    folder = tmp_path_factory.mktemp("sequences")
    subprocess.run([sys.executable, os.path.join(EXAMPLES, "prepare_sequences.py"), "--out",
                    str(folder)], check=True, capture_output=True, timeout=300)
    return folder


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    """Each program's process forked from one that imported what every program imports
    (NumPy and ``stadyn.compat.cntk``; before, each started an interpreter and imported them:
    ~2-3 s of CPU a program), run as ``python PROGRAM ARGS`` (tests/fork_server.py)."""
    # the Stadyn under test, wherever the program runs from
    path = [os.path.dirname(os.path.dirname(os.path.abspath(sd.__file__)))]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        path + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    server = ForkServer([sys.executable, fork_server.__file__, "numpy", "stadyn.compat.cntk"],
                        tmp_path_factory.mktemp("programs"), env)
    yield server
    server.close()


def run(programs, stem, tmp_path, digits=None):
    """The program's standard output at its CI size (refs/tiny_runs.json)."""
    name, = [n for n in TINY if n.endswith(f"/{stem}.py")]
    args = list(TINY[name])
    if digits is not None:
        args += ["--data", str(digits)]
    if stem == "transfer_learning":
        args += ["--models", str(tmp_path / "Models")]
    status, stdout, stderr = programs.run([os.path.join(EXAMPLES, name), *args], tmp_path,
                                          tmp_path / "logs", 600)
    assert status == 0, stderr[-4000:]
    return stdout


def cntk27(name):
    with open(os.path.join(REFS, f"cntk27_{name}.txt")) as f:
        return f.read()


def number(pattern, text, group=1):
    found = re.search(pattern, text, re.M)
    assert found, f"no line matching {pattern!r} in:\n{text}"
    return float(found.group(group))


NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
# the end of a ProgressPrinter epoch line: " 1.499s (282.9 samples/s);"
TIMING = re.compile(r" \d+\.\d+s \( *\d+\.\d+ samples/s\);$")


def _compared_lines(text):
    """The lines make_cntk_gallery_refs.py keeps of a run (not blank, not CNTK's tab- or
    dash-led build information), less the timing line and the epoch lines' timings."""
    return [TIMING.sub(";", ln) for ln in text.splitlines()
            if ln.strip() and not ln.startswith(("\t", "-", "Build info", "Trained on "))]


def assert_same_run_as_cntk(out, ref):
    """Every line CNTK 2.7 printed, printed again: the same text, the same numbers (to float
    rounding, 1e-3 relative or 2e-3 absolute; a percentage within half a point, one sample of
    200), except the timing line and the timings that end the progress printer's epoch lines.
    Stadyn starts a CNTK program from CNTK's initial values (test_cntk_initial_values.py) and
    reads CNTK's sample order (cntk_randomization.py), so a run without dropout or random
    augmentation repeats CNTK's."""
    mine, theirs = _compared_lines(out), _compared_lines(ref)
    assert [NUMBER.sub("#", ln) for ln in mine] == [NUMBER.sub("#", ln) for ln in theirs]
    for a, b in zip(mine, theirs):
        x = np.array([float(v) for v in NUMBER.findall(a)])
        y = np.array([float(v) for v in NUMBER.findall(b)])
        tolerance = np.where([("%" in a)] * len(x), 0.5, np.maximum(2e-3, 1e-3 * np.abs(y)))
        assert (np.abs(x - y) <= tolerance).all(), (a, b)


def test_every_program_differs_from_cntks_only_in_its_import():
    assert len([n for n in TINY if not n.startswith("_")]) >= 5
    for name in TINY:
        if name.startswith("_"):
            continue
        source = open(os.path.join(EXAMPLES, name)).read()
        imports = [line for line in source.splitlines() if re.match(r"(import|from) \S*cntk", line)]
        assert imports == ["import stadyn.compat.cntk as C"], (name, imports)


@pytest.mark.slow
def test_logistic_regression_learns_cntk_27s_weights(programs, tmp_path):
    # CNTK 101: zero-initialised parameters and NumPy-seeded data make the run deterministic, so
    # CNTK 2.7's own run of the same program is the expectation, to float rounding.
    out, ref = run(programs, "logistic_regression", tmp_path), cntk27("logistic_regression")
    for what in ("Weights", "Bias"):
        mine = np.array(json.loads(re.search(rf"^{what}: *(.*)$", out, re.M).group(1)))
        theirs = np.array(json.loads(re.search(rf"^{what}: *(.*)$", ref, re.M).group(1)))
        np.testing.assert_allclose(mine, theirs, atol=2e-3)
    assert np.abs(mine).max() > 1          # it learnt (the parameters start at 0)
    test_error = number(r"^Test error: ([0-9.]+)", out)
    assert abs(test_error - number(r"^Test error: ([0-9.]+)", ref)) <= 0.005
    assert test_error < 0.4                # chance is 0.5 (1,000 test points)
    # the first minibatch, all outputs 0: CNTK predicts class 0 for every point
    first = r"^Minibatch: 0, Loss: ([0-9.]+), Error: ([0-9.]+)$"
    assert number(first, out, 2) == number(first, ref, 2) == 0.52
    assert number(first, out) == number(first, ref) == 0.6931


@pytest.mark.slow
def test_feedforward_network_learns(programs, tmp_path):
    out = run(programs, "feedforward", tmp_path)
    assert "Training 2802 parameters in 6 parameter tensors." in out    # CNTK 2.7's count too
    assert "Training 2802 parameters in 6 parameter tensors." in cntk27("feedforward")
    pattern = r"^Mean train loss: first quarter ([0-9.]+), last quarter ([0-9.]+)$"
    assert number(pattern, out, 2) < 0.75 * number(pattern, out, 1)
    # chance is 0.5; CNTK 2.7's run of the same size ends at 0.07
    assert number(r"^Test error: ([0-9.]+)", out) < 0.3
    assert_same_run_as_cntk(out, cntk27("feedforward"))


@pytest.mark.slow
def test_convolutional_network_learns(programs, tmp_path, digits):
    out = run(programs, "mnist_conv", tmp_path, digits)
    ref = cntk27("mnist_conv")
    for line in ("Output Shape of the first convolution layer: (8, 14, 14)",
                 "Training 11274 parameters in 6 parameter tensors."):
        assert line in out and line in ref
    pattern = r"^Mean train loss: first sweep ([0-9.]+), last sweep ([0-9.]+)$"
    assert number(pattern, out, 2) < 0.9 * number(pattern, out, 1)
    # ten classes: chance is 90%; CNTK 2.7's run of the same size ends at 43%
    assert number(r"^Average test error: ([0-9.]+)% on 300 samples$", out) < 70
    assert_same_run_as_cntk(out, ref)


@pytest.mark.slow
def test_autoencoder_reconstructs_better_after_training(programs, tmp_path, digits):
    out = run(programs, "autoencoder", tmp_path, digits)
    before = number(r"^Reconstruction MSE on the test pictures before training: ([0-9.]+)$", out)
    after = number(r"^Reconstruction MSE on the test pictures after training: ([0-9.]+)$", out)
    assert after < before - 50             # CNTK 2.7, the same run: 9377 -> 9125
    pattern = r"^Mean train loss: first sweep ([0-9.]+), last sweep ([0-9.]+)$"
    assert number(pattern, out, 2) < number(pattern, out, 1)
    # its "error" (1 - the picture's value where the reconstruction is brightest) swings with
    # the initial weights this early; started from CNTK's, every line is CNTK 2.7's
    assert_same_run_as_cntk(out, cntk27("autoencoder"))


@pytest.mark.slow
@pytest.mark.usefixtures("fresh_parameters")
def test_transfer_learning_trains_only_the_new_head(programs, tmp_path, digits):
    out = run(programs, "transfer_learning", tmp_path, digits)
    # only the new head is trained: CNTK 2.7 counts the same
    line = "Training 325 parameters in 2 parameter tensors."
    assert line in out and line in cntk27("transfer_learning")
    # five classes: chance is 80%
    assert number(r"^Transfer model: test error ([0-9.]+)%", out) < 60
    base = C.load_model(str(tmp_path / "Models" / "digits0to4_base.model"))
    transfer = C.load_model(str(tmp_path / "Models" / "digits5to9_transfer.model"))
    # the frozen layers kept the base model's values through the new head's training
    base_values = {p.shape: p.value for p in base.parameters}
    frozen = [c for c in transfer.constants if c.shape != ()]
    assert sorted(c.shape for c in frozen) == sorted(
        p.shape for p in base.parameters if p.shape not in ((64, 5), (5,)))
    for c in frozen:
        np.testing.assert_array_equal(c.value, base_values[c.shape])
    # ... and the head, its bias initialised to 0, changed
    assert sorted(p.shape for p in transfer.parameters) == [(5,), (64, 5)]
    assert np.abs(transfer.prediction.b.value).max() > 1e-3
    assert not np.array_equal(transfer.prediction.W.value, base.base_prediction.W.value)


def test_classification_error_equals_cntk_27_on_ties_and_soft_targets():
    # met in the programs: an all-zero model (CNTK 101's first minibatch) and pixels scored
    # against pixels (CNTK 105); refs/make_cntk_classification_error.py made the numbers
    cases = json.load(open(os.path.join(REFS, "cntk_classification_error.json")))["cases"]
    for case in cases:
        z = np.array(case["z"], np.float32)
        t = np.array(case["t"], np.float32)
        zi, ti = C.input_variable(z.shape[1]), C.input_variable(t.shape[1])
        err = C.classification_error(zi, ti, topN=case["topN"])
        got = [float(np.asarray(err.eval({zi: z[i:i + 1], ti: t[i:i + 1]})).ravel()[0])
               for i in range(len(z))]
        np.testing.assert_allclose(got, case["error"], atol=1e-6, err_msg=str(case["topN"]))


@pytest.mark.usefixtures("fresh_parameters")
def test_autoencoder_steps_equal_cntk_27s():
    # CNTK 105's recipe (custom loss, soft-target metric, fsadagrad) from the same seeded
    # weights as CNTK 2.7's run in refs/make_cntk_autoencoder_steps.py, whose run() this calls
    spec = importlib.util.spec_from_file_location(
        "make_cntk_autoencoder_steps", os.path.join(REFS, "make_cntk_autoencoder_steps.py"))
    maker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(maker)
    losses, metrics, sums = maker.run(C)
    ref = json.load(open(os.path.join(REFS, "cntk_autoencoder_steps.json")))
    np.testing.assert_allclose(losses, ref["losses"], rtol=1e-3)
    assert losses[-1] < losses[0] - 5                          # it learns, in both
    # the metric counts where the brightest output lands: a near-tie may fall the other way
    assert np.abs(np.subtract(metrics, ref["metrics"])).max() < 0.03
    np.testing.assert_allclose(sums, ref["parameter_abs_sums"], rtol=1e-3)


@pytest.mark.slow
def test_language_understanding_tagger_learns(programs, tmp_path, sequences):
    # CNTK 202: Embedding + Recurrence(LSTM) + Dense per word, sequences from a CTF file
    out = run(programs, "language_understanding", tmp_path, sequences)
    # Embedding 40x16, LSTM W 16x128 + H 32x128 + b, Dense 32x8 + 8
    assert "Training 7176 parameters in 6 parameter tensors." in out
    pattern = r"^Mean train loss: first quarter ([0-9.]+), last quarter ([0-9.]+)$"
    assert number(pattern, out, 2) < number(pattern, out, 1)
    # eight slot labels; the most frequent one covers about a fifth of the words
    assert number(r"^Test error: ([0-9.]+) on \d+ words$", out) < 0.8
    # without dropout, from CNTK's initial values, in CNTK's sample order: CNTK 2.7's run
    assert_same_run_as_cntk(out, cntk27("language_understanding"))


@pytest.mark.slow
def test_sequence_to_sequence_with_attention_learns(programs, tmp_path, sequences):
    # CNTK 204: encoder and decoder on their own sequence axes, attention inside the decoder's
    # recurrence, the labels delayed by one step; CNTK's tutorial counts 29 tensors too
    out = run(programs, "sequence_to_sequence", tmp_path, sequences)
    assert re.search(r"^Training \d+ parameters in 29 parameter tensors\.$", out, re.M), out
    pattern = r"^Mean train loss: first quarter ([0-9.]+), last quarter ([0-9.]+)$"
    assert number(pattern, out, 2) < number(pattern, out, 1) - 0.1
    # the criterion is one Function of (loss, metric): the metric is reported (it was 0% when
    # the Trainer dropped the second output)
    assert number(r"^Finished Epoch\[1\]: \[Training\] loss = [0-9.]+ \* \d+, "
                  r"metric = ([0-9.]+)% ", out) > 50
    # then the greedy decoder (UnfoldFrom of the decoder, its recurrences stepped with the
    # loop) transcribes the test words; all of it, from CNTK's initial values without
    # dropout, is CNTK 2.7's run
    assert len(re.findall(r"^(<s> .* </s>) -> (.*)$", out, re.M)) == 9, out
    assert_same_run_as_cntk(out, cntk27("sequence_to_sequence"))
