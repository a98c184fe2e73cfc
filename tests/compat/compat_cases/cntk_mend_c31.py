"""Review C's findings on CNTK's core nodes (mendC31): batch normalisation with a negative
normalisation time constant (corpus-level running statistics, TrainingNodes.h:2603-2611) over
minibatches of changing size, from ``C.batch_normalization`` and ``C.layers.BatchNormalization``;
``cosine_distance_with_negative_samples`` with shift 0, with no negatives, and of sequences of
unequal lengths (CNTK packs them into parallel streams; the negatives are other columns of
that packed matrix)."""

import numpy as np

from compat_harness import cntk_case
from compat_cases.cntk_ops import op_case

# LinearAlgebraNodes.h:1790-1793 checks only that the shift and the count are not negative
op_case("cosine_distance_with_negative_samples__shift_0",
        lambda C, x, y: C.cosine_distance_with_negative_samples(x, y, 0, 2), [(3,), (3,)],
        names=["cntk.losses.cosine_distance_with_negative_samples"])
op_case("cosine_distance_with_negative_samples__no_negatives",
        lambda C, x, y: C.cosine_distance_with_negative_samples(x, y, 1, 0), [(3,), (3,)],
        names=["cntk.losses.cosine_distance_with_negative_samples"])


def _ragged(C, r, lengths, shift, count):
    x = C.sequence.input_variable(3, needs_gradient=True)
    y = C.sequence.input_variable(3, needs_gradient=True)
    f = C.cosine_distance_with_negative_samples(x, y, shift, count)
    feed = {x: [r.randn(n, 3).astype(np.float32) for n in lengths],
            y: [r.randn(n, 3).astype(np.float32) for n in lengths]}
    res = {}
    for k, s in enumerate(f.eval(feed)):
        res["out %d" % k] = np.asarray(s)
    # the gradients of the outputs' sum (CNTK 2.7's backward refuses a ragged root gradient)
    r.touch("cntk.Function.grad")
    grads = f.grad(feed, wrt=[x, y])
    for name, g in zip(("grad_x", "grad_y"), (grads[x], grads[y])):
        for k, s in enumerate(g):
            res["%s %d" % (name, k)] = np.asarray(s)
    return res


@cntk_case(names=["cntk.losses.cosine_distance_with_negative_samples",
                  "cntk.sequence.input_variable"])
def cosine_distance_with_negative_samples__ragged(C, r):
    """Sequences of lengths 3, 1 and 2, then 4, 1, 1 and 2: the columns are those of CNTK's
    packed matrix (sequences sharing streams), the gaps included."""
    res = {}
    for lengths, shift, count in (((3, 1, 2), 1, 2), ((4, 1, 1, 2), 2, 3)):
        for key, v in _ragged(C, r, lengths, shift, count).items():
            res["%s %s" % (lengths, key)] = v
    return res


def _train(r, f, feed):
    """``f``'s value in a training forward (one that keeps state for a backward)."""
    r.touch("cntk.Function.forward", "cntk.Function.output")
    return f.forward(feed, [f.output], set([f.output]))[1][f.output]


@cntk_case(names=["cntk.ops.batch_normalization", "cntk.ops.constant", "cntk.ops.parameter"])
def batch_normalization__corpus_statistics(C, r):
    """``normalization_time_constant=-1``: the running mean and variance are averages over
    every sample seen, each minibatch weighted ``M / (M + count)`` (TrainingNodes.h:2610-2611);
    minibatches of 3, 2 and 4 samples, then inference on the running statistics."""
    mean = C.constant(np.array([0.5, 0.0, -0.5, 1.0], np.float32))
    var = C.constant(np.array([2.0, 1.0, 0.5, 4.0], np.float32))
    count = C.constant(np.zeros((), np.float32))
    v = C.input_variable(4)
    out = C.batch_normalization(v, C.parameter(init=r.randn(4).astype(np.float32)),
                                C.parameter(init=r.randn(4).astype(np.float32)), mean, var,
                                spatial=False, normalization_time_constant=-1, epsilon=1e-5,
                                running_count=count)
    r.touch("cntk.Constant.value")
    res = {}
    for k, n in enumerate((3, 2, 4)):
        x = r.randn(n, 4).astype(np.float32)
        res["train %d" % k] = _train(r, out, {v: x})
        res["mean %d" % k], res["var %d" % k] = mean.value, var.value
        res["count %d" % k] = float(count.value)
    res["inference"] = out.eval({v: r.randn(2, 4).astype(np.float32)})
    return res


@cntk_case(names=["cntk.layers.BatchNormalization"])
def BatchNormalization__corpus_statistics(C, r):
    """The layer with ``normalization_time_constant=-1``, spatial over 2 channels, trained on
    minibatches of 3, 1 and 2 images; then inference, which uses the corpus-level statistics."""
    x = C.input_variable((2, 2, 2))
    z = C.layers.BatchNormalization(map_rank=1, normalization_time_constant=-1)(x)
    r.touch("cntk.Function.eval")
    res = {}
    for k, n in enumerate((3, 1, 2)):
        res["train %d" % k] = _train(r, z, {x: r.randn(n, 2, 2, 2).astype(np.float32)})
    res["inference"] = z.eval({x: r.randn(2, 2, 2, 2).astype(np.float32)})
    return res


@cntk_case(names=["cntk.losses.cosine_distance_with_negative_samples"])
def cosine_distance_with_negative_samples__zero_sample(C, r):
    """A zero sample of each operand (simpbs31): CNTK clips a zero norm's inverse at 1/1e-30
    (AssignElementInverseOf, CPUMatrixImpl.h:2213-2230; EPS_IN_INVERSE, CommonMatrix.h:33), so a
    zero column's cosine with a non-zero one is 0 (two zero columns would be NaN in float: 1e60
    overflows; these shifts keep the two zero samples apart)."""
    x = C.input_variable(3)
    y = C.input_variable(3)
    a = np.array([[1, 2, 3], [0, 0, 0], [4, 5, 6], [1, 0, 1]], np.float32)
    b = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 0], [2, 1, 0]], np.float32)
    res = {}
    for shift, count in ((2, 1), (3, 2)):
        f = C.cosine_distance_with_negative_samples(x, y, shift, count)
        res["shift %d count %d" % (shift, count)] = np.asarray(f.eval({x: a, y: b}))
    return res
