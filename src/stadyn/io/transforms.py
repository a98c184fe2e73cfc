"""Image transforms, as ``cntk.io.transforms``: :func:`crop`, :func:`scale`, :func:`mean`,
:func:`color` (and :func:`from_config` for BrainScript-style transform records).

Example:
    >>> from stadyn.io import transforms as xforms
    >>> pipeline = [xforms.crop(crop_type='randomside', side_ratio=0.8, jitter_type='uniratio'),
    ...             xforms.scale(width=32, height=32, channels=3, interpolations='linear')]
    >>> [type(t).__name__ for t in pipeline]
    ['Crop', 'Scale']
"""

from ._transforms import Color, Crop, Mean, Scale, Transform, color, crop, from_config, mean, scale

__all__ = ["crop", "scale", "mean", "color", "from_config", "Transform", "Crop", "Scale", "Mean",
           "Color"]
