"""Progress writers: CNTK's exact lines for known inputs, the freq schedules, the 2017 wording of
the seed's log, log files, parameter counts, TensorBoard events, CSV rows and the progress bar."""

from __future__ import annotations

import csv
import doctest
import importlib
import io
from types import SimpleNamespace

import numpy as np
import pytest

from stadyn.train.progress import (CSV_COLUMNS, CSVProgressWriter, ProgressBarWriter,
                                   ProgressPrinter, ProgressWriter, ProgressWriterError,
                                   TensorBoardProgressWriter, log_number_of_parameters)


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self, now: float = 100.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def lines(capsys) -> list[str]:
    return capsys.readouterr().out.splitlines()


# ---------------------------------------------------------------------------------------------
# ProgressPrinter, CNTK 2.x lines
# ---------------------------------------------------------------------------------------------
def test_two_minibatches_average_by_samples(capsys):
    clock = FakeClock()
    p = ProgressPrinter(freq=2, clock=clock)
    p.update(128.0, 64)
    p.update(64.0, 64)
    clock.now += 2.0
    record = p.summarize_training_progress()
    assert lines(capsys) == [
        " Minibatch[   1-   2]: loss = 1.500000 * 128;",
        "Finished Epoch[1]: loss = 1.500000 * 128 2.000s ( 64.0 samples/s);",
    ]
    assert (record.index, record.samples, record.loss, record.last_minibatch) == (1, 128, 1.5, 2)


def test_minibatches_of_different_sizes_weigh_by_samples(capsys):
    p = ProgressPrinter(freq=2, tag="Training", num_epochs=5, clock=FakeClock())
    p.update(10.0, 10, 1.0)        # mean loss 1.0, 10 % errors
    p.update(90.0, 30, 9.0)        # mean loss 3.0, 30 % errors
    p.summarize_training_progress()
    assert lines(capsys) == [
        " Minibatch[   1-   2]: loss = 2.500000 * 40, metric = 25.00% * 40;",
        "Finished Epoch[1 of 5]: [Training] loss = 2.500000 * 40, metric = 25.00% * 40 "
        "0.000s (  0.0 samples/s);",
    ]


def test_freq_none_prints_only_epoch_lines(capsys):
    clock = FakeClock()
    p = ProgressPrinter(tag="Training", clock=clock)
    for _ in range(10):
        p.update(64.0, 64, 32.0)
    clock.now += 0.5
    p.summarize_training_progress()
    assert lines(capsys) == ["Finished Epoch[1]: [Training] loss = 1.000000 * 640, "
                             "metric = 50.00% * 640 0.500s (1280.0 samples/s);"]


def test_freq_none_with_first_prints_the_first_minibatches_of_each_epoch(capsys):
    """CNTK 2.7 reads freq=None as sys.maxsize: the first `first` minibatches of every epoch
    still get their lines (compat case progress_printer_first_without_freq); test lines
    likewise with test_first."""
    p = ProgressPrinter(freq=None, first=2, test_first=1, clock=FakeClock())
    for i in range(4):
        p.update(float(i + 1) * 10, 10)
    p.summarize_training_progress()
    p.update_test(3.0, 6)
    p.update_test(1.0, 4)
    p.summarize_test_progress()
    p.update(5.0, 10)
    assert lines(capsys) == [
        " Minibatch[   1-   1]: loss = 1.000000 * 10;",
        " Minibatch[   2-   2]: loss = 2.000000 * 10;",
        "Finished Epoch[1]: loss = 2.500000 * 40 0.000s (  0.0 samples/s);",
        " Evaluation Minibatch[   1-   1]: metric = 50.00% * 6;",
        "Finished Evaluation [1]: Minibatch[1-2]: metric = 40.00% * 10;",
        " Minibatch[   1-   1]: loss = 0.500000 * 10;",
    ]


def test_freq_n_with_first_and_numbering_restarts_each_epoch(capsys):
    p = ProgressPrinter(freq=3, first=2, clock=FakeClock())
    for i in range(7):
        p.update(float(i + 1) * 10, 10)
    p.summarize_training_progress()
    p.update(5.0, 10)
    out = lines(capsys)
    assert out[:4] == [
        " Minibatch[   1-   1]: loss = 1.000000 * 10;",
        " Minibatch[   2-   2]: loss = 2.000000 * 10;",
        " Minibatch[   3-   3]: loss = 3.000000 * 10;",
        " Minibatch[   4-   6]: loss = 5.000000 * 30;",   # (4 + 5 + 6) / 3
    ]
    assert out[4].startswith("Finished Epoch[1]: loss = 4.000000 * 70 ")
    assert out[5] == " Minibatch[   1-   1]: loss = 0.500000 * 10;"
    assert len(out) == 6


def test_freq_zero_is_cntks_geometric_table(capsys):
    p = ProgressPrinter(freq=0, clock=FakeClock())
    assert lines(capsys) == [" average      since    average      since      examples",
                             "    loss       last     metric       last              ",
                             " ------------------------------------------------------"]
    for i in range(8):                         # rows after minibatch 1, 3 and 7
        p.update(10.0 * (i + 1), 10, 5.0)
    p.summarize_training_progress()            # CNTK printed no epoch line on this schedule
    assert lines(capsys) == [
        "        1          1        0.5        0.5            10",
        "        2        2.5        0.5        0.5            30",
        "        4        5.5        0.5        0.5            70",
    ]


def test_metric_is_pct_false_prints_the_mean(capsys):
    p = ProgressPrinter(freq=1, metric_is_pct=False, clock=FakeClock())
    p.update(128.0, 64, 16.0)
    p.summarize_training_progress()
    out = lines(capsys)
    assert out[0] == " Minibatch[   1-   1]: loss = 2.000000 * 64, metric = 0.250000 * 64;"
    assert out[1].startswith("Finished Epoch[1]: loss = 2.000000 * 64, metric = 0.250000 * 64 ")


def test_epoch_numbering_and_of_n(capsys):
    clock = FakeClock()
    p = ProgressPrinter(num_epochs=3, clock=clock)
    for _ in range(3):
        p.update(64.0, 64)
        clock.now += 1.0
        p.summarize_training_progress()
    assert [line.split(":")[0] for line in lines(capsys)] == [
        "Finished Epoch[1 of 3]", "Finished Epoch[2 of 3]", "Finished Epoch[3 of 3]"]
    assert p.epochs == 3


def test_epoch_summary_with_metric_flag(capsys):
    p = ProgressPrinter(clock=FakeClock())
    p.update(64.0, 64, 16.0)
    p.epoch_summary()                     # CNTK's default: the loss only
    p.update(64.0, 64, 16.0)
    p.epoch_summary(with_metric=True)
    out = lines(capsys)
    assert "metric" not in out[0]
    assert "metric = 25.00% * 64" in out[1]


def test_update_with_trainer_reads_the_trainers_fields(capsys):
    trainer = SimpleNamespace(previous_minibatch_loss_average=1.5,
                              previous_minibatch_evaluation_average=0.25,
                              previous_minibatch_sample_count=64,
                              learning_rate=lambda: 0.01)
    csv_seen = []

    class Spy(ProgressWriter):
        def on_training_summary(self, record):
            csv_seen.append(record)

    p, spy = ProgressPrinter(freq=1, clock=FakeClock()), Spy()
    for w in (p, spy):
        w.update_with_trainer(trainer, with_metric=True)
        w.update_with_trainer(SimpleNamespace(previous_minibatch_sample_count=0), True)  # skipped
        w.update_with_trainer(trainer)            # without the metric
        w.epoch_summary(with_metric=True)
    out = lines(capsys)
    assert out[0] == " Minibatch[   1-   1]: loss = 1.500000 * 64, metric = 25.00% * 64;"
    assert out[1] == " Minibatch[   2-   2]: loss = 1.500000 * 64;"
    assert out[2].startswith("Finished Epoch[1]: loss = 1.500000 * 128, metric = 12.50% * 128 ")
    assert csv_seen[0].learning_rate == 0.01 and csv_seen[0].samples == 128


def test_test_lines_and_summaries(capsys):
    p = ProgressPrinter(test_freq=2, clock=FakeClock())
    for errors in (2.0, 1.0, 0.0):
        p.update_test(errors, 16)
    p.summarize_test_progress()
    p.update_test(4.0, 16)
    p.summarize_test_progress()
    assert lines(capsys) == [
        " Evaluation Minibatch[   1-   2]: metric = 9.38% * 32;",
        "Finished Evaluation [1]: Minibatch[1-3]: metric = 6.25% * 48;",
        "Finished Evaluation [2]: Minibatch[1-1]: metric = 25.00% * 16;",
    ]


def test_evaluations_are_timed_from_their_first_minibatch():
    clock = FakeClock()
    w = ProgressWriter(clock=clock)
    for _ in range(2):
        clock.now += 50.0                     # training between evaluations is not counted
        w.update_test(1.0, 16)
        clock.now += 2.0
        w.update_test(1.0, 16)
        assert w.summarize_test_progress().seconds == 2.0


def test_empty_minibatches_are_ignored(capsys):
    p = ProgressPrinter(freq=1, clock=FakeClock())
    p.update(0.0, 0)
    p.update_test(0.0, 0)
    assert lines(capsys) == [] and p.total_training_updates() == 0


def test_write_log_and_end(capsys):
    p = ProgressPrinter()
    p.write("Learning rate per 1 samples", 0.0015625)
    p.log("hello")
    p.end_progress_print("bye")               # msg goes only to a log file, as in CNTK
    assert lines(capsys) == ["Learning rate per 1 samples: 0.0015625", "hello",
                             "CNTKCommandTrainEnd: train"]


def test_heartbeat_at_most_every_ten_seconds(capsys):
    clock = FakeClock()
    p = ProgressPrinter(gen_heartbeat=True, clock=clock)
    for step in (0, 4, 8, 11, 12, 25):
        clock.now = 100.0 + step
        p.update(1.0, 1)
    assert lines(capsys) == ["PROGRESS: 0.00%"] * 3       # at 0, 11 and 25 s


@pytest.mark.parametrize("kwargs", [{"freq": -1}, {"freq": 2.5}, {"freq": True}, {"first": -2},
                                    {"test_freq": "often"}, {"style": "2016"}])
def test_bad_arguments_are_named(kwargs):
    with pytest.raises(ValueError, match="ProgressPrinter") as info:
        ProgressPrinter(**kwargs)
    assert isinstance(info.value, ProgressWriterError)


def test_closed_writer_refuses_updates():
    with ProgressPrinter() as p:
        pass
    p.close()                                  # twice is fine
    with pytest.raises(ProgressWriterError, match="closed"):
        p.update(1.0, 1)


# ---------------------------------------------------------------------------------------------
# The 2017 beta's wording (the seed's log)
# ---------------------------------------------------------------------------------------------
def test_2017_style_reproduces_the_seed_log(capsys):
    clock = FakeClock(1000.0)
    p = ProgressPrinter(tag="Training", style="2017", clock=clock)
    clock.now += 42.0                    # set-up time before the first minibatch is not counted
    # epoch 1: 781 minibatches of 64 and one of 16 = 50000 samples, as the seed's loop reads them
    sizes = [64] * 781 + [16]
    for n in sizes:
        p.update_with_trainer(SimpleNamespace(previous_minibatch_loss_average=2.012469,
                                              previous_minibatch_evaluation_average=0.751,
                                              previous_minibatch_sample_count=n), True)
    clock.now += 15.3803
    p.epoch_summary(with_metric=True)
    for n in sizes:
        p.update(1.701941 * n, n, 0.627 * n)
    clock.now += 15.42445
    p.epoch_summary(with_metric=True)
    assert lines(capsys) == [
        "Finished Epoch [1]: [Training] loss = 2.012469 * 50000, metric = 75.1% * 50000 "
        "15.380s (3250.9 samples per second)",
        "Finished Epoch [2]: [Training] loss = 1.701941 * 50000, metric = 62.7% * 50000 "
        "15.424s (3241.6 samples per second)",
    ]


def test_2017_style_minibatch_lines(capsys):
    p = ProgressPrinter(freq=2, style="2017", clock=FakeClock())
    p.update(128.0, 64, 16.0)
    p.update(64.0, 64, 0.0)
    p.update(64.0, 64)
    p.update(64.0, 64)
    assert lines(capsys) == [" Minibatch[   1-   2]: loss = 1.500000 * 128, metric = 12.5% * 128",
                             " Minibatch[   3-   4]: loss = 1.000000 * 128"]


# ---------------------------------------------------------------------------------------------
# log_to_file and rank
# ---------------------------------------------------------------------------------------------
def test_log_to_file_redirects_and_flushes_each_line(tmp_path, capsys):
    path = tmp_path / "train.log"
    path.write_text("an older run\n")
    p = ProgressPrinter(freq=1, log_to_file=str(path), num_epochs=2, clock=FakeClock())
    p.update(128.0, 64, 16.0)
    # each line is in the file as soon as it is printed
    assert path.read_text().splitlines()[-1] == (
        " Minibatch[   1-   1]: loss = 2.000000 * 64, metric = 25.00% * 64;")
    p.summarize_training_progress()
    p.end_progress_print("done")
    assert lines(capsys) == [f"Redirecting log to file {path}"]
    text = path.read_text().splitlines()
    assert text[:4] == [str(path), "CNTKCommandTrainInfo: train : 2",
                        "CNTKCommandTrainInfo: CNTKNoMoreCommands_Total : 2",
                        "CNTKCommandTrainBegin: train"]
    assert text[5].startswith("Finished Epoch[1 of 2]: loss = 2.000000 * 64, metric = 25.00% * 64")
    assert text[6:] == ["CNTKCommandTrainEnd: train", "done"]


def test_rank_names_the_log_file(tmp_path, capsys):
    ProgressPrinter(log_to_file=str(tmp_path / "log"), rank=3).log("from rank 3")
    assert (tmp_path / "log").exists() is False
    assert (tmp_path / "logrank3").read_text().splitlines()[-1] == "from rank 3"
    ProgressPrinter(rank=1).log("ranks print to stdout too")
    assert lines(capsys)[-1] == "ranks print to stdout too"


# ---------------------------------------------------------------------------------------------
# log_number_of_parameters
# ---------------------------------------------------------------------------------------------
# CNTK's CIFAR-10 ConvNet: four 3x3 convolutions (64 maps) and Dense 256, 128, 10.
CIFAR_CONVNET_SHAPES = [(64, 3, 3, 3), (64,), (64, 64, 3, 3), (64,), (64, 64, 3, 3), (64,),
                (64, 64, 3, 3), (64,), (4096, 256), (256,), (256, 128), (128,), (128, 10), (10,)]


def test_log_number_of_parameters_cifar_convnet(capsys):
    params = [SimpleNamespace(shape=s) for s in CIFAR_CONVNET_SHAPES]
    model = SimpleNamespace(parameters=params)
    log_number_of_parameters(model)
    log_number_of_parameters(params)
    log_number_of_parameters({f"p{i}": np.zeros(s) for i, s in enumerate(CIFAR_CONVNET_SHAPES)})
    assert lines(capsys) == ["Training 1195594 parameters in 14 parameter tensors."] * 3


def test_log_number_of_parameters_trace_and_other_models(capsys):
    torch = pytest.importorskip("torch")
    log_number_of_parameters(torch.nn.Linear(3, 2), trace_level=1)   # .parameters() is a method
    assert capsys.readouterr().out == (
        "Training 8 parameters in 2 parameter tensors.\n\n\t(2, 3)\n\t(2,)\n")
    log_number_of_parameters([SimpleNamespace(shape=(None, 4)), SimpleNamespace(size=7)])
    assert lines(capsys) == ["Training so far unspecified number of parameters in 2 parameter "
                             "tensors."]
    with pytest.raises(TypeError, match="parameters"):
        log_number_of_parameters(42)


@pytest.mark.usefixtures("fresh_parameters")
def test_log_number_of_parameters_stadyn_layer(capsys):
    import stadyn as sd
    import stadyn.layers as L
    model = L.Sequential([L.Dense(8), L.Dense(2)])
    model(sd.Variable((5, 3)))
    log_number_of_parameters(model)
    assert lines(capsys) == ["Training 50 parameters in 4 parameter tensors."]


# ---------------------------------------------------------------------------------------------
# TensorBoard
# ---------------------------------------------------------------------------------------------
def read_scalars(folder) -> dict[str, list[tuple[int, float]]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    events = EventAccumulator(str(folder))
    events.Reload()
    return {tag: [(e.step, pytest.approx(e.value)) for e in events.Scalars(tag)]
            for tag in events.Tags()["scalars"]}


def test_tensorboard_scalars_read_back(tmp_path):
    clock = FakeClock()
    with TensorBoardProgressWriter(freq=2, log_dir=tmp_path, clock=clock) as tb:
        tb.update_test(3.0, 12)                  # an evaluation before any training
        tb.summarize_test_progress()
        for i in range(4):
            tb.update(64.0 * (i + 1), 64, 16.0, learning_rate=0.1)
        clock.now += 2.0
        tb.summarize_training_progress()
        tb.update(32.0, 64, 0.0, learning_rate=0.05)
        tb.summarize_training_progress()
        tb.update_test(4.0, 16)
        tb.summarize_test_progress()
        tb.write("momentum", 0.9)
    scalars = read_scalars(tmp_path)
    assert scalars["minibatch/avg_loss"] == [(2, 1.5), (4, 3.5)]
    assert scalars["minibatch/avg_metric"] == [(2, 0.25), (4, 0.25)]
    assert scalars["minibatch/learning_rate"] == [(2, 0.1), (4, 0.1)]
    assert scalars["summary/avg_loss"] == [(1, 2.5), (2, 0.5)]
    assert scalars["summary/avg_metric"] == [(1, 0.25), (2, 0.0)]
    assert scalars["summary/learning_rate"] == [(1, 0.1), (2, 0.05)]
    assert scalars["summary/samples_per_second"][0] == (1, 128.0)
    assert scalars["summary/test_avg_metric"] == [(1, 0.25)]
    assert scalars["minibatch/test_avg_metric"] == [(5, 0.25)]
    assert scalars["momentum"] == [(5, 0.9)]


def test_tensorboard_progress_tags_keep_the_writers_own_scalars(tmp_path):
    """progress_tags: the hooks write only the tags named; write_value and write any tag."""
    with TensorBoardProgressWriter(freq=1, log_dir=tmp_path, clock=FakeClock(),
                                   progress_tags=["minibatch/avg_loss"]) as tb:
        tb.update(8.0, 4, 1.0, learning_rate=0.1)
        tb.summarize_training_progress()
        tb.write_value("mine", 1.5, 3)
        tb.write("momentum", 0.9)
    scalars = read_scalars(tmp_path)
    assert sorted(scalars) == sorted(["minibatch/avg_loss", "mine", "momentum"])
    assert scalars["minibatch/avg_loss"] == [(1, 2.0)]


def test_tensorboard_only_rank_zero_writes(tmp_path):
    tb = TensorBoardProgressWriter(log_dir=tmp_path / "r1", rank=1)
    tb.update(1.0, 1)
    tb.summarize_training_progress()
    tb.close()
    assert not (tmp_path / "r1").exists()
    with pytest.raises(ProgressWriterError, match="closed"):
        tb.write_value("x", 1.0, 1)


def test_tensorboard_write_needs_a_number(tmp_path):
    with TensorBoardProgressWriter(log_dir=tmp_path) as tb:
        with pytest.raises(ValueError, match="'note' must be a number"):
            tb.write("note", "text")


# ---------------------------------------------------------------------------------------------
# CSV
# ---------------------------------------------------------------------------------------------
def read_rows(path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_csv_rows_and_append_on_reopen(tmp_path):
    path = tmp_path / "progress.csv"
    clock = FakeClock()
    log = CSVProgressWriter(path, freq=2, test_freq=None, clock=clock)
    log.update(128.0, 64, 16.0, 0.1)
    clock.now += 1.0
    log.update(64.0, 64, 0.0, 0.1)
    log.update(64.0, 64)
    clock.now += 1.0
    log.summarize_training_progress()
    log.update_test(4.0, 16)
    log.summarize_test_progress()
    log.close()
    with open(path) as f:
        assert f.readline().strip() == ",".join(CSV_COLUMNS)
    rows = read_rows(path)
    assert [r["kind"] for r in rows] == ["minibatch", "epoch", "test"]
    mb, epoch, test = rows
    assert (mb["epoch"], mb["minibatch"], mb["samples"], mb["loss"], mb["metric"]) == (
        "1", "2", "128", "1.5", "0.125")
    assert (float(mb["seconds"]), float(mb["samples_per_s"]), mb["learning_rate"]) == (
        1.0, 128.0, "0.1")
    assert (epoch["minibatch"], epoch["samples"], epoch["loss"], epoch["seconds"]) == (
        "3", "192", str(256.0 / 192), "2.0")
    assert (test["loss"], test["metric"], test["samples"], test["total_minibatches"]) == (
        "", "0.25", "16", "3")

    # A resumed run appends to the same file, with no second header, and continues the epochs.
    log = CSVProgressWriter(path, clock=clock)
    log.epochs = 1
    log.update(10.0, 10)
    log.summarize_training_progress()
    log.close()
    rows = read_rows(path)
    assert len(rows) == 4 and rows[3]["kind"] == "epoch" and rows[3]["epoch"] == "2"
    assert rows[3]["metric"] == "" and rows[3]["learning_rate"] == ""


def test_csv_refuses_a_foreign_file(tmp_path):
    path = tmp_path / "other.csv"
    path.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(ProgressWriterError, match="other.csv.*not a CSVProgressWriter log"):
        CSVProgressWriter(path)
    assert path.read_text() == "a,b,c\n1,2,3\n"


# ---------------------------------------------------------------------------------------------
# Progress bar
# ---------------------------------------------------------------------------------------------
def test_bar_does_nothing_without_a_terminal(capsys):
    bar = ProgressBarWriter(num_samples_per_epoch=128)      # pytest's stderr is not a tty
    for _ in range(3):
        bar.update(64.0, 64, 8.0)
        assert bar.bar is None
    bar.summarize_training_progress()
    bar.close()
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""


def test_bar_draws_per_epoch_when_enabled():
    stream = io.StringIO()
    bar = ProgressBarWriter(num_samples_per_epoch=128, tag="Training", file=stream, enabled=True)
    bar.update(64.0, 64, 8.0)
    assert bar.bar is not None and bar.bar.total == 128 and bar.bar.n == 64
    bar.update(64.0, 64, 8.0)
    bar.summarize_training_progress()
    assert bar.bar is None
    bar.update(32.0, 64)
    assert "epoch 2" in bar.bar.desc
    bar.close()
    text = stream.getvalue()
    assert "Training epoch 1" in text and "loss=1.0000, metric=12.50%" in text


def test_bar_follows_the_streams_isatty():
    class Tty(io.StringIO):
        def isatty(self):
            return True
    bar = ProgressBarWriter(file=Tty())
    bar.update(1.0, 1)
    assert bar.bar is not None and bar.bar.total is None
    bar.close()


# ---------------------------------------------------------------------------------------------
# The writers under the real Trainer, and the docstring examples
# ---------------------------------------------------------------------------------------------
def test_writers_under_the_trainer(tmp_path, capsys):
    import stadyn as sd
    import stadyn.functions as F
    import stadyn.layers as L
    import stadyn.solvers as S
    from stadyn.train import Trainer

    rng = np.random.default_rng(0)
    printer = ProgressPrinter(freq=1, tag="Training")
    table = CSVProgressWriter(tmp_path / "p.csv", freq=1)
    with sd.parameter_registry(sd.ParameterRegistry()):
        x, y = sd.Variable((4, 3)), sd.Variable((4, 2))
        z = L.Dense(2)(x)
        loss = F.cross_entropy_with_softmax(z, y)
        err = F.classification_error(z, y)
        solver = S.Sgd(lr=0.1)
        solver.set_parameters(sd.get_parameters())
        trainer = Trainer(z, (loss, err), [solver], [printer, table])
        for _ in range(2):
            trainer.train_minibatch({x: rng.normal(size=(4, 3)), y: np.eye(2)[[0, 1, 0, 1]]})
        trainer.summarize_training_progress()
    out = lines(capsys)
    assert out[0].startswith(" Minibatch[   1-   1]: loss = ") and out[0].endswith("% * 4;")
    assert out[2].startswith("Finished Epoch[1]: [Training] loss = ")
    assert " * 8, metric = " in out[2]
    table.close()
    assert [r["kind"] for r in read_rows(tmp_path / "p.csv")] == ["minibatch"] * 2 + ["epoch"]


@pytest.mark.parametrize("name", ["stadyn.train.progress", "stadyn.train._progress",
                                  "stadyn.train._printer", "stadyn.train._tensorboard",
                                  "stadyn.train._csvlog"])
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
