"""NNabla's monitors: training values, timings and images written to a folder as NNabla 1.39
writes them, so its plotting scripts (and people used to them) read Stadyn's runs unchanged.

* :class:`Monitor` ``(save_path)``: the folder (made if missing).
* :class:`MonitorSeries` ``(name, monitor, interval=1)``: ``<name>.series.txt`` (spaces in the
  name become ``-``), one line ``"<index> <mean>"`` (``%g``) per flush: ``add(index, value)``
  buffers values and flushes their mean once ``index`` is ``interval`` past the last flush (the
  first flush is at ``interval - 1``).  With ``Monitor(..., tensorboard=True)`` the same means
  also go to a TensorBoard event file in the folder (tag: the name).
* :class:`MonitorTimeElapsed` ``(name, monitor, interval=100)``: ``<name>.timer.txt``, lines
  ``"<index> <seconds since the last flush> <iterations> <seconds in all>"``.
* :class:`MonitorImage` / :class:`MonitorImageTile` ``(name, monitor, interval=1000,
  num_images=16)``: at index 0 and whenever ``index + 1`` is a multiple of ``interval``, the
  first ``num_images`` images of an ``(N, ..., C, H, W)`` batch, min-max normalised over the
  batch, as ``<name>/<index:06d>-<j:03d>.png`` (one per image) or ``<name>/<index:06d>.png``
  (tiled, :func:`tile_images`).  One channel is saved grey; two get a third of ones; more than
  three keep the first three.

Each flush is also logged (``iter=10 {Training loss}=0.25``) when ``verbose``.  Files are created
empty (truncated) when the monitor is made and appended to one line at a time.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any, Callable

import numpy as np

from .._errors import DataError, StadynError
from .._logging import logger as _stadyn_logger
from ..io import imsave

__all__ = ["Monitor", "MonitorError", "MonitorSeries", "MonitorTimeElapsed", "MonitorImage",
           "MonitorImageTile", "tile_images", "plot_series", "plot_time_elapsed"]


class MonitorError(StadynError, ValueError):
    """A monitor was given something it cannot record."""


def _file_stem(name: str) -> str:
    return str(name).replace(" ", "-")


class Monitor:
    """The folder monitors write to (made if missing); with ``tensorboard=True``,
    :class:`MonitorSeries` values also go to a TensorBoard event file there.

    Example:
        >>> import os, tempfile
        >>> m = Monitor(os.path.join(tempfile.mkdtemp(), "run"))
        >>> os.path.isdir(m.save_path)
        True
    """

    def __init__(self, save_path: str | os.PathLike, tensorboard: bool = False):
        self._save_path = os.fspath(save_path)
        os.makedirs(self._save_path, exist_ok=True)
        self._tensorboard = bool(tensorboard)
        self._writer: Any = None

    @property
    def save_path(self) -> str:
        """The folder."""
        return self._save_path

    def _scalar(self, tag: str, value: float, step: int) -> None:
        if not self._tensorboard:
            return
        if self._writer is None:
            from ._tensorboard import TensorBoardProgressWriter
            self._writer = TensorBoardProgressWriter(log_dir=self._save_path, flush_secs=5)
        self._writer.write_value(tag, value, step)

    def flush(self) -> None:
        """Write buffered TensorBoard events to disk."""
        if self._writer is not None:
            self._writer.flush()

    def close(self) -> None:
        """Close the TensorBoard event file (the text files are closed after every line)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None


class _Logged:
    """What the monitors share: a name, an interval, a logger and an optional text file."""

    _logger: logging.Logger = _stadyn_logger
    _suffix = ""

    def __init__(self, name: str, monitor: Monitor | None, interval: int, verbose: bool):
        if int(interval) < 1:
            raise MonitorError(f"{type(self).__name__} {name!r}: interval must be at least 1, "
                               f"got {interval}")
        self.name = name
        self.interval = int(interval)
        self.verbose = bool(verbose)
        self._monitor = monitor
        self.sp: str | None = None
        if monitor is not None and self._suffix:
            self.sp = os.path.join(monitor.save_path, _file_stem(name) + self._suffix)
            open(self.sp, "w").close()
        self.flush_at = -1

    def _due(self, index: int) -> bool:
        return index - self.flush_at >= self.interval

    def _append(self, line: str) -> None:
        if self.sp is not None:
            with open(self.sp, "a") as f:
                f.write(line + "\n")


class MonitorSeries(_Logged):
    """Means of a series of values, one line per ``interval`` (see the module docstring).

    Example:
        >>> import os, tempfile
        >>> m = Monitor(tempfile.mkdtemp())
        >>> s = MonitorSeries("Training loss", m, interval=2, verbose=False)
        >>> for i in range(5):
        ...     s.add(i, 0.5 * i)
        >>> print(open(os.path.join(m.save_path, "Training-loss.series.txt")).read(), end="")
        1 0.25
        3 1.25
    """

    _suffix = ".series.txt"

    def __init__(self, name: str, monitor: Monitor | None = None, interval: int = 1,
                 verbose: bool = True):
        super().__init__(name, monitor, interval, verbose)
        self.buf: list[Any] = []

    def add(self, index: int, value: Any) -> None:
        """Buffer ``value`` (a number or an array, averaged over all its elements); flush
        the buffer's mean when ``index`` is due."""
        self.buf.append(np.asarray(getattr(value, "d", value)))
        if not self._due(index):
            return
        try:
            mean = np.mean(self.buf)
        except (TypeError, ValueError) as exc:
            raise MonitorError(f"MonitorSeries {self.name!r}: cannot average the values "
                               f"added ({exc})") from None
        if self.verbose:          # as NNabla's '{}'.format(mean) on NumPy 1.x: a float's repr
            self._logger.info("iter=%s {%s}=%r", index, self.name, float(mean))
        self._append(f"{index} {mean:g}")
        if self._monitor is not None:
            self._monitor._scalar(self.name, float(mean), int(index))
        self.flush_at = index
        self.buf = []


class MonitorTimeElapsed(_Logged):
    """Seconds per ``interval`` iterations (see the module docstring).

    Example:
        >>> import os, tempfile
        >>> m = Monitor(tempfile.mkdtemp())
        >>> t = MonitorTimeElapsed("Training time", m, interval=2, verbose=False)
        >>> for i in range(4):
        ...     t.add(i)
        >>> [line.split()[::2] for line in open(os.path.join(m.save_path,
        ...                                                   "Training-time.timer.txt"))]
        [['1', '2'], ['3', '2']]
    """

    _suffix = ".timer.txt"

    def __init__(self, name: str, monitor: Monitor | None = None, interval: int = 100,
                 verbose: bool = True, clock: Callable[[], float] = time.time):
        super().__init__(name, monitor, interval, verbose)
        self._clock = clock
        self.start = self.lap = clock()

    def add(self, index: int) -> None:
        """Record the time since the last flush when ``index`` is due."""
        if not self._due(index):
            return
        now = self._clock()
        elapsed, total, iterations = now - self.lap, now - self.start, index - self.flush_at
        self.lap = now
        if self.verbose:
            self._logger.info("iter=%s {%s}=%s[sec/%siter] %s[sec]", index, self.name, elapsed,
                              iterations, total)
        self._append(f"{index} {elapsed} {iterations} {total}")
        self.flush_at = index


def _min_max(x: np.ndarray) -> np.ndarray:
    low, high = x.min(), x.max()
    if high == low:
        return np.zeros_like(x, dtype=np.float64)
    return (x - low) / (high - low)


class MonitorImage(_Logged):
    """Images of a batch saved as PNG files, one per image (see the module docstring);
    ``normalize_method`` maps the ``(N, C, H, W)`` batch to ``[0, 1]`` (default: min-max over
    the batch; a constant batch becomes zeros).

    Example:
        >>> import numpy as np, os, tempfile
        >>> m = Monitor(tempfile.mkdtemp())
        >>> mi = MonitorImage("fake images", m, interval=5, num_images=2, verbose=False)
        >>> for i in range(5):
        ...     mi.add(i, np.random.rand(4, 3, 8, 8))
        >>> sorted(os.listdir(os.path.join(m.save_path, "fake-images")))
        ['000000-000.png', '000000-001.png', '000004-000.png', '000004-001.png']
    """

    def __init__(self, name: str, monitor: Monitor, interval: int = 1000, verbose: bool = True,
                 num_images: int = 16,
                 normalize_method: Callable[[np.ndarray], np.ndarray] | None = None):
        super().__init__(name, monitor, interval, verbose)
        self.num_images = int(num_images)
        self.normalize_method = normalize_method or _min_max
        self.save_dir = os.path.join(monitor.save_path, _file_stem(name))
        os.makedirs(self.save_dir, exist_ok=True)

    def _batch(self, index: int, var: Any) -> np.ndarray | None:
        """The images to save at ``index`` as ``(n, 1 or 3, H, W)`` in ``[0, 1]``, or None."""
        if index != 0 and (index + 1) % self.interval:
            return None
        data = np.array(getattr(var, "d", getattr(var, "data", var)), copy=True)
        if data.ndim < 3:
            raise MonitorError(f"{type(self).__name__} {self.name!r}: images are "
                               f"(N, ..., C, H, W), got an array of shape {data.shape}")
        channels = data.shape[-3]
        data = data.reshape(-1, *data.shape[-3:])[:self.num_images]
        data = self.normalize_method(data)
        if channels > 3:
            data = data[:, :3]
        elif channels == 2:
            data = np.concatenate([data, np.ones((data.shape[0], 1) + data.shape[-2:])], axis=1)
        return data

    def add(self, index: int, var: Any) -> None:
        """Save the batch ``var`` (an array or a Variable) if ``index`` is due."""
        data = self._batch(index, var)
        if data is None:
            return
        pattern = os.path.join(self.save_dir, f"{index:06d}-{{}}")
        for j, image in enumerate(data):
            image = image.transpose(1, 2, 0)
            imsave(pattern.format(f"{j:03d}.png"), image[..., 0] if image.shape[-1] == 1
                   else image)
        if self.verbose:
            self._logger.info("iter=%s {%s} are written to %s.", index, self.name,
                              pattern.format("*.png"))


class MonitorImageTile(MonitorImage):
    """A batch's images tiled into one PNG file per save (see :func:`tile_images`).

    Example:
        >>> import numpy as np, os, tempfile
        >>> from stadyn.io import imread
        >>> m = Monitor(tempfile.mkdtemp())
        >>> mt = MonitorImageTile("samples", m, interval=10, num_images=4, verbose=False)
        >>> mt.add(0, np.random.rand(5, 1, 3, 3))
        >>> imread(os.path.join(m.save_path, "samples", "000000.png")).shape
        (8, 8)
    """

    def add(self, index: int, var: Any) -> None:
        """Save the batch ``var`` tiled if ``index`` is due."""
        data = self._batch(index, var)
        if data is None:
            return
        path = os.path.join(self.save_dir, f"{index:06d}.png")
        imsave(path, tile_images(data))
        if self.verbose:
            self._logger.info("iter=%s {%s} is written to %s.", index, self.name, path)


def tile_images(data: np.ndarray, padsize: int = 1, padval: float = 0) -> np.ndarray:
    """``(B, C, H, W)`` images on a square grid of ``ceil(sqrt(B))`` per side, each followed by
    ``padsize`` rows and columns of ``padval`` (empty cells are ``padval`` too): an
    ``(n (H + padsize), n (W + padsize), C)`` image, or ``(.., ..)`` for one channel.

    Example:
        >>> import numpy as np
        >>> tile = tile_images(np.ones((3, 1, 2, 2)))
        >>> tile.shape, tile[:, 0].tolist(), tile[3].tolist()
        ((6, 6), [1.0, 1.0, 0.0, 1.0, 1.0, 0.0], [1.0, 1.0, 0.0, 0.0, 0.0, 0.0])
    """
    data = np.asarray(data)
    if data.ndim != 4:
        raise MonitorError(f"tile_images takes (B, C, H, W) images, got shape {data.shape}")
    count, channels, height, width = data.shape
    side = int(np.ceil(np.sqrt(count)))
    cell_h, cell_w = height + padsize, width + padsize
    grid = np.full((side * cell_h, side * cell_w, channels), padval, dtype=data.dtype)
    for k in range(count):
        row, col = divmod(k, side)
        grid[row * cell_h:row * cell_h + height, col * cell_w:col * cell_w + width] = \
            data[k].transpose(1, 2, 0)
    return grid[..., 0] if channels == 1 else grid


def _read_columns(filename: str, column: int) -> tuple[np.ndarray, np.ndarray]:
    index, values = [], []
    with open(filename) as f:
        for line_no, line in enumerate(f, 1):
            fields = line.split()
            if not fields:
                continue
            try:
                index.append(int(fields[0]))
                values.append(float(fields[column]))
            except (IndexError, ValueError):
                raise DataError(f"expected a monitor line '<index> <value> ...', got "
                                f"{line.rstrip()!r}", filename, line_no) from None
    return np.array(index, np.int64), np.array(values, np.float32)


def plot_series(filename: str, plot_kwargs: dict | None = None) -> None:
    """Plot a ``.series.txt`` file (index against value) with matplotlib's current axes."""
    from .._extras import require
    require("matplotlib", "demo", "plot_series")
    import matplotlib.pyplot as plt
    index, values = _read_columns(filename, 1)
    plt.plot(index, values, **(plot_kwargs or {}))


_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def plot_time_elapsed(filename: str, elapsed: bool = False, unit: str = "s",
                      plot_kwargs: dict | None = None) -> None:
    """Plot a ``.timer.txt`` file: seconds per interval, or with ``elapsed`` the total, in
    ``unit`` (``'s'``, ``'m'``, ``'h'`` or ``'d'``)."""
    if unit not in _UNITS:
        raise MonitorError(f"plot_time_elapsed: unit must be one of s, m, h, d; got {unit!r}")
    from .._extras import require
    require("matplotlib", "demo", "plot_time_elapsed")
    import matplotlib.pyplot as plt
    index, values = _read_columns(filename, 3 if elapsed else 1)
    plt.plot(index, values / _UNITS[unit], **(plot_kwargs or {}))
