"""``nnabla.models.imagenet.squeezenet``: ``SqueezeNet(version)`` (``'v1.0'``, ``'v1.1'``),
``SqueezeNetV10``, ``SqueezeNetV11``, from ``SqueezeNet-1.0.nnp`` / ``SqueezeNet-1.1.nnp``
(see ``base``); 227x227 inputs.

``use_up_to``: ``'classifier'``, ``'pool'``, ``'lastconv'``, ``'lastconv+relu'`` (v1.1's
names are under ``SqueezeNet/``).
"""

from __future__ import annotations

from .base import _FileModel

__all__ = ["SqueezeNet", "SqueezeNetV10", "SqueezeNetV11"]


class SqueezeNet(_FileModel):
    """SqueezeNet (Iandola et al., 2016)."""

    _KEY_VARIABLE = {"classifier": "{prefix}Reshape", "pool": "{prefix}AveragePooling",
                     "lastconv": "{prefix}Convolution_2", "lastconv+relu": "{prefix}ReLU_2"}
    _INPUT = "TrainingInput"
    _REFUSE_USE_FROM = False

    def __init__(self, version: str = "v1.1"):
        if version not in ("v1.0", "v1.1"):
            raise AssertionError("version must be chosen from {'v1.0', 'v1.1'}")
        self.version = version
        self._prefix = "SqueezeNet/" if version == "v1.1" else ""
        self._POOL = (f"{self._prefix}AveragePooling", False)
        self._DROPOUTS = (f"{self._prefix}Dropout",)
        self._load_nnp(f"SqueezeNet-{version[1:]}.nnp",
                       f"SqueezeNet-{version[1:]}/SqueezeNet-{version[1:]}.nnp")

    def _input_shape(self) -> tuple:
        return (3, 227, 227)

    def _format(self) -> dict:
        return {"prefix": self._prefix}


class SqueezeNetV10(SqueezeNet):
    """``SqueezeNet('v1.0')``."""

    def __init__(self):
        super().__init__("v1.0")


class SqueezeNetV11(SqueezeNet):
    """``SqueezeNet('v1.1')``."""

    def __init__(self):
        super().__init__("v1.1")
