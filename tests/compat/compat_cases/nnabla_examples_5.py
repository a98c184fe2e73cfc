"""What nnabla-examples' fifth batch of programs needs (``tests/examples/nnabla_examples_5.py``):
``image-classification/cifar10-100/classification.py`` takes its ``-c cpu`` context from
NNabla's CPU extension package, ``import nnabla_ext.cpu; nnabla_ext.cpu.context()``."""

import numpy as np

from compat_harness import nnabla_case


def _error(fn):
    """The name of the exception ``fn()`` raises and its message, or None."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the kind is the result
        return [type(e).__name__, str(e)]
    return None


@nnabla_case(names=["nnabla.Context"])
def examples_nnabla_ext_cpu(nn, r):
    """``nnabla_ext.cpu``: its ``context()`` (float, half; another type config refused), the
    device helpers, and a default context set from it that a network then runs in."""
    cpu = r.module("nnabla_ext.cpu")
    res = {}
    for config in ("float", "half"):
        ctx = cpu.context(config)
        res[config] = [list(ctx.backend), ctx.array_class, ctx.device_id, repr(ctx)]
    res["mixed_half"] = _error(lambda: cpu.context("mixed_half"))
    res["devices"] = [cpu.get_devices(), cpu.get_device_count(), cpu.array_classes()]
    res["synchronize"] = [cpu.synchronize(device_id="0"), cpu.device_synchronize(""),
                          cpu.clear_memory_cache()]
    F = r.module("nnabla.functions")
    with nn.context_scope(cpu.context()):
        x = nn.Variable.from_numpy_array(r.randn(2, 3).astype("float32"))
        y = F.relu(x)
        y.forward()
    res["relu"] = y.d.copy()
    res["is a Context"] = isinstance(cpu.context(), nn.Context)
    return res


@nnabla_case(names=["nnabla.parametric_functions.convolution",
                    "nnabla.parametric_functions.affine",
                    "nnabla.parametric_functions.batch_normalization",
                    "nnabla.functions.concatenate", "nnabla.functions.leaky_relu",
                    "nnabla.functions.interpolate", "nnabla.NdArray.from_numpy_array"])
def examples_pf_on_ndarrays(nn, F, PF, r):
    """Parametric functions given an ``nn.NdArray`` (ESRGAN validates with its RRDB network on
    NdArrays: ``rrdb_net(val_lq, 64, 23)``): they compute at once and give NdArrays, making the
    parameters as registered Variables the first time and reusing them after; a graph of
    Variables built afterwards on the same parameters trains them."""
    r.touch("nnabla.NdArray.from_numpy_array")
    res = {}
    x = nn.NdArray.from_numpy_array(r.randn(2, 3, 4, 4).astype(np.float32))
    h = PF.convolution(x, 4, (3, 3), pad=(1, 1), name="c1")
    res["conv params"] = r.set_params(nn.get_parameters())
    h = PF.convolution(x, 4, (3, 3), pad=(1, 1), name="c1")     # the same parameters
    h2 = PF.convolution(F.concatenate(x, h, axis=1), 2, (3, 3), pad=(1, 1), name="c2")
    y = F.interpolate(F.leaky_relu(h2, alpha=0.2) * 0.2 + h2, scale=(2, 2), mode="nearest")
    b = PF.batch_normalization(y, batch_stat=False, name="bn")
    a = PF.affine(b, 3, name="fc")
    for key, value in (("conv", h), ("conv2", h2), ("interpolated", y), ("bn", b),
                       ("affine", a)):
        res[key + " type"] = type(value).__name__
        res[key] = value.data.copy()
    res["params"] = sorted([k, list(v.shape), type(v).__name__, bool(v.need_grad)]
                           for k, v in nn.get_parameters(grad_only=False).items())
    # a graph of Variables on the same parameters, trained one step
    params = nn.get_parameters()
    r.set_params(params)
    v = nn.Variable.from_numpy_array(x.data)
    loss = F.sum(PF.affine(PF.convolution(v, 4, (3, 3), pad=(1, 1), name="c1"), 3,
                           name="fc2") ** 2)
    loss.forward()
    for p in nn.get_parameters().values():
        p.grad.zero()
    loss.backward()
    res["loss"] = loss.d.copy()
    res["W grad"] = nn.get_parameters()["c1/conv/W"].g.copy()
    return res


@nnabla_case(names=["nnabla.parameter.get_parameter_or_create",
                    "nnabla.initializer.NormalInitializer", "nnabla.functions.convolution"])
def examples_parameter_float_shape(nn, F, PF, r):
    """A parameter asked for with float dimensions (PGGAN's equalized-learning-rate
    convolution: ``get_parameter_or_create("W", (outmaps, inp.shape[1] / group) + kernel,
    NormalInitializer(1.))``): NNabla truncates a new parameter's shape to ints; asked for again
    with ``3.0`` it is found, with ``2.5`` where it has 2 it is refused (a ValueError)."""
    I = r.module("nnabla.initializer")
    P = r.module("nnabla.parameter")
    res = {}
    x = nn.Variable.from_numpy_array(r.randn(2, 4, 5, 5).astype(np.float32))
    with nn.parameter_scope("pggan_conv"):
        w = P.get_parameter_or_create("W", (4, x.shape[1] / 2) + (3, 3),
                                      I.NormalInitializer(1.), True)
        b = P.get_parameter_or_create("b", (4.0,), None, True)
        zero = P.get_parameter_or_create("z", (2, 0.5), I.NormalInitializer(1.), True)
        res["shapes"] = [list(w.shape), list(b.shape), list(zero.shape)]
        res["b"] = b.d.copy()
        again = P.get_parameter_or_create("W", (4, 2.0, 3, 3), I.NormalInitializer(1.), True)
        res["found again"] = list(again.shape)
        try:
            P.get_parameter_or_create("W", (4, 2.5, 3, 3), I.NormalInitializer(1.), True)
            res["2.5"] = None
        except ValueError:
            res["2.5"] = "ValueError"
    r.set_params(nn.get_parameters())
    with nn.parameter_scope("pggan_conv"):
        w = P.get_parameter_or_create("W", (4, x.shape[1] / 2) + (3, 3))
        b = P.get_parameter_or_create("b", (4,))
    y = F.convolution(x, w * 0.5, b, pad=(1, 1), group=2)
    y.forward()
    res["y"] = y.d.copy()
    return res
