"""``cntk.ops`` (and the same names at ``cntk.*``): every op on batched inputs, its inference
value (``eval``), its training value and the gradients of ``sum(out * w)`` w.r.t. every input.

Samples have two or three axes where an op takes an ``axis``, so a per-sample axis that is not
translated past the batch axis shows.
"""

import numpy as np

from compat_harness import cntk_case

B = 3  # samples per batch


def op_case(name, expr, shapes=((4,),), data=None, grads=True, names=None, **kw):
    """Register a case for ``expr(C, *inputs)``, inputs made with ``C.input_variable(shape,
    needs_gradient=...)`` for each per-sample ``shape``.

    ``data``: per input, ``None`` (standard normal) or ``f(r, shape)`` giving the batch.
    ``grads``: True (w.r.t. every input), False, or the indices of the inputs to differentiate.
    Results: ``out`` (``eval``: inference), ``shape`` (the Function's per-sample shape) and, with
    gradients, ``train_out`` (``forward`` keeping state for ``backward``) and ``grad<i>``.
    """
    op = name.split("__")[0]
    names = names or ["cntk.ops." + op]
    wrt = list(range(len(shapes))) if grads is True else list(grads or [])

    def fn(C, r):
        xs = [C.input_variable(s, needs_gradient=i in wrt) for i, s in enumerate(shapes)]
        values = r.inputs([(B,) + tuple(s) for s in shapes], data)
        f = expr(C, *xs)
        feed = dict(zip(xs, values))
        r.touch("cntk.Function.eval", "cntk.Function.shape")
        res = {"out": f.eval(feed), "shape": list(f.shape)}
        if wrt:
            value, g = r.cntk_forward_backward(f, feed, [xs[i] for i in wrt])
            res["train_out"] = value
            for i, gi in zip(wrt, g):
                res["grad%d" % i] = gi
        return res

    fn.__name__ = name
    cntk_case(name=name, names=names, **kw)(fn)


def positive(r, shape):
    return r.rand(*shape, low=0.2, high=2.0)


def probability(r, shape):
    return r.rand(*shape, low=0.05, high=0.95)


def binary(r, shape):
    return r.randint(0, 2, shape).astype(np.float32)


def onehot(r, shape):
    return r.onehot(shape[0], shape[-1]).reshape(shape)


# -- element-wise ---------------------------------------------------------------------------
op_case("relu", lambda C, x: C.relu(x), [(2, 3)])
op_case("sigmoid", lambda C, x: C.sigmoid(x), [(2, 3)])
op_case("tanh", lambda C, x: C.tanh(x), [(2, 3)])
op_case("softplus", lambda C, x: C.softplus(x), [(2, 3)])
op_case("elu", lambda C, x: C.elu(x), [(2, 3)])
op_case("selu", lambda C, x: C.selu(x), [(2, 3)])
op_case("exp", lambda C, x: C.exp(x), [(2, 3)])
op_case("log", lambda C, x: C.log(x), [(2, 3)], data=[positive])
op_case("sqrt", lambda C, x: C.sqrt(x), [(2, 3)], data=[positive])
op_case("abs", lambda C, x: C.abs(x), [(2, 3)])
op_case("negate", lambda C, x: C.negate(x), [(2, 3)])
op_case("leaky_relu", lambda C, x: C.leaky_relu(x), [(2, 3)])
op_case("leaky_relu__alpha", lambda C, x: C.leaky_relu(x, alpha=0.3), [(2, 3)])
op_case("clip", lambda C, x: C.clip(x, -0.5, 0.7), [(2, 3)])
op_case("alias", lambda C, x: C.alias(x, name="a") * 2.0, [(2, 3)])

# -- binary, with broadcasting and constants ------------------------------------------------
op_case("plus", lambda C, x, y: C.plus(x, y), [(2, 3), (2, 3)])
op_case("plus__broadcast", lambda C, x, y: C.plus(x, y), [(2, 3), (3,)])
op_case("plus__scalar", lambda C, x: C.plus(x, 1.5), [(2, 3)])
op_case("minus", lambda C, x, y: C.minus(x, y), [(2, 3), (2, 3)])
op_case("minus__scalar_left", lambda C, x: C.minus(2.0, x), [(2, 3)])
op_case("minus__array_right", lambda C, x: C.minus(x, np.arange(3, dtype=np.float32)), [(2, 3)])
op_case("element_times", lambda C, x, y: C.element_times(x, y), [(2, 3), (2, 3)])
op_case("element_times__broadcast", lambda C, x, y: C.element_times(x, y), [(2, 3), (1, 3)])
op_case("element_divide", lambda C, x, y: C.element_divide(x, y), [(2, 3), (2, 3)],
        data=[None, positive])
op_case("element_divide__scalar_left", lambda C, x: C.element_divide(1.0, x), [(2, 3)],
        data=[positive])

# -- softmax family: the axis is per sample ---------------------------------------------------
op_case("softmax", lambda C, x: C.softmax(x), [(5,)])
op_case("softmax__all_axes", lambda C, x: C.softmax(x), [(2, 3)],
        note="axis=None: over all of a sample's axes")
op_case("softmax__axis0", lambda C, x: C.softmax(x, axis=0), [(2, 3, 4)])
op_case("softmax__axis1", lambda C, x: C.softmax(x, axis=1), [(2, 3, 4)])
op_case("softmax__axis_neg", lambda C, x: C.softmax(x, axis=-1), [(2, 3, 4)])
op_case("log_softmax", lambda C, x: C.log_softmax(x), [(5,)])
op_case("log_softmax__axis0", lambda C, x: C.log_softmax(x, axis=0), [(3, 4)])

# -- products and shapes ------------------------------------------------------------------------
op_case("times", lambda C, x: C.times(x, C.parameter((4, 5), init=np.linspace(
    -1, 1, 20, dtype=np.float32).reshape(4, 5))), [(4,)],
    names=["cntk.ops.times", "cntk.ops.parameter"])
op_case("times__matrix_sample", lambda C, x: C.times(x, C.parameter((3, 5), init=np.linspace(
    -1, 1, 15, dtype=np.float32).reshape(3, 5))), [(2, 3)],
    names=["cntk.ops.times", "cntk.ops.parameter"],
    note="a (2, 3) sample times a (3, 5) matrix: CNTK maps the last axis")
op_case("times__output_rank", lambda C, x: C.times(x, C.parameter((6, 2, 5), init=np.linspace(
    -1, 1, 60, dtype=np.float32).reshape(6, 2, 5)), output_rank=2), [(6,)],
    names=["cntk.ops.times", "cntk.ops.parameter"])
op_case("reshape", lambda C, x: C.reshape(x, (3, 4)), [(2, 6)])
op_case("reshape__infer", lambda C, x: C.reshape(x, (4, -1)), [(12,)])
op_case("splice", lambda C, x, y: C.splice(x, y), [(2, 3), (2, 4)])
op_case("splice__axis0", lambda C, x, y: C.splice(x, y, axis=0), [(2, 3), (1, 3)])
op_case("splice__three", lambda C, x, y, z: C.splice(x, y, z, axis=1),
        [(2, 1, 2), (2, 2, 2), (2, 3, 2)])

# -- reductions: axis None is every axis of a sample --------------------------------------------
for _red in ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min"):
    op_case(_red, (lambda red: lambda C, x: getattr(C, red)(x))(_red), [(2, 3)])
    op_case(_red + "__axis0", (lambda red: lambda C, x: getattr(C, red)(x, axis=0))(_red),
            [(2, 3)])
    op_case(_red + "__axis_neg", (lambda red: lambda C, x: getattr(C, red)(x, axis=-1))(_red),
            [(2, 3, 4)])
    op_case(_red + "__axes", (lambda red: lambda C, x: getattr(C, red)(x, axis=(0, 2)))(_red),
            [(2, 3, 4)])

# -- losses and metrics -------------------------------------------------------------------------
op_case("cross_entropy_with_softmax", lambda C, z, t: C.cross_entropy_with_softmax(z, t),
        [(5,), (5,)], data=[None, onehot], grads=[0])
op_case("cross_entropy_with_softmax__target_grad",
        lambda C, z, t: C.cross_entropy_with_softmax(z, t), [(5,), (5,)], data=[None, onehot],
        note="CNTK's gradient w.r.t. the target is -z: it computes log_sum_exp(z) - sum(t z)")
op_case("cross_entropy_with_softmax__soft_target",
        lambda C, z, t: C.cross_entropy_with_softmax(z, C.softmax(t)), [(4,), (4,)], grads=[0],
        names=["cntk.ops.cross_entropy_with_softmax", "cntk.ops.softmax"])
op_case("cross_entropy_with_softmax__axis0",
        lambda C, z, t: C.cross_entropy_with_softmax(z, t, axis=0), [(4, 3), (4, 3)],
        data=[None, lambda r, s: np.transpose(r.onehot(s[0] * s[2], s[1]).reshape(
            s[0], s[2], s[1]), (0, 2, 1)).copy()], grads=[0])
op_case("squared_error", lambda C, o, t: C.squared_error(o, t), [(4,), (4,)])
op_case("squared_error__matrix", lambda C, o, t: C.squared_error(o, t), [(2, 3), (2, 3)])
op_case("binary_cross_entropy", lambda C, o, t: C.binary_cross_entropy(o, t), [(4,), (4,)],
        data=[probability, binary])
op_case("classification_error", lambda C, z, t: C.classification_error(z, t), [(5,), (5,)],
        data=[None, onehot], grads=False)
op_case("classification_error__topN", lambda C, z, t: C.classification_error(z, t, topN=2),
        [(5,), (5,)], data=[None, onehot], grads=False,
        note="with topN > 1 CNTK 2.7 returns one number for the whole minibatch: the count of "
             "errors, shape ()")
op_case("losses", lambda C, z, t, o: C.losses.cross_entropy_with_softmax(z, t)
        + C.losses.squared_error(o, t) + C.losses.binary_cross_entropy(C.sigmoid(o), t),
        [(5,), (5,), (5,)], data=[None, onehot, None], grads=[0, 2],
        names=["cntk.losses.cross_entropy_with_softmax", "cntk.losses.squared_error",
               "cntk.losses.binary_cross_entropy", "cntk.losses"])
op_case("metrics", lambda C, z, t: C.metrics.classification_error(z, t), [(5,), (5,)],
        data=[None, onehot], grads=False,
        names=["cntk.metrics.classification_error", "cntk.metrics"])


# -- dropout: random, so compare what is certain ------------------------------------------------
def _dropout_stats(C, r, make):
    x = C.input_variable((50, 40), needs_gradient=True)
    f = make(C, x)
    data = r.rand(4, 50, 40, low=0.5, high=1.5)
    r.touch("cntk.Function.eval")
    inference = f.eval({x: data})
    value, (grad,) = r.cntk_forward_backward(f, {x: data}, [x])
    kept = value != 0
    return {"inference_is_identity": bool(np.array_equal(inference, data)),
            "scale": np.unique(np.round(value[kept] / data[kept], 4)),
            "zero_fraction": np.float32(1.0 - kept.mean()),
            "grad_zero_where_dropped": np.float32(np.all(grad[~kept] == 0))}


@cntk_case(names=["cntk.ops.dropout"], tols={"zero_fraction": (0, 0.02)},
           note="random masks differ; compared: inference is the identity, the kept values' "
                "scale, the fraction dropped (+-0.02 over 8000 values), gradient zero where "
                "dropped")
def dropout(C, r):
    return _dropout_stats(C, r, lambda C, x: C.dropout(x, 0.3))
