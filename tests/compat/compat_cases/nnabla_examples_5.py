"""What nnabla-examples' fifth batch of programs needs (``tests/examples/nnabla_examples_5.py``):
``image-classification/cifar10-100/classification.py`` takes its ``-c cpu`` context from
NNabla's CPU extension package, ``import nnabla_ext.cpu; nnabla_ext.cpu.context()``."""

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
