"""A stand-in for ``nnabla.models.imagenet``'s pretrained ResNet-50 download, for the graph
converters tutorial: ``install()`` points ``HOME`` at the folder ``tiny_imagenet_home`` of the
working directory (relative, so the path the loader prints is the same in every run), whose
``~/nnabla_data/nnp_models/imagenet/Resnet-50.nnp`` is a small ResNet-shaped network with
NNabla's variable names (``InputX``, ``ImageAugmentationX``, ``AveragePooling``, ``Affine``):
a convolution, batch normalisation and ReLU, one residual block (two convolutions with batch
normalisation, ``Add2`` with the block's input, ReLU), a global 224x224 average pooling and
the classifier, with seeded parameter values.  Both frameworks read the same file; NNabla's
``ResNet50()`` loads it without downloading.

Example (``run_cells.py`` puts this folder on ``sys.path``):
    >>> import os, tempfile
    >>> os.chdir(tempfile.mkdtemp())
    >>> home = install()
    >>> home, os.listdir(os.path.join(home, "nnabla_data", "nnp_models", "imagenet"))
    ('tiny_imagenet_home', ['Resnet-50.nnp'])
"""

import os
import zipfile

import numpy as np

__all__ = ["install"]

_SIDE = 224


def _shape(shape):
    return " ".join("dim: %d" % d for d in shape)


def _var(name, shape, kind="Buffer"):
    return ' variable { name: "%s" type: "%s" shape { %s } }\n' % (name, kind, _shape(shape))


def _param(name, shape, rng, positive=False):
    values = rng.standard_normal(shape).astype(np.float32) * 0.5
    if positive:
        values = np.abs(values) + 0.5
    data = " ".join("data: %r" % float(v) for v in values.ravel())
    return ('parameter { variable_name: "%s" shape { %s } %s need_grad: true }\n'
            % (name, _shape(shape), data))


def _conv_bn(prefix, inp, out, cin, cout):
    """A convolution ``<prefix>/conv/W`` and its batch normalisation ``<prefix>/bn/*``."""
    conv, bn = "Convolution" + out, "BatchNormalization" + out
    text = _var(prefix + "/conv/W", (cout, cin, 3, 3), "Parameter")
    text += _var(conv, (-1, cout, _SIDE, _SIDE))
    for p in ("beta", "gamma", "mean", "var"):
        text += _var("%s/bn/%s" % (prefix, p), (1, cout, 1, 1), "Parameter")
    text += _var(bn, (-1, cout, _SIDE, _SIDE))
    functions = (
        ' function { name: "%s" type: "Convolution" input: "%s" input: "%s/conv/W" '
        'output: "%s" convolution_param { base_axis: 1 pad { dim: 1 dim: 1 } '
        'stride { dim: 1 dim: 1 } dilation { dim: 1 dim: 1 } group: 1 } }\n'
        % (conv, inp, prefix, conv))
    functions += (
        ' function { name: "%s" type: "BatchNormalization" input: "%s" input: "%s/bn/beta" '
        'input: "%s/bn/gamma" input: "%s/bn/mean" input: "%s/bn/var" output: "%s" '
        'batch_normalization_param { axes: 1 decay_rate: 0.9 eps: 1e-05 batch_stat: true } }\n'
        % (bn, conv, prefix, prefix, prefix, prefix, bn))
    return text, functions


def network_text(seed=0):
    """The stand-in's ``network.nntxt``."""
    rng = np.random.RandomState(seed)
    text = 'network { name: "Training" batch_size: 1\n'
    text += _var("InputX", (-1, 3, _SIDE, _SIDE)) + _var("ImageAugmentationX",
                                                         (-1, 3, _SIDE, _SIDE))
    functions = (' function { name: "ImageAugmentationX" type: "ImageAugmentation" '
                 'input: "InputX" output: "ImageAugmentationX" image_augmentation_param { '
                 'shape { %s } min_scale: 1 max_scale: 1 aspect_ratio: 1 } }\n'
                 % _shape((3, _SIDE, _SIDE)))
    params = []
    for prefix, inp, out, cin in (("conv1", "ImageAugmentationX", "", 3),
                                  ("res1/1", "ReLU", "_2", 4), ("res1/2", "ReLU_2", "_3", 4)):
        v, f = _conv_bn(prefix, inp, out, cin, 4)
        text, functions = text + v, functions + f
        if out != "_3":
            relu = "ReLU" + out
            text += _var(relu, (-1, 4, _SIDE, _SIDE))
            functions += (' function { name: "%s" type: "ReLU" input: "BatchNormalization%s" '
                          'output: "%s" }\n' % (relu, out, relu))
        params.append((prefix, cin))
    text += _var("Add2", (-1, 4, _SIDE, _SIDE)) + _var("ReLU_3", (-1, 4, _SIDE, _SIDE))
    functions += (' function { name: "Add2" type: "Add2" input: "BatchNormalization_3" '
                  'input: "ReLU" output: "Add2" }\n'
                  ' function { name: "ReLU_3" type: "ReLU" input: "Add2" output: "ReLU_3" }\n')
    text += _var("AveragePooling", (-1, 4, 1, 1)) + _var("fc/affine/W", (4, 5), "Parameter")
    text += _var("fc/affine/b", (5,), "Parameter") + _var("Affine", (-1, 5))
    functions += (' function { name: "AveragePooling" type: "AveragePooling" input: "ReLU_3" '
                  'output: "AveragePooling" average_pooling_param { kernel { %s } '
                  'stride { %s } ignore_border: true pad { dim: 0 dim: 0 } '
                  'including_pad: true } }\n' % (_shape((_SIDE, _SIDE)), _shape((_SIDE, _SIDE))))
    functions += (' function { name: "Affine" type: "Affine" input: "AveragePooling" '
                  'input: "fc/affine/W" input: "fc/affine/b" output: "Affine" '
                  'affine_param { base_axis: 1 } }\n')
    text += functions + "}\n"
    for prefix, cin in params:
        text += _param(prefix + "/conv/W", (4, cin, 3, 3), rng)
        for p in ("beta", "gamma", "mean", "var"):
            text += _param("%s/bn/%s" % (prefix, p), (1, 4, 1, 1), rng, positive=(p == "var"))
    text += _param("fc/affine/W", (4, 5), rng) + _param("fc/affine/b", (5,), rng)
    return text


def install(seed=0):
    """Write the stand-in under ``tiny_imagenet_home`` and make that this process's
    ``HOME``; returns the folder (relative to the working directory)."""
    home = "tiny_imagenet_home"
    folder = os.path.join(home, "nnabla_data", "nnp_models", "imagenet")
    os.makedirs(folder, exist_ok=True)
    with zipfile.ZipFile(os.path.join(folder, "Resnet-50.nnp"), "w") as z:
        z.writestr("network.nntxt", network_text(seed))
    os.environ["HOME"] = home
    return home
