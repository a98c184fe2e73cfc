"""CNTK's graph objects: inputs, constants, parameters, ``Function`` and its methods, operators,
``combine``, saving and loading."""

import os

import numpy as np

from compat_harness import cntk_case


def _dtype(f):
    return np.dtype(f.dtype).name


@cntk_case(names=["cntk.ops.input_variable", "cntk.ops.input", "cntk.Function.shape",
                  "cntk.Function.needs_gradient", "cntk.Function.dtype", "cntk.Function.name"])
def input_variable(C, r):
    x = C.input_variable((2, 3), name="x")
    y = C.input(4, needs_gradient=True)
    z = C.input_variable(5, dtype=np.float32)
    r.touch("cntk.Function.shape", "cntk.Function.needs_gradient", "cntk.Function.dtype",
            "cntk.Function.name")
    return {"shapes": [list(v.shape) for v in (x, y, z)], "names": [x.name, y.name],
            "needs_gradient": [x.needs_gradient, y.needs_gradient],
            "dtypes": [_dtype(v) for v in (x, y, z)]}


@cntk_case(names=["cntk.ops.constant", "cntk.Constant", "cntk.Function.value",
                  "cntk.Function.constants"])
def constant(C, r):
    x = C.input_variable((2, 3))
    c = C.constant(value=np.arange(6, dtype=np.float32).reshape(2, 3), name="c")
    k = C.constant(2.5, shape=(3,), name="k")
    big = C.Constant(r.randn(2, 3), name="big")
    f = (x * c + k) * big
    data = r.randn(4, 2, 3)
    r.touch("cntk.Function.value", "cntk.Function.constants", "cntk.Function.eval")
    return {"c": c.value, "k": k.value, "big": big.value,
            "shapes": [list(v.shape) for v in (c, k, big)], "names": [c.name, k.name, big.name],
            "constants": sorted(v.name for v in f.constants), "out": f.eval({x: data})}


@cntk_case(names=["cntk.ops.parameter", "cntk.Parameter", "cntk.Function.value",
                  "cntk.Function.parameters"])
def parameter(C, r):
    x = C.input_variable(3)
    p = C.parameter((3,), init=0.5, name="p")
    q = C.Parameter((3, 2), init=r.randn(3, 2), name="q")
    before = [p.value, q.value]
    p.value = np.array([1.0, -2.0, 3.0], np.float32)
    f = C.times(x * p, q)
    data = r.randn(2, 3)
    r.touch("cntk.Function.value", "cntk.Function.parameters", "cntk.Function.eval")
    return {"p0": before[0], "q0": before[1], "p1": p.value, "names": [p.name, q.name],
            "parameters": sorted(v.name for v in f.parameters), "out": f.eval({x: data})}


@cntk_case(names=["cntk.Function.arguments", "cntk.Function.parameters",
                  "cntk.Function.constants", "cntk.Function.output", "cntk.Function.outputs",
                  "cntk.Function.root_function", "cntk.Function.shape", "cntk.Function.dtype"])
def function_attributes(C, r):
    x = C.input_variable((2, 3), name="x")
    y = C.input_variable(3, name="y", needs_gradient=True)
    p = C.parameter((2, 3), init=0.5, name="p")
    c = C.constant(np.ones((2, 3), np.float32), name="c")
    f = C.plus(x * c + p, y, name="f")
    r.touch("cntk.Function.arguments", "cntk.Function.parameters", "cntk.Function.constants",
            "cntk.Function.output", "cntk.Function.outputs", "cntk.Function.root_function",
            "cntk.Function.shape", "cntk.Function.dtype", "cntk.Function.name")
    return {"arguments": sorted(a.name for a in f.arguments),
            "arguments_are_inputs": sorted(str(a == x or a == y) for a in f.arguments),
            "parameters": [v.name for v in f.parameters],
            "constants": [v.name for v in f.constants], "n_outputs": len(f.outputs),
            "output_shape": list(f.output.shape), "shape": list(f.shape), "dtype": _dtype(f),
            "root_shape": list(f.root_function.shape), "name": f.name}


@cntk_case(names=["cntk.Function.eval"])
def eval_batches(C, r):
    """``eval`` with a dict, with one array, and with batches of changing size."""
    x = C.input_variable(3)
    f = C.tanh(x) * 2.0
    a, b = r.randn(2, 3), r.randn(5, 3)
    r.touch("cntk.Function.eval")
    return {"dict": f.eval({x: a}), "array": f.eval(b), "again": f.eval({x: a[:1]})}


@cntk_case(names=["cntk.Function.forward", "cntk.Function.backward", "cntk.Function.output"])
def forward_backward(C, r):
    """``forward`` keeping state, ``backward`` to inputs and parameters; ``forward`` without
    ``keep_for_backward`` is the inference phase; parameters' gradients are not accumulated."""
    x = C.input_variable(4, needs_gradient=True)
    w = C.parameter((4, 3), init=r.randn(4, 3), name="w")
    f = C.dropout(C.tanh(C.times(x, w)), 0.5)
    data = r.randn(2, 4)
    r.touch("cntk.Function.forward", "cntk.Function.backward", "cntk.Function.output")
    _, inference = f.forward({x: data}, [f.output])
    state, train = f.forward({x: data}, [f.output], set([f.output]))
    root = r.weights_like(train[f.output])
    g1 = f.backward(state, {f.output: root}, set([x, w]))
    state, train2 = f.forward({x: data}, [f.output], set([f.output]))
    g2 = f.backward(state, {f.output: root}, set([w]))
    mask = (train2[f.output] != 0).astype(np.float32)
    expected_w = data.T.dot(root * mask * 2.0 * (1 - np.tanh(data.dot(w.value)) ** 2))
    return {"inference": inference[f.output],
            "train_dropped_some": bool((train[f.output] == 0).any()),
            "grad_x_shape": list(g1[x].shape), "grad_w_shape": list(g1[w].shape),
            "grad_w_matches_mask": np.float32(np.abs(g2[w] - expected_w).max() < 1e-4)}


@cntk_case(names=["cntk.Function.grad"])
def grad(C, r):
    x = C.input_variable(3, needs_gradient=True)
    y = C.input_variable(3, needs_gradient=True)
    f = C.reduce_sum(C.sqrt(x) * y * y)
    a, b = r.rand(4, 3, low=0.5, high=2.0), r.randn(4, 3)
    r.touch("cntk.Function.grad")
    both = f.grad({x: a, y: b}, wrt=[x, y])
    g, out = f.grad({x: a, y: b}, wrt=[y], outputs=[f.output])
    return {"default": C.sqrt(x).grad({x: a}), "wrt_x": both[x], "wrt_y": both[y],
            "with_outputs": g, "outputs": out}


@cntk_case(names=["cntk.Function.grad"])
def grad_nothing_to_differentiate(C, r):
    """``grad`` without ``wrt`` when no argument needs a gradient (a parameter alone does not
    count), and with an empty ``wrt``: both a ValueError, with ``outputs`` too."""
    x = C.input_variable(2)
    f = x * C.parameter(2, init=1.0)
    feed = {x: r.randn(3, 2)}
    r.touch("cntk.Function.grad")
    res = {}
    for key, kwargs in (("default", {}), ("default_outputs", {"outputs": [f.output]}),
                        ("empty_wrt", {"wrt": []})):
        try:
            got = f.grad(feed, **kwargs)
            res[key] = ["returned", type(got).__name__]
        except ValueError as exc:
            res[key] = ["ValueError", "needs_gradient == True" in str(exc),
                        "must not be empty" in str(exc)]
    return res


@cntk_case(names=["cntk.ops.combine"])
def combine(C, r):
    x = C.input_variable((2, 3))
    a, b = C.relu(x), C.sigmoid(x) * 3.0
    g = C.combine([a, b])
    data = r.randn(2, 2, 3)
    out = g.eval({x: data})
    r.touch("cntk.Function.outputs", "cntk.Function.eval")
    return {"n_outputs": len(g.outputs), "first": out[g.outputs[0]],
            "second": out[g.outputs[1]], "also_args": np.float32(len(C.combine(a, b).outputs))}


@cntk_case(names=["cntk.Function.find_by_name", "cntk.ops.alias"])
def find_by_name(C, r):
    x = C.input_variable(3)
    h = C.alias(C.tanh(x), name="hidden")
    f = C.plus(h * 2.0, 1.0, name="out")
    found = f.find_by_name("hidden")
    r.touch("cntk.Function.find_by_name", "cntk.Function.name", "cntk.Function.shape")
    return {"name": found.name, "shape": list(found.shape),
            "missing": f.find_by_name("nothing") is None}


@cntk_case(names=["cntk.Function.save", "cntk.Function.save_model", "cntk.load_model"],
           note="save_model is the 2017 betas' name for save (CNTK 2.7 has only save)")
def save_load(C, r):
    x = C.input_variable(3)
    w = C.parameter((3, 2), init=r.randn(3, 2), name="w")
    f = C.tanh(C.times(x, w))
    data = r.randn(2, 3)
    with r.tempdir() as folder:
        path = os.path.join(folder, "model.bin")
        f.save(path)
        beta = os.path.join(folder, "beta.bin")
        (f.save if r.real else f.save_model)(beta)
        r.touch("cntk.Function.save", "cntk.Function.save_model", "cntk.Function.eval",
                "cntk.Function.arguments")
        g = C.load_model(path)
        h = C.load_model(beta)
        return {"before": f.eval({x: data}), "loaded": g.eval({g.arguments[0]: data}),
                "loaded_beta": h.eval(data), "n_arguments": len(g.arguments)}


@cntk_case(names=["cntk.Function.save", "cntk.load_model"],
           note="inputs named y and x, the names a model file may give its outputs: saved and "
                "loaded, fed by name")
def save_load__arguments_named_y(C, r):
    y = C.sequence.input_variable(3, name="y")
    x = C.input_variable(3, name="x")
    f = C.tanh(y) * C.sequence.broadcast_as(x, y)
    feed = {"y": [r.randn(n, 3) for n in (2, 1, 3)], "x": r.randn(3, 3)}
    r.touch("cntk.Function.eval", "cntk.Function.arguments", "cntk.Function.save")
    with r.tempdir() as folder:
        path = os.path.join(folder, "model.bin")
        f.save(path)
        g = C.load_model(path)
    res = {"arguments": sorted(a.name for a in g.arguments)}
    for label, h in (("before", f), ("loaded", g)):
        out = h.eval(dict((a, feed[a.name]) for a in h.arguments))
        res[label] = np.concatenate(out, 0)
    return res


def _operators(C, r, op, expr, shapes, data=None):
    r.touch("cntk.Function." + op)
    xs = [C.input_variable(s, needs_gradient=True) for s in shapes]
    values = [(data[i](r, s) if data and data[i] else r.randn(3, *s))
              for i, s in enumerate(shapes)]
    f = expr(*xs)
    feed = dict(zip(xs, values))
    r.touch("cntk.Function.eval")
    value, grads = r.cntk_forward_backward(f, feed, xs)
    res = {"out": f.eval(feed), "train_out": value}
    for i, g in enumerate(grads):
        res["grad%d" % i] = g
    return res


def _positive(r, s):
    return r.rand(3, *s, low=0.5, high=2.0)


@cntk_case(names=["cntk.Function.__add__"])
def operator_add(C, r):
    return _operators(C, r, "__add__", lambda x, y: x + y + 1.0 + (2.0 + x), [(2, 3), (3,)])


@cntk_case(names=["cntk.Function.__sub__"])
def operator_sub(C, r):
    return _operators(C, r, "__sub__", lambda x, y: (x - y) * (1.0 - x) - 0.5, [(2, 3), (2, 3)])


@cntk_case(names=["cntk.Function.__mul__"])
def operator_mul(C, r):
    return _operators(C, r, "__mul__", lambda x, y: x * y * 3.0 + 2.0 * x, [(2, 3), (3,)])


@cntk_case(names=["cntk.Function.__truediv__"])
def operator_div(C, r):
    return _operators(C, r, "__truediv__", lambda x, y: x / y + 1.0 / y - y / 2.0,
                      [(2, 3), (2, 3)], data=[None, _positive])


@cntk_case(names=["cntk.Function.__neg__"])
def operator_neg(C, r):
    return _operators(C, r, "__neg__", lambda x: -x * x, [(2, 3)])


@cntk_case(names=["cntk.Function.__matmul__"])
def operator_matmul(C, r):
    w = C.constant(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))
    return _operators(C, r, "__matmul__", lambda x: x @ w, [(4,)])


_TYPES = ["Tensor", "SparseTensor", "ParameterTensor", "Signature", "tensor"]


@cntk_case(names=["cntk.Function.with_signature", "cntk.layers.typing"] +
           ["cntk.layers.typing." + n for n in _TYPES + ["Axis", "Record", "Variable"]] +
           ["cntk.layers." + n for n in _TYPES],
           note="Python functions with typed arguments as Functions: inputs named after the "
                "arguments, per-sample shapes, batch axis or none")
def function_signatures(C, r):
    T = r.module("cntk.layers.typing")
    L = C.layers
    types = {"Tensor[3]": T.Tensor[3], "Tensor[2, 4]": T.Tensor[2, 4],
             "SparseTensor[5]": T.SparseTensor[5], "ParameterTensor[2]": T.ParameterTensor[2],
             "tensor": T.tensor, "layers Tensor[3]": L.Tensor[3],
             "layers ParameterTensor[2]": L.ParameterTensor[2]}
    res = {k: [list(t["shape"]), bool(t["is_sparse"]), len(t["dynamic_axes"])]
           for k, t in types.items()}
    res["Signature"] = [list(L.SparseTensor[4]["shape"]), L.tensor["shape"][0]]

    @C.Function.with_signature(T.Tensor[3])
    def double(x):
        return x * 2.0

    @C.Function
    def scaled(x: T.Tensor[2], w: T.ParameterTensor[2]):
        return C.element_times(x, w) + 1.0

    @T.Signature(L.Tensor[2])
    def shifted(x):
        return x - 1.0

    shifted_f = C.Function(shifted)
    for label, f in (("double", double), ("scaled", scaled), ("shifted", shifted_f)):
        res[label + " arguments"] = [[a.name, list(a.shape), len(a.dynamic_axes), a.is_input]
                                     for a in f.arguments]
        res[label + " name"] = f.name
    data = r.randn(2, 3)
    res["double"] = double(data)
    x = C.input_variable(2)
    res["scaled"] = scaled(x, C.constant(np.array([2.0, 3.0], np.float32))).eval(
        {x: np.ones((1, 2), np.float32)})
    res["shifted"] = shifted_f(np.ones((1, 2), np.float32))
    r.touch("cntk.Function.with_signature")          # the decorator above
    res["typing re-exports"] = [T.Axis.default_batch_axis().name, T.Record(a=1).a,
                                isinstance(double.arguments[0], T.Variable)]
    return res


@cntk_case(names=["cntk.Function.load"])
def function_load(C, r):
    x = C.input_variable(3)
    w = C.parameter((3, 2), init=r.randn(3, 2), name="w")
    f = C.relu(C.times(x, w) + 0.5)
    data = r.randn(2, 3)
    with r.tempdir() as folder:
        path = os.path.join(folder, "model.bin")
        f.save(path)
        g = C.Function.load(path)
        r.touch("cntk.Function.load", "cntk.Function.save", "cntk.Function.eval",
                "cntk.Function.arguments")
        return {"before": f.eval({x: data}), "loaded": g.eval({g.arguments[0]: data}),
                "n_arguments": len(g.arguments)}


@cntk_case(names=["cntk.ops.times", "cntk.Trainer.test_minibatch"])
def misuse_gives_the_error_types(C, r):
    """``times`` of a Python scalar on the right (CNTK: a ValueError about ranks when built;
    Stadyn raised AttributeError) and ``test_minibatch`` of a Trainer made without a metric
    (CNTK: ValueError; Stadyn raised its own StadynError).  A scalar on the left CNTK builds and
    refuses at the first run (RuntimeError), as Stadyn does: case ``times_of_a_scalar``."""
    x = C.input_variable(3)
    res = {}
    try:
        C.times(x, 2.0)
        res["times_scalar_right"] = "built"
    except ValueError:
        res["times_scalar_right"] = "ValueError"
    except Exception as exc:  # noqa: BLE001 - the type is what is compared
        res["times_scalar_right"] = type(exc).__name__
    z = C.layers.Dense(2)(x)
    y = C.input_variable(2)
    trainer = C.Trainer(z, C.cross_entropy_with_softmax(z, y),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    r.touch("cntk.Trainer.test_minibatch")
    try:
        trainer.test_minibatch({x: r.randn(2, 3), y: np.eye(2, dtype=np.float32)})
        res["test_without_metric"] = "returned"
    except ValueError:
        res["test_without_metric"] = "ValueError"
    except Exception as exc:  # noqa: BLE001
        res["test_without_metric"] = type(exc).__name__
    return res
