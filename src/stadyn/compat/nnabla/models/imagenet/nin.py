"""``nnabla.models.imagenet.nin``: ``NIN`` (Network in Network, ``NIN.nnp``; see ``base``);
227x227 inputs.  ``use_up_to``: ``'classifier'``, ``'pool'``, ``'lastconv'``,
``'lastconv+relu'``.
"""

from __future__ import annotations

from .base import _FileModel

__all__ = ["NIN"]


class NIN(_FileModel):
    """Network in Network (Lin et al., 2013)."""

    _KEY_VARIABLE = {"classifier": "NIN/Reshape", "pool": "NIN/AveragePooling",
                     "lastconv": "NIN/Convolution_3", "lastconv+relu": "NIN/ReLU_3"}
    _INPUT = "TrainingInput"
    _POOL = ("NIN/AveragePooling", False)
    _DROPOUTS = ("NIN/Dropout",)
    _REFUSE_USE_FROM = False

    def __init__(self):
        self._load_nnp("NIN.nnp", "NIN/NIN.nnp")

    def _input_shape(self) -> tuple:
        return (3, 227, 227)
