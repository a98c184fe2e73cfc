"""``nnabla.models.imagenet.densenet``: ``DenseNet`` (DenseNet-161, ``DenseNet-161.nnp``; see
``base``).  ``use_up_to``: ``'classifier'``, ``'pool'``, ``'lastconv'``, ``'lastconv+relu'``.
"""

from __future__ import annotations

from .base import _FileModel

__all__ = ["DenseNet"]


class DenseNet(_FileModel):
    """DenseNet-161 (Huang et al., 2016)."""

    _KEY_VARIABLE = {"classifier": "DenseNet/Affine", "pool": "DenseNet/AveragePooling_4",
                     "lastconv": "DenseNet/BatchNormalization_5",
                     "lastconv+relu": "DenseNet/ReLU_5"}
    _NETWORK = "Train"
    _POOL = ("DenseNet/AveragePooling_4", False)

    def __init__(self):
        self._load_nnp("DenseNet-161.nnp", "DenseNet-161/DenseNet-161.nnp")

    def _input_shape(self) -> tuple:
        return (3, 224, 224)
