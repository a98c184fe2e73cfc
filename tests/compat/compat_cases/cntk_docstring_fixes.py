"""What CNTK 2.7's own docstring examples showed Stadyn doing otherwise
(``tools/cntk_docstring_examples.py``): each case here is written anew for the behaviour, with
CNTK 2.7's output as the reference (``op_case``, see cntk_ops.py)."""

import numpy as np

from compat_harness import cntk_case
from compat_cases.cntk_ops import op_case


def with_zeros(r, shape):
    """Values away from 0, with a zero in every row's first and last place."""
    v = r.rand(*shape, low=0.5, high=2.0) * np.where(r.rand(*shape) > 0.5, 1.0, -1.0)
    v[..., 0] = 0.0
    v[..., -1] = 0.0
    return v.astype(np.float32)


# CNTK 2.7 divides by zero to 0 (not inf or nan), with zero gradients there
op_case("element_divide__by_zero", lambda C, x, y: C.element_divide(x, y), [(2, 3), (2, 3)],
        data=[None, with_zeros], names=["cntk.ops.element_divide"])
op_case("element_divide__by_zero_broadcast", lambda C, x, y: C.element_divide(x, y),
        [(2, 3), (3,)], data=[None, with_zeros], names=["cntk.ops.element_divide"])
op_case("reciprocal__of_zero", lambda C, x: C.reciprocal(x), [(2, 3)], data=[with_zeros],
        names=["cntk.ops.reciprocal"])

# a reduction over the batch axis and static axes together (keepdims=True: CNTK 2.7 refuses
# keepdims=False there)
for _op in ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
            "reduce_log_sum_exp", "reduce_l2"):
    op_case(_op + "__batch_and_static_axis",
            (lambda o: lambda C, x: getattr(C, o)(x, (C.Axis.default_batch_axis(), 1)))(_op),
            [(2, 3)], names=["cntk.ops." + _op])
op_case("reduce_mean__static_axes_and_batch",
        lambda C, x: C.reduce_mean(x, [0, C.Axis.default_batch_axis(), 1]), [(2, 3)],
        names=["cntk.ops.reduce_mean"])


@cntk_case(names=["cntk.ops.plus", "cntk.ops.element_times", "cntk.ops.times",
                  "cntk.ops.less", "cntk.ops.relu"])
def numpy_float64_operands(C, r):
    """An op of NumPy operands computes in their widest type (CNTK 2.7's get_data_type, for its
    binary ops and times), a list of numbers in float32; a unary op in float32."""
    a = r.randn(2, 3).astype(np.float64)
    b = r.randn(3, 2).astype(np.float64)
    res = {}
    res["plus"] = C.plus(a, a * 2.0).eval()
    res["plus_list_float64"] = C.plus([1.0, 2.0, 3.0], a[0]).eval()
    res["plus_lists"] = C.plus([1.0, 2.0], [3.0, 4.0]).eval()
    res["times_mixed"] = C.element_times(a.astype(np.float32), a).eval()
    res["times"] = C.times(a, b).eval()
    res["less"] = C.less(a, np.zeros((2, 3))).eval()
    res["relu"] = C.relu(a).eval()
    return res


@cntk_case(names=["cntk.ops.greater_equal", "cntk.ops.equal", "cntk.ops.input_variable"])
def comparisons__float64_inputs(C, r):
    """A comparison of float64 inputs is a float64 value of 1s and 0s."""
    x = C.input_variable(3, dtype=np.float64)
    data = r.randint(0, 3, (2, 3)).astype(np.float64)
    return {"ge": C.greater_equal(x, 1.0).eval({x: data}),
            "eq": C.equal(x, [1.0, 0.0, 2.0]).eval({x: data})}

# a transposed convolution whose map has the operand's rank, (1, *kernel): one output map
op_case("convolution_transpose__map_of_operand_rank",
        lambda C, x: C.convolution_transpose(C.constant(np.array(
            [[[1.0, -0.5, 0.3], [0.25, 2.0, -1.5]]], np.float32)), x,
            auto_padding=[False]), [(1, 4, 3)],
        names=["cntk.ops.convolution_transpose", "cntk.ops.constant"])
op_case("convolution_transpose__map_of_operand_rank_strided",
        lambda C, x: C.convolution_transpose(C.constant(np.array(
            [[[1.0, -0.5, 0.5], [0.25, 2.0, -1.0]]], np.float32)), x, strides=2,
            auto_padding=[False]), [(1, 3, 2)],
        names=["cntk.ops.convolution_transpose", "cntk.ops.constant"])


@cntk_case(names=["cntk.losses.cosine_distance_with_negative_samples",
                  "cntk.sequence.input_variable"])
def cosine_distance_with_negative_samples__sequences(C, r):
    """Of sequences (here three of two steps), the negatives are other steps, counted over all
    sequences time-major; the result keeps the sequence axis."""
    x = C.sequence.input_variable(4, needs_gradient=True)
    y = C.sequence.input_variable(4, needs_gradient=True)
    f = C.cosine_distance_with_negative_samples(x, y, shift=1, num_negative_samples=3)
    feed = {x: r.randn(3, 2, 4), y: r.randn(3, 2, 4)}
    res = {"out": np.asarray(f.eval(feed))}
    value, grads = r.cntk_forward_backward(f, feed, [x, y])
    res["train_out"] = np.asarray(value)
    res["grad_x"], res["grad_y"] = [np.asarray(g) for g in grads]
    return res

# labels_to_graph of samples without a sequence axis: their values (CNTK 2.7 builds and runs it)
op_case("labels_to_graph__samples", lambda C, x: C.labels_to_graph(x), [(3,)],
        grads=False, names=["cntk.ops.labels_to_graph"])


@cntk_case(names=["cntk.axis", "cntk.axis.Axis", "cntk.ops.reduce_sum"])
def axis_module(C, r):
    """``cntk.axis`` is the module of ``Axis`` (CNTK's docstrings write ``C.axis.Axis``)."""
    x = C.input_variable((2, 3))
    data = r.randn(4, 2, 3)
    f = C.reduce_sum(x, axis=[C.axis.Axis.default_batch_axis(), 0])
    return {"out": f.eval({x: data}), "same": C.axis.Axis is C.Axis,
            "name": C.axis.Axis.default_batch_axis().name}


@cntk_case(names=["cntk.sequence.last", "cntk.sequence.reduce_sum", "cntk.layers.Fold"])
def sequence_input_fed_one_array(C, r):
    """A sequence input fed one array of its steps, ``(T, *shape)`` (no list around it): one
    sequence of T steps, as CNTK 2.7 reads it (a list of rows stays a batch of sequences)."""
    s = C.sequence.input_variable(2)
    steps = r.randn(4, 2)
    res = {"last": C.sequence.last(s).eval({s: steps}),
           "sum": C.sequence.reduce_sum(s).eval(steps),
           "scaled": np.asarray((s * 2.0).eval({s: steps})),
           "fold_max": C.layers.Fold(C.element_max)(s)(steps),
           "last_of_rows": C.sequence.last(s).eval({s: steps.tolist()})}
    return res
