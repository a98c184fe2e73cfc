"""What nnabla-examples' VQ-VAE (``image-generation/variational-auto-encoder/vq-vae``) and the
helpers it shares with many of the examples (``utils/neu``) need: NNabla's ``Context`` fields,
which ``neu.comm.CommunicatorWrapper`` reads and writes (``len(ctx.device_id)``,
``ctx.backend[0].split(':')``, ``ctx.device_id = str(...)``), ``Variable.reshape`` (the vector
quantiser's ``x.reshape((-1, dim))``), ``DataIterator._data_source`` (its data variance) and an
op, in dynamic mode, on an output a ``backward(clear_buffer=True)`` freed (its saved
reconstructions)."""

import numpy as np

from compat_harness import nnabla_case


@nnabla_case(names=["nnabla.Context", "nnabla.Context.backend", "nnabla.Context.array_class",
                    "nnabla.Context.device_id", "nnabla.ext_utils.get_extension_context",
                    "nnabla.set_default_context", "nnabla.get_current_context"])
def examples_context_fields_as_neu_uses_them(nn, r):
    """``neu``'s ``create_float_context`` and ``CommunicatorWrapper`` on a CPU context."""
    r.touch("nnabla.Context.backend", "nnabla.Context.array_class", "nnabla.Context.device_id")
    E = r.module("nnabla.ext_utils")
    ctx = E.get_extension_context("cpu", device_id="0", type_config="float")
    res = {"repr": repr(ctx), "device_id length": len(ctx.device_id),
           "extension": ctx.backend[0].split(":")[0]}
    again = E.get_extension_context(ctx.backend[0].split(":")[0], device_id=ctx.device_id)
    res["float context"] = repr(again)
    res["half"] = repr(E.get_extension_context("cpu", type_config="half"))
    made = nn.Context()
    res["default made"] = repr(made)
    made.device_id = str(int(made.device_id) + 1)
    made.backend = ["cpu:float"]
    made.array_class = "CpuCachedArray"
    res["written"] = repr(made)
    try:
        made.device_id = 1
        res["int device_id"] = "no error"
    except TypeError:
        res["int device_id"] = "TypeError"
    default = nn.get_current_context()
    nn.set_default_context(ctx)
    try:
        current = nn.get_current_context()
        res["current"] = repr(current)
        res["current is the one set"] = current is ctx
        x = nn.Variable.from_numpy_array(r.randn(2, 3))
        y = r.module("nnabla.functions").relu(x)
        y.forward()
        res["runs"] = y.d.copy()
    finally:
        nn.set_default_context(default)
    res["restored"] = repr(nn.get_current_context())
    return res


@nnabla_case(names=["nnabla.Variable.reshape"], rtol=1e-6, atol=1e-6)
def examples_variable_reshape(nn, F, r):
    """``x.reshape(shape)`` is ``F.reshape`` in the graph (one axis may be -1; the gradient
    reaches ``x``); ``unlink=True`` gives a leaf over the same value."""
    r.touch("nnabla.Variable.reshape")
    res = {}
    for mode in (False, True):
        nn.set_auto_forward(mode)
        x = nn.Variable.from_numpy_array(r.randn(2, 3, 2), need_grad=True)
        y = x.reshape((-1, 3))
        loss = F.sum(y * nn.Variable.from_numpy_array(np.arange(12.0).reshape(4, 3)))
        if not mode:
            loss.forward()
        x.grad.zero()
        loss.backward()
        key = "dynamic" if mode else "static"
        res[key] = {"shape": list(y.shape), "value": y.d.copy(), "grad": x.g.copy(),
                    "in the graph": y.parent is not None}
        v = x.reshape((3, 4), unlink=True)
        v.d[0, 0] = 5.0
        res[key]["unlinked"] = {"shape": list(v.shape), "leaf": v.parent is None,
                                "need_grad": v.need_grad, "shares the value": float(x.d[0, 0, 0])}
    nn.set_auto_forward(False)
    return res


class _Samples:
    """A data source's stand-in with its own array attribute (MNIST's ``_images``)."""

    def __init__(self, DataSource):
        class Source(DataSource):
            def __init__(self):
                super().__init__(shuffle=False)
                self._images = np.arange(12, dtype=np.float32).reshape(6, 2)
                self._size = 6
                self._variables = ("x",)
                self.reset()

            def _get_data(self, position):
                return (self._images[position],)

        self.source = Source()


@nnabla_case(names=["nnabla.utils.data_iterator.data_iterator"])
def examples_data_iterator_data_source(r):
    """VQ-VAE's trainer reads ``data_loader._data_source._images``: without caches, the source
    the iterator was made with."""
    DataSource = r.module("nnabla.utils.data_source").DataSource
    it_module = r.module("nnabla.utils.data_iterator")
    source = _Samples(DataSource).source
    it = it_module.data_iterator(source, 4, with_memory_cache=False, with_file_cache=False)
    res = {"is the source": it._data_source is source,
           "variance": float(np.var(it._data_source._images / 255.0))}
    it.close()
    return res


@nnabla_case(names=["nnabla.Variable.backward"])
def examples_op_on_a_buffer_backward_cleared(nn, F, PF, r):
    """In dynamic mode an op may read an intermediate a ``backward(clear_buffer=True)`` freed:
    NNabla reads the freed memory (whatever it holds), Stadyn the value it keeps for a Variable
    the program holds (``recon`` here; a dropped one's ``.d`` shows zeros); neither refuses, and
    the result has the intermediate's shape (its values are not compared: NNabla's are
    whatever the memory held)."""
    r.touch("nnabla.Variable.backward")
    nn.set_auto_forward(True)
    try:
        x = nn.Variable.from_numpy_array(r.randn(2, 3))
        recon = F.tanh(PF.affine(x, 3, name="dec"))
        loss = F.mean(F.squared_error(recon, x))
        loss.backward(clear_buffer=True)
        image = recon * 0.5 + 0.5
        return {"runs": True, "shape": list(image.shape)}
    finally:
        nn.set_auto_forward(False)
