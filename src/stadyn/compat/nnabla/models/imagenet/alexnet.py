"""``nnabla.models.imagenet.alexnet``: ``AlexNet`` (``AlexNet.nnp``; see ``base``); 227x227
inputs.  ``use_up_to``: ``'classifier'``, ``'pool'`` (the last max pooling), ``'lastconv'``,
``'lastconv+relu'``, ``'lastfeature'``.  No batch normalisation and no average pooling; both
dropouts are taken out at inference.
"""

from __future__ import annotations

from typing import Any

from .base import _FileModel

__all__ = ["AlexNet"]


class AlexNet(_FileModel):
    """AlexNet (Krizhevsky et al., 2012)."""

    _KEY_VARIABLE = {"classifier": "TrainNet/Affine_3", "pool": "TrainNet/MaxPooling_3",
                     "lastconv": "TrainNet/Convolution_5", "lastconv+relu": "TrainNet/ReLU_5",
                     "lastfeature": "TrainNet/Affine_2"}
    _INPUT = "TrainingInput"
    _POOL = None
    _BATCH_NORM = False
    _DROPOUTS = ("TrainNet/Dropout", "TrainNet/Dropout_2")

    def __init__(self):
        self._load_nnp("AlexNet.nnp", "AlexNet/AlexNet.nnp")

    def _input_shape(self) -> tuple:
        return (3, 227, 227)

    def __call__(self, input_var: Any = None, use_from: Any = None,
                 use_up_to: str = "classifier", training: bool = False,
                 force_global_pooling: bool = False, check_global_pooling: bool = True,
                 returns_net: bool = False, verbose: Any = 0,
                 with_aux_tower: bool = False) -> Any:
        """As ``ImageNetBase``'s models (``with_aux_tower`` is accepted and not read)."""
        return self._build(input_var, use_up_to, training, force_global_pooling,
                           check_global_pooling, returns_net, verbose)
