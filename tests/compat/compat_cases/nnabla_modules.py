"""NNabla 1.39's modules that nnabla-examples import beyond the usual ones:

* ``nnabla.function.PythonFunction``: a function written in Python (FastSpeech2's length
  regulator, YOLOv2's region-loss targets) -- one output and several, static and dynamic,
  gradients through ``backward_impl``;
* ``nnabla.random``: the parameter seed (``prng``, ``pseed``) and the function seed, set
  together (``seed``) or apart (``set_parameter_seed``, ``set_function_seed``; utils/neu);
* ``nnabla.contrib.context.extension_context`` (SAGAN, MUNIT) and
  ``nnabla.utils.data_source_implements`` (the data-cleansing and ImageNet cache scripts).
"""

import numpy as np

from compat_harness import nnabla_case


def _functions(PythonFunction, nn):
    class Regulator(PythonFunction):
        """FastSpeech2's length regulator (nnabla-examples' speech-synthesis/TTS/fastspeech2/
        utils/ops.py), as its program writes it."""

        def __init__(self, max_len, ctx):
            super(Regulator, self).__init__(ctx)
            self.max_len = max_len

        def name(self):
            return "Regulator"

        def min_outputs(self):
            return 1

        def setup_impl(self, inputs, outputs):
            b, _, d = inputs[0].shape
            outputs[0].reset_shape((b, self.max_len, d), True)

        def forward_impl(self, inputs, outputs):
            np_inp = inputs[0].data.data.copy()
            np_len = inputs[1].data.data.copy().astype(int)
            out = []
            for b in range(np_inp.shape[0]):
                o = np.concatenate([np.tile(x, (n, 1)) for x, n in zip(np_inp[b], np_len[b])])
                if o.shape[0] < self.max_len:
                    o = np.pad(o, ((0, self.max_len - o.shape[0]), (0, 0)))
                out.append(o[:self.max_len, :])
            outputs[0].data.data = np.stack(out)

        def backward_impl(self, inputs, outputs, propagate_down, accum):
            dx0, dy = inputs[0].grad, outputs[0].grad
            np_len = inputs[1].data.data.copy().astype(int)
            np_gy = dy.data.copy()
            np_gx = np.zeros_like(dx0.data)
            for b in range(np_len.shape[0]):
                s = 0
                for i, n in enumerate(np_len[b]):
                    np_gx[b][i] = np.sum(np_gy[b][s:s + n], axis=0)
                    s += n
            grad = nn.NdArray.from_numpy_array(np_gx)
            if propagate_down[0]:
                if accum[0]:
                    dx0 += grad
                else:
                    dx0.copy_from(grad)

        def grad_depends_output_data(self, i, o):
            return True

        def grad_depends_input_data(self, i, j):
            return True

    class SplitSum(PythonFunction):
        """Two outputs: three times the input, and its sums along axis 1."""

        @property
        def name(self):
            return "SplitSum"

        def min_outputs(self):
            return 2

        def grad_depends_output_data(self, i, o):
            return False

        def grad_depends_input_data(self, i, j):
            return False

        def setup_impl(self, inputs, outputs):
            outputs[0].reset_shape(inputs[0].shape, True)
            outputs[1].reset_shape((inputs[0].shape[0],), True)

        def forward_impl(self, inputs, outputs):
            x = inputs[0].d
            outputs[0].d = 3 * x
            outputs[1].d = x.sum(axis=1)

        def backward_impl(self, inputs, outputs, propagate_down, accum):
            g = 3 * outputs[0].g + outputs[1].g[:, None]
            if accum[0]:
                inputs[0].g += g
            else:
                inputs[0].g = g

    class Mul(PythonFunction):
        """A product with a label input: its backward refuses to give the label a gradient
        (``propagate_down[1]`` is False for an input without ``need_grad``)."""

        @property
        def name(self):
            return "Mul"

        def min_outputs(self):
            return 1

        def grad_depends_output_data(self, i, o):
            return False

        def grad_depends_input_data(self, i, j):
            return True

        def setup_impl(self, inputs, outputs):
            outputs[0].reset_shape(inputs[0].shape, True)

        def forward_impl(self, inputs, outputs):
            outputs[0].data.data[...] = inputs[0].data.data * inputs[1].data.data

        def backward_impl(self, inputs, outputs, propagate_down, accum):
            if propagate_down[1]:
                raise RuntimeError("no gradient to the label input")
            g = outputs[0].grad.data * inputs[1].data.data
            if accum[0]:
                inputs[0].grad.data[...] += g
            else:
                inputs[0].grad.data[...] = g

    # NNabla pickles a PythonFunction's class when it calls it: the classes must be found by
    # name at the module's top level
    for cls in (Regulator, SplitSum, Mul):
        cls.__qualname__ = cls.__name__ = "%s_on_%s" % (cls.__name__,
                                                        PythonFunction.__module__.split(".")[0])
        globals()[cls.__qualname__] = cls
    return Regulator, SplitSum, Mul


_PF = "nnabla.function.PythonFunction"


@nnabla_case(names=[_PF] + [_PF + "." + m for m in (
                 "name", "ctx", "min_outputs", "setup_impl", "forward_impl", "backward_impl",
                 "grad_depends_output_data", "grad_depends_input_data")],
             rtol=1e-5, atol=1e-4,
             note="the sums of a few dozen products: float rounding of their order")
def python_function__outputs_and_gradients(nn, F, r):
    r.touch(*[_PF + "." + m for m in ("name", "ctx", "min_outputs", "setup_impl", "forward_impl",
                                      "backward_impl", "grad_depends_output_data",
                                      "grad_depends_input_data")])
    Regulator, SplitSum, Mul = _functions(r.module("nnabla.function").PythonFunction, nn)
    res = {}
    x = nn.Variable.from_numpy_array(np.array([1.0, 2.0], np.float32), need_grad=True)
    label = nn.Variable.from_numpy_array(np.array([3.0, 4.0], np.float32), need_grad=False)
    y = Mul()(x, label)
    z = F.sum(y * 2) + F.sum(x)
    z.forward()
    x.grad.zero()
    z.backward()
    res["no gradient asked for the label"] = [y.d.copy(), x.g.copy()]
    for mode in ("static", "dynamic"):
        with nn.auto_forward(mode == "dynamic"):
            x = nn.Variable.from_numpy_array(r.randn(2, 3, 4), need_grad=True)
            lens = nn.Variable.from_numpy_array(np.array([[1, 2, 1], [3, 0, 2]], np.float32))
            y = Regulator(6, None)(x, lens)
            w = nn.Variable.from_numpy_array(r.randn(6, 4))
            a, b = SplitSum()(F.reshape(x, (2, 12)))
            total = F.sum(y * F.reshape(w, (1, 6, 4))) + F.sum(a * a) + F.sum(b)
            if mode == "static":
                total.forward()
            x.grad.zero()
            total.backward()
        res[mode + " ctx"] = (Regulator(6, None).ctx.backend[0]
                              == nn.get_current_context().backend[0])
        res[mode] = {"y": y.d.copy(), "shapes": [list(y.shape), list(a.shape), list(b.shape)],
                     "a": a.d.copy(), "b": b.d.copy(), "total": float(total.d),
                     "x grad": x.g.copy()}
    return res


@nnabla_case(names=["nnabla.random.prng", "nnabla.random.pseed", "nnabla.random.seed",
                    "nnabla.random.set_parameter_seed", "nnabla.random.set_function_seed",
                    "nnabla.seed", "nnabla.initializer.UniformInitializer"])
def random_module__parameter_and_function_seeds(nn, F, r):
    R = r.module("nnabla.random")
    I = r.module("nnabla.initializer")
    res = {}                    # (pseed at import is 313 on both; other cases may seed first)
    weights = []
    for _ in range(2):          # the initialisers draw from the generator given to prng
        R._module.prng = np.random.RandomState(0)   # (assigned on the module itself)
        weights.append(I.UniformInitializer((-1, 1))((2, 3)))
    res["prng assigned"] = weights
    R.set_parameter_seed(5)
    res["after set_parameter_seed(5)"] = [R.pseed, R.prng.rand(3)]
    nn.seed(7)
    res["after nn.seed(7)"] = [R.pseed, R.prng.rand(3)]
    R.seed(9, set_parameter_seed=False)
    res["seed(9) function only: prng goes on"] = [R.pseed, R.prng.rand(2)]
    R.seed(11, set_function_seed=False)
    res["uniform initializer after seed(11)"] = I.UniformInitializer((-1, 1))((2, 3))
    draws = []
    for _ in range(2):
        R.set_function_seed(3)
        v = F.rand(shape=(4,))
        v.forward()
        draws.append(v.d.copy())
    res["the same function seed draws the same"] = bool((draws[0] == draws[1]).all())
    R.set_parameter_seed(3)
    v = F.rand(shape=(4,))
    v.forward()
    res["a parameter seed leaves the function draws"] = bool((v.d != draws[0]).any())
    try:
        R.seed(1.5)
        res["a float seed"] = "accepted"
    except AssertionError:
        res["a float seed"] = "AssertionError"
    nn.seed(313)
    return res


@nnabla_case(names=["nnabla.contrib.context.extension_context",
                    "nnabla.utils.data_source_implements.SimpleDataSource",
                    "nnabla.utils.data_source_implements.CsvDataSource"])
def deprecated_context_and_data_source_module(nn, F, r):
    ctx = r.module("nnabla.contrib.context").extension_context("cpu")
    DSI = r.module("nnabla.utils.data_source_implements")
    source = DSI.SimpleDataSource(lambda i: (np.float32(i), np.int32(2 * i)), 4, shuffle=False)
    first = source.next()
    return {"context": [list(ctx.backend), ctx.array_class, ctx.device_id],
            "source": [source.size, list(source.variables), [float(v) for v in first]],
            "csv source is a data source": issubclass(DSI.CsvDataSource, DSI.DataSource)}
