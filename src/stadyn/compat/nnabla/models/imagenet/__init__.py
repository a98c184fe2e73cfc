"""``nnabla.models.imagenet``: NNabla's pretrained ImageNet classifiers -- ``ResNet``
(``ResNet18`` .. ``ResNet152``), ``MobileNet``, ``MobileNetV2``, ``SENet``, ``SqueezeNet``
(``SqueezeNetV10``, ``SqueezeNetV11``), ``VGG`` (``VGG11``, ``VGG13``, ``VGG16``), ``NIN``,
``DenseNet``, ``InceptionV3``, ``Xception``, ``GoogLeNet``, ``ResNeXt`` (``ResNeXt50``,
``ResNeXt101``), ``ShuffleNet`` (``ShuffleNet10``, ``ShuffleNet05``, ``ShuffleNet20``),
``AlexNet``.

Each reads its ``.nnp`` file from ``~/nnabla_data/nnp_models/imagenet/`` (where NNabla 1.39
saves its download); Stadyn downloads nothing, and a missing file is a ``DownloadError`` naming
the URL and the path to save it as (see ``base``).

Example:
    >>> from stadyn.compat.nnabla.models.imagenet import VGG16
    >>> VGG16.__mro__[-2].__name__
    'ImageNetBase'
"""

from .alexnet import AlexNet
from .densenet import DenseNet
from .googlenet import GoogLeNet
from .inception import InceptionV3
from .mobilenet import MobileNet, MobileNetV2
from .nin import NIN
from .resnet import ResNet, ResNet18, ResNet34, ResNet50, ResNet101, ResNet152
from .resnext import ResNeXt, ResNeXt50, ResNeXt101
from .senet import SENet
from .shufflenet import ShuffleNet, ShuffleNet05, ShuffleNet10, ShuffleNet20
from .squeezenet import SqueezeNet, SqueezeNetV10, SqueezeNetV11
from .vgg import VGG, VGG11, VGG13, VGG16
from .xception import Xception

__all__ = ["ResNet", "ResNet18", "ResNet34", "ResNet50", "ResNet101", "ResNet152", "MobileNet",
           "MobileNetV2", "SENet", "SqueezeNet", "SqueezeNetV10", "SqueezeNetV11", "VGG",
           "VGG11", "VGG13", "VGG16", "NIN", "DenseNet", "InceptionV3", "Xception", "GoogLeNet",
           "ResNeXt", "ResNeXt50", "ResNeXt101", "ShuffleNet", "ShuffleNet10", "ShuffleNet05",
           "ShuffleNet20", "AlexNet"]
