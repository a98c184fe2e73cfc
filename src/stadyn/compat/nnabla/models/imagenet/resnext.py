"""``nnabla.models.imagenet.resnext``: ``ResNeXt(num_layers)`` (50, 101), ``ResNeXt50``,
``ResNeXt101``, from ``ResNeXt-<n>.nnp`` (see ``base``).  ``use_up_to``: ``'classifier'``,
``'pool'``, ``'lastconv'``, ``'lastconv+relu'``.
"""

from __future__ import annotations

from .base import _FileModel

__all__ = ["ResNeXt", "ResNeXt50", "ResNeXt101"]


class ResNeXt(_FileModel):
    """ResNeXt with ``num_layers`` of 50 or 101 (Xie et al., 2016)."""

    _KEY_VARIABLE = {"classifier": "Affine", "pool": "AveragePooling",
                     "lastconv": "Add2_7_RepeatStart_4[1]",
                     "lastconv+relu": "ReLU_25_RepeatStart_4[1]"}

    def __init__(self, num_layers: int = 50):
        if num_layers not in (50, 101):
            raise AssertionError(f"num_layers must be chosen from {{50, 101}}, got {num_layers}")
        self.num_layers = num_layers
        self._load_nnp(f"ResNeXt-{num_layers}.nnp",
                       f"ResNeXt-{num_layers}/ResNeXt-{num_layers}.nnp")

    def _input_shape(self) -> tuple:
        return (3, 224, 224)


class ResNeXt50(ResNeXt):
    """``ResNeXt(50)``."""

    def __init__(self):
        super().__init__(50)


class ResNeXt101(ResNeXt):
    """``ResNeXt(101)``."""

    def __init__(self):
        super().__init__(101)
