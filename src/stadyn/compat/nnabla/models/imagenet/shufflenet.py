"""``nnabla.models.imagenet.shufflenet``: ``ShuffleNet(scaling_factor)`` (10, 5, 20: 1.0x,
0.5x, 2.0x), ``ShuffleNet10``, ``ShuffleNet05``, ``ShuffleNet20`` (see ``base``).
``use_up_to``: ``'classifier'``, ``'pool'``, ``'lastconv'``, ``'lastconv+relu'``.
"""

from __future__ import annotations

from .base import _FileModel

__all__ = ["ShuffleNet", "ShuffleNet10", "ShuffleNet05", "ShuffleNet20"]

# scaling factor -> (file, where NNabla downloads it from under imagenet/)
_FILES = {10: ("ShuffleNet.nnp", "ShuffleNet/ShuffleNet.nnp"),
          5: ("ShuffleNet-.05x.nnp", "ShuffleNet-0.5x/ShuffleNet-0.5x.nnp"),
          20: ("ShuffleNet-2.0x.nnp", "ShuffleNet-2.0x/ShuffleNet-2.0x.nnp")}


class ShuffleNet(_FileModel):
    """ShuffleNet (Zhang et al., 2017), ``scaling_factor`` 10, 5 or 20 tenths."""

    _KEY_VARIABLE = {"classifier": "Affine", "pool": "AveragePooling",
                     "lastconv": "Add2_3_RepeatStart_3[2]",
                     "lastconv+relu": "ReLU_8_RepeatStart_3[2]"}

    def __init__(self, scaling_factor: int = 10):
        if scaling_factor not in _FILES:
            raise AssertionError(f"scaling_factor must be chosen from {{10, 5, 20}}, "
                                 f"got {scaling_factor}")
        self.scaling_factor = scaling_factor
        self._load_nnp(*_FILES[scaling_factor])

    def _input_shape(self) -> tuple:
        return (3, 224, 224)


class ShuffleNet10(ShuffleNet):
    """``ShuffleNet(10)``."""

    def __init__(self):
        super().__init__(10)


class ShuffleNet05(ShuffleNet):
    """``ShuffleNet(5)``."""

    def __init__(self):
        super().__init__(5)


class ShuffleNet20(ShuffleNet):
    """``ShuffleNet(20)``."""

    def __init__(self):
        super().__init__(20)
