"""``nnabla.models.imagenet.base.ImageNetBase``: what NNabla's pretrained ImageNet models
share.  A model class reads its ``.nnp`` file from ``<model home>/imagenet/`` (``~/nnabla_data/
nnp_models/imagenet/Resnet-50.nnp``: where NNabla 1.39 saves its download, so a file NNabla
fetched is found there), with Stadyn's ``.nnp`` reader (``nnabla.utils.nnp_graph.NnpLoader``).
Stadyn downloads nothing: without the file, making the model raises ``DownloadError`` naming
the URL to fetch it from and the path to save it as.

Calling the model builds its network for a given input (default ``(1,) + input_shape``) with
NNabla's ``NnpNetworkPass`` steps: the image augmentation taken out, the input replaced,
``use_up_to`` (``'classifier'``, ``'pool'``, ``'lastconv'``, ``'lastconv+relu'``, ... per
class) the last variable kept, batch statistics and ``need_grad`` per ``training``, dropout
taken out at inference, the final average pooling checked or made global.

Example:
    >>> import os, tempfile
    >>> from stadyn.compat.nnabla.models.imagenet import ResNet18
    >>> home = os.environ.get("HOME", "")
    >>> os.environ["HOME"] = tempfile.mkdtemp()     # an empty model folder
    >>> try:
    ...     ResNet18()
    ... except Exception as e:
    ...     print(type(e).__name__, "nnp_models/imagenet/Resnet-18.nnp" in str(e))
    ... finally:
    ...     os.environ["HOME"] = home
    DownloadError True
"""

from __future__ import annotations

import os
from typing import Any

from ..._variable import Variable
from ...utils.download import download
from ...utils.nnp_graph import NnpLoader, NnpNetworkPass
from ..utils import get_model_home, get_model_url_base

__all__ = ["ImageNetBase"]


class ImageNetBase:
    """The base of the ImageNet model classes: ``input_shape``, ``category_names``,
    ``use_up_to``, ``get_input_var``, ``configure_global_average_pooling``.  A subclass that
    builds its network itself (image2stylegan's ``VGG_custom``) calls ``self._load_nnp(name,
    url)`` and ``self.nnp.get_network(...)``, as with NNabla's.

    The built-in classes describe their file with class attributes, read by ``_build``:
    ``_NETWORK`` (the file's network), ``_AUGMENTATION`` (the augmentation function),
    ``_INPUT`` (the input variable), ``_POOL`` (``(name, by_type)`` of the final average
    pooling, or None), ``_BATCH_NORM`` (whether it has batch normalisation), ``_DROPOUTS``
    (taken out at inference), ``_REFUSE_USE_FROM`` (whether ``use_from`` is an
    AssertionError)."""

    _KEY_VARIABLE: dict = {}
    _NETWORK = "Training"
    _AUGMENTATION = "ImageAugmentationX"
    _INPUT = "InputX"
    _POOL: Any = ("AveragePooling", False)
    _BATCH_NORM = True
    _DROPOUTS: tuple = ()
    _REFUSE_USE_FROM = True     # (NNabla's MobileNet, SENet, SqueezeNet and NIN ignore it)

    @property
    def category_names(self) -> list[str]:
        """The 1000 ImageNet class names, one a line of ``<model home>/imagenet/
        category_names.txt`` (Stadyn ships no copy: put NNabla's
        ``nnabla/models/imagenet/category_names.txt`` there)."""
        if not hasattr(self, "_category_names"):
            path = os.path.join(get_model_home(), "imagenet", "category_names.txt")
            if not os.path.exists(path):
                raise FileNotFoundError(
                    f"{path}: Stadyn has no copy of ImageNet's category names; save NNabla's "
                    f"nnabla/models/imagenet/category_names.txt (one name a line) there")
            with open(path) as f:
                self._category_names = f.read().splitlines()
        return self._category_names

    @property
    def input_shape(self) -> tuple:
        """The model's image size ``(channels, height, width)``."""
        return self._input_shape()

    def _input_shape(self) -> tuple:
        raise NotImplementedError("input size is not implemented")

    def _load_nnp(self, rel_name: str, rel_url: str) -> None:
        """Read ``<model home>/imagenet/<rel_name>`` into ``self.nnp`` (an ``NnpLoader``);
        without it, ``DownloadError`` names ``<url base>/imagenet/<rel_url>`` and the path."""
        path = os.path.join(get_model_home(), "imagenet", rel_name)
        url = get_model_url_base() + "imagenet/" + rel_url
        os.makedirs(os.path.dirname(path), exist_ok=True)
        download(url, path, open_file=False, allow_overwrite=False)
        print("Loading {}.".format(path))
        self.nnp = NnpLoader(path)

    def use_up_to(self, key: str, callback: Any, **variable_format_dict: Any) -> None:
        """Tell ``callback`` to stop at the variable ``key`` names (one of the class's
        ``use_up_to`` keys)."""
        if key not in self._KEY_VARIABLE:
            raise ValueError('The key "{}" is not present in {}. Available keys are {}.'.format(
                key, type(self).__name__, list(self._KEY_VARIABLE.keys())))
        callback.use_up_to(self._KEY_VARIABLE[key].format(**variable_format_dict))

    def get_input_var(self, input_var: Any) -> Any:
        """``input_var``, or a Variable of ``(1,) + input_shape``; a 4-d RGB input is
        required (AssertionError, as NNabla's)."""
        if input_var is None:
            input_var = Variable((1,) + tuple(self.input_shape))
        if input_var.ndim != 4:
            raise AssertionError(f"input_var must be 4 dimensions. Given {input_var.ndim}.")
        if input_var.shape[1] != 3:
            raise AssertionError(f"input_var.shape[1] must be 3 (RGB). Given "
                                 f"{input_var.shape[1]}.")
        return input_var

    def configure_global_average_pooling(self, callback: Any, force_global_pooling: bool,
                                         check_global_pooling: bool, name: str,
                                         by_type: bool = False) -> None:
        """Make the average pooling ``name`` global, or check that it is."""
        if force_global_pooling:
            callback.force_average_pooling_global(name, by_type=by_type)
        elif check_global_pooling:
            callback.check_average_pooling_global(name, by_type=by_type)

    def _build(self, input_var: Any, use_up_to: str, training: bool,
               force_global_pooling: bool, check_global_pooling: bool, returns_net: bool,
               verbose: Any, fmt: dict | None = None, pool: Any = None) -> Any:
        input_var = self.get_input_var(input_var)
        callback = NnpNetworkPass(verbose)
        callback.remove_and_rewire(self._AUGMENTATION)
        callback.set_variable(self._INPUT, input_var)
        pool = self._POOL if pool is None else pool
        if pool:
            self.configure_global_average_pooling(callback, force_global_pooling,
                                                  check_global_pooling, pool[0], by_type=pool[1])
        if self._BATCH_NORM:
            callback.set_batch_normalization_batch_stat_all(training)
        self.use_up_to(use_up_to, callback, **(fmt or {}))
        if not training:
            for name in self._DROPOUTS:
                callback.remove_and_rewire(name)
            callback.fix_parameters()
        return self._network(input_var, callback, returns_net)

    def _network(self, input_var: Any, callback: Any, returns_net: bool,
                 all_outputs: bool = False) -> Any:
        net = self.nnp.get_network(self._NETWORK, batch_size=input_var.shape[0],
                                   callback=callback)
        if returns_net:
            return net
        outputs = list(net.outputs.values())
        return outputs if all_outputs else outputs[0]

    def __call__(self, input_var: Any = None, use_from: Any = None, use_up_to: str = "classifier",
                 training: bool = False, force_global_pooling: bool = False,
                 check_global_pooling: bool = True, returns_net: bool = False,
                 verbose: Any = 0) -> Any:
        """Build the network on ``input_var``, up to the variable ``use_up_to`` names; the
        last Variable, or the ``NnpNetwork`` with ``returns_net``."""
        raise NotImplementedError()


class _FileModel(ImageNetBase):
    """A built-in model class: its network is the file's, built by ``_build`` from the class's
    attributes (the classes in ``nnabla.models.imagenet`` derive from it)."""

    def _format(self) -> dict:
        return {}

    def __call__(self, input_var: Any = None, use_from: Any = None,
                 use_up_to: str = "classifier", training: bool = False,
                 force_global_pooling: bool = False, check_global_pooling: bool = True,
                 returns_net: bool = False, verbose: Any = 0) -> Any:
        """Build the network on ``input_var`` (default: a ``(1,) + input_shape`` Variable),
        up to the variable ``use_up_to`` names (see the class); ``training`` keeps batch
        statistics, dropout and trainable parameters; the last Variable, or the
        ``NnpNetwork`` with ``returns_net``."""
        if use_from is not None and self._REFUSE_USE_FROM:
            raise AssertionError("This should not be set because it is for forward "
                                 "compatibility.")
        return self._build(input_var, use_up_to, training, force_global_pooling,
                           check_global_pooling, returns_net, verbose, self._format())
