"""``nnabla.models.imagenet.inception``: ``InceptionV3`` (``Inception-v3.nnp``; see
``base``); 299x299 inputs.

``use_up_to``: ``'classifier'``, ``'pool'``, ``'prepool'``.  In training,
``with_aux_tower=True`` keeps the auxiliary classifier (the call returns both outputs);
otherwise its branch is dropped.
"""

from __future__ import annotations

from typing import Any

from ...utils.nnp_graph import NnpNetworkPass
from .base import _FileModel

__all__ = ["InceptionV3"]


class InceptionV3(_FileModel):
    """Inception-v3 (Szegedy et al., 2015)."""

    _KEY_VARIABLE = {"classifier": "Affine", "pool": "AveragePooling_2",
                     "prepool": "Inception_11/Concatenate", "_aux_classifier": "Affine_2",
                     "_include_no_aux": "Conv_6/Convolution"}
    _NETWORK = "Train"

    def __init__(self):
        self._load_nnp("Inception-v3.nnp", "Inception-v3/Inception-v3.nnp")

    def _input_shape(self) -> tuple:
        return (3, 299, 299)

    def __call__(self, input_var: Any = None, use_from: Any = None,
                 use_up_to: str = "classifier", training: bool = False,
                 force_global_pooling: bool = False, check_global_pooling: bool = True,
                 returns_net: bool = False, verbose: Any = 0,
                 with_aux_tower: bool = False) -> Any:
        """As ``ImageNetBase``'s models, with the auxiliary tower when ``with_aux_tower``
        (training only: an AssertionError otherwise, as NNabla's)."""
        if not training and with_aux_tower:
            raise AssertionError("Aux Tower should be disabled when inference process.")
        input_var = self.get_input_var(input_var)
        callback = NnpNetworkPass(verbose)
        callback.remove_and_rewire("ImageAugmentation")
        callback.set_variable("Iv3TrainInput", input_var)
        self.configure_global_average_pooling(callback, force_global_pooling,
                                              check_global_pooling, "AveragePooling_2")
        callback.set_batch_normalization_batch_stat_all(training)
        if with_aux_tower:
            self.use_up_to("_aux_classifier", callback)
            drop = ("Affine_2", "SoftmaxCrossEntropy_2", "MulScalar_2")
        else:
            self.use_up_to("_include_no_aux", callback)
            drop = ("Conv_6/Convolution", "Conv_6/BatchNormalization", "Conv_6/ReLU",
                    "AveragePooling", "Conv_7/Convolution", "Conv_7/BatchNormalization",
                    "Conv_7/ReLU", "Affine_2", "SoftmaxCrossEntropy_2", "MulScalar_2")
        callback.drop_function(*drop)
        if not training:
            callback.remove_and_rewire("Dropout")
            callback.fix_parameters()
        self.use_up_to(use_up_to, callback)
        return self._network(input_var, callback, returns_net, all_outputs=with_aux_tower)
