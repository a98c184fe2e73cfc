"""NNabla 1.39's modules that nnabla-examples import, second part:

* ``nnabla.experimental.parametric_function_classes`` (``PFC``): layers as objects holding
  their parameters (parametric_function_classes/mnist-collection).  NNabla 1.39's ``PFC``
  module is empty (its re-exports were dropped), so on the real side the classes come from
  their ``parametric_function_class.<kind>`` modules (``substitutes``);
* ``nnabla.config`` (``nnabla_config``), ``nnabla.lms`` (``SwapInOutScheduler``),
  ``nnabla.utils.profiler`` (``GraphProfiler``), ``nnabla.experimental.viewers``
  (``SimpleGraph``), ``nnabla.models.imagenet``.
"""

import os
import shutil
import tempfile

import numpy as np

from compat_harness import nnabla_case

_PFC = "nnabla.experimental.parametric_function_classes"
_KINDS = {"module": ["Module"], "affine": ["Affine", "Linear"],
          "convolution": ["Convolution", "Conv1d", "Conv2d", "Conv3d", "ConvNd"],
          "deconvolution": ["Deconvolution", "Deconv1d", "Deconv2d", "Deconv3d", "DeconvNd"],
          "embed": ["Embed"],
          "batch_normalization": ["BatchNormalization", "BatchNorm1d", "BatchNorm2d",
                                  "BatchNorm3d"]}
_PFC_SUBSTITUTES = dict(
    (_PFC + "." + cls, "nnabla.experimental.parametric_function_class.%s.%s" % (kind, cls))
    for kind, classes in _KINDS.items() for cls in classes)
_MODULE_METHODS = ["get_modules", "get_parameters", "save_parameters", "load_parameters"]


def _mnist_collection(PFC, F):
    """parametric_function_classes/mnist-collection's model as its main.py writes it (the
    random image augmentation of its training input left out)."""

    class Model0(PFC.Module):
        def __init__(self):
            self.conv0 = PFC.Conv2d(1, 16, (3, 3), pad=(1, 1), with_bias=False)
            self.conv1 = PFC.Conv2d(16, 32, (3, 3), pad=(1, 1), with_bias=False)
            self.bn0 = PFC.BatchNorm2d(16)
            self.bn1 = PFC.BatchNorm2d(32)
            self.act = F.relu
            self.pool = F.max_pooling

        def __call__(self, x, test=False):
            h = x
            h = self.conv0(h)
            h = self.bn0(h, test)
            h = self.act(h)
            h = self.pool(h, (2, 2))
            h = self.conv1(h)
            h = self.bn1(h, test)
            h = self.act(h)
            h = self.pool(h, (2, 2))
            return h

    class Model1(PFC.Module):
        def __init__(self):
            self.conv0 = PFC.Conv2d(32, 64, (3, 3), pad=(1, 1), with_bias=False)
            self.bn0 = PFC.BatchNorm2d(64)
            self.affine = PFC.Affine(64, 10)
            self.act = F.relu
            self.pool = F.average_pooling

        def __call__(self, x, test=False):
            h = x
            h = self.conv0(h)
            h = self.bn0(h, test)
            h = self.act(h)
            h = self.pool(h, h.shape[2:])
            h = self.affine(h)
            return h

    class Model(PFC.Module):
        def __init__(self):
            self.model0 = Model0()
            self.model1 = Model1()

        def __call__(self, x, test=False):
            h = self.model0(x, test)
            h = self.model1(h, test)
            return h

    return Model


def _digest(a):
    """An array's sum, sum of magnitudes, sum of squares and first six values (the
    references stay small: the model has some 23,000 parameter values)."""
    a = np.asarray(a, np.float64).ravel()
    head = np.zeros(6)
    head[:min(6, a.size)] = a[:6]
    return np.concatenate([[a.sum(), np.abs(a).sum(), (a * a).sum()], head]).astype(np.float32)


@nnabla_case(names=[_PFC, _PFC + ".Module", _PFC + ".Conv2d", _PFC + ".BatchNorm2d",
                    _PFC + ".Affine"] + ["%s.Module.%s" % (_PFC, m) for m in _MODULE_METHODS],
             substitutes=_PFC_SUBSTITUTES, rtol=1e-4, atol=1e-5,
             note="convolutions and batch statistics over a few hundred values: summation "
                  "order; each parameter's gradient and value compared by a digest (_digest)")
def pfc__mnist_collection_model(nn, F, S, r):
    r.touch(*["%s.Module.%s" % (_PFC, m) for m in _MODULE_METHODS])
    PFC = r.module(_PFC)
    Model = _mnist_collection(PFC, F)
    model = Model()
    res = {}
    params = model.get_parameters(grad_only=False)
    res["parameters"] = [[k, list(v.shape), bool(v.need_grad)] for k, v in params.items()]
    res["modules"] = [p for p, _ in model.get_modules()]
    for k, v in params.items():
        v.d = r.rand(*v.shape, low=0.5, high=1.5) if k.endswith("var") else r.randn(*v.shape) * 0.3
    x = nn.Variable.from_numpy_array(r.randn(4, 1, 8, 8))
    t = nn.Variable.from_numpy_array(r.randint(0, 10, (4, 1)))
    pred = model(x)
    loss = F.mean(F.softmax_cross_entropy(pred, t))
    solver = S.Sgd(lr=0.1)
    solver.set_parameters(model.get_parameters(grad_only=True))
    solver.zero_grad()
    loss.forward()
    loss.backward()
    res["loss"] = loss.d.copy()
    res["gradients"] = np.stack([_digest(v.g) for v in model.get_parameters().values()])
    solver.update()
    after = [v.d.copy() for v in model.get_parameters(grad_only=False).values()]
    res["after one step"] = np.stack([_digest(a) for a in after])
    vpred = model(x, test=True)
    vpred.forward()
    res["test prediction"] = vpred.d.copy()
    d = tempfile.mkdtemp()
    try:
        path = os.path.join(d, "pfc.h5")
        model.save_parameters(path)
        other = Model()
        with nn.parameter_scope("pfc_load"):
            other.load_parameters(path)
            res["registry after load"] = sorted(nn.get_parameters(grad_only=False))
        res["loaded the saved values"] = all(
            np.array_equal(v.d, a)
            for v, a in zip(other.get_parameters(grad_only=False).values(), after))
        model.save_parameters(path, grad_only=True)
        with nn.parameter_scope("pfc_load_2"):
            try:
                Model().load_parameters(path)
                res["load without the running statistics raises"] = False
            except (AttributeError, ValueError):    # (NNabla: None has no .d; Stadyn names it)
                res["load without the running statistics raises"] = True
            nn.clear_parameters()
    finally:
        shutil.rmtree(d)
    return res


_PFC_REST = ["Linear", "Convolution", "Conv1d", "Conv3d", "ConvNd", "Deconvolution", "Deconv1d",
             "Deconv2d", "Deconv3d", "DeconvNd", "Embed", "BatchNormalization", "BatchNorm1d",
             "BatchNorm3d"]


@nnabla_case(names=["nnabla.experimental", "nnabla.experimental.parametric_function_class"]
             + ["nnabla.experimental.parametric_function_class." + k for k in _KINDS]
             + [_PFC + "." + c for c in _PFC_REST],
             substitutes=_PFC_SUBSTITUTES, rtol=1e-5, atol=1e-5,
             known={"embed": "NNabla 1.39's PFC.Embed cannot be made (its __init__ reads an "
                             "undefined name n_input: NameError); Stadyn's makes the table"})
def pfc__layers_initialisers_and_flags(nn, F, r):
    for kind in _KINDS:
        r.module("nnabla.experimental.parametric_function_class." + kind)
    r.module("nnabla.experimental")
    r.module("nnabla.experimental.parametric_function_class")
    PFC = r.module(_PFC)
    res = {}
    fc = PFC.Linear(6, (2, 3), rng=np.random.RandomState(0))
    res["linear (2, 3) outputs: W, b"] = [fc.W.d.copy(), fc.b.d.copy()]
    conv = PFC.Convolution(4, 6, (3, 3), (1, 1), (2, 2), (1, 1), 2,
                           rng=np.random.RandomState(1))
    res["grouped strided convolution W"] = conv.W.d.copy()
    x = nn.Variable.from_numpy_array(r.randn(2, 4, 5, 5))
    y = conv(x)
    y.forward()
    res["grouped strided convolution"] = y.d.copy()
    res["conv1d, conv3d, convnd"] = [list(PFC.Conv1d(2, 3, (3,), rng=np.random.RandomState(2))
                                          .W.shape),
                                     PFC.Conv3d(2, 3, (1, 2, 2),
                                                rng=np.random.RandomState(3)).W.d.copy(),
                                     list(PFC.ConvNd(2, 3, (2, 2)).W.shape)]
    deconvs = [PFC.Deconvolution(3, 3, (2, 2), stride=(2, 2), rng=np.random.RandomState(4)),
               PFC.Deconv1d(2, 2, (3,), with_bias=False), PFC.Deconv2d(2, 2, (2, 2)),
               PFC.Deconv3d(1, 1, (1, 1, 1)), PFC.DeconvNd(2, 2, (2, 2))]
    up = deconvs[0](nn.Variable.from_numpy_array(r.randn(1, 3, 2, 2)))
    up.forward()
    res["deconvolution"] = [deconvs[0].W.d.copy(), up.d.copy(), deconvs[1].b is None,
                            [list(d.W.shape) for d in deconvs]]
    bns = [PFC.BatchNormalization(3, 2, axes=[1], decay_rate=0.5, eps=1e-3),
           PFC.BatchNorm1d(3, fix_parameters=True), PFC.BatchNorm3d(2)]
    h = nn.Variable.from_numpy_array(r.randn(4, 3))
    out = bns[0](h)
    out.forward()
    res["batch normalization, its running statistics"] = [out.d.copy(), bns[0].mean.d.copy(),
                                                          bns[0].var.d.copy()]
    res["batch norm shapes and flags"] = [[list(b.gamma.shape), b.gamma.need_grad,
                                           b.mean.need_grad] for b in bns]
    test_out = bns[0](h, test=True)
    test_out.forward()
    res["batch normalization at test"] = test_out.d.copy()
    fixed = PFC.Affine(2, 2, fix_parameters=True, with_bias=False)
    res["fixed, no bias"] = [fixed.W.need_grad, fixed.b is None,
                             list(fixed.get_parameters()), list(fixed.get_parameters(False))]
    res["a layer's own parameters are named from the root"] = list(fc.get_parameters())
    res["not in the parameter registry"] = sorted(nn.get_parameters(grad_only=False))
    try:
        emb = PFC.Embed(5, 3)
        res["embed"] = [list(emb.W.shape), bool(np.all(np.abs(emb.W.d) <= np.sqrt(3.0)))]
    except NameError:
        res["embed"] = "NameError"
    return res


@nnabla_case(names=["nnabla.lms", "nnabla.lms.SwapInOutScheduler"]
             + ["nnabla.lms.SwapInOutScheduler." + m for m in (
                 "start_scheduling", "end_scheduling", "function_pre_hook",
                 "function_post_hook", "update_pre_hook", "update_post_hook")],
             note="NNabla 1.39 on a CPU build: the host context as the device one too (device_id "
                  "'0': its C++ parses it); one scheduled step (a second scheduling of the same "
                  "graph ends NNabla's process with a segmentation fault)")
def lms__scheduler_runs_a_training_step(nn, F, S, r):
    L = r.module("nnabla.lms")
    r.touch(*["nnabla.lms.SwapInOutScheduler." + m for m in (
        "start_scheduling", "end_scheduling", "function_pre_hook", "function_post_hook",
        "update_pre_hook", "update_post_hook")])
    host = nn.Context(["cpu:float"], "CpuCachedArray", "0")
    scheduler = L.SwapInOutScheduler(host, host, 8 << 30, 12 << 30)
    x = nn.Variable.from_numpy_array(r.randn(4, 3))
    w = nn.Variable.from_numpy_array(r.randn(3, 2), need_grad=True)
    loss = F.mean(F.tanh(F.affine(x, w)))
    solver = S.Sgd(lr=0.5)
    solver.set_parameters({"w": w})
    with scheduler:             # NNabla's docstring's loop, neu.lms's update scope
        solver.zero_grad()
        loss.forward(clear_no_need_grad=True, function_pre_hook=scheduler.function_pre_hook,
                     function_post_hook=scheduler.function_post_hook)
        loss.backward(clear_buffer=True, function_pre_hook=scheduler.function_pre_hook,
                      function_post_hook=scheduler.function_post_hook)
        scheduler.update_pre_hook()
        solver.update()
        scheduler.update_post_hook()
    errors = []
    for args in ((None, host, 1), (host, host, -1)):
        try:
            L.SwapInOutScheduler(*args)
            errors.append("made")
        except (TypeError, OverflowError) as e:
            errors.append(type(e).__name__)
    return {"loss": loss.d.copy(), "w after the step": w.d.copy(), "bad arguments": errors,
            "methods return": [scheduler.start_scheduling(), scheduler.end_scheduling()]}


@nnabla_case(names=["nnabla.config", "nnabla.config.nnabla_config"],
             note="the sections and values NNabla 1.39 ships (neither side reads a user's "
                  "~/.nnabla or ./nnabla.conf here)")
def config__defaults_get_and_set(nn, r):
    cfg = r.module("nnabla.config").nnabla_config
    res = {"sections": cfg.sections()}
    for section in cfg.sections():
        res[section] = sorted(cfg.items(section))
    res["getboolean"] = cfg.getboolean("MISC", "misc_show_progress")
    res["getint"] = cfg.getint("DATA_ITERATOR", "data_source_file_cache_size")
    old = cfg.get("DATA_ITERATOR", "cache_file_format")
    cfg.set("DATA_ITERATOR", "cache_file_format", ".h5")     # the ImageNet cache script's
    res["after set"] = cfg.get("DATA_ITERATOR", "cache_file_format")
    cfg.set("DATA_ITERATOR", "cache_file_format", old)
    return res


# -- nnabla.models.imagenet: small stand-ins for the pretrained files, in NNabla's folders -----

_IMAGENET = "nnabla.models.imagenet"


def _tensor(name, shape, r, scale=0.5, low=None):
    values = (r.rand(*shape, low=low, high=low + 1.0) if low is not None
              else r.randn(*shape) * scale)
    dims = " ".join("dim: %d" % d for d in shape)
    data = " ".join("data: %r" % float(v) for v in values.ravel())
    return ('parameter { variable_name: "%s" shape { %s } %s need_grad: true }\n'
            % (name, dims, data))


def _var(name, shape, kind="Buffer"):
    return ' variable { name: "%s" type: "%s" shape { %s } }\n' % (
        name, kind, " ".join("dim: %d" % d for d in shape))


def _resnet_like(r, net="Training", first="InputX", aug_out="ImageAugmentationX",
                 last="Affine"):
    """A ResNet-shaped stand-in: augmentation, convolution, batch norm, ReLU, a 4x4 average
    pooling named as NNabla's models name it, the classifier, its loss."""
    text = 'network { name: "%s" batch_size: 1\n' % net
    text += _var(first, (-1, 3, 4, 4)) + _var(aug_out, (-1, 3, 4, 4))
    text += _var("conv/W", (2, 3, 3, 3), "Parameter") + _var("Convolution", (-1, 2, 4, 4))
    for p in ("beta", "gamma", "mean", "var"):
        text += _var("bn/" + p, (1, 2, 1, 1), "Parameter")
    text += _var("BatchNormalization", (-1, 2, 4, 4)) + _var("ReLU", (-1, 2, 4, 4))
    text += _var("AveragePooling", (-1, 2, 1, 1)) + _var("fc/W", (2, 5), "Parameter")
    text += _var("fc/b", (5,), "Parameter") + _var(last, (-1, 5))
    text += _var("Label", (-1, 1)) + _var("SoftmaxCrossEntropy", (-1, 1))
    text += (' function { name: "ImageAugmentationX" type: "ImageAugmentation" input: "%s" '
             'output: "%s" image_augmentation_param { shape { dim: 3 dim: 4 dim: 4 } '
             'min_scale: 1 max_scale: 1 aspect_ratio: 1 } }\n' % (first, aug_out))
    text += (' function { name: "Convolution" type: "Convolution" input: "%s" input: "conv/W" '
             'output: "Convolution" convolution_param { base_axis: 1 pad { dim: 1 dim: 1 } '
             'stride { dim: 1 dim: 1 } dilation { dim: 1 dim: 1 } group: 1 } }\n' % aug_out)
    text += (' function { name: "BatchNormalization" type: "BatchNormalization" '
             'input: "Convolution" input: "bn/beta" input: "bn/gamma" input: "bn/mean" '
             'input: "bn/var" output: "BatchNormalization" batch_normalization_param { '
             'axes: 1 decay_rate: 0.9 eps: 1e-05 batch_stat: true } }\n')
    text += (' function { name: "ReLU" type: "ReLU" input: "BatchNormalization" '
             'output: "ReLU" }\n')
    text += (' function { name: "AveragePooling" type: "AveragePooling" input: "ReLU" '
             'output: "AveragePooling" average_pooling_param { kernel { dim: 4 dim: 4 } '
             'stride { dim: 4 dim: 4 } ignore_border: true pad { dim: 0 dim: 0 } '
             'including_pad: true } }\n')
    text += (' function { name: "%s" type: "Affine" input: "AveragePooling" input: "fc/W" '
             'input: "fc/b" output: "%s" affine_param { base_axis: 1 } }\n' % (last, last))
    text += (' function { name: "SoftmaxCrossEntropy" type: "SoftmaxCrossEntropy" '
             'input: "%s" input: "Label" output: "SoftmaxCrossEntropy" '
             'softmax_cross_entropy_param { axis: 1 } }\n}\n' % last)
    text += _tensor("conv/W", (2, 3, 3, 3), r) + _tensor("bn/beta", (1, 2, 1, 1), r)
    text += _tensor("bn/gamma", (1, 2, 1, 1), r) + _tensor("bn/mean", (1, 2, 1, 1), r)
    text += _tensor("bn/var", (1, 2, 1, 1), r, low=0.5)
    text += _tensor("fc/W", (2, 5), r) + _tensor("fc/b", (5,), r)
    return text


def _vgg_like(r):
    """A VGG16-shaped stand-in: augmentation, affine, ReLU, dropout, the feature affine, ReLU,
    dropout, the classifier."""
    text = 'network { name: "Training" batch_size: 1\n'
    text += _var("TrainingInput", (-1, 3, 2, 2)) + _var("ImageAugmentationX", (-1, 3, 2, 2))
    text += _var("f1/W", (12, 6), "Parameter") + _var("VGG16/Affine", (-1, 6))
    text += _var("VGG16/ReLU", (-1, 6)) + _var("VGG16/Dropout_1", (-1, 6))
    text += _var("f2/W", (6, 4), "Parameter") + _var("VGG16/Affine_2", (-1, 4))
    text += _var("VGG16/ReLU_2", (-1, 4)) + _var("VGG16/Dropout_2", (-1, 4))
    text += _var("f3/W", (4, 3), "Parameter")
    text += _var("VGG16/Affine_3", (-1, 3))
    text += (' function { name: "ImageAugmentationX" type: "ImageAugmentation" '
             'input: "TrainingInput" output: "ImageAugmentationX" image_augmentation_param { '
             'shape { dim: 3 dim: 2 dim: 2 } min_scale: 1 max_scale: 1 aspect_ratio: 1 } }\n')
    chain = [("VGG16/Affine", "Affine", "ImageAugmentationX", "f1/W"),
             ("VGG16/ReLU", "ReLU", "VGG16/Affine", None),
             ("VGG16/Dropout_1", "Dropout", "VGG16/ReLU", None),
             ("VGG16/Affine_2", "Affine", "VGG16/Dropout_1", "f2/W"),
             ("VGG16/ReLU_2", "ReLU", "VGG16/Affine_2", None),
             ("VGG16/Dropout_2", "Dropout", "VGG16/ReLU_2", None),
             ("VGG16/Affine_3", "Affine", "VGG16/Dropout_2", "f3/W")]
    for name, kind, inp, w in chain:
        extra = {"Affine": "affine_param { base_axis: 1 }",
                 "Dropout": "dropout_param { p: 0.5 seed: -1 }", "ReLU": ""}[kind]
        text += (' function { name: "%s" type: "%s" input: "%s" %s output: "%s" %s }\n'
                 % (name, kind, inp, 'input: "%s"' % w if w else "", name, extra))
    text += "}\n"
    for name, shape in (("f1/W", (12, 6)), ("f2/W", (6, 4)), ("f3/W", (4, 3))):
        text += _tensor(name, shape, r)
    return text


def _write_nnp(folder, name, text):
    import zipfile
    with zipfile.ZipFile(os.path.join(folder, name), "w") as z:
        z.writestr("network.nntxt", text)


def _models_home(r):
    """A fresh HOME whose ~/nnabla_data/nnp_models/imagenet holds the stand-ins."""
    home = tempfile.mkdtemp()
    folder = os.path.join(home, "nnabla_data", "nnp_models", "imagenet")
    os.makedirs(folder)
    _write_nnp(folder, "Resnet-18.nnp", _resnet_like(r))
    _write_nnp(folder, "VGG-16.nnp", _vgg_like(r))
    _write_nnp(folder, "MobileNet-v2.nnp", _resnet_like(r, last="Reshape"))
    return home


def _vgg_custom(ImageNetBase, NnpNetworkPass):
    """image2stylegan's VGG_custom (I2S_utils/GetFeatures.py) as its program writes it (16
    layers only; its docstring left out)."""

    class VGG_custom(ImageNetBase):
        def __init__(self, num_layers=16):
            self.num_layers = num_layers
            self._load_nnp('VGG-{}.nnp'.format(num_layers),
                           'VGG-{0}/VGG-{0}.nnp'.format(num_layers))
            self._KEY_VARIABLE = {
                'classifier': 'VGG{}/Affine_3'.format(num_layers),
                'lastfeature': 'VGG{}/Affine_2'.format(num_layers),
            }

        def _input_shape(self):
            return (3, 224, 224)

        def __call__(self, input_var=None, use_from=None, use_up_to='classifier',
                     training=False, force_global_pooling=False, check_global_pooling=True,
                     returns_net=False, verbose=0):
            assert use_from is None, \
                'This should not be set because it is for forward compatibility.'
            input_var = self.get_input_var(input_var)
            callback = NnpNetworkPass(verbose)
            callback.drop_function('ImageAugmentationX')
            callback.set_variable('ImageAugmentationX', input_var)
            callback.set_batch_normalization_batch_stat_all(training)
            self.use_up_to(use_up_to, callback)
            if not training:
                callback.drop_function('VGG{}/Dropout_1'.format(self.num_layers))
                callback.drop_function('VGG{}/Dropout_2'.format(self.num_layers))
                callback.fix_parameters()
            batch_size = input_var.shape[0]
            net = self.nnp.get_network('Training', batch_size=batch_size, callback=callback)
            if returns_net:
                return net
            return list(net.outputs.values())[0]

    return VGG_custom


def _run(v):
    v.forward()
    return v.d.copy()


@nnabla_case(names=[_IMAGENET, _IMAGENET + ".ResNet18", _IMAGENET + ".VGG16",
                    _IMAGENET + ".base", _IMAGENET + ".base.ImageNetBase",
                    _IMAGENET + ".base.ImageNetBase.input_shape",
                    _IMAGENET + ".base.ImageNetBase.get_input_var",
                    _IMAGENET + ".base.ImageNetBase.use_up_to",
                    _IMAGENET + ".base.ImageNetBase.configure_global_average_pooling",
                    _IMAGENET + ".MobileNetV2", "nnabla.models", "nnabla.models.utils",
                    "nnabla.models.utils.get_model_home"],
             rtol=1e-4, atol=1e-5,
             note="stand-in .nnp files (a few functions named as NNabla's ResNet, VGG16 and "
                  "MobileNetV2 files name theirs) saved where NNabla 1.39 keeps its downloads, "
                  "under a temporary HOME: NNabla reads them without downloading")
def imagenet_models__built_from_the_model_folder(nn, F, r):
    r.module("nnabla.models")
    r.touch(*[_IMAGENET + ".base.ImageNetBase." + m for m in (
        "input_shape", "get_input_var", "use_up_to", "configure_global_average_pooling")])
    IM = r.module(_IMAGENET)
    U = r.module("nnabla.models.utils")
    old_home = os.environ.get("HOME")
    home = _models_home(r)
    os.environ["HOME"] = home
    res = {}
    try:
        res["model home"] = os.path.relpath(U.get_model_home(), home)
        resnet = IM.ResNet18()
        res["input_shape"] = list(resnet.input_shape)
        x = nn.Variable.from_numpy_array(r.randn(2, 3, 4, 4))
        res["resnet classifier"] = _run(resnet(x))
        res["resnet pool, training"] = _run(resnet(x, use_up_to="pool", training=True))
        net = resnet(x, returns_net=True)
        res["returns_net"] = [list(net.inputs), list(net.outputs),
                              sorted(k for k, v in net.variables.items() if v.need_grad)]
        x6 = nn.Variable.from_numpy_array(r.randn(1, 3, 6, 6))
        res["forced global pooling"] = _run(resnet(x6, use_up_to="pool",
                                                   force_global_pooling=True))
        try:
            resnet(x6)
            res["6x6 with the check"] = "built"
        except Exception:
            res["6x6 with the check"] = "refused"
        try:
            resnet(x, use_up_to="lastfeature")
        except ValueError as e:
            res["unknown key"] = str(e)
        try:
            resnet(nn.Variable((1, 1, 4, 4)))
        except AssertionError as e:
            res["one channel"] = str(e)
        vgg = IM.VGG16()
        v = nn.Variable.from_numpy_array(r.randn(3, 3, 2, 2))
        res["vgg lastfeature"] = _run(vgg(v, use_up_to="lastfeature"))
        res["vgg classifier"] = _run(vgg(v))
        mobile = IM.MobileNetV2()
        res["mobilenet v2 classifier"] = _run(mobile(x))
        custom = _vgg_custom(r.module(_IMAGENET + ".base").ImageNetBase,
                             r.module("nnabla.utils.nnp_graph").NnpNetworkPass)()
        res["a program's own ImageNetBase class"] = [
            _run(custom(v, use_up_to="lastfeature")), list(custom.input_shape)]
    finally:
        os.environ["HOME"] = old_home
        shutil.rmtree(home)
    return res


# class -> (its constructor's arguments, the file NNabla 1.39 saves it as under
# nnp_models/imagenet/, where it downloads it from under <url base>imagenet/): NNabla's model
# classes' _load_nnp calls (python/src/nnabla/models/imagenet/*.py)
_MODEL_FILES = [
    ("ResNet", (), "Resnet-18.nnp", "Resnet-18/Resnet-18.nnp"),
    ("ResNet18", (), "Resnet-18.nnp", "Resnet-18/Resnet-18.nnp"),
    ("ResNet34", (), "Resnet-34.nnp", "Resnet-34/Resnet-34.nnp"),
    ("ResNet50", (), "Resnet-50.nnp", "Resnet-50/Resnet-50.nnp"),
    ("ResNet101", (), "Resnet-101.nnp", "Resnet-101/Resnet-101.nnp"),
    ("ResNet152", (), "Resnet-152.nnp", "Resnet-152/Resnet-152.nnp"),
    ("MobileNet", (), "MobileNet.nnp", "MobileNet/MobileNet.nnp"),
    ("MobileNetV2", (), "MobileNet-v2.nnp", "MobileNet-v2/MobileNet-v2.nnp"),
    ("SENet", (), "SENet-154.nnp", "SENet-154/SENet-154.nnp"),
    ("SqueezeNet", (), "SqueezeNet-1.1.nnp", "SqueezeNet-1.1/SqueezeNet-1.1.nnp"),
    ("SqueezeNetV10", (), "SqueezeNet-1.0.nnp", "SqueezeNet-1.0/SqueezeNet-1.0.nnp"),
    ("SqueezeNetV11", (), "SqueezeNet-1.1.nnp", "SqueezeNet-1.1/SqueezeNet-1.1.nnp"),
    ("VGG", (), "VGG-11.nnp", "VGG-11/VGG-11.nnp"),
    ("VGG11", (), "VGG-11.nnp", "VGG-11/VGG-11.nnp"),
    ("VGG13", (), "VGG-13.nnp", "VGG-13/VGG-13.nnp"),
    ("VGG16", (), "VGG-16.nnp", "VGG-16/VGG-16.nnp"),
    ("NIN", (), "NIN.nnp", "NIN/NIN.nnp"),
    ("DenseNet", (), "DenseNet-161.nnp", "DenseNet-161/DenseNet-161.nnp"),
    ("InceptionV3", (), "Inception-v3.nnp", "Inception-v3/Inception-v3.nnp"),
    ("Xception", (), "Xception.nnp", "Xception/Xception.nnp"),
    ("GoogLeNet", (), "GoogLeNet.nnp", "GoogLeNet/GoogLeNet.nnp"),
    ("ResNeXt", (), "ResNeXt-50.nnp", "ResNeXt-50/ResNeXt-50.nnp"),
    ("ResNeXt50", (), "ResNeXt-50.nnp", "ResNeXt-50/ResNeXt-50.nnp"),
    ("ResNeXt101", (), "ResNeXt-101.nnp", "ResNeXt-101/ResNeXt-101.nnp"),
    ("ShuffleNet", (), "ShuffleNet.nnp", "ShuffleNet/ShuffleNet.nnp"),
    ("ShuffleNet10", (), "ShuffleNet.nnp", "ShuffleNet/ShuffleNet.nnp"),
    ("ShuffleNet05", (), "ShuffleNet-.05x.nnp", "ShuffleNet-0.5x/ShuffleNet-0.5x.nnp"),
    ("ShuffleNet20", (), "ShuffleNet-2.0x.nnp", "ShuffleNet-2.0x/ShuffleNet-2.0x.nnp"),
    ("AlexNet", (), "AlexNet.nnp", "AlexNet/AlexNet.nnp"),
]
_MODEL_MODULES = ["alexnet", "densenet", "googlenet", "inception", "mobilenet", "nin", "resnet",
                  "resnext", "senet", "shufflenet", "squeezenet", "vgg", "xception"]


def _missing_files_expected(np):
    base = "https://nnabla.org/pretrained-models/nnp_models/imagenet/"
    res = dict((name, ["nnabla_data/nnp_models/imagenet/" + path, base + url])
               for name, _, path, url in _MODEL_FILES)
    res["NNABLA_MODELS_URL_BASE"] = ["nnabla_data/nnp_models/imagenet/AlexNet.nnp",
                                     "https://mirror.example/nnp/imagenet/AlexNet/AlexNet.nnp"]
    res["url bases"] = ["https://nnabla.org/pretrained-models/nnp_models/", None,
                        "https://mirror.example/nnp/"]
    res["category_names without the file"] = [
        "FileNotFoundError", "nnabla_data/nnp_models/imagenet/category_names.txt"]
    res["category_names from the file"] = ["tench", "goldfish"]
    return res


@nnabla_case(names=[_IMAGENET + "." + name for name, _, _, _ in _MODEL_FILES]
             + [_IMAGENET + "." + m for m in _MODEL_MODULES]
             + ["nnabla.models.utils.get_model_url_base",
                "nnabla.models.utils.get_model_url_base_from_env",
                _IMAGENET + ".base.ImageNetBase.category_names"],
             expected=_missing_files_expected,
             note="by hand, from NNabla 1.39's model classes: the file each reads from "
                  "~/nnabla_data/nnp_models/imagenet/ and the URL it downloads it from; Stadyn "
                  "downloads nothing, so without the file the error names both (NNabla here "
                  "would try the network)")
def imagenet_models__missing_file_names_path_and_url(nn, r):
    import re
    for m in _MODEL_MODULES:
        r.module(_IMAGENET + "." + m)
    IM = r.module(_IMAGENET)
    U = r.module("nnabla.models.utils")
    old_home, old_base = os.environ.get("HOME"), os.environ.pop("NNABLA_MODELS_URL_BASE", None)
    home = tempfile.mkdtemp()
    os.environ["HOME"] = home
    res = {}

    def named(make):
        try:
            make()
            return "made"
        except Exception as e:
            message = str(e)
            paths = re.findall(re.escape(home) + r"/(\S+?\.nnp)", message)
            urls = re.findall(r"(https://\S+?\.nnp)", message)
            return [paths[0] if paths else None, urls[0] if urls else None]

    try:
        for name, args, _, _ in _MODEL_FILES:
            res[name] = named(lambda: getattr(IM, name)(*args))
        bases = [U.get_model_url_base(), U.get_model_url_base_from_env()]
        os.environ["NNABLA_MODELS_URL_BASE"] = "https://mirror.example/nnp/"
        bases.append(U.get_model_url_base())
        res["url bases"] = bases
        res["NNABLA_MODELS_URL_BASE"] = named(lambda: IM.AlexNet())
        r.touch(_IMAGENET + ".base.ImageNetBase.category_names")
        base = r.module(_IMAGENET + ".base").ImageNetBase()
        try:
            base.category_names
        except Exception as e:
            res["category_names without the file"] = [
                type(e).__name__, re.findall(re.escape(home) + r"/(\S+?\.txt)", str(e))[0]]
        with open(os.path.join(home, "nnabla_data", "nnp_models", "imagenet",
                               "category_names.txt"), "w") as f:
            f.write("tench\ngoldfish\n")
        res["category_names from the file"] = base.category_names
    finally:
        os.environ["HOME"] = old_home
        os.environ.pop("NNABLA_MODELS_URL_BASE", None)
        if old_base is not None:
            os.environ["NNABLA_MODELS_URL_BASE"] = old_base
        shutil.rmtree(home)
    return res


_PROF = "nnabla.utils.profiler."
_STAT_FIELDS = ("parameter_scope", "inputs_shape", "args_info", "function_name", "mean_time",
                "n_run")


def _timing_masked(rows):
    """The CSV's rows with every time (a number in a time column or row) masked, and the
    functions' arguments (compared apart)."""
    out = []
    header_done = False
    for row in rows:
        if row and row[0] == "parameter_scope":
            header_done = True
            out.append(row)
        elif header_done and len(row) == 8:
            out.append(row[:3] + ["<args>", "<time>", "<time>"] + row[6:])
        elif row and row[0] in ("forward all", "backward all",
                                "training(forward + backward + update)"):
            out.append([row[0], "<time>"])
        elif row and row[0] == "nnabla version":
            out.append([row[0], "<version>"])
        else:
            out.append(row)
    return out


@nnabla_case(names=["nnabla.utils.profiler", _PROF + "GraphProfiler",
                    _PROF + "GraphProfilerCsvWriter", _PROF + "ProfileStat",
                    _PROF + "convert_time_scale"]
             + [_PROF + "GraphProfiler." + m for m in (
                 "run", "get_result", "print_result", "time_profiling_forward",
                 "time_profiling_backward", "time_profiling_whole_graph", "training_function")]
             + [_PROF + "GraphProfilerCsvWriter." + m for m in (
                 "write", "write_header", "check_same")]
             + [_PROF + "ProfileStat." + m for m in _STAT_FIELDS],
             note="NNabla's CSV layout for a small network with a solver, every time masked "
                  "(the times are each framework's own); n_run=3 within a 30 s limit")
def profiler__csv_layout(nn, F, PF, S, r):
    import csv
    import io
    P = r.module("nnabla.utils.profiler")
    r.touch(*[_PROF + "GraphProfiler." + m for m in (
        "run", "get_result", "print_result", "time_profiling_forward", "time_profiling_backward",
        "time_profiling_whole_graph", "training_function")])
    r.touch(*[_PROF + "GraphProfilerCsvWriter." + m for m in (
        "write", "write_header", "check_same")])
    r.touch(*[_PROF + "ProfileStat." + m for m in _STAT_FIELDS])
    x = nn.Variable.from_numpy_array(r.randn(2, 1, 4, 4))
    t = nn.Variable.from_numpy_array(r.randint(0, 3, (2, 1)))
    with nn.parameter_scope("conv1"):
        h = F.relu(PF.batch_normalization(PF.convolution(x, 2, (3, 3), pad=(1, 1))))
    with nn.parameter_scope("fc"):
        y = PF.affine(h, 3)
    loss = F.mean(F.softmax_cross_entropy(y, t))
    solver = S.Sgd(lr=0.1)
    solver.set_parameters(nn.get_parameters())
    B = P.GraphProfiler(loss, solver=solver, device_id=0, ext_name="cpu", n_run=3,
                        max_measure_execution_time=30)
    B.run()
    out = io.StringIO()
    writer = P.GraphProfilerCsvWriter(B, file=out)
    writer.write()
    rows = list(csv.reader(io.StringIO(out.getvalue())))
    result = B.get_result()
    stat = result["forward"][0]
    return {"csv": _timing_masked(rows),
            "args_info column": [row[3] for row in rows[7:13]],
            "result keys": sorted(result),
            "stat fields": list(P.ProfileStat._fields),
            "first stat": [stat.parameter_scope, [list(s) for s in stat.inputs_shape],
                           stat.function_name, stat.n_run, type(stat.mean_time).__name__],
            "same": writer.check_same(result["forward"][1]._asdict(),
                                      result["backward"][1]._asdict()),
            "time scales": [P.convert_time_scale(0.25, s) for s in ("m", "u", "n")],
            "print_result": callable(B.print_result)}


@nnabla_case(names=["nnabla.experimental.viewers", "nnabla.experimental.viewers.SimpleGraph"]
             + ["nnabla.experimental.viewers.SimpleGraph." + m for m in (
                 "create_graphviz_digraph", "save", "view")],
             note="what a program sees of the picture, not its drawing (Stadyn's is sd.show's): "
                  "a graphviz.Digraph in the asked format whose source names every function "
                  "(compared without case and underscores: Stadyn's boxes are its op names), "
                  "and the files save writes; NNabla's side needs the graphviz Python package "
                  "(make bench-peers installs graphviz 0.21 beside NNabla 1.39); view is not "
                  "called (it opens a viewer)",
             programs=["dot"])   # save renders the picture with Graphviz's dot
def viewers__simple_graph_digraph_and_save(nn, F, PF, r):
    V = r.module("nnabla.experimental.viewers")
    r.touch(*["nnabla.experimental.viewers.SimpleGraph." + m
              for m in ("create_graphviz_digraph", "save", "view")])
    image = nn.Variable.from_numpy_array(r.randn(2, 3, 8, 8))
    h = PF.convolution(image / 255.0, 4, kernel=(3, 3), pad=(1, 1), name="conv")
    h = F.relu(PF.batch_normalization(h, name="bn"))
    pred = PF.affine(h, 10, name="fc")
    other = F.sigmoid(pred)
    root = F.sink(pred, other)              # CenterNet's save_network_graph draws a sink
    names = []
    root.visit(lambda f: names.append(f.name))
    graph = V.SimpleGraph(format="svg", verbose=True)
    digraph = graph.create_graphviz_digraph(root)
    flat = digraph.source.lower().replace("_", "")
    d = tempfile.mkdtemp()
    try:
        graph.save(root, os.path.join(d, "net_graph"))
        png = V.SimpleGraph().create_graphviz_digraph(root, format="png")
        graph.save(pred, os.path.join(d, "pdf_graph"), cleanup=True, format="pdf")
        files = sorted(os.listdir(d))
        svg_head = open(os.path.join(d, "net_graph.svg")).read(200).lstrip()[:5]
    finally:
        shutil.rmtree(d)
    return {"functions": names, "type": type(digraph).__name__, "formats": [digraph.format,
                                                                           png.format],
            "every function in the source": [n for n in names
                                             if n.lower().replace("_", "") not in flat],
            "files": files, "svg": svg_head}
