"""``nnabla.models.imagenet.googlenet``: ``GoogLeNet`` (``GoogLeNet.nnp``; see ``base``).

``use_up_to``: ``'classifier'``, ``'pool'``, ``'prepool'``.  In training,
``with_aux_tower=True`` keeps the two auxiliary classifiers (the call returns the three
outputs); otherwise their branches are dropped.
"""

from __future__ import annotations

from typing import Any

from ...utils.nnp_graph import NnpNetworkPass
from .base import _FileModel

__all__ = ["GoogLeNet"]


class GoogLeNet(_FileModel):
    """GoogLeNet (Szegedy et al., 2014)."""

    _KEY_VARIABLE = {"classifier": "Affine_5", "pool": "AveragePooling_3",
                     "prepool": "Concatenate_9", "_aux_classifier_1": "Affine_2",
                     "_branching_point_1": "AveragePooling", "_aux_classifier_2": "Affine_4",
                     "_branching_point_2": "AveragePooling_2"}
    _NETWORK = "Train"

    def __init__(self):
        self._load_nnp("GoogLeNet.nnp", "GoogLeNet/GoogLeNet.nnp")

    def _input_shape(self) -> tuple:
        return (3, 224, 224)

    def __call__(self, input_var: Any = None, use_from: Any = None,
                 use_up_to: str = "classifier", training: bool = False,
                 force_global_pooling: bool = False, check_global_pooling: bool = True,
                 returns_net: bool = False, verbose: Any = 0,
                 with_aux_tower: bool = False) -> Any:
        """As ``ImageNetBase``'s models, with the auxiliary towers when ``with_aux_tower``
        (training only: an AssertionError otherwise, as NNabla's)."""
        if not training and with_aux_tower:
            raise AssertionError("Aux Tower should be disabled when inference process.")
        input_var = self.get_input_var(input_var)
        callback = NnpNetworkPass(verbose)
        callback.remove_and_rewire("ImageAugmentationX")
        callback.set_variable("InputX", input_var)
        self.configure_global_average_pooling(callback, force_global_pooling,
                                              check_global_pooling, "AveragePooling_3")
        callback.set_batch_normalization_batch_stat_all(training)
        if with_aux_tower:
            self.use_up_to("_aux_classifier_1", callback)
            drop1 = ("Affine_2", "SoftmaxCrossEntropy", "MulScalarLoss1")
            self.use_up_to("_aux_classifier_2", callback)
            drop2 = ("Affine_4", "SoftmaxCrossEntropy_2", "MulScalarLoss2")
        else:
            self.use_up_to("_branching_point_1", callback)
            drop1 = ("AveragePooling", "Convolution_22", "ReLU_22", "Affine", "ReLU_23",
                     "Dropout", "Affine_2", "SoftmaxCrossEntropy", "MulScalarLoss1")
            self.use_up_to("_branching_point_2", callback)
            drop2 = ("AveragePooling_2", "Convolution_41", "ReLU_42", "Affine_3", "ReLU_43",
                     "Dropout_2", "Affine_4", "SoftmaxCrossEntropy_2", "MulScalarLoss2")
        callback.drop_function(*drop1)
        callback.drop_function(*drop2)
        if not training:
            callback.remove_and_rewire("Dropout_3")
            callback.fix_parameters()
        self.use_up_to(use_up_to, callback)
        return self._network(input_var, callback, returns_net, all_outputs=with_aux_tower)
