"""Rules of the augmentation ops (``stadyn/ops/_augment.py``, ``_augment_image.py``): ONNX
has none of them."""

from __future__ import annotations

from ... import functions as F
from ._nnabla import nnabla
from ._table import Unmapped, register_rules

_EXPORT = Unmapped("ONNX has no random augmentation ops: augment the data before an exported "
                   "network, as an ONNX runtime runs it for inference")
_IMPORT = Unmapped("ONNX has no random augmentation ops")


def _shape_of_x(e, inputs, attrs):
    return tuple(e.shape(inputs[0]))


# In .nnp files each is NNabla's function of the same name (NNabla's Console writes them in
# training networks): the file holds the parameters and the seed, each framework draws with
# its own generator (compat.nnabla's loaders draw NNabla's numbers, ``draws=True``).
_NNABLA = {
    F.image_augmentation: nnabla(
        F.image_augmentation, "ImageAugmentation", draws=True,
        defaults={"shape": _shape_of_x},
        shape=tuple, pad=tuple, min_scale=float, max_scale=float, angle=float,
        aspect_ratio=float, distortion=float, flip_lr=bool, flip_ud=bool, brightness=float,
        brightness_each=bool, contrast=float, contrast_center=float, contrast_each=bool,
        noise=float, seed=int),
    F.random_flip: nnabla(F.random_flip, "RandomFlip", draws=True,
                          defaults={"axes": lambda e, i, a: [len(e.shape(i[0])) - 1]},
                          axes=list, base_axis=int, seed=int),
    F.random_shift: nnabla(F.random_shift, "RandomShift", draws=True,
                           defaults={"shifts": lambda e, i, a: [0] * len(e.shape(i[0]))},
                           shifts=list, border_mode=str, constant_value=float, base_axis=int,
                           seed=int),
    F.random_crop: nnabla(F.random_crop, "RandomCrop", draws=True,
                          defaults={"shape": _shape_of_x}, shape=tuple, base_axis=int, seed=int),
    F.random_erase: nnabla(F.random_erase, "RandomErase", draws=True, defaults={"n": 1},
                           prob=float, area_ratios=list, aspect_ratios=list, replacements=list,
                           n=int, share=bool, inplace=bool, base_axis=int, seed=int,
                           channel_last=bool, ste_fine_grained=bool),
}
for _f, _nnp in _NNABLA.items():
    register_rules(_f, onnx_export=_EXPORT, onnx_import=_IMPORT, nnp_import=_nnp)
