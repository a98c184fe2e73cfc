"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 after the twenty-eighth round (a
reviewer's findings): the shape a refused reshape with a free dimension shows; constants made
from NumPy scalars and from arrays given a shape; the Trainer's 'Different minibatch layouts'
in the order of its arguments; sparse sequences given as a list of SciPy csr matrices."""

import functools

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome


# (the built-in type and the first line are compared)
_outcome = functools.partial(outcome, convert=as_returned,
                             raised=functools.partial(as_raised, first_line=True))


@cntk_case(names=["cntk.ops.reshape"],
           note="reshape of an input of 6 to targets with a free dimension (-3) beside an "
                "inferred one (-1) or alone: CNTK 2.7 refuses each, showing -1 as 0 in the "
                "NDShape; Stadyn showed it as -1")
def reshape__free_dimension_target_refused_shows_inferred_as_zero(C, r):
    x = C.input_variable(6)
    return {str(s): _outcome(lambda: list(C.reshape(x, s).shape))
            for s in [(-3, -1), (-3, 3, -1), (-1, -3), (2, -3), (-3,)]}


@cntk_case(names=["cntk.ops.constant", "cntk.variables.Constant"],
           note="constant and Constant of NumPy scalars, Python numbers, 0-d and 1-d arrays and "
                "lists given shape=(3,): CNTK 2.7 refuses a NumPy scalar other than float64 "
                "(NotImplementedError from new_Constant), fills the shape with a Python number "
                "and keeps an array's or a list's own shape; Stadyn took every NumPy scalar "
                "and broadcast every value to the shape")
def constant__numpy_scalars_and_arrays_given_a_shape(C, r, np):
    values = {"np.float32(2)": np.float32(2), "np.int64(2)": np.int64(2),
              "np.float16(2)": np.float16(2), "np.bool_(True)": np.bool_(True),
              "np.float64(2)": np.float64(2), "2.0": 2.0, "2": 2, "True": True,
              "np.array(2.0, float32)": np.array(2.0, np.float32),
              "np.array([2.0], float32)": np.array([2.0], np.float32),
              "[2.0]": [2.0], "[[1.0], [2.0]]": [[1.0], [2.0]], "None": None}
    res = {}
    for make in ("constant", "Constant"):
        for label, v in values.items():
            def made(v=v):
                c = getattr(C, make)(v, shape=(3,))
                return [c.value.tolist(), list(c.shape), np.dtype(c.dtype).name]
            res["%s(%s, shape=(3,))" % (make, label)] = _outcome(made)
        res["%s(np.float32(2))" % make] = _outcome(
            lambda: getattr(C, make)(np.float32(2)).value.tolist())
    return res


def _said(fn):
    try:
        fn()
        return "ran"
    except ValueError as e:
        return str(e).strip().splitlines()[0]


@cntk_case(names=["cntk.Trainer.train_minibatch", "cntk.Trainer.test_minibatch"],
           note="train_minibatch and test_minibatch given sequence inputs s, t, u (one axis) "
                "where t's sequence is longer, in four orders of the data, inputs a, b on a "
                "sequence axis of their own (Axis.new_unique_dynamic_axis('layouts_q')), and "
                "inputs x, y of the batch axis alone given 2 and 3 samples: CNTK 2.7 names t "
                "against s (the Function's argument order) whatever the order of the data, and "
                "the axes as '[#, layouts_q]' and '[#]'; Stadyn named the inputs in the order "
                "of the data")
def trainer__different_minibatch_layouts_in_argument_order(C, r, np):
    r.touch("cntk.sequence.input_variable", "cntk.Axis.new_unique_dynamic_axis",
            "cntk.Trainer.train_minibatch", "cntk.Trainer.test_minibatch")
    f32 = np.float32
    s, t = C.sequence.input_variable(2, name="s"), C.sequence.input_variable(2, name="t")
    u = C.sequence.input_variable(2, name="u")
    w = C.parameter((2, 2), init=1.0)
    sl = C.sequence.reduce_sum(C.reduce_sum(C.times(s, w) * t * u))
    tr = C.Trainer(sl, (sl, sl), C.sgd(sl.parameters, C.learning_parameter_schedule(0.1)))
    two, three = [np.ones((2, 2), f32)], [np.ones((3, 2), f32)]
    res = {}
    for order in ("stu", "tsu", "uts", "sut"):
        data = {v: (three if v is t else two) for v in [{"s": s, "t": t, "u": u}[c]
                                                         for c in order]}
        res["train, data in order " + order] = _said(lambda: tr.train_minibatch(data))
        res["test, data in order " + order] = _said(lambda: tr.test_minibatch(data))
    q = C.Axis.new_unique_dynamic_axis("layouts_q")
    a = C.sequence.input_variable(2, sequence_axis=q, name="a")
    b = C.sequence.input_variable(2, sequence_axis=q, name="b")
    lq = C.sequence.reduce_sum(C.reduce_sum(C.times(a, w) * b))
    trq = C.Trainer(lq, (lq, lq), C.sgd(lq.parameters, C.learning_parameter_schedule(0.1)))
    res["axis q"] = _said(lambda: trq.train_minibatch({b: three, a: two}))
    x, y = C.input_variable(2, name="x"), C.input_variable(2, name="y")
    lx = C.reduce_sum(C.times(x, w) * y)
    trx = C.Trainer(lx, (lx, lx), C.sgd(lx.parameters, C.learning_parameter_schedule(0.1)))
    res["batch axis, y first"] = _said(lambda: trx.train_minibatch(
        {y: np.ones((3, 2), f32), x: np.ones((2, 2), f32)}))
    res["batch axis, lists"] = _said(lambda: trx.train_minibatch(
        {x: [np.ones(2, f32)] * 2, y: [np.ones(2, f32)] * 3}))
    return res


@cntk_case(names=["cntk.Trainer.train_minibatch", "cntk.Function.eval"],
           note="a sparse sequence input fed a list of SciPy csr matrices (one per sequence) "
                "beside a dense sequence input: CNTK 2.7 trains on it, and an eval of the "
                "sparse input times a weight gives a list of one array per sequence; Stadyn's "
                "Trainer raised 'setting an array element with a sequence'")
def trainer__sparse_sequences_as_a_list_of_csr_matrices(C, r, np):
    import scipy.sparse as sp
    r.touch("cntk.sequence.input_variable", "cntk.Trainer.train_minibatch", "cntk.Function.eval")
    f32 = np.float32
    t = C.sequence.input_variable(2, name="t")
    u = C.sequence.input_variable(3, is_sparse=True, name="u")
    w = C.parameter((3, 2), init=1.0)
    loss = C.sequence.reduce_sum(C.times(u, w) * t)
    tr = C.Trainer(loss, (loss, loss), C.sgd(loss.parameters, C.learning_parameter_schedule(0.1)))
    one = [sp.csr_matrix(np.eye(3, dtype=f32)[:2])]
    two = [sp.csr_matrix(np.eye(3, dtype=f32)[:2]), sp.csr_matrix(np.eye(3, dtype=f32)[1:])]
    res = {"train one": _said(lambda: tr.train_minibatch({u: one, t: [np.ones((2, 2), f32)]})),
           "loss": tr.previous_minibatch_loss_average,
           "train two": _said(lambda: tr.train_minibatch(
               {u: two, t: [np.ones((2, 2), f32), np.arange(4, dtype=f32).reshape(2, 2)]})),
           "loss after": tr.previous_minibatch_loss_average,
           "w": w.value.tolist()}
    for label, data in (("one", one), ("two", two)):
        out = C.times(u, w).eval({u: data})
        res["eval " + label] = [type(out).__name__, [np.asarray(o).tolist() for o in out]]
    return res
