"""``nnabla.models.imagenet.resnet``: ``ResNet(num_layers)`` (18, 34, 50, 101, 152) and
``ResNet18`` ... ``ResNet152``, from ``Resnet-<n>.nnp`` (see ``base``).

``use_up_to``: ``'classifier'`` (the final affine), ``'pool'`` (the global average pooling),
``'lastconv'`` (its input, before the ReLU), ``'lastconv+relu'``.
"""

from __future__ import annotations

from .base import _FileModel

__all__ = ["ResNet", "ResNet18", "ResNet34", "ResNet50", "ResNet101", "ResNet152"]


class ResNet(_FileModel):
    """ResNet with ``num_layers`` of 18, 34, 50, 101 or 152 (He et al., 2015)."""

    _KEY_VARIABLE = {"classifier": "Affine", "pool": "AveragePooling",
                     "lastconv": "Add2_7_RepeatStart_4[{index}]",
                     "lastconv+relu": "ReLU_25_RepeatStart_4[{index}]"}

    def __init__(self, num_layers: int = 18):
        if num_layers not in (18, 34, 50, 101, 152):
            raise AssertionError(f"num_layers must be chosen from {{18, 34, 50, 101, 152}}, "
                                 f"got {num_layers}")
        self.num_layers = num_layers
        self._load_nnp(f"Resnet-{num_layers}.nnp", f"Resnet-{num_layers}/Resnet-{num_layers}.nnp")

    def _input_shape(self) -> tuple:
        return (3, 224, 224)

    def _format(self) -> dict:
        return {"index": 0 if self.num_layers == 18 else 1}


class ResNet18(ResNet):
    """``ResNet(18)``."""

    def __init__(self):
        super().__init__(18)


class ResNet34(ResNet):
    """``ResNet(34)``."""

    def __init__(self):
        super().__init__(34)


class ResNet50(ResNet):
    """``ResNet(50)``."""

    def __init__(self):
        super().__init__(50)


class ResNet101(ResNet):
    """``ResNet(101)``."""

    def __init__(self):
        super().__init__(101)


class ResNet152(ResNet):
    """``ResNet(152)``."""

    def __init__(self):
        super().__init__(152)
