"""A CNTK 2.7 user's own programs (round 44): what CNTK 2.7's own tests of its ops
(``cntk/ops/tests``, ``cntk/tests``) still ran into, each run unchanged on CNTK 2.7 and on
``stadyn.compat.cntk``."""

import functools
import warnings

import numpy as np
import scipy.sparse as sp

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome

_returned = functools.partial(outcome, convert=as_returned, raised=as_raised)


@cntk_case(names=["cntk.batch_normalization", "cntk.FreeDimension", "cntk.InferredDimension",
                  "cntk.parameter", "cntk.constant"])
def user44_spatial_batch_normalization_over_free_dimensions(C, r):
    """Spatial ``batch_normalization`` of an image whose height and width are
    ``FreeDimension`` (``non_linear_test.py``'s
    ``test_op_batch_normalization_spatial_shape_inference``): CNTK 2.7 infers its
    ``(InferredDimension,)`` scale, bias and running statistics from the channel axis alone
    (one value per channel), keeps the free axes in the output's shape, and normalizes images
    of any size; where the channel axis is the free one, or the normalization is not spatial,
    the statistics stay ``(-1,)`` and the graph is refused when it runs."""
    res = {}
    for shape, spatial in [((1, C.FreeDimension, C.FreeDimension), True),
                           ((2, C.FreeDimension, C.FreeDimension), True),
                           ((2, C.FreeDimension), True),
                           ((C.FreeDimension, 2, 2), True),
                           ((2, C.FreeDimension), False)]:
        ps = (C.InferredDimension,)
        x = C.input_variable(shape)
        scale, bias = C.parameter(ps, init=1), C.parameter(ps, init=2)
        mean, var = C.constant(3, shape=ps), C.constant(4, shape=ps)
        bn = C.batch_normalization(x, scale, bias, mean, var, spatial,
                                   normalization_time_constant=-1, epsilon=0.01,
                                   running_count=C.constant(2, shape=()))
        got = {"statistics": [list(p.shape) for p in (scale, bias, mean, var)]}
        if spatial and shape[0] > 0:
            got["shape"] = list(bn.shape)
        for side in (3, 2):
            full = tuple(side if d < 0 else d for d in shape)
            data = r.randn(2, *full).astype(np.float32)
            got["eval %d" % side] = _returned(lambda: np.asarray(bn.eval({x: data})))
        res["%s %s" % (shape, spatial)] = got
    return res


def _shown(value):
    """What ``eval`` gave: its type's name and its values (a SciPy matrix made dense)."""
    dense = value.todense() if hasattr(value, "todense") else value
    return {"type": type(value).__name__, "value": np.asarray(dense)}


@cntk_case(names=["cntk.eye_like", "cntk.unpack_batch", "cntk.transpose", "cntk.load_model",
                  "cntk.Function.save"])
def user44_eye_like_sparse_output_through_a_model_file(C, r):
    """``eye_like(..., sparse_output=True)`` (``non_diff_test.py``'s ``test_eye_like``):
    CNTK 2.7 evaluates it to a SciPy CSR matrix, of a batch of vectors, of ``unpack_batch``'s
    ``(FreeDimension, 3)`` (whose shape it keeps) and of its transpose, and a model saved and
    loaded again still gives a CSR matrix (the file's ``EyeLikeOp`` keeps ``OutputSparse``);
    with ``sparse_output=False`` an array."""
    res = {}
    operand = np.array([[2.1, 2., 2.], [4.7, 3., 5.], [5.1, 2., 5.]], np.float32)
    for sparse in (True, False):
        x = C.input_variable(3, needs_gradient=True)
        for kind, y in [("batch", C.eye_like(x, sparse_output=sparse)),
                        ("unpacked", C.eye_like(C.unpack_batch(x), sparse_output=sparse)),
                        ("transposed", C.eye_like(C.transpose(C.unpack_batch(x), (1, 0)),
                                                  sparse_output=sparse))]:
            got = {"eval": _shown(y.eval({x: operand}))}
            if kind != "batch":
                got["shape"] = list(y.shape)
            y.save(kind + ".model")
            loaded = C.load_model(kind + ".model")
            got["loaded"] = _shown(loaded.eval({loaded.arguments[0]: operand}))
            res["%s %s" % (kind, sparse)] = got
    r.touch("cntk.Function.save")
    return res


@cntk_case(names=["cntk.swapaxes"])
def user44_swapaxes_counts_axes_from_the_last(C, r):
    """``swapaxes`` with an axis the sample does not have (``reshaping_test.py``'s
    ``test_swapaxes_0d_1d_operands``): CNTK 2.7 turns Python's axis ``k`` into its static axis
    ``-k-1``; one counted back past the first is a ValueError naming that axis (a scalar's or
    a vector's default axes 0 and 1), one counted on past the last pads the sample with axes
    of 1 in front (``(2, 3)``'s axes -3 and 0: ``(2, 1, 3)``)."""
    res = {}
    for shape, a, b in [((), 0, 1), ((2,), 0, 1), ((2,), 1, 0), ((2,), 0, -2), ((2,), -1, 0),
                        ((2, 3), 0, 2), ((2, 3), -3, 0), ((2, 3), 1, -2), ((2, 3, 4), 0, 5)]:
        x = C.input_variable(shape)
        data = r.randn(2, *shape).astype(np.float32)

        def run(x=x, a=a, b=b, data=data):
            y = C.swapaxes(x, a, b)
            return {"shape": list(y.shape), "value": np.asarray(y.eval({x: data}))}
        res["%s %d %d" % (shape, a, b)] = outcome(
            run, convert=as_returned, raised=functools.partial(as_raised, first_line=True))
    return res


@cntk_case(names=["cntk.one_hot", "cntk.Function.eval", "cntk.Function.grad", "cntk.times",
                  "cntk.Value.is_sparse"])
def user44_values_held_sparse(C, r):
    """``eval``/``grad`` with ``as_numpy=False`` (``sparse_test.py``'s
    ``test_2d_non_sequence_sparse_one_hot``, ``losses_test.py``'s ``test_nce_loss``): CNTK 2.7's
    Value of ``one_hot(..., sparse_output=True)`` is sparse (of sequences too), and such a
    Value fed to a sparse input is taken (its ``times`` with the identity its dense values);
    the gradient of the weight of ``times`` with a sparse input is a sparse Value, a dense
    one where the weight is also used with a dense input."""
    res = {}
    x = C.input_variable((2,))
    oh = C.one_hot(x, 3, sparse_output=True)
    v = oh.eval({x: np.array([[2, 1], [0, 2], [1, 0]], np.float32)}, as_numpy=False)
    res["one_hot"] = {"sparse": v.is_sparse, "shape": list(v.shape)}
    res["dense one_hot"] = C.one_hot(x, 3).eval(
        {x: np.array([[2, 1]], np.float32)}, as_numpy=False).is_sparse
    y = C.input_variable((2, 3), is_sparse=True)
    res["fed to a sparse input"] = _returned(lambda: np.asarray(C.times(
        y, C.constant(np.eye(3, dtype=np.float32))).eval({y: v})))
    s = C.sequence.input_variable((2,))
    w = C.one_hot(s, 3, sparse_output=True).eval(
        {s: [np.array([[2, 1], [0, 2]], np.float32), np.array([[1, 0]], np.float32)]},
        as_numpy=False)
    res["sequences"] = {"sparse": w.is_sparse, "shape": list(w.shape)}
    sx, dx = C.input_variable(4, is_sparse=True), C.input_variable(4)
    E = C.parameter((4, 2), init=1.0)
    rows = np.eye(4, dtype=np.float32)[[0, 2]]
    for kind, z, data in [("sparse", C.times(sx, E), {sx: sp.csr_matrix(rows)}),
                          ("dense", C.times(dx, E), {dx: rows}),
                          ("both", C.times(sx, E) + C.times(dx, E),
                           {sx: sp.csr_matrix(rows), dx: rows})]:
        res["grad " + kind] = z.grad(data, wrt=[E], as_numpy=False).is_sparse
    r.touch("cntk.Function.eval", "cntk.Function.grad", "cntk.Value.is_sparse")
    return res


@cntk_case(names=["cntk.momentum_as_time_constant_schedule", "cntk.learning_parameter_schedule",
                  "cntk.learning_parameter_schedule_per_sample", "cntk.momentum_schedule",
                  "cntk.momentum_schedule_per_sample", "cntk.learning_rate_schedule",
                  "cntk.training_parameter_schedule", "cntk.UnitType"])
def user44_schedule_of_a_number_warns_of_its_epoch_size(C, r):
    """A schedule made of one number with an ``epoch_size`` (``trainer_test.py``'s
    ``test_epochsize_wrn_for_*``): CNTK 2.7 warns once, a RuntimeWarning that the epoch size is
    ignored (``cntk/learners/__init__.py``); of a list, or without ``epoch_size``, nothing."""
    res = {}
    for label, make in [
            ("time constant", lambda: C.momentum_as_time_constant_schedule(1100, epoch_size=1000)),
            ("time constants", lambda: C.momentum_as_time_constant_schedule([1100, 1000],
                                                                            epoch_size=1000)),
            ("parameter", lambda: C.learning_parameter_schedule(0.01, minibatch_size=1,
                                                                epoch_size=1000)),
            ("parameters", lambda: C.learning_parameter_schedule([0.01, 0.02], minibatch_size=1,
                                                                 epoch_size=1000)),
            ("no epoch", lambda: C.learning_parameter_schedule(0.01, minibatch_size=1)),
            ("per sample", lambda: C.learning_parameter_schedule_per_sample(0.01,
                                                                            epoch_size=1000)),
            ("momentum", lambda: C.momentum_schedule(0.9, epoch_size=1000)),
            ("momentum per sample", lambda: C.momentum_schedule_per_sample(0.9, epoch_size=1000)),
            ("rate", lambda: C.learning_rate_schedule(0.1, C.UnitType.sample, epoch_size=1000)),
            ("training", lambda: C.training_parameter_schedule(0.1, epoch_size=1000))]:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            make()
        res[label] = [[w.category.__name__, str(w.message)] for w in seen]
    return res
