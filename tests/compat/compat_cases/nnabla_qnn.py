"""Quantisation-aware training: ``nnabla.utils.qnn`` (the recorders, ``QATConfig``,
``FunctionsRankRecorder``, ``QATScheduler``) and ``nnabla.experimental.graph_converters``'
``QuantizeNonQNNToRecordingModifier`` and ``QuantizeRecordingToTrainingModifier``.

A small CNN (convolution, batch normalisation, ReLU, a second convolution, affine) is converted
to the recording graph, run over a few batches (the recorded ranges are compared), then
converted to the training graph (the quantised forward's outputs and the gradients of the
input and every parameter are compared), as NNabla's ``QATScheduler`` does.
"""

import os
import zipfile

import numpy as np

from compat_harness import nnabla_case

Q = "nnabla.utils.qnn."
GC_ = "nnabla.experimental.graph_converters."


def _net(nn, F, PF, r, batch=4):
    x = nn.Variable((batch, 2, 6, 6), need_grad=True)
    with nn.parameter_scope("net"):
        h = PF.convolution(x, 3, (3, 3), name="conv1")
        h = PF.batch_normalization(h, name="bn1")
        h = F.relu(h)
        h = PF.convolution(h, 4, (3, 3), pad=(1, 1), name="conv2")
        h = F.relu(h)
        y = PF.affine(h, 5, name="fc")
    r.set_params(nn.get_parameters())
    return x, y


def _ranges(nn):
    """The recorders' parameters (``m-``/``M-``) and the scales and zero points, by name."""
    return {k: v.d.copy() for k, v in sorted(nn.get_parameters(grad_only=False).items())
            if k.split("/")[-1].split("-")[0] in ("m", "M", "scale", "zeropoint")}


def _types(y):
    names = []
    y.visit(lambda f: names.append(f.info.type_name))
    return names


def _quantise(nn, F, r, QNN, GC, x, y, config, batches=3):
    res = {}
    ranks = QNN.FunctionsRankRecorder()
    y.visit(ranks)
    res["ranks"] = sorted(ranks.functions_ranks.values())
    rec = GC.GraphConverter([GC.QuantizeNonQNNToRecordingModifier(
        ranks.functions_ranks, config=config, training=True)]).convert(y)
    res["recording graph"] = _types(rec)
    for i in range(batches):
        x.d = r.randn(*x.shape) * (i + 1)
        rec.forward()
        res["recorded %d" % i] = _ranges(nn)
    res["recording output"] = rec.d.copy()
    removed = GC.GraphConverter([GC.RemoveFunctionModifier(
        rm_funcs=[config.recorder_activation().name(),
                  config.recorder_weight().name()])]).convert(rec)
    ranks = QNN.FunctionsRankRecorder()
    removed.visit(ranks)
    train = GC.GraphConverter([GC.QuantizeRecordingToTrainingModifier(
        ranks.functions_ranks, config=config)]).convert(removed)
    res["training graph"] = _types(train)
    res["scales"] = _ranges(nn)
    x.d = r.randn(*x.shape)
    train.forward()
    res["training output"] = train.d.copy()
    for p in nn.get_parameters().values():
        p.grad.zero()
    x.grad.zero()
    train.backward(r.weights_like(train.d))
    res["x grad"] = x.g.copy()
    res["param grads"] = {k: v.g.copy() for k, v in sorted(nn.get_parameters().items())}
    return res


@nnabla_case(names=[Q + "QATConfig", Q + "FunctionsRankRecorder",
                    GC_ + "QuantizeNonQNNToRecordingModifier",
                    GC_ + "QuantizeRecordingToTrainingModifier"],
             note="NNabla's default QATConfig: the first convolution and the last affine are "
                  "skipped (skip_inputs_layers, skip_outputs_layers)")
def qnn_default_config(nn, F, PF, r):
    QNN = r.module("nnabla.utils.qnn")
    GC = r.module("nnabla.experimental.graph_converters")
    x, y = _net(nn, F, PF, r)
    config = QNN.QATConfig()
    return _quantise(nn, F, r, QNN, GC, x, y, config)


def _config_view(QNN, config):
    """A config's settings, as comparable values."""
    keys = ["ext_name", "zero_point", "channel_last", "channel_wise", "niter_to_recording",
            "niter_to_training", "narrow_range", "round_mode", "bn_folding", "bn_self_folding",
            "record_layers", "skip_inputs_layers", "skip_outputs_layers", "learning_rate_scale",
            "skip_bias"]
    view = {k: getattr(config, k) for k in keys}
    view["dtype"] = np.dtype(config.dtype).name
    view["precision_mode"] = config.precision_mode.name
    view["pow2"] = [config.pow2.name, config.pow2.value]
    view["recorder_position"] = config.recorder_position.name
    view["recorder_weight"] = config.recorder_weight().name()
    view["recorder_activation"] = config.recorder_activation().name()
    return view


QC = Q + "QATConfig."
QT = Q + "QATTensorRTConfig."


@nnabla_case(names=[Q + "QATConfig", Q + "QATTensorRTConfig", Q + "qat_default_config",
                    Q + "PrecisionMode", Q + "QNNState", Q + "MaxMvaRecorderCallback",
                    Q + "MinMaxMinMaxRecorderCallback"]
             + [QC + k for k in ("ext_name", "zero_point", "dtype", "precision_mode",
                                 "channel_last", "channel_wise", "niter_to_recording",
                                 "niter_to_training", "RoundingMethod", "pow2", "narrow_range",
                                 "round_mode", "bn_folding", "bn_self_folding", "record_layers",
                                 "RecorderPosition", "recorder_position",
                                 "skip_inputs_layers", "skip_outputs_layers",
                                 "learning_rate_scale", "skip_bias")]
             + [QT + k for k in ("pow2", "bn_folding", "bn_self_folding", "record_layers",
                                 "record_position")]
             + [Q + "PrecisionMode." + k for k in ("QNN", "SIM_QNN", "MIXED_QNN")]
             + [Q + "QNNState." + k for k in ("NON_QNN", "RECORDING", "TRAINING",
                                               "DEPLOYMENT")])
def qnn_configs(nn, r):
    QNN = r.module("nnabla.utils.qnn")
    res = {"QATConfig": _config_view(QNN, QNN.QATConfig()),
           "QATTensorRTConfig": _config_view(QNN, QNN.QATTensorRTConfig()),
           "qat_default_config": _config_view(QNN, QNN.qat_default_config),
           "default is TensorRT": isinstance(QNN.qat_default_config, QNN.QATTensorRTConfig)}
    res["TensorRT record_position"] = QNN.QATTensorRTConfig.record_position.name
    res["recorders are the callbacks"] = [
        QNN.QATConfig.recorder_activation is QNN.MaxMvaRecorderCallback,
        QNN.QATConfig.recorder_weight is QNN.MinMaxMinMaxRecorderCallback]
    res["RoundingMethod"] = [[m.name, m.value] for m in QNN.QATConfig.RoundingMethod]
    res["RecorderPosition"] = [[m.name, m.value] for m in QNN.QATConfig.RecorderPosition]
    res["PrecisionMode"] = [[m.name, m.value] for m in QNN.PrecisionMode]
    res["QNNState"] = [[m.name, m.value] for m in QNN.QNNState]
    r.touch(*["%sPrecisionMode.%s" % (Q, k) for k in ("QNN", "SIM_QNN", "MIXED_QNN")])
    r.touch(*["%sQNNState.%s" % (Q, k) for k in ("NON_QNN", "RECORDING", "TRAINING",
                                                 "DEPLOYMENT")])
    r.touch(*[QC + k for k in ("ext_name", "zero_point", "dtype", "precision_mode",
                               "channel_last", "channel_wise", "niter_to_recording",
                               "niter_to_training", "RoundingMethod", "pow2", "narrow_range",
                               "round_mode", "bn_folding", "bn_self_folding", "record_layers",
                               "RecorderPosition", "recorder_position", "skip_inputs_layers",
                               "skip_outputs_layers", "learning_rate_scale", "skip_bias")])
    r.touch(*[QT + k for k in ("pow2", "bn_folding", "bn_self_folding", "record_layers",
                               "record_position")])
    return res


_RECORDERS = [("minmax_minmax_recorder", "MinMaxMinMaxRecorder", 2),
              ("minmax_mva_recorder", "MinMaxMvaRecorder", 2),
              ("abs_max_recorder", "AbsMaxRecorder", 1),
              ("max_max_recorder", "MaxMaxRecorder", 1),
              ("max_mva_recorder", "MaxMvaRecorder", 1)]


@nnabla_case(names=[Q + f for f, _, _ in _RECORDERS] + [Q + c for _, c, _ in _RECORDERS]
             + [Q + c + "Callback" for _, c, _ in _RECORDERS])
def qnn_recorders(nn, F, r):
    """Each recorder over three batches (training), then one more not training: its output,
    the input's gradient, the recorded range; each callback's name, parameters and scale
    with every rounding."""
    QNN = r.module("nnabla.utils.qnn")
    res = {}
    for fname, cname, n in _RECORDERS:
        x = nn.Variable((3, 4), need_grad=True)
        stats = [nn.Variable((1, 1), need_grad=False) for _ in range(n)]
        for s in stats:
            s.d = 0
        for training in (True, False):
            y = getattr(QNN, fname)(x, *stats, training=training)
            z = F.sum(y * 3.0)
            for i in range(3 if training else 1):
                x.d = r.randn(3, 4) * (i + 1) + 0.5
                z.forward()
                x.grad.zero()
                z.backward()
                res["%s %s %d" % (fname, training, i)] = [y.d.copy(), x.g.copy()] + \
                    [s.d.copy() for s in stats]
        res[fname + " type"] = y.parent.info.type_name
        cls = getattr(QNN, cname)
        ctx = nn.get_current_context()
        fn = cls(ctx, 0.5) if "Mva" in cname else cls(ctx)
        y = fn(x, *stats)
        y.forward()
        res[cname + " class"] = [fn.name, y.parent.info.type_name, y.d.copy()] + \
            [s.d.copy() for s in stats]
        cb = getattr(QNN, cname + "Callback")
        x.d = r.randn(3, 4) * 2
        with nn.parameter_scope("cb_" + cname):
            y = cb()(x, name="x0")
            y.forward()
            got = {}
            params = {k.split("/")[-1]: v.d.copy() for k, v in
                      nn.get_parameters(grad_only=False).items()
                      if k.startswith("cb_" + cname + "/")}
            res[cname + "Callback params"] = {k: params[k] for k in sorted(params)}
            for method in ("NOTROUND", "ROUND", "CEIL", "FLOOR"):
                for narrow in (False, True):
                    s, zp = cb.get_scale_zeropoint(x, narrow_range=narrow, round_method=method,
                                                   name="x0")
                    got["%s %s" % (method, narrow)] = [s.d.copy(), zp.d.copy()]
                    # (made once: dropped so that the next rounding makes its own)
                    nn.parameter.pop_parameter("scale-x0")
                    nn.parameter.pop_parameter("zeropoint-x0")
            res[cname + "Callback scales"] = got
            res[cname + "Callback none"] = list(cb.get_scale_zeropoint(x, name="x9"))
        res[cname + "Callback name"] = cb().name()
    return res


def _residual_net(nn, F, PF, r, batch=3):
    """Convolutions with a residual Add2 and a Concatenate, a subtraction, then affine."""
    x = nn.Variable((batch, 2, 5, 5), need_grad=True)
    with nn.parameter_scope("res"):
        a = F.relu(PF.convolution(x, 3, (3, 3), pad=(1, 1), name="c1"))
        b = PF.convolution(a, 3, (3, 3), pad=(1, 1), name="c2", with_bias=False)
        h = F.add2(a, b)
        h = F.concatenate(h, F.relu(b), axis=1)
        h = F.sub2(h, F.sigmoid(h))
        y = PF.affine(h, 4, name="fc")
    r.set_params(nn.get_parameters())
    return x, y


@nnabla_case(names=[Q + "QATConfig", Q + "MinMaxMvaRecorderCallback", Q + "AbsMaxRecorderCallback",
                    Q + "FunctionsRankRecorder",
                    GC_ + "QuantizeNonQNNToRecordingModifier",
                    GC_ + "QuantizeNonQNNToRecordingModifier.modify",
                    GC_ + "QuantizeNonQNNToRecordingModifier.check",
                    GC_ + "QuantizeNonQNNToRecordingModifier.add_recorder",
                    GC_ + "QuantizeNonQNNToRecordingModifier.share_recorder",
                    GC_ + "QuantizeRecordingToTrainingModifier",
                    GC_ + "QuantizeRecordingToTrainingModifier.modify"],
             note="every layer recorded, before and after (RecorderPosition.BOTH), moving-"
                  "average min/max activations and abs-max weights, narrow range, scales not "
                  "rounded, biases not quantised; a residual Add2 and a Concatenate share "
                  "their ranges")
def qnn_every_layer(nn, F, PF, r):
    QNN = r.module("nnabla.utils.qnn")
    GC = r.module("nnabla.experimental.graph_converters")
    x, y = _residual_net(nn, F, PF, r)
    config = QNN.QATConfig()
    config.skip_inputs_layers = []
    config.skip_outputs_layers = []
    config.recorder_position = QNN.QATConfig.RecorderPosition.BOTH
    config.recorder_activation = QNN.MinMaxMvaRecorderCallback
    config.recorder_weight = QNN.AbsMaxRecorderCallback
    config.narrow_range = True
    config.pow2 = QNN.QATConfig.RoundingMethod.NOTROUND
    config.skip_bias = True
    r.touch(GC_ + "QuantizeNonQNNToRecordingModifier.modify",
            GC_ + "QuantizeNonQNNToRecordingModifier.check",
            GC_ + "QuantizeNonQNNToRecordingModifier.add_recorder",
            GC_ + "QuantizeNonQNNToRecordingModifier.share_recorder",
            GC_ + "QuantizeRecordingToTrainingModifier.modify")
    return _quantise(nn, F, r, QNN, GC, x, y, config)


@nnabla_case(names=[Q + "QATConfig", Q + "QATTensorRTConfig", Q + "QATScheduler",
                    Q + "QATScheduler.step", Q + "QATScheduler.save", Q + "QNNState",
                    "nnabla.utils.nnp_graph.NnpLoader"],
             note="NNabla's QATScheduler over six SGD steps: float (step 0), recording "
                  "(steps 1, 2: forward and backward, no update), then quantised training with "
                  "batch normalisation folded (QATTensorRTConfig); the losses, parameters, "
                  "learning rate and state after each step; the evaluation graph too, saved to "
                  "an .nnp and run again; the printed graphs' addresses are not compared")
def qnn_scheduler(nn, F, PF, S, r):
    QNN = r.module("nnabla.utils.qnn")
    x, y = _net(nn, F, PF, r, batch=3)
    with nn.parameter_scope("net"):
        vx = nn.Variable((2, 2, 6, 6))
        h = PF.convolution(vx, 3, (3, 3), name="conv1")
        h = F.relu(PF.batch_normalization(h, name="bn1", batch_stat=False))
        h = F.relu(PF.convolution(h, 4, (3, 3), pad=(1, 1), name="conv2"))
        vy = PF.affine(h, 5, name="fc")
    t = nn.Variable((3, 1))
    loss = F.mean(F.softmax_cross_entropy(y, t))
    solver = S.Sgd(0.5)
    solver.set_parameters(nn.get_parameters())
    config = QNN.QATTensorRTConfig()
    config.ext_name = "cpu"         # (NNabla clears CUDA's memory cache on "cuda", "cudnn")
    config.niter_to_recording = 1
    config.niter_to_training = 3
    res = {"errors": []}
    for a, b in ((0, 0), (-1, 3), (2, 2), (3, 1)):
        bad = QNN.QATConfig()
        bad.niter_to_recording, bad.niter_to_training = a, b
        try:
            QNN.QATScheduler(config=bad, solver=solver)
            res["errors"].append("none")
        except ValueError as e:
            res["errors"].append(type(e).__name__)
    qat = QNN.QATScheduler(config=config, solver=solver)
    qat(loss)
    qat(vy, training=False)
    for step in range(6):
        qat.step()
        x.d = r.randn(*x.shape)
        t.d = np.array([[1], [3], [4]])
        loss.forward()
        solver.zero_grad()
        loss.backward()
        if qat.state.name == "RECORDING":
            res["recording backward %d" % step] = {
                k: v.g.copy() for k, v in sorted(nn.get_parameters().items())}
            res["recording need_grad %d" % step] = loss.need_grad
            continue        # the recording steps only record
        solver.update()
        res["step %d" % step] = {"loss": float(loss.d), "state": qat.state.name,
                                 "lr": solver.learning_rate()}
        res["params %d" % step] = {k: v.d.copy() for k, v in
                                   sorted(nn.get_parameters(grad_only=False).items())}
        res["graph %d" % step] = _types(loss)
        res["solver's parameters %d" % step] = sorted(solver.get_parameters())
    vx.d = r.randn(*vx.shape)
    vy.forward()
    res["evaluation"] = vy.d.copy()
    res["evaluation graph"] = _types(vy)
    res["training graph"] = _types(loss)
    res["state is QNNState.TRAINING"] = qat.state is QNN.QNNState.TRAINING
    with r.tempdir() as folder:
        path = os.path.join(folder, "qnn.nnp")
        qat.save(path, vx, batch_size=2)
        with zipfile.ZipFile(path) as z:
            res["saved files"] = sorted(z.namelist())
        NG = r.module("nnabla.utils.nnp_graph")
        net = NG.NnpLoader(path).get_network("net", batch_size=2)
        res["saved network inputs"] = sorted(net.inputs)
        res["saved network outputs"] = sorted(net.outputs)
        loaded = net.inputs["x0"]
        loaded.d = vx.d
        out = net.outputs["y0"]
        out.forward()
        res["saved network output"] = out.d.copy()
    r.touch(Q + "QATScheduler.step", Q + "QATScheduler.save")
    return res
