"""NNabla 1.39's ``nnabla.experimental.graph_converters``: each converter run on a small
conv + batch-norm + affine net and on a ResNet-like block with a residual ``Add2``; what is
compared is the converted graph's function types in forward order, its output's values, and
the parameters the conversion created.
"""

import numpy as np

from compat_harness import nnabla_case
from compat_outcomes import outcome

_GC = "nnabla.experimental.graph_converters."


def _case(names, **kw):
    """A case over ``names`` (under ``_GC``), each of them touched by running it: the
    conversion calls the modifiers' methods, which no attribute read records."""
    full = [_GC + n for n in names]

    def register(fn):
        def run(nn, F, PF, r):
            r.touch(*full)
            return fn(nn, F, PF, r)
        run.__name__ = fn.__name__
        return nnabla_case(names=full, **kw)(run)
    return register


def _set_params(nn, r):
    """Seeded values for every parameter; variances made positive."""
    for name, p in sorted(nn.get_parameters(grad_only=False).items()):
        value = r.param_value(name, p.shape)
        if name.endswith("/var"):
            value = np.abs(value) + 0.5
        p.d = value


def _small_net(nn, F, PF, r, batch_stat=False, with_bias=False, affine_bn=True, tail=True):
    """x * 0.5 -> conv (no bias) -> BN -> ReLU -> max pooling -> affine [-> BN] -> affine."""
    x = nn.Variable.from_numpy_array(r.randn(2, 3, 6, 6))
    h = PF.convolution(x * 0.5, 4, (3, 3), pad=(1, 1), with_bias=with_bias, name="conv1")
    h = PF.batch_normalization(h, batch_stat=batch_stat, name="bn1")
    h = F.relu(h)
    h = F.max_pooling(h, (2, 2))
    h = PF.affine(h, 5, name="fc1")
    if not tail:
        _set_params(nn, r)
        return x, h
    if affine_bn:
        h = PF.batch_normalization(h, batch_stat=batch_stat, name="bn2")
    y = PF.affine(h, 3, name="fc2")
    _set_params(nn, r)
    return x, y


def _res_net(nn, F, PF, r, batch_stat=False):
    """x * 0.5, a stem conv -> BN -> ReLU, then a residual block conv -> BN -> ReLU -> conv -> BN,
    ``Add2`` with the stem's output, ReLU; average pooling and an affine."""
    x = nn.Variable.from_numpy_array(r.randn(2, 3, 6, 6))
    with nn.parameter_scope("stem"):
        h0 = PF.convolution(x * 0.5, 4, (3, 3), pad=(1, 1), with_bias=False, name="conv")
        h0 = F.relu(PF.batch_normalization(h0, batch_stat=batch_stat, name="bn"))
    with nn.parameter_scope("block"):
        h = PF.convolution(h0, 4, (3, 3), pad=(1, 1), with_bias=False, name="conv1")
        h = F.relu(PF.batch_normalization(h, batch_stat=batch_stat, name="bn1"))
        h = PF.convolution(h, 4, (3, 3), pad=(1, 1), with_bias=False, name="conv2")
        h = PF.batch_normalization(h, batch_stat=batch_stat, name="bn2")
        h = F.relu(F.add2(h, h0))
    h = F.average_pooling(h, (2, 2))
    y = PF.affine(h, 3, name="fc")
    _set_params(nn, r)
    return x, y


def _types(y):
    names = []
    y.visit(lambda f: names.append(f.info.type_name))
    return names


def _converted(nn, GC, y, modifiers, before=None):
    """The converted graph's types and value, and the parameters the conversion added."""
    params = set(nn.get_parameters(grad_only=False))
    y.forward()
    out = {"original": y.d.copy()}
    z = GC.GraphConverter(modifiers).convert(y)
    z.forward()
    out["types"] = _types(z)
    out["value"] = z.d.copy()
    out["new parameters"] = sorted(
        [k, list(v.shape)] for k, v in nn.get_parameters(grad_only=False).items()
        if k not in params)
    return out


def _both(nn, F, PF, r, make_modifiers, batch_stat=False, small_kw=None, nets=("small", "resnet")):
    GC = r.module("nnabla.experimental.graph_converters")
    res = {}
    for tag, build in (("small", _small_net), ("resnet", _res_net)):
        if tag not in nets:
            continue
        nn.clear_parameters()
        kw = dict(small_kw or {}) if tag == "small" else {}
        x, y = build(nn, F, PF, r, batch_stat=batch_stat, **kw)
        for k, v in _converted(nn, GC, y, make_modifiers(GC, x)).items():
            res[tag + " " + k] = v
    return res


@_case(["GraphConverter", "IdentityModifier", "IdentityModifier.modify", "GraphConverter.convert",
       "FunctionModifier.modify", "FunctionModifier.finish_up",
       "FunctionModifier"],
       note="IdentityModifier without and with an input replaced; a user's "
            "FunctionModifier turning ReLU into LeakyReLU")
def graph_converters__identity(nn, F, PF, r):
    res = _both(nn, F, PF, r, lambda GC, x: [GC.IdentityModifier()])
    GC = r.module("nnabla.experimental.graph_converters")
    nn.clear_parameters()
    x, y = _small_net(nn, F, PF, r)
    x2 = nn.Variable.from_numpy_array(r.randn(2, 3, 6, 6))
    z = GC.GraphConverter([GC.IdentityModifier({x: x2})]).convert(y)
    z.forward()
    res["replaced types"] = _types(z)
    res["replaced value"] = z.d.copy()

    nn.clear_parameters()           # two outputs sharing a trunk: a list in, a list out
    x, y = _small_net(nn, F, PF, r)
    y2 = F.sigmoid(y.parent.inputs[0])
    zs = GC.GraphConverter([GC.RemoveFunctionModifier(["ReLU"])]).convert([y, y2])
    for i, z in enumerate(zs):
        z.forward()
        res["two outputs %d types" % i] = _types(z)
        res["two outputs %d value" % i] = z.d.copy()

    class ReLUToLeakyReLU(GC.FunctionModifier):
        def modify(self, f, inputs):
            if f.info.type_name == "ReLU":
                return F.leaky_relu(inputs[0], 0.2)

    more = _both(nn, F, PF, r, lambda GC, x: [ReLUToLeakyReLU()])
    for k, v in more.items():
        res["leaky " + k] = v
    return res


@_case(["GraphConverter", "NoGradModifier", "NoGradModifier.modify"],
       note="the converted graph's parameters need no gradient")
def graph_converters__no_grad(nn, F, PF, r):
    GC = r.module("nnabla.experimental.graph_converters")
    res = _both(nn, F, PF, r, lambda GC, x: [GC.NoGradModifier()])
    nn.clear_parameters()
    x, y = _small_net(nn, F, PF, r)
    z = GC.GraphConverter([GC.NoGradModifier()]).convert(y)
    flags = []
    z.visit(lambda f: flags.append([v.need_grad for v in f.inputs]))
    res["need_grad"] = flags
    return res


@_case(["GraphConverter", "TestModeModifier",
       "BatchNormBatchStatModifier",
       "BatchNormBatchStatModifier.modify"],
       note="graphs built with batch_stat=True; converted, batch_stat=False")
def graph_converters__test_mode(nn, F, PF, r):
    res = _both(nn, F, PF, r, lambda GC, x: GC.TestModeModifier(), batch_stat=True)
    more = _both(nn, F, PF, r, lambda GC, x: [GC.BatchNormBatchStatModifier()],
                 batch_stat=True)
    for k, v in more.items():
        res["batchstat " + k] = v
    more = _both(nn, F, PF, r, lambda GC, x: GC.TestModeModifier(rm_funcs=["ReLU"]),
                 batch_stat=True)
    for k, v in more.items():
        res["no relu " + k] = v
    return res


@_case(["GraphConverter", "RemoveFunctionModifier", "RemoveFunctionModifier.modify"],
       note="ReLU and BatchNormalization removed")
def graph_converters__remove_function(nn, F, PF, r):
    res = _both(nn, F, PF, r, lambda GC, x: [GC.RemoveFunctionModifier(rm_funcs=["ReLU"])])
    more = _both(nn, F, PF, r, lambda GC, x: [
        GC.RemoveFunctionModifier(rm_funcs=["BatchNormalization"])])
    for k, v in more.items():
        res["bn " + k] = v
    return res


@_case(["GraphConverter", "BatchNormalizationFoldingModifier",
       "AddBiasModifier", "BatchNormalizationFoldingModifierInner",
       "AddBiasModifier.modify", "BatchNormalizationFoldingModifierInner.modify",
       "BatchNormalizationFoldingModifierInner.reshape_bn_parameters",
       "FunctionModifier.get_parameter_scope",
       "BatchNormalizationFoldingOppositeModifierInner",
       "BatchNormalizationFoldingOppositeModifierInner.modify",
       "BatchNormalizationFoldingOppositeModifierInner.reshape_bn_parameters"],
       rtol=1e-4, atol=1e-5,
       note="BN folded into the next convolution (bias added first), and the "
            "opposite way (into the convolution after it); NNabla 1.39 "
            "refuses to fold a BN after an affine (its parameters reshaped to (5, 1) do "
            "not broadcast with the (36, 5) weight): the ValueError is compared; parameters "
            "that need no gradient are no parameters to get_parameter_scope, so NNabla "
            "names every folded weight w-folded in no scope: the second shape clashes")
def graph_converters__bn_folding(nn, F, PF, r):
    GC = r.module("nnabla.experimental.graph_converters")
    res = _both(nn, F, PF, r, lambda GC, x: GC.BatchNormalizationFoldingModifier(),
                small_kw={"affine_bn": False})
    more = _both(nn, F, PF, r, lambda GC, x: GC.BatchNormalizationFoldingModifier(),
                 small_kw={"with_bias": True, "affine_bn": False}, nets=("small",))
    for k, v in more.items():
        res["with bias " + k] = v
    more = _both(nn, F, PF, r, lambda GC, x: [
        GC.AddBiasModifier(), GC.BatchNormalizationFoldingModifierInner()],
        small_kw={"affine_bn": False}, nets=("small",))
    for k, v in more.items():
        res["inner " + k] = v
    for tag, with_bias in (("opposite", True), ("opposite no bias", False)):
        nn.clear_parameters()
        x = nn.Variable.from_numpy_array(r.randn(2, 3, 6, 6))
        h = PF.batch_normalization(x * 0.5, batch_stat=False, name="bn0")
        h = F.relu(PF.convolution(h, 4, (3, 3), with_bias=with_bias, name="conv0"))
        y = PF.affine(h, 3, name="fc0")
        _set_params(nn, r)
        for k, v in _converted(nn, GC, y, GC.BatchNormalizationFoldingModifier(
                opposite=True)).items():
            res[tag + " " + k] = v
        res[tag + " conv0/W after"] = nn.get_parameters()["conv0/conv/W"].d.copy()
    nn.clear_parameters()           # the first function a convolution: its inputs copied
    x = nn.Variable.from_numpy_array(r.randn(2, 3, 5, 5))
    y = PF.batch_normalization(PF.convolution(x, 4, (3, 3), with_bias=False, name="c0"),
                               batch_stat=False, name="b0")
    _set_params(nn, r)
    for k, v in _converted(nn, GC, y, GC.BatchNormalizationFoldingModifier()).items():
        res["first conv " + k] = v
    nn.clear_parameters()
    x, y = _res_net(nn, F, PF, r)
    for p in nn.get_parameters(grad_only=False).values():
        p.need_grad = False         # (not in nn.get_parameters(): no scope for w-folded)
    res["parameters without gradients"] = outcome(lambda: GC.GraphConverter(
        GC.BatchNormalizationFoldingModifier()).convert(y), lambda z: "converted")
    res["parameters without gradients, made"] = sorted(nn.get_parameters(grad_only=False))
    nn.clear_parameters()
    x, y = _small_net(nn, F, PF, r)
    res["affine bn"] = outcome(lambda: GC.GraphConverter(
        GC.BatchNormalizationFoldingModifier()).convert(y), lambda z: "converted")
    return res


@_case(["GraphConverter", "BatchNormalizationSelfFoldingModifier",
       "BatchNormalizationSelfFoldingModifier.modify"],
       rtol=1e-4, atol=1e-5,
       note="each BN becomes c0 * x + c1")
def graph_converters__bn_self_folding(nn, F, PF, r):
    return _both(nn, F, PF, r, lambda GC, x: [GC.BatchNormalizationSelfFoldingModifier()])


@_case(["GraphConverter", "FusedBatchNormalizationModifier",
       "UnfusedBatchNormalizationModifier",
       "FusedBatchNormalizationModifier.modify", "UnfusedBatchNormalizationModifier.modify"],
       rtol=1e-4, atol=1e-5,
       note="BN -> Add2 -> ReLU fused (new parameters, NNabla's defaults), then unfused")
def graph_converters__fused_bn(nn, F, PF, r):
    GC = r.module("nnabla.experimental.graph_converters")
    res = _both(nn, F, PF, r, lambda GC, x: [GC.FusedBatchNormalizationModifier()])
    nn.clear_parameters()
    x, y = _res_net(nn, F, PF, r)
    z = GC.GraphConverter([GC.FusedBatchNormalizationModifier()]).convert(y)
    params = set(nn.get_parameters(grad_only=False))
    u = GC.GraphConverter([GC.UnfusedBatchNormalizationModifier()]).convert(z)
    u.forward()
    res["unfused types"] = _types(u)
    res["unfused value"] = u.d.copy()
    res["unfused new parameters"] = sorted(
        [k, list(v.shape)] for k, v in nn.get_parameters(grad_only=False).items()
        if k not in params)
    return res


def _cpu_value(r, z, y):
    """The channel-last graph's value.  NNabla 1.39's CPU build refuses channel-last
    convolution and pooling (its own tests of the converter run under cuDNN and compare with
    the channel-first graph's value), so the real side records the original graph's value."""
    if r.real:
        return y.d.copy()
    z.forward()
    return z.d.copy()


@_case(["GraphConverter", "ChannelLastModifier",
       "ChannelFirstModifier",
       "ChannelLastModifier.inputs_cl", "ChannelFirstModifier.inputs_cf",
       "FunctionModifier.init_map_func_inputs"],
       rtol=1e-4, atol=1e-5,
       note="NCHW graph made NHWC (inputs transposed by the modifier), and back; the "
            "NHWC value is compared with the NCHW graph's (NNabla's CPU build cannot run "
            "channel-last convolutions: _cpu_value); the small net ends at its first affine "
            "(NNabla 1.39 converts only affines of 4-d inputs and BNs of 4-d parameters)")
def graph_converters__channel_last(nn, F, PF, r):
    GC = r.module("nnabla.experimental.graph_converters")
    res = {}
    for tag, build in (("small", _small_net), ("resnet", _res_net)):
        nn.clear_parameters()
        x, y = build(nn, F, PF, r, **({"tail": False} if tag == "small" else {}))
        y.forward()
        res[tag + " original"] = y.d.copy()
        modifier = GC.ChannelLastModifier([x])
        z = GC.GraphConverter([modifier]).convert(y)
        res[tag + " types"] = _types(z)
        res[tag + " shape"] = list(z.shape)
        res[tag + " value"] = _cpu_value(r, z, y)
        res[tag + " input shape"] = list(modifier.inputs_cl[0].shape)
        res[tag + " input"] = modifier.inputs_cl[0].d.copy()
        x_cl = nn.Variable.from_numpy_array(x.d.transpose(0, 2, 3, 1).copy())
        z = GC.GraphConverter([GC.ChannelLastModifier([x], [x_cl])]).convert(y)
        res[tag + " back, W_cl taken"] = outcome(lambda: GC.GraphConverter(
            [GC.ChannelFirstModifier([x_cl])]).convert(z), lambda _: "converted")
        nn.clear_parameters()       # (ChannelFirstModifier names its weights W_cl too)
        back = GC.ChannelFirstModifier([x_cl])
        if tag == "resnet":         # (two convolutions' weights, both W_cl in no scope)
            res[tag + " back"] = outcome(lambda: GC.GraphConverter([back]).convert(z),
                                         lambda _: "converted")
            continue
        w = GC.GraphConverter([back]).convert(z)
        w.forward()
        res[tag + " back types"] = _types(w)
        res[tag + " back input"] = back.inputs_cf[0].d.copy()
        res[tag + " back value"] = w.d.copy()
    return res


@_case(["GraphConverter", "PruningModifier", "PruningModifier.modify",
       "PruningModifier.calculate_axis"],
       rtol=1e-4, atol=1e-5,
       note="channels whose squared L2 norm is at most the threshold zeroed")
def graph_converters__pruning(nn, F, PF, r):
    return _both(nn, F, PF, r, lambda GC, x: [GC.PruningModifier(0.5)],
                 small_kw={"with_bias": True})


@_case(["FunctionModifier.modify"],
       note="a modifier reads v.function_references: at the ReLU, h is read by the Sigmoid "
            "and the ReLU (the newest first), the ReLU's output by the Add2, the Add2's by the "
            "converter's Sink")
def graph_converters__function_references(nn, F, PF, r):
    GC = r.module("nnabla.experimental.graph_converters")
    seen = {}

    class Recorder(GC.FunctionModifier):
        def modify(self, f, inputs):
            if f.info.type_name in ("ReLU", "Add2"):
                seen[f.info.type_name.lower()] = [
                    g.info.type_name for g in f.outputs[0].function_references]
                if f.info.type_name == "ReLU":
                    seen["h"] = [g.info.type_name for g in f.inputs[0].function_references]

    x = nn.Variable.from_numpy_array(r.randn(2, 3))
    h = x * 1.0
    y = F.add2(F.relu(h), F.sigmoid(h))
    GC.GraphConverter([Recorder()]).convert(y)
    return seen


@nnabla_case(names=["nnabla.Variable.function_references"],
             known={"pf_registered_W": "PF.affine hands each call its own view of a "
                    "parameter in NNabla 1.39 (get_parameter_or_create's unlinked Variable: "
                    "h.parent.inputs[1] is not nn.get_parameters()['fc/affine/W'], is named "
                    "'W' where the registered one reads '', lists the Affine where the "
                    "registered one lists nothing, and a second call gets another view); "
                    "Stadyn's PF functions (stadyn.parametric, shared with Stadyn's own and "
                    "CNTK's layers) put the registered Variable itself in the graph, which "
                    "the graph's parameter roles and model files read by its registry name, "
                    "so its function_references lists the Affine (the values, gradients and "
                    "need_grad flags agree: _registered_flags.py)"},
             note="NNabla lists its functions by address in a hash map: two readers come "
                  "newest first, more in an order that changes from run to run (compared "
                  "sorted here)")
def variable__function_references(nn, F, PF, r):
    r.touch("nnabla.Variable.function_references")

    def names(v):
        return [f.info.type_name for f in v.function_references]

    res = {}
    x = nn.Variable.from_numpy_array(r.randn(2, 3))
    res["leaf_unread"] = names(x)
    a = F.relu(x)
    b = F.sigmoid(x)
    res["two_readers"] = names(x)
    res["output_unread"] = names(a)
    c = a * 2.0
    res["output_read"] = names(a)
    del b
    res["reader_dropped"] = names(x)
    x2 = nn.Variable.from_numpy_array(r.randn(2, 3))
    m = F.mul2(x2, x2)
    res["same_input_twice"] = names(x2)
    more = [F.tanh(x), F.exp(x), F.add2(x, x2), F.abs(x)]
    res["many_readers_sorted"] = sorted(names(x))
    res["many_readers_count"] = len(x.function_references)
    res["unlinked_view"] = names(x.get_unlinked_variable())
    p = nn.parameter.get_parameter_or_create("q", (2, 3))
    s = F.add2(x2, p)
    res["parameter_handed_out"] = names(p)
    res["parameter_registered"] = names(nn.get_parameters()["q"])
    h = PF.affine(x2, 4, name="fc")
    registered_W = nn.get_parameters()["fc/affine/W"]
    res["pf_input_W"] = names(h.parent.inputs[1])
    res["pf_registered_W"] = names(registered_W)
    res["same_function"] = a.function_references[0] == c.parent
    res["kept"] = [len(v) for v in (m.shape, s.shape, more)]
    try:
        x.function_references = []
        res["set"] = "accepted"
    except AttributeError:
        res["set"] = "AttributeError"
    return res


@nnabla_case(names=["nnabla.parameter.get_parameter_or_create"],
             note="the error of a parameter asked for again with another shape, word for word "
                  "(the graph converters tutorial prints it: BatchNormalizationFoldingModifier "
                  "on a loaded ResNet whose parameters need no gradient)")
def get_parameter_or_create__size_clash_message(nn, r):
    P = r.module("nnabla.parameter")
    res = {}
    with nn.parameter_scope("net"):
        P.get_parameter_or_create("w-folded", (4, 3, 3, 3))
        try:
            P.get_parameter_or_create("w-folded", (4, 4, 3, 3))
        except ValueError as e:
            res["message"] = [type(e).__name__, str(e)]
    return res


@nnabla_case(names=["nnabla.utils.inspection.pprint"],
             note="pprint names a function by the scope of its parameter input also where "
                  "that input is the Variable get_parameter_or_create handed out (the graph "
                  "converters tutorial prints folded graphs: 'conv1/conv/Convolution')")
def pprint__scope_of_a_handed_out_parameter(nn, F, r):
    import contextlib
    import io
    I = r.module("nnabla.utils.inspection")
    P = r.module("nnabla.parameter")
    x = nn.Variable.from_numpy_array(r.randn(2, 3))
    with nn.parameter_scope("fc"):
        w = P.get_parameter_or_create("W", (3, 4), r.randn(3, 4))
        fixed = P.get_parameter_or_create("V", (4, 3), r.randn(4, 3), need_grad=False)
    y = F.relu(F.affine(F.affine(x, w), fixed))     # (V needs no gradient: no scope shown)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        I.pprint(y)
    return {"names": [line for line in out.getvalue().splitlines()
                      if not line.startswith("\t")]}


@_case(["GraphConverter", "IdentityModifier"],
       note="functions whose info.args are named otherwise than F's keywords (the reductions' "
            "axes and keep_dims) rebuilt as they were")
def graph_converters__reductions_rebuilt(nn, F, PF, r):
    GC = r.module("nnabla.experimental.graph_converters")
    x = nn.Variable.from_numpy_array(r.randn(2, 3, 4))
    h = x * 1.0
    outs = [F.sum(h, axis=1, keepdims=True), F.mean(h, axis=(1, 2)), F.max(h, axis=2),
            F.min(h, axis=0, keepdims=True), F.prod(h, axis=1), F.sum(h)]
    res = {}
    for i, z in enumerate(GC.GraphConverter([GC.IdentityModifier()]).convert(outs)):
        z.forward()
        res["%d %s" % (i, z.parent.info.type_name)] = z.d.copy()
    return res
