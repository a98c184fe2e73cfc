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
