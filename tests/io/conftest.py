"""Fixtures for the reader tests: images made with OpenCV/NumPy in temporary folders."""

from __future__ import annotations

import numpy as np
import pytest
from _io_helpers import write_image


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
