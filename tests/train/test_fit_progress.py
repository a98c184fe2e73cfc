"""What Trainer.fit shows on a terminal: a progress bar by default, text lines above it.

A terminal is a stream whose ``isatty()`` is true; stdout and stderr share it as they share a
real one.  :func:`_screen` replays the characters as a terminal shows them (``\\r`` returns to the
line's start, later characters overwrite earlier ones), so a line that landed on the bar's line
shows as one mixed line.
"""

from __future__ import annotations

import contextlib
import io
import sys

import numpy as np

import stadyn as sd
import stadyn.functions as F
import stadyn.layers as L
import stadyn.solvers as S
from stadyn.io import MinibatchSourceFromData
from stadyn.train import ProgressBarWriter, ProgressPrinter, Trainer


class Terminal(io.StringIO):
    def isatty(self):
        return True


def _screen(text: str) -> list[str]:
    lines, current, column = [], [], 0
    for ch in text:
        if ch == "\n":
            lines.append("".join(current).rstrip())
            current, column = [], 0
        elif ch == "\r":
            column = 0
        else:
            if column < len(current):
                current[column] = ch
            else:
                current.append(ch)
            column += 1
    lines.append("".join(current).rstrip())
    return [line for line in lines if line]


@contextlib.contextmanager
def terminal():
    """stdout and stderr on one terminal (set inside the test: pytest's capture resets them
    between a fixture's set-up and the test)."""
    screen = Terminal()
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = screen
    try:
        yield screen
    finally:
        sys.stdout, sys.stderr = saved


def _fit(writers=(), epochs=2, **kwargs):
    with sd.parameter_registry(sd.ParameterRegistry()):
        sd.seed(0)
        x, y = sd.Variable((1, 4)), sd.Variable((1, 3))
        z = L.Dense(3)(x)
        solver = S.Sgd(lr=0.1)
        solver.set_parameters(sd.get_parameters())
        trainer = Trainer(z, (F.cross_entropy_with_softmax(z, y),
                              F.classification_error(z, y)), [solver], list(writers))
        rng = np.random.RandomState(0)
        data = {"f": rng.rand(64, 4).astype(np.float32),
                "l": np.eye(3, dtype=np.float32)[rng.randint(0, 3, 64)]}
        source = MinibatchSourceFromData(data)
        history = trainer.fit(source, {x: source.streams.f, y: source.streams.l}, epochs=epochs,
                              minibatch_size=16, **kwargs)
    return trainer, history


def test_printer_lines_land_above_a_users_bar_not_on_it():
    """They used to be written after the bar's text, on its line."""
    with terminal() as tty:
        _fit([ProgressPrinter(freq=1), ProgressBarWriter(num_samples_per_epoch=64)])
    screen = _screen(tty.getvalue())
    printed = [line for line in screen if "Minibatch[" in line or "Finished Epoch" in line]
    assert len(printed) == 2 * (4 + 1)
    for line in printed:
        assert line.startswith((" Minibatch[", "Finished Epoch[")), line
    bars = [line for line in screen if line.startswith("epoch ")]
    assert len(bars) == 2 and all("64/64" in line for line in bars)


def test_fit_draws_a_bar_by_default_on_a_terminal_above_the_summary():
    with terminal() as tty:
        trainer, _ = _fit([ProgressPrinter(freq=2)])
    screen = _screen(tty.getvalue())
    assert [line[:9] for line in screen] == [
        " Minibatc", " Minibatc", "epoch 1: ", "Finished ",
        " Minibatc", " Minibatc", "epoch 2: ", "Finished "]
    assert "64/64" in screen[2] and "64/64" in screen[6]
    assert [type(w) for w in trainer.progress_writers] == [ProgressPrinter]   # only for fit


def test_a_resumed_fit_numbers_its_bar_from_the_next_epoch(tmp_path):
    with terminal() as tty:
        _fit(epochs=1, checkpoint=tmp_path / "c.ckpt", progress_bar=False)
        _fit(epochs=2, checkpoint=tmp_path / "c.ckpt")
    assert [line[:8] for line in _screen(tty.getvalue())] == ["epoch 2:"]


def test_progress_bar_false_turns_the_default_bar_off():
    with terminal() as tty:
        _fit([ProgressPrinter(freq=2)], progress_bar=False)
    screen = _screen(tty.getvalue())
    assert len(screen) == 6 and not any("%|" in line for line in screen)


def test_no_bar_without_a_terminal_unless_asked(capsys):
    _fit()
    assert capsys.readouterr().err == ""
    _fit(epochs=1, progress_bar=True)
    assert "epoch 1: 100%" in _screen(capsys.readouterr().err)[-1]
