"""A CNTK 2.7 user's own programs (round 43), from CNTK 2.7's own Python tests of its ops,
losses and metrics (``cntk/ops/tests``, ``cntk/losses/tests``, ``cntk/metrics/tests``, whose
``_test_binary_op`` applies each op to an input and a constant as well as to two inputs): the
mismatches each ran into, each run unchanged on CNTK 2.7 and on ``stadyn.compat.cntk``."""

import functools

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome

_returned = functools.partial(outcome, convert=as_returned, raised=as_raised)


def _with_a_constant(C, fn, out, target, **kw):
    """``fn`` of two inputs, of an input and a constant target, and of a constant output and
    an input target (``metrics_test.py``'s three ways), each evaluated on one sample."""
    z = C.input_variable(out.shape, needs_gradient=True)
    t = C.input_variable(target.shape, needs_gradient=True)
    return {
        "inputs": _returned(lambda: np.asarray(fn(z, t, **kw).eval(
            {z: out[None], t: target[None]}))),
        "constant target": _returned(lambda: np.asarray(fn(z, C.constant(target), **kw).eval(
            {z: out[None]}))),
        "constant output": _returned(lambda: np.asarray(fn(C.constant(out), t, **kw).eval(
            {t: target[None]}))),
    }


@cntk_case(names=["cntk.classification_error", "cntk.metrics.classification_error",
                  "cntk.constant"])
def user43_classification_error_of_a_constant(C, r):
    """``classification_error`` of an input and a constant (``metrics_test.py``): of matrix
    samples ``(R, C)`` along the default axis (CNTK 2.7's ``TransposeTimes``, the constant
    multiplied with every sample; a constant output's hardmax is each row's) CNTK 2.7 gives
    ``(R, R)`` per sample, and along ``axis=1`` of ``(3, 4)`` samples the share of wrong
    rows (1/3 here), for a constant output too."""
    res = {}
    o = np.array([[1., 2., 3., 4.]], np.float32)
    for i, t in enumerate([[[1., 0., 0., 0.]], [[0., 0., 0., 1.]]]):
        res["one row %d" % i] = _with_a_constant(C, C.classification_error, o,
                                                 np.array(t, np.float32))
    o2 = np.array([[1., 2., 3., 4.], [6., 2., 7., 4.]], np.float32)
    t2 = np.array([[0., 0., 1., 0.], [0., 0., 0., 1.]], np.float32)
    res["two rows"] = _with_a_constant(C, C.classification_error, o2, t2)
    res["two rows cross entropy"] = _with_a_constant(C, C.cross_entropy_with_softmax, o2, t2)
    o3 = np.array([[1., 2., 3., 4.], [6., 2., 7., 4.], [1., 5., 3., 4.]], np.float32)
    t3 = np.array([[0., 1., 0., 0.], [0., 0., 1., 0.], [0., 1., 0., 0.]], np.float32)
    res["axis 1"] = _with_a_constant(C, C.classification_error, o3, t3, axis=1)
    res["axis 1 soft"] = _with_a_constant(
        C, C.classification_error, o3,
        np.array([[0., 0., .5, .5], [0., 0., 1., 0.], [0., 1., 0., 0.]], np.float32), axis=1)
    return res


@cntk_case(names=["cntk.hardmax", "cntk.classification_error", "cntk.cross_entropy_with_softmax"])
def user43_float64_hardmax_and_matrix_metrics(C, r):
    """In double precision (``metrics_test.py``'s ``double`` runs): ``hardmax`` of a float64
    input is float64 in CNTK 2.7, and ``classification_error`` of float64 ``(1, 4)`` samples
    (its ``TransposeTimes`` of that hardmax) is computed, with the target's gradient ``-1`` at
    the output's largest value."""
    res = {}
    x = C.input_variable(3, dtype=np.float64)
    h = C.hardmax(x).eval({x: np.array([[1., 3., 2.]])})
    res["hardmax"] = {"value": np.asarray(h), "dtype": str(np.asarray(h).dtype)}
    o = np.array([[1., 2., 3., 4.]])
    t = np.array([[0., 0., 1., 0.]])
    z = C.input_variable((1, 4), dtype=np.float64, needs_gradient=True)
    y = C.input_variable((1, 4), dtype=np.float64, needs_gradient=True)
    for name, fn in [("error", C.classification_error), ("cross entropy",
                                                          C.cross_entropy_with_softmax)]:
        for kind in ["inputs", "constant target", "constant output"]:
            if kind == "inputs":
                f, a = fn(z, y), {z: o[None], y: t[None]}
            elif kind == "constant target":
                f, a = fn(z, C.constant(t)), {z: o[None]}
            else:
                f, a = fn(C.constant(o), y), {y: t[None]}

            def run(f=f, a=a):
                v = np.asarray(f.eval(a))
                g = f.grad(a, wrt=[list(a)[-1]])
                return {"value": v, "dtype": str(v.dtype), "grad": np.asarray(g)}
            res["%s %s" % (name, kind)] = _returned(run)
    return res


@cntk_case(names=["cntk.times", "cntk.TIMES_REDUCE_SEQUENCE_AXIS_WITHOUT_INFERRED_INPUT_RANK",
                  "cntk.sequence.input_variable"])
def user43_times_reducing_the_sequence_axis(C, r):
    """``times(l, r, infer_input_rank_to_map=TIMES_REDUCE_SEQUENCE_AXIS_WITHOUT_INFERRED_
    INPUT_RANK)`` of two sequences (``linear_test.py``'s ``test_op_times_reduce_sequence_
    axis``): each sequence's step products summed, one value per sequence with the batch
    axis alone, as ``sequence.reduce_sum(times(l, r))``; with the gradient of ``l``."""
    res = {}
    dim = 10
    seq = [[0, 1, 2], [3], [4, 5, 6, 7, 8, 9]]
    right = C.sequence.input_variable(dim, is_sparse=True)
    left = C.sequence.input_variable(1, needs_gradient=True)
    left_data = [np.ones((n, 1), np.float32) * (i + 1) for i, n in enumerate([3, 1, 6])]
    f = C.times(left, right,
                infer_input_rank_to_map=C.TIMES_REDUCE_SEQUENCE_AXIS_WITHOUT_INFERRED_INPUT_RANK)
    res["axes"] = [a.name for a in f.dynamic_axes]
    res["shape"] = list(f.shape)
    res["value"] = np.asarray(f.eval({left: left_data, right: C.Value.one_hot(seq, dim)}))
    g = f.grad({left: left_data, right: C.Value.one_hot(seq, dim)}, wrt=[left])
    res["grad"] = [np.asarray(s) for s in g]
    dense = C.sequence.input_variable((2, 3))
    d = r.randn(2, 4, 2, 3).astype(np.float32)
    lv = r.randn(2, 4, 2).astype(np.float32)
    lin = C.sequence.input_variable(2)
    res["dense"] = np.asarray(C.times(
        lin, dense, infer_input_rank_to_map=C.TIMES_REDUCE_SEQUENCE_AXIS_WITHOUT_INFERRED_INPUT_RANK
    ).eval({lin: lv, dense: d}))
    return res


@cntk_case(names=["cntk.reshape", "cntk.Axis"])
def user43_reshape_up_to_a_new_leading_axis(C, r):
    """``reshape(x, shape, begin_axis, end_axis)`` with ``Axis.new_leading_axis()``
    (``reshaping_test.py``'s ``test_op_reshape_subshape``): as an end axis it is the place
    after the sample's last axis ((2, 3) from 0 to it: the whole sample), as both axes a new
    axis there ((2, 3) given (1, 1): (2, 3, 1, 1)); with the gradient of ``x * x``."""
    res = {}
    A = C.Axis
    for i, (s, rep, b, e) in enumerate([
            ((2, 3), (3, 2), 0, A.new_leading_axis()),
            ((2, 3), (1, 1), A.new_leading_axis(), A.new_leading_axis()),
            ((2, 3, 4), (4, 3), 1, A.new_leading_axis()),
            ((2, 3, 4), (6,), A.new_leading_axis(), A.new_leading_axis()),
            ((2, 3), (3, 2), A(0), A.new_leading_axis())]):
        a = C.input_variable(s, needs_gradient=True)
        x = np.arange(np.prod(s), dtype=np.float32).reshape((1,) + s)

        def run(a=a, rep=rep, b=b, e=e, x=x):
            y = C.reshape(a, rep, b, e)
            z = y * y
            return {"shape": list(y.shape), "value": np.asarray(y.eval({a: x})),
                    "grad": np.asarray(z.grad({a: x}, wrt=[a]))}
        res[str(i)] = _returned(run)
    return res


@cntk_case(names=["cntk.cross_entropy_with_softmax", "cntk.losses.cross_entropy_with_softmax"])
def user43_cross_entropy_along_an_axis_of_a_constant_output(C, r):
    """``cross_entropy_with_softmax(C.constant(z), t, axis=1)`` of a constant output and an
    input target (``losses_test.py``'s ``test_op_cross_entropy_with_soft_max_and_axis``):
    CNTK 2.7 gives each sample's row-wise cross entropy and the target's gradient ``-z``;
    the other two ways (two inputs, a constant target) for comparison."""
    res = {}
    for i, (o, t) in enumerate([([[2., 1., 1., 4.]], [[0., .4, .3, .3]]),
                                ([[1., 2., 3., 4.], [1., 7., 3., 5.]],
                                 [[0., 0., 0., 1.], [0., 1., 0., 0.]])]):
        o, t = np.array(o, np.float32), np.array(t, np.float32)
        z = C.input_variable(o.shape, needs_gradient=True)
        y = C.input_variable(t.shape, needs_gradient=True)
        for kind in ["inputs", "constant target", "constant output"]:
            if kind == "inputs":
                f, a = C.cross_entropy_with_softmax(z, y, axis=1), {z: o[None], y: t[None]}
            elif kind == "constant target":
                f, a = C.cross_entropy_with_softmax(z, C.constant(t), axis=1), {z: o[None]}
            else:
                f, a = C.cross_entropy_with_softmax(C.constant(o), y, axis=1), {y: t[None]}

            def run(f=f, a=a):
                return {"value": np.asarray(f.eval(a)),
                        "grad": np.asarray(f.grad(a, wrt=[list(a)[-1]]))}
            res["%d %s" % (i, kind)] = _returned(run)
    return res


@cntk_case(names=["cntk.argmax", "cntk.argmin"])
def user43_float64_argmax(C, r):
    """``argmax``/``argmin`` of a float64 input are float64 in CNTK 2.7, so adding the input
    back (``stop_gradient_test.py``'s ``test_op_reduce_no_back_prop_ops``, double runs) is
    made and evaluated; float32 stays float32."""
    res = {}
    for dt in [np.float32, np.float64]:
        x = C.input_variable((2, 2), dtype=dt, needs_gradient=True)
        d = np.array([[[1., 2.], [4., 5.]]], dt)
        for fn in [C.argmax, C.argmin]:
            for axis in [0, 1, None]:
                y = fn(x, axis=axis)

                def run(y=y, x=x, d=d):
                    v = np.asarray(y.eval({x: d}))
                    s = np.asarray((y + x).eval({x: d}))
                    return {"value": v, "dtype": str(v.dtype), "plus": s,
                            "plus dtype": str(s.dtype)}
                res["%s %s %s" % (dt.__name__, fn.__name__, axis)] = _returned(run)
    return res


@cntk_case(names=["cntk.batch_normalization", "cntk.parameter", "cntk.constant",
                  "cntk.InferredDimension"])
def user43_batch_normalization_infers_its_statistics(C, r):
    """``batch_normalization`` (``non_linear_test.py``): scale, bias and running statistics
    of shape ``(InferredDimension,)`` take ``(channels,)`` when spatial and the sample's
    size when not, and it evaluates; other inferred shapes stay unresolved (CNTK 2.7's
    ValueError when run). Without ``running_count`` CNTK 2.7 warns (a ``Warning``)."""
    import warnings
    res = {}
    d = np.arange(18, dtype=np.float32).reshape(1, 2, 3, 3)
    for spatial, ps in [(True, (C.InferredDimension,)), (False, (C.InferredDimension,)),
                        (True, (C.InferredDimension, 1, 1))]:
        i = C.input_variable((2, 3, 3))
        params = [C.parameter(ps, init=1), C.parameter(ps, init=2), C.constant(3, shape=ps),
                  C.constant(4, shape=ps)]
        bn = C.batch_normalization(i, *params, spatial=spatial, normalization_time_constant=-1,
                                   epsilon=0.01, running_count=C.constant(2, shape=()))
        key = "%s %s" % (spatial, list(ps))
        res[key] = {"shapes": [list(p.shape) for p in params],
                    "eval": _returned(lambda bn=bn, i=i: np.asarray(bn.eval({i: d})))}
    i = C.input_variable(2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        C.batch_normalization(i, C.parameter(2, init=1), C.parameter(2, init=0),
                              C.constant(0, shape=2), C.constant(1, shape=2), False)
    res["warned"] = [str(w.category.__name__) + ": " + str(w.message) for w in caught
                     if "running_count" in str(w.message)]
    return res


@cntk_case(names=["cntk.times", "cntk.FreeDimension", "cntk.input_variable"])
def user43_times_of_free_dimensions(C, r):
    """``times`` of two inputs with free dimensions (``free_static_axis_test.py``'s
    ``test_free_static_axis_times_free_static_axis``): each sample pair's tensor product,
    the output's axes free where an operand's were -- ``(F, F)`` times ``(F, F)`` is
    ``(-3, -3)``, ``(F, F, F)`` times ``(F, F, F)`` with ``output_rank`` 1 is ``[[[332]]]``
    in CNTK 2.7; a free reduced axis ((2, F) times (F, 3)); a free output axis."""
    res = {}
    Fd = C.FreeDimension
    for i, (orank, xs, xd, ys, yd) in enumerate([
            (1, (Fd, Fd), np.asarray([[[0.5, 0.2], [0.35, 0.75]]], np.float32), (Fd, Fd),
             np.asarray([[[0.7, 0.3], [0.7, 0.3]]], np.float32)),
            (1, (Fd, Fd, Fd), np.asarray([[[[2.5, 4.5], [10.5, 12.5]]]], np.float32),
             (Fd, Fd, Fd), np.asarray([[[[5.], [13.]], [[7.], [15.]]]], np.float32)),
            (2, (Fd, Fd, Fd), np.asarray([[[[2.5, 4.5], [10.5, 12.5]]]], np.float32),
             (Fd, Fd, Fd), np.asarray([[[[5.], [13.]], [[7.], [15.]]]], np.float32)),
            (1, (Fd, 2), r.rand(2, 3, 2).astype(np.float32), (2, 3),
             r.rand(2, 2, 3).astype(np.float32)),
            (1, (2, Fd), r.rand(2, 2, 4).astype(np.float32), (Fd, 3),
             r.rand(2, 4, 3).astype(np.float32)),
            (1, (2, 4), r.rand(2, 2, 4).astype(np.float32), (4, Fd),
             r.rand(2, 4, 5).astype(np.float32))]):
        x, y = C.input_variable(xs), C.input_variable(ys)

        def run(x=x, y=y, orank=orank, xd=xd, yd=yd):
            t = C.times(x, y, output_rank=orank)
            return {"shape": list(t.shape), "value": np.asarray(t.eval({x: xd, y: yd}))}
        res[str(i)] = _returned(run)
    return res


@cntk_case(names=["cntk.splice"])
def user43_splice_along_an_axis_before_the_sample(C, r):
    """``splice(a, b, axis=-2)`` of samples of rank 1 (``reshaping_test.py``'s
    ``test_op_splice``): CNTK 2.7 gives the operands leading axes of 1 up to the axis and
    joins them there ((1,) and (1,) along -2: (2, 1); along -3: (2, 1, 1)); a positive axis
    past the rank is its ValueError."""
    res = {}
    for s1, s2, ax in [((1,), (1,), -2), ((1,), (1,), -3), ((2, 2), (2, 2), -3),
                       ((2, 2), (3, 2), -2), ((1,), (1,), 1)]:
        a, b = C.input_variable(s1, needs_gradient=True), C.input_variable(s2)

        def run(a=a, b=b, s1=s1, s2=s2, ax=ax):
            y = C.splice(a, b, axis=ax)
            d = {a: np.arange(np.prod(s1), dtype=np.float32).reshape((1,) + s1),
                 b: 10 + np.arange(np.prod(s2), dtype=np.float32).reshape((1,) + s2)}
            return {"shape": list(y.shape), "value": np.asarray(y.eval(d)),
                    "grad": np.asarray(y.grad(d, wrt=[a]))}
        res["%s %s" % (list(s1), ax)] = _returned(run)
    return res


@cntk_case(names=["cntk.sequence.gather", "cntk.sequence.is_last", "cntk.sequence.is_first",
                  "cntk.sequence.input_variable"])
def user43_gather_of_one_step_each(C, r):
    """``sequence.gather(x, c, new_sequence_axis_typeinfo=(0, 1))`` (``sequence_test.py``'s
    ``test_op_gather_derived_dynamic_axes_equivalence``): one step per sequence, so CNTK 2.7
    deletes the sequence axis (dynamic axes: the batch axis alone), and two such gathers of
    different inputs add up: ``[[3.]]`` for 1 and 2."""
    res = {}
    a = C.sequence.input_variable(2, name="a")
    d = [np.array([[1., 2.], [3., 4.]], np.float32), np.array([[5., 6.]], np.float32)]
    for which, cond in [("last", C.sequence.is_last), ("first", C.sequence.is_first)]:
        g = C.sequence.gather(a, cond(a), new_sequence_axis_typeinfo=(0, 1))
        res[which] = {"axes": [ax.name for ax in g.dynamic_axes], "shape": list(g.shape),
                      "value": _returned(lambda g=g: np.asarray(g.eval({a: d}))),
                      "twice": _returned(lambda g=g: np.asarray((g * 2).eval({a: d})))}
    x = C.sequence.input_variable(1, name="x")
    y = C.sequence.input_variable(1, name="y")
    z = C.sequence.gather(x, C.sequence.is_last(x), new_sequence_axis_typeinfo=(0, 1)) + \
        C.sequence.gather(y, C.sequence.is_last(y), new_sequence_axis_typeinfo=(0, 1))
    res["sum axes"] = [ax.name for ax in z.dynamic_axes]
    res["sum"] = _returned(lambda: np.asarray(z.eval(
        {x: np.array([[[1.]]], np.float32), y: np.array([[[2.]]], np.float32)})))
    return res


@cntk_case(names=["cntk.pow"])
def user43_pow_of_a_negative_base(C, r):
    """The gradient of ``pow(x, e)`` with respect to ``e`` where ``x <= 0``
    (``non_linear_test.py``'s ``test_op_neg_pow``): 0 in CNTK 2.7, not ``y * log(x)``'s NaN;
    of the base and the values as before. Two inputs, and each side a constant."""
    res = {}
    x = C.input_variable(6, needs_gradient=True)
    e = C.input_variable(6, needs_gradient=True)
    xd = np.array([[-1., -2., -3., -4., 0., 2.]], np.float32)
    ed = np.array([[2., -3., 3., -2., 2., .5]], np.float32)
    y = C.pow(x, e)
    res["value"] = np.asarray(y.eval({x: xd, e: ed}))
    g = y.grad({x: xd, e: ed}, wrt=[x, e])
    res["grad base"] = np.asarray(g[x])
    res["grad exponent"] = np.asarray(g[e])
    res["constant exponent"] = np.asarray(C.pow(x, C.constant(ed[0])).grad({x: xd}, wrt=[x]))
    res["constant base"] = np.asarray(C.pow(C.constant(xd[0]), e).grad({e: ed}, wrt=[e]))
    return res


@cntk_case(names=["cntk.gather", "cntk.constant", "cntk.parameter"])
def user43_float64_gather(C, r):
    """``gather`` of a float64 table (``reshaping_test.py``'s ``test_gather_op_with_axis``,
    double runs): CNTK 2.7 picks the rows (or, along ``axis=1``, the columns) as float64."""
    res = {}
    for dt in [np.float32, np.float64]:
        data = np.array([[1.0, 1.2, 1.9], [2.3, 3.4, 3.9], [4.5, 5.7, 5.9]]).astype(dt)
        ids = np.array([0, 2]).astype(dt)
        for ax in [None, 1]:
            def run(data=data, ids=ids, ax=ax):
                x, i = C.constant(data), C.constant(ids)
                y = C.gather(x, i) if ax is None else C.gather(x, i, axis=ax)
                z = np.asarray(y.eval({}))
                return {"value": z, "dtype": str(z.dtype)}
            res["%s %s" % (dt.__name__, ax)] = _returned(run)
        i = C.input_variable(2, dtype=dt)
        g = C.gather(C.parameter((3, 3), init=data), i)
        res["%s input" % dt.__name__] = _returned(
            lambda g=g, i=i, dt=dt: np.asarray(g.eval({i: np.array([[2, 0]], dt)})))
    return res


@cntk_case(names=["cntk.times", "cntk.sequence.input_variable"])
def user43_one_hot_index_past_the_classes(C, r):
    """``Value.one_hot`` of an index not below ``num_classes`` (``trainer_test.py``'s
    ``test_eval_one_hot_bad``): CNTK 2.7's ValueError ('one-hot index value (11) exceeds
    vocabulary size (10)'); the index ``num_classes`` itself too (it was a row of zeros);
    a negative index its NotImplementedError; good indices as before."""
    res = {}
    for b, d in [([[11]], 10), ([[0, 1]], 1), ([[10]], 10), ([[-1]], 3), ([[2, 0]], 3)]:
        def run(b=b, d=d):
            v = C.Value.one_hot(b, d)
            x = C.sequence.input_variable(d, is_sparse=True)
            return np.asarray(C.times(x, np.eye(d, dtype=np.float32)).eval({x: v}))
        res["%s %d" % (b, d)] = _returned(run)
    return res
