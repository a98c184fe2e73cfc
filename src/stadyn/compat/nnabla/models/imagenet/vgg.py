"""``nnabla.models.imagenet.vgg``: ``VGG(num_layers)`` (11, 13, 16) and ``VGG11``, ``VGG13``,
``VGG16``, from ``VGG-<n>.nnp`` (see ``base``).

``use_up_to``: ``'classifier'``, ``'pool'`` (the last max pooling), ``'lastconv'``,
``'lastconv+relu'``, ``'lastfeature'`` (the second affine).  No average pooling to check;
both dropouts are taken out at inference.
"""

from __future__ import annotations

from .base import _FileModel

__all__ = ["VGG", "VGG11", "VGG13", "VGG16"]


class VGG(_FileModel):
    """VGG with ``num_layers`` of 11, 13 or 16 (Simonyan and Zisserman, 2014)."""

    _INPUT = "TrainingInput"
    _POOL = None

    def __init__(self, num_layers: int = 11):
        if num_layers not in (11, 13, 16):
            raise AssertionError(f"num_layers must be chosen from {{11, 13, 16}}, "
                                 f"got {num_layers}")
        self.num_layers = num_layers
        self._load_nnp(f"VGG-{num_layers}.nnp", f"VGG-{num_layers}/VGG-{num_layers}.nnp")
        n = num_layers
        last = 13 if n == 16 else 12
        self._KEY_VARIABLE = {"classifier": f"VGG{n}/Affine_3", "pool": f"VGG{n}/MaxPooling_5",
                              "lastconv": f"VGG{n}/Convolution_{last}",
                              "lastconv+relu": f"VGG{n}/ReLU_{last}",
                              "lastfeature": f"VGG{n}/Affine_2"}
        self._DROPOUTS = (f"VGG{n}/Dropout_1", f"VGG{n}/Dropout_2")

    def _input_shape(self) -> tuple:
        return (3, 224, 224)


class VGG11(VGG):
    """``VGG(11)``."""

    def __init__(self):
        super().__init__(11)


class VGG13(VGG):
    """``VGG(13)``."""

    def __init__(self):
        super().__init__(13)


class VGG16(VGG):
    """``VGG(16)``."""

    def __init__(self):
        super().__init__(16)
