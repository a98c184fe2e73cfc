"""NNabla's monitors (stadyn.train): the files at their edges and on bad input.  The files'
lines, log lines and images are held to NNabla 1.39's in tests/compat (nnabla_utils.py)."""

import os

import numpy as np
import pytest

from stadyn._errors import DataError, StadynError
from stadyn.io import imread
from stadyn.train import (Monitor, MonitorError, MonitorImage, MonitorImageTile, MonitorSeries,
                          MonitorTimeElapsed, plot_series, tile_images)


def test_series_lines_are_interval_means_in_g_format(tmp_path):
    m = Monitor(str(tmp_path))
    s = MonitorSeries("Training error", m, interval=4, verbose=False)
    for i in range(10):
        s.add(i, np.array([i, i + 1], np.float32) / 3)   # arrays: the mean of every element
    # flushes at 3 (values 0..3) and 7 (4..7); 8 and 9 stay buffered
    expected = [f"3 {np.mean([np.arange(4), np.arange(1, 5)]) / 3:g}",
                f"7 {np.mean([np.arange(4, 8), np.arange(5, 9)]) / 3:g}"]
    assert open(tmp_path / "Training-error.series.txt").read().splitlines() == expected


def test_a_new_monitor_of_the_same_name_starts_its_file_afresh(tmp_path):
    m = Monitor(str(tmp_path))
    MonitorSeries("loss", m, verbose=False).add(0, 1.0)
    MonitorSeries("loss", m, verbose=False)
    assert open(tmp_path / "loss.series.txt").read() == ""


def test_timer_lines_count_iterations_since_the_last_flush(tmp_path):
    clock = iter([10.0, 12.5, 20.0]).__next__
    t = MonitorTimeElapsed("time", Monitor(str(tmp_path)), interval=3, verbose=False,
                           clock=clock)
    for i in range(7):
        t.add(i)
    assert open(tmp_path / "time.timer.txt").read().splitlines() == [
        "2 2.5 3 2.5", "5 7.5 3 10.0"]


def test_images_are_saved_at_index_0_and_every_interval_only(tmp_path):
    m = Monitor(str(tmp_path))
    mi = MonitorImage("img", m, interval=4, num_images=1, verbose=False)
    for i in range(9):
        mi.add(i, np.random.RandomState(i).rand(2, 3, 4, 4))
    assert sorted(os.listdir(tmp_path / "img")) == ["000000-000.png", "000003-000.png",
                                                    "000007-000.png"]


def test_a_constant_batch_is_saved_black_instead_of_nan(tmp_path):
    mi = MonitorImage("flat", Monitor(str(tmp_path)), interval=1, num_images=1, verbose=False)
    mi.add(0, np.full((1, 1, 2, 2), 3.0))
    assert imread(str(tmp_path / "flat" / "000000-000.png")).tolist() == [[0, 0], [0, 0]]


def test_a_tile_of_two_channel_images_gets_a_blue_channel_of_ones(tmp_path):
    mt = MonitorImageTile("t", Monitor(str(tmp_path)), interval=1, verbose=False)
    batch = np.zeros((1, 2, 2, 2))
    batch[0, 0] = 1.0                                  # red 1, green 0 -> after min-max: 1, 0
    mt.add(0, batch)
    img = imread(str(tmp_path / "t" / "000000.png"))
    assert img.shape == (3, 3, 3)
    assert img[0, 0].tolist() == [255, 0, 255] and img[2, 2].tolist() == [0, 0, 0]


@pytest.mark.parametrize("bad", [np.zeros((3, 4)), np.zeros(5)])
def test_images_need_channels_height_and_width(tmp_path, bad):
    mi = MonitorImage("x", Monitor(str(tmp_path)), interval=1, verbose=False)
    with pytest.raises(MonitorError, match=r"\(N, \.\.\., C, H, W\)"):
        mi.add(0, bad)


def test_an_interval_below_one_is_refused(tmp_path):
    with pytest.raises(MonitorError, match="interval must be at least 1") as err:
        MonitorSeries("s", Monitor(str(tmp_path)), interval=0)
    assert isinstance(err.value, (StadynError, ValueError))


def test_tile_images_refuses_other_than_four_axes():
    with pytest.raises(MonitorError, match="tile_images"):
        tile_images(np.zeros((2, 3, 3)))


def test_tensorboard_scalars_mirror_the_series(tmp_path):
    event_accumulator = pytest.importorskip(
        "tensorboard.backend.event_processing.event_accumulator")
    m = Monitor(str(tmp_path), tensorboard=True)
    s = MonitorSeries("Training loss", m, interval=2, verbose=False)
    for i in range(4):
        s.add(i, float(i))
    m.close()
    events = event_accumulator.EventAccumulator(str(tmp_path))
    events.Reload()
    assert [(e.step, e.value) for e in events.Scalars("Training loss")] == [(1, 0.5), (3, 2.5)]


def test_plot_series_names_a_bad_line(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "a.series.txt"
    path.write_text("0 0.5\n1 oops\n")
    with pytest.raises(DataError, match=r"a\.series\.txt:2: expected a monitor line"):
        plot_series(str(path))
