"""Fixtures for the reader tests: images made with OpenCV/NumPy in temporary folders."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

try:
    import stadyn.io  # noqa: F401
except ImportError:  # running from a checkout that is not installed
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "src"))

sys.path.insert(0, os.path.dirname(__file__))  # _io_helpers: for the tests and worker processes

from _io_helpers import write_image  # noqa: E402


@pytest.fixture
def ten_images(tmp_path):
    """10 random 40x40 PNGs in tmp_path/img, a map file with labels i % 5 and a 32x32 mean."""
    from stadyn.io import write_mean_file
    rng = np.random.default_rng(1)
    lines = []
    for i in range(10):
        path = write_image(str(tmp_path / "img" / f"{i:02d}.png"),
                           rng.integers(0, 256, (40, 40, 3), dtype=np.uint8))
        lines.append(f"{path}\t{i % 5}\n")
    (tmp_path / "map.txt").write_text("".join(lines))
    write_mean_file(tmp_path / "mean.xml", np.full((32, 32, 3), 100.0, np.float32))
    return tmp_path
