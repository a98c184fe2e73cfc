"""``SGD.AutoAdjust`` (CNTK's learning-rate control, ``autoAdjustLR = "adjustAfterEpoch"``).

The policy is checked against rate sequences worked out by hand from SGD.cpp's rules for
scripted losses; a tiny regression whose rate becomes too high shows the rollback and the rate
cut end to end, in the lines CNTK printed (Tests/EndToEndTests/Examples/Text/PennTreebank/RNN/
baseline.linux.cpu.txt::

    Loading (rolling back to) previous model with best training-criterion value: .../rnn.dnn.2.
    learnRatePerSample reduced to 0.050000001
    SGD: revoke back to and update checkpoint file for epoch 2

followed by ``Starting Epoch 3: learning rate per sample = 0.050000 ...``), and trains exactly
what a run with those rates written out trains.
"""

from __future__ import annotations

import io
import math
import os
import re
from pathlib import Path

import numpy as np
import pytest

import stadyn as sd
from stadyn import ConfigError, StadynError
from stadyn.brainscript import parse_config
from stadyn.brainscript._autoadjust import (AutoAdjust, LRState, after_epoch, auto_adjust,
                                            initial_state)
from stadyn.brainscript._runner import run


# ---------------------------------------------------------------------------------------------
# The policy, for scripted losses
# ---------------------------------------------------------------------------------------------
def _drive(settings: AutoAdjust, rates: list[float], losses: list[float]):
    """Train "epochs" whose losses come from ``losses`` in turn, as the runner does: the
    explicit ``rates`` first, then AutoAdjust's.  Returns [(epoch, rate used)], the lines and
    the last step."""
    state, epoch, trained, lines, step = LRState(lr=math.nan), 0, [], [], None
    for loss in losses:
        lr = rates[min(epoch, len(rates) - 1)] if epoch < len(rates) else state.lr
        trained.append((epoch + 1, lr))
        step = after_epoch(settings, state, epoch, lr, loss, len(rates))
        state = step.state
        lines += step.lines + step.late_lines
        if step.stop:
            break
        epoch = step.next_epoch if step.rollback_to is not None else epoch + 1
    return trained, lines, step


def test_adjust_after_epoch_increases_rolls_back_and_reduces():
    s = AutoAdjust(reduce_if_improve_less_than=0.01, decrease_factor=0.5,
                   increase_if_improve_more_than=0.3, increase_factor=2.0)
    trained, lines, step = _drive(s, [0.1], [4.0, 2.0, 2.5, 1.99, 1.5, 1.4])
    # epoch 2: 4 -> 2 improves by 50% > 30%: x2.  epoch 3: 2.5 is worse than 2: back to epoch
    # 2's model and its rate 0.2, halved.  epoch 3 again: 1.99 improves by 0.5% <= 1%: halved.
    # epoch 4: 1.99 -> 1.5 is 25%: kept.  epoch 5: 1.5 -> 1.4 is 6.7%: kept.
    assert trained == [(1, 0.1), (2, 0.1), (3, 0.2), (3, 0.1), (4, 0.05), (5, 0.05)]
    assert lines == [
        "learnRatePerSample increased to 0.2",
        "Loading (rolling back to) previous model with best training-criterion value: "
        "model.2.",
        "learnRatePerSample reduced to 0.1",
        "SGD: revoke back to and update checkpoint file for epoch 2",
        "learnRatePerSample reduced to 0.05"]
    assert step.state.prev_criterion == 1.4 and step.state.saved[1] == (0.1, 2.0)


def test_without_load_best_model_the_worse_epoch_is_kept():
    s = AutoAdjust(decrease_factor=0.5, load_best_model=False)
    trained, lines, step = _drive(s, [0.1], [4.0, 5.0, 4.5])
    assert trained == [(1, 0.1), (2, 0.1), (3, 0.05)]
    assert lines == ["learnRatePerSample reduced to 0.05"]
    assert step.state.prev_criterion == 4.5


def test_continue_reduce_halves_every_epoch_once_reduced_then_stops():
    s = AutoAdjust(reduce_if_improve_less_than=0.1, decrease_factor=0.5, continue_reduce=True,
                   load_best_model=False)
    # 10 -> 8: 20% (kept); 8 -> 7.5: 6% <= 10%: reduced, and from now on every epoch;
    # 7.5 -> 6: 20% but halved again; 6 -> 5.9: 1.7%, the second time: stop
    trained, lines, step = _drive(s, [0.1], [10.0, 8.0, 7.5, 6.0, 5.9, 1.0])
    assert trained == [(1, 0.1), (2, 0.1), (3, 0.1), (4, 0.05), (5, 0.025)]
    assert lines == ["learnRatePerSample reduced to 0.05", "learnRatePerSample reduced to 0.025",
                     "Finished training and saved final model", ""]
    assert step.stop and step.rollback_to is None


def test_an_interval_averages_its_epochs_and_a_rollback_removes_them():
    s = AutoAdjust(decrease_factor=0.5, interval=2)
    trained, lines, _ = _drive(s, [0.1], [3.0, 1.0, 2.0, 2.2, 1.0, 0.5])
    # interval 1-2: mean 2.0 (no previous: kept); 3-4: mean 2.1 > 2.0: back to epoch 2,
    # files of epoch 3 removed, rate halved; 3-4 again: mean 0.75
    assert trained == [(1, 0.1), (2, 0.1), (3, 0.1), (4, 0.1), (3, 0.05), (4, 0.05)]
    assert lines == [
        "Loading (rolling back to) previous model with best training-criterion value: "
        "model.2.",
        "learnRatePerSample reduced to 0.05",
        "SGD: removing model and checkpoint files for epoch 3 after rollback to epoch 2",
        "SGD: revoke back to and update checkpoint file for epoch 2"]
    # the checkpoints a rollback may need are kept: epoch 1's goes at the end of epoch 2
    step = after_epoch(s, LRState(lr=0.1), 0, 0.1, 3.0, 1)
    assert step.drop_checkpoints == ()
    assert after_epoch(s, step.state, 1, 0.1, 1.0, 1).drop_checkpoints == (0,)


def test_explicit_rates_are_not_adjusted_but_a_nan_stops():
    s = AutoAdjust(decrease_factor=0.5)
    trained, lines, _ = _drive(s, [0.1, 0.2, 0.3], [1.0, 2.0, 3.0, 4.0])
    assert trained == [(1, 0.1), (2, 0.2), (3, 0.3), (4, 0.3)] and lines[0].startswith("Load")
    with pytest.raises(StadynError, match="not a number"):
        after_epoch(s, LRState(lr=0.1), 0, 0.1, math.nan, 1)


def test_a_restart_past_the_explicit_rates_needs_the_checkpoint():
    s = AutoAdjust()
    with pytest.raises(StadynError, match="there must either exist a checkpoint file"):
        initial_state(s, 3, 1, None)
    state = initial_state(AutoAdjust(interval=2), 3, 1, (0.05, 1.5))
    assert (state.lr, state.prev_criterion, state.not_counted, state.saved) == \
        (0.05, 1.5, 1, {2: (0.05, 1.5)})
    assert initial_state(s, 2, 3, None).prev_criterion == 0.0     # CNTK's missing checkpoint


def _block(text: str):
    return parse_config(f"SGD = [\n    AutoAdjust = [\n        {text}\n    ]\n]", "a.cntk")["SGD"]


@pytest.mark.parametrize("text, message, line", [
    ('autoAdjustLR = "searchBeforeEpoch"', "searchBeforeEpoch .* is not supported", 3),
    ("autoAdjustMinibatch = true", "autoAdjustMinibatch = true .* is not supported", 3),
    ('autoAdjustLR = "sometimes"', "is not known", 3),
    ("autoAdjustLR = adjustAfterEpoch\n learnRateDecreasefactor = 2",
     "learnRateDecreaseFactor must be <= 1", 4),
    ("autoAdjustLR = adjustAfterEpoch\n reduceLearnRateIfImproveLess = 0",
     "unknown or unsupported AutoAdjust key 'reduceLearnRateIfImproveLess'; did you mean "
     "'reduceLearnRateIfImproveLessThan'", 4)])
def test_bad_settings_are_named_where_written(text, message, line):
    sgd = _block(text)
    with pytest.raises(ConfigError, match=message) as err:
        auto_adjust(sgd["AutoAdjust"], sgd)
    assert (err.value.path, err.value.line) == ("a.cntk", line)


def test_auto_adjust_minibatch_is_accepted_where_cntk_searches_in_no_epoch(data, tmp_path):
    # SGD.cpp searches for a minibatch size only in the epochs past the minibatchSize values
    # (``if (m_autoAdjustMinibatch && i >= m_mbSize.size())``): with one for each of the 4
    # epochs it never searches and trains with them; with fewer, Stadyn refuses the key
    search = "AutoAdjust = { autoAdjustMinibatch = true ; minibatchSizeTuningMax = 64 }"
    text, result = _run(data, tmp_path / "all", "0.05", search,
                        "train.SGD.minibatchSize=4:4:8*2")
    assert [e.epoch for e in result.commands["train"]] == [1, 2, 3, 4]
    plain, _ = _run(data, tmp_path / "plain", "0.05", "", "train.SGD.minibatchSize=4:4:8*2")
    assert _finished(text) == _finished(plain)
    with pytest.raises(ConfigError, match=r"autoAdjustMinibatch = true \(CNTK's search for a "
                       r"minibatch size before each epoch \(from epoch 3, past the "
                       r"minibatchSize values\)\) is not supported") as err:
        _run(data, tmp_path / "some", "0.05", search, "train.SGD.minibatchSize=4:8")
    written = (tmp_path / "some" / "reg.cntk").read_text().splitlines()
    assert err.value.line == next(i for i, line in enumerate(written, 1)
                                  if "autoAdjustMinibatch" in line)


def test_settings_and_cntks_defaults():
    sgd = _block("autoAdjustLR = adjustafterepoch ; numPrevLearnRates = 5")
    assert auto_adjust(sgd["AutoAdjust"], sgd) == AutoAdjust(
        0.0, False, 1, 0.618, math.inf, 1.382, True, True, False)
    assert auto_adjust(_block("autoAdjustLR = none")["AutoAdjust"]) is None


# ---------------------------------------------------------------------------------------------
# End to end: a rate that gets too high
# ---------------------------------------------------------------------------------------------
CONFIG = """command = train
deviceId = -1
precision = "float"
traceLevel = 1
modelPath = "$OutputDir$/Models/reg"
train = {
    action = "train"
    BrainScriptNetworkBuilder = {
        x = Input {2}
        y = Input {1}
        W = ParameterTensor {(1:2), init = "fixedValue", value = 0}
        b = ParameterTensor {1, init = "fixedValue", value = 0}
        z = W * x + b
        d = z - y
        sqerr = d .* d
        featureNodes = (x) ; labelNodes = (y) ; criterionNodes = (sqerr) ; outputNodes = (z)
    }
    SGD = {
        epochSize = 0
        minibatchSize = 4
        learningRatesPerSample = RATES
        momentumAsTimeConstant = 4
        maxEpochs = 4
        numMBsToShowResult = 100
        ADJUST
    }
    reader = {
        readerType = "CNTKTextFormatReader"
        file = "$DataDir$/train.txt"
        input = { x = { dim = 2 ; format = "dense" } ; y = { dim = 1 ; format = "dense" } }
    }
}
"""
ADJUST = """AutoAdjust = {
            autoAdjustLR = "adjustAfterEpoch"
            learnRateDecreaseFactor = 0.5
            increaseLearnRateIfImproveMoreThan = 0.5
            learnRateIncreaseFactor = 2
        }"""


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("regression")
    rng = np.random.default_rng(0)
    x = rng.normal(0, 1.0, (32, 2))
    y = x @ np.array([1.5, -2.0]) + 0.5 + rng.normal(0, 0.1, 32)
    (folder / "train.txt").write_text("".join(f"|x {a:.4f} {b:.4f} |y {c:.4f}\n"
                                              for (a, b), c in zip(x, y)))
    return folder


def _run(data: Path, out: Path, rates: str, adjust: str, *extra: str, callback=None):
    path = out / "reg.cntk"
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(CONFIG.replace("RATES", rates).replace("ADJUST", adjust))
    log = io.StringIO()
    result = run(path, [f"DataDir={data}", f"OutputDir={out}", *extra], out=log,
                 epoch_callback=callback)
    return log.getvalue(), result


def _parameters(path: Path) -> list[np.ndarray]:
    net = sd.load(path)
    return [np.asarray(p.d) for p in sorted(net.parameters.values(), key=lambda p: p.shape)]


def _finished(text: str) -> list[tuple[str, str, str]]:
    return re.findall(r"^Finished Epoch\[ (\d) of 4\]: \[Training\] sqerr = (\S+) \* 32; "
                      r"totalSamplesSeen = \d+; learningRatePerSample = (\S+);", text, re.M)


@pytest.fixture(scope="module")
def adjusted(data, tmp_path_factory):
    out = tmp_path_factory.mktemp("adjusted")
    return _run(data, out, "0.2", ADJUST) + (out,)


def test_a_rate_too_high_is_rolled_back_and_cut_in_cntks_lines(adjusted):
    text, result, out = adjusted
    models = out / "Models"
    # the rate doubles after epoch 2 (the loss fell by more than half); with 0.4 the loss
    # rises, so epoch 3 is trained again from epoch 2's model at 0.2, and epoch 4 twice more
    rates = [(e, r) for e, _, r in _finished(text)]
    assert rates == [("1", "0.2"), ("2", "0.2"), ("3", "0.40000001"), ("3", "0.2"),
                     ("4", "0.40000001"), ("4", "0.2"), ("4", "0.1")]
    assert (f"Finished Epoch[ 2 of 4]: [Training] sqerr = {_finished(text)[1][1]} * 32; "
            "totalSamplesSeen = 64; learningRatePerSample = 0.2; ") in text
    block = re.search(r"^Finished Epoch\[ 3 of 4\]: \[Training\] sqerr = \S+ \* 32; "
                      r"totalSamplesSeen = 96; learningRatePerSample = 0.40000001; "
                      r"epochTime=\S+s\n(.*?)\nStarting minibatch loop", text, re.M | re.S)
    assert block.group(1) == (
        f"Loading (rolling back to) previous model with best training-criterion value: "
        f"{models}/reg.2.\n"
        "learnRatePerSample reduced to 0.2\n"
        "SGD: revoke back to and update checkpoint file for epoch 2\n"
        "\n"
        "Starting Epoch 3: learning rate per sample = 0.200000  effective momentum = "
        "0.367879  momentum as time constant = 4.0 samples\n")
    assert "learnRatePerSample increased to 0.40000001\nSGD: Saving checkpoint model" in text
    epochs = result.commands["train"]
    assert [(e.epoch, e.rolled_back) for e in epochs] == [
        (1, False), (2, False), (3, True), (3, False), (4, True), (4, True), (4, False)]
    # CNTK keeps no checkpoint a rollback can no longer need
    assert sorted(os.listdir(models)) == ["reg", "reg.0", "reg.1", "reg.2", "reg.3", "reg.ckp"]


def test_the_rolled_back_run_trains_what_the_rates_written_out_train(adjusted, data, tmp_path):
    # the rollback restores the model, the momentum and the reader position: the run is the
    # one with the rates it ended up with, 0.2 0.2 0.2 0.1
    text, _, out = adjusted
    plain, _ = _run(data, tmp_path, "0.2:0.2:0.2:0.1", "")
    kept = [f for f in _finished(text) if f not in _finished(text)[2:3] + _finished(text)[4:6]]
    assert [f[:2] for f in _finished(plain)] == [f[:2] for f in kept]
    for a, b in zip(_parameters(out / "Models" / "reg"), _parameters(tmp_path / "Models" / "reg")):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_a_restart_continues_with_the_checkpointed_rate(adjusted, data, tmp_path):
    text, _, _ = adjusted

    def stop_after_epoch_3(command, epoch):
        if epoch == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _run(data, tmp_path, "0.2", ADJUST, callback=stop_after_epoch_3)
    resumed, _ = _run(data, tmp_path, "0.2", ADJUST)
    assert _finished(resumed) == _finished(text)[4:]


def test_min_learning_rate_ends_training(data, tmp_path):
    text, result = _run(data, tmp_path, "0.2", ADJUST, "train.SGD.minLearningRatePerSample=0.15")
    assert ("Learn Rate Per Sample for Epoch[4] = 0.1 is less than minLearningRatePerSample "
            "0.15000001. Training complete.") in text
    assert os.path.exists(tmp_path / "Models" / "reg")   # AutoAdjust saves the final model
    assert [e.epoch for e in result.commands["train"]][-1] == 4


def test_learning_rates_per_sweep_move_on_with_epoch_size_0(data, tmp_path):
    # epochSize = 0 is one sweep: the rates given per epoch change at each sweep, as with
    # the sweep's size written out (the second rate was never used before)
    zero, _ = _run(data, tmp_path / "a", "0.2:0.05", "")
    sized, _ = _run(data, tmp_path / "b", "0.2:0.05", "", "train.SGD.epochSize=32")
    assert _finished(zero) == _finished(sized)
    for a, b in zip(_parameters(tmp_path / "a" / "Models" / "reg"),
                    _parameters(tmp_path / "b" / "Models" / "reg")):
        np.testing.assert_array_equal(a, b)


def test_the_controlling_loss_is_cntks_lr_control_criterion():
    # SGD.cpp: the training criterion, or the first evaluation node's with
    # UseEvalCriterionControlLR; the cvReader set's (same order) when it exists and
    # UseCVSetControlLRIfCVExists
    from stadyn.brainscript import SGDConfig
    from stadyn.brainscript._train_progress import CNTKProgress, TrainSetting

    def criterion(adjust: AutoAdjust, validation):
        setting = TrainSetting("t", SGDConfig(1), ["ce", "errs"], 0, 0, "m", False, adjust)
        progress = CNTKProgress(setting, None, None, None, None, None)
        progress.totals = [[6.0, 3], [1.5, 3]]
        return progress._control_criterion(validation)

    cv = {"ce": 0.7, "errs": 0.1}
    assert criterion(AutoAdjust(), None) == 2.0
    assert criterion(AutoAdjust(use_eval_criterion=True), None) == 0.5
    assert criterion(AutoAdjust(), cv) == 0.7
    assert criterion(AutoAdjust(use_eval_criterion=True), cv) == 0.1
    assert criterion(AutoAdjust(use_cv_set=False), cv) == 2.0


def test_the_rate_carried_on_is_cntks_float_rate_per_mb_divided_in_float():
    # SGD.h:162-165 GetLearningRatePerSample: learningRatesPerMB's float entry (Config.h:1514,
    # argvector<float>::operator[] gives a T) over the size_t minibatch size: C++ makes that a
    # float division, held in double: float(0.1) / 3 in float = 0.033333335 (%.8g; the double
    # quotient 0.0333333338 would print 0.033333334, as Stadyn did until bs40: cntk.exe's
    # Simple2d log says 0.0080000004 for 0.2 / 25, test_bs_baseline_logs.py); AutoAdjust
    # multiplies that value: 0.5 x 0.033333335071802 = 0.016666668
    from stadyn.brainscript import SGDConfig
    from stadyn.brainscript._sgd_rates import cntk_learning_rate

    sgd = SGDConfig(1, minibatch_size=(3,), learning_rates_per_mb=(0.1,))
    assert f"{cntk_learning_rate(sgd, 0):.8g}" == "0.033333335"
    step = after_epoch(AutoAdjust(decrease_factor=0.5, load_best_model=False),
                       LRState(lr=math.nan, prev_criterion=1.0), 1, cntk_learning_rate(sgd, 1),
                       1.5, 1)
    assert step.lines == ("learnRatePerSample reduced to 0.016666668",)


def test_raising_max_epochs_rolls_back_to_the_final_model_it_continued_from(adjusted, data,
                                                                           tmp_path):
    # (a Stadyn extension: a finished run continues when maxEpochs is raised) the model of
    # epoch 2 is then modelPath itself, not modelPath.2
    text, _, _ = adjusted
    _run(data, tmp_path, "0.2", ADJUST, "train.SGD.maxEpochs=2")
    more, _ = _run(data, tmp_path, "0.2", ADJUST)
    assert _finished(more) == _finished(text)[2:]
    assert ("Loading (rolling back to) previous model with best training-criterion value: "
            f"{tmp_path}/Models/reg.\n") in more
