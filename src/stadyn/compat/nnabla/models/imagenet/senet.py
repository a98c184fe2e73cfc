"""``nnabla.models.imagenet.senet``: ``SENet`` (SENet-154, ``SENet-154.nnp``; see ``base``).

``use_up_to``: ``'classifier'``, ``'pool'``, ``'lastconv'``, ``'lastconv+relu'``; the final
average pooling is found by its type; dropout is taken out at inference.
"""

from __future__ import annotations

from .base import _FileModel

__all__ = ["SENet"]


class SENet(_FileModel):
    """SENet-154 (Hu et al., 2017)."""

    _KEY_VARIABLE = {"classifier": "Affine", "pool": "AveragePooling",
                     "lastconv": "Add2_7_RepeatStart_4[1]",
                     "lastconv+relu": "ReLU_25_RepeatStart_4[1]"}
    _POOL = ("AveragePooling", True)
    _DROPOUTS = ("Dropout",)
    _REFUSE_USE_FROM = False

    def __init__(self):
        self._load_nnp("SENet-154.nnp", "SENet-154/SENet-154.nnp")

    def _input_shape(self) -> tuple:
        return (3, 224, 224)
