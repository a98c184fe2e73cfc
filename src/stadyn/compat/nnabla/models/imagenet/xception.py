"""``nnabla.models.imagenet.xception``: ``Xception`` (``Xception.nnp``; see ``base``); 299x299
inputs.  ``use_up_to``: ``'classifier'``, ``'pool'``, ``'lastconv'``, ``'lastconv+relu'``.
"""

from __future__ import annotations

from .base import _FileModel

__all__ = ["Xception"]


class Xception(_FileModel):
    """Xception (Chollet, 2016)."""

    _KEY_VARIABLE = {"classifier": "Unit/Affine", "pool": "Unit/AveragePooling",
                     "lastconv": "Unit/SeparableConv_13/SepConvBN",
                     "lastconv+relu": "Unit/ReLU_14"}
    _AUGMENTATION = "ImageAugmentation"
    _POOL = ("Unit/AveragePooling", False)
    _DROPOUTS = ("Unit/Dropout",)

    def __init__(self):
        self._load_nnp("Xception.nnp", "Xception/Xception.nnp")

    def _input_shape(self) -> tuple:
        return (3, 299, 299)
