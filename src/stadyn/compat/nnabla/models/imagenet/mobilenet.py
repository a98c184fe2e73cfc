"""``nnabla.models.imagenet.mobilenet``: ``MobileNet`` (``MobileNet.nnp``) and
``MobileNetV2`` (``MobileNet-v2.nnp``; see ``base``).

``use_up_to``: ``'classifier'``, ``'pool'``, ``'lastconv'``, ``'lastconv+relu'``.  MobileNetV2's
file feeds the augmentation's output on: its augmentation function is dropped and that variable
replaced by the input.
"""

from __future__ import annotations

from typing import Any

from ...utils.nnp_graph import NnpNetworkPass
from .base import _FileModel

__all__ = ["MobileNet", "MobileNetV2"]


class MobileNet(_FileModel):
    """MobileNet (Howard et al., 2017)."""

    _KEY_VARIABLE = {"classifier": "Affine", "pool": "AveragePooling",
                     "lastconv": "BatchNormalization_19", "lastconv+relu": "ReLU_19"}
    _REFUSE_USE_FROM = False

    def __init__(self):
        self._load_nnp("MobileNet.nnp", "MobileNet/MobileNet.nnp")

    def _input_shape(self) -> tuple:
        return (3, 224, 224)


class MobileNetV2(_FileModel):
    """MobileNetV2 (Sandler et al., 2018)."""

    _KEY_VARIABLE = {"classifier": "Reshape", "pool": "AveragePooling",
                     "lastconv": "BatchNormalization_2", "lastconv+relu": "ReLU_2"}

    def __init__(self):
        self._load_nnp("MobileNet-v2.nnp", "MobileNet-v2/MobileNet-v2.nnp")

    def _input_shape(self) -> tuple:
        return (3, 224, 224)

    def __call__(self, input_var: Any = None, use_from: Any = None,
                 use_up_to: str = "classifier", training: bool = False,
                 force_global_pooling: bool = False, check_global_pooling: bool = True,
                 returns_net: bool = False, verbose: Any = 0) -> Any:
        """As ``ImageNetBase``'s models; the augmentation's output variable is the input."""
        input_var = self.get_input_var(input_var)
        callback = NnpNetworkPass(verbose)
        callback.drop_function("ImageAugmentationX")
        callback.set_variable("ImageAugmentationX", input_var)
        self.configure_global_average_pooling(callback, force_global_pooling,
                                              check_global_pooling, "AveragePooling")
        callback.set_batch_normalization_batch_stat_all(training)
        self.use_up_to(use_up_to, callback)
        if not training:
            callback.fix_parameters()
        return self._network(input_var, callback, returns_net)
