"""``cntk.io.transforms``: CNTK's four image transforms (Stadyn's transform classes stay in
:mod:`stadyn.io.transforms`)."""

from ....io.transforms import color, crop, mean, scale

__all__ = ["crop", "scale", "mean", "color"]
