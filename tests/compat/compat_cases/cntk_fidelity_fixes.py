"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7: the order ``gather`` lists its
operands in, ``to_batch`` of an input that has the batch axis already, the schedules'
attributes, and ``binary_cross_entropy`` at outputs of exactly 0 and 1."""

import numpy as np

from compat_harness import cntk_case
from compat_cases.cntk_ops import op_case
from compat_outcomes import builtin_type, outcome


@cntk_case(names=["cntk.ops.gather", "cntk.Function.inputs", "cntk.Function.arguments",
                  "cntk.Function.root_function"],
           note="CNTK 2.7 lists gather's reference before its indices (Stadyn listed the "
                "indices first)")
def gather__operand_order(C, r):
    r.touch("cntk.Function.inputs", "cntk.Function.arguments", "cntk.Function.root_function",
            "cntk.Function.eval")
    ref = C.input_variable((4, 3), name="ref")
    idx = C.input_variable((2,), name="idx")
    table = C.constant(np.arange(12, dtype=np.float32).reshape(4, 3), name="table")
    res = {}
    for label, g in (("inputs", C.gather(ref, idx)), ("named", C.gather(ref, idx, name="g")),
                     ("constant", C.gather(table, idx)),
                     ("in a graph", C.reduce_sum(C.gather(ref, idx)) * C.gather(table, idx))):
        res[label + " inputs"] = [v.name for v in g.root_function.inputs]
        res[label + " arguments"] = [v.name for v in g.arguments]
    res["value"] = C.gather(table, idx).eval({idx: np.array([[3, 1], [0, 2]], np.float32)})
    return res


@cntk_case(names=["cntk.ops.to_batch"],
           note="CNTK 2.7 refuses to_batch of a value that has the batch axis already "
                "(RuntimeError 'ToBatch: the input should not have dynamic axis.'); Stadyn "
                "took it")
def to_batch__of_a_batched_input(C, r):
    res = {}
    for label, make in (("input", lambda: C.input_variable((2, 3))),
                        ("op of an input", lambda: C.input_variable((2, 3)) * 2.0),
                        ("sequence", lambda: C.sequence.input_variable(3))):
        res[label] = outcome(lambda: list(C.to_batch(make()).shape), raised=builtin_type)
    x = C.input_variable((2, 3))
    u = C.to_batch(C.unpack_batch(x))
    r.touch("cntk.Function.eval")
    res["after unpack_batch"] = u.eval({x: r.randn(2, 2, 3)})
    return res


def _probability_with_ends(r, shape):
    """Probabilities with exact 0s and 1s among them."""
    p = r.rand(*shape, low=0.05, high=0.95)
    flat = p.reshape(-1)
    flat[::5] = 0.0
    flat[2::5] = 1.0
    return p.astype(np.float32)


def _targets(r, shape):
    t = r.rand(*shape)
    t.reshape(-1)[:4] = [1.0, 0.0, 0.0, 1.0]
    return t.astype(np.float32)


op_case("binary_cross_entropy__ends", lambda C, o, t: C.binary_cross_entropy(o, t),
        [(5,), (5,)], data=[_probability_with_ends, _targets],
        names=["cntk.ops.binary_cross_entropy"],
        note="CNTK 2.7 computes -(t log(1e-6 + o) + (1 - t) log(1 + 1e-6 - o)): at an output "
             "of 0 or 1 the loss is 13.8 and the gradient 1e6, where Stadyn clamped at the "
             "smallest float (87.3, gradient 0)")
op_case("binary_cross_entropy__matrix", lambda C, o, t: C.binary_cross_entropy(o, t),
        [(2, 3), (2, 3)], data=[_probability_with_ends, _targets],
        names=["cntk.ops.binary_cross_entropy"])


@cntk_case(names=["cntk.learning_parameter_schedule",
                  "cntk.learning_parameter_schedule_per_sample",
                  "cntk.training_parameter_schedule", "cntk.learning_rate_schedule",
                  "cntk.momentum_schedule", "cntk.momentum_schedule_per_sample",
                  "cntk.momentum_as_time_constant_schedule", "cntk.UnitType"],
           note="what a CNTK 2.7 schedule shows besides its values: is_sweep_based() (made "
                "without an epoch_size), full_data_sweep and ignored_minibatch_size (0), "
                "minibatch_size and is_minibatch_size_explicitly_specified; Stadyn had no "
                "is_sweep_based, full_data_sweep or ignored_minibatch_size",
           known={"epoch_size": "Stadyn's native Schedule (stadyn/schedules/_schedule.py) "
                                "has an epoch_size property, which its ScheduledSolver reads; "
                                "CNTK 2.7's schedule has no such attribute (AttributeError)"})
def schedules__attributes(C, r):
    made = {
        "constant": C.learning_parameter_schedule(0.1),
        "list by 10": C.learning_parameter_schedule([0.1, 0.2], epoch_size=10),
        "list by sweeps": C.learning_parameter_schedule([0.1, 0.2]),
        "pairs by 4": C.learning_parameter_schedule([(2, 0.1), (1, 0.2)], epoch_size=4),
        "per minibatch of 32": C.learning_parameter_schedule(0.1, minibatch_size=32),
        "per sample by 5": C.learning_parameter_schedule_per_sample([0.1, 0.2], epoch_size=5),
        "momentum": C.momentum_schedule(0.9),
        "momentum by 7": C.momentum_schedule([0.9, 0.5], epoch_size=7),
        "momentum per sample": C.momentum_schedule_per_sample(0.9),
        "time constant": C.momentum_as_time_constant_schedule(100),
        "rate per minibatch": C.learning_rate_schedule(0.1, C.UnitType.minibatch),
        "rate per sample by 3": C.learning_rate_schedule([0.1, 0.3], C.UnitType.sample,
                                                         epoch_size=3),
        "training parameter": C.training_parameter_schedule([0.3, 0.1], epoch_size=15),
    }
    res = {}
    for key in sorted(made):
        s = made[key]
        res[key] = [bool(s.is_sweep_based()), int(s.full_data_sweep),
                    int(s.ignored_minibatch_size), int(s.minibatch_size),
                    bool(s.is_minibatch_size_explicitly_specified)]
    res["epoch_size"] = [hasattr(made[key], "epoch_size") for key in sorted(made)]
    return res


@cntk_case(names=["cntk.Function.replace_placeholders", "cntk.Function.arguments",
                  "cntk.Function.placeholders", "cntk.Function.output"],
           note="replace_placeholders binding some of a Function's placeholders: CNTK 2.7 "
                "lists what they are bound to among the arguments, in their place (Stadyn "
                "listed only the placeholders left); the output's shape inferred again from "
                "the bound operand, (2,) (Stadyn: (-2,) until every placeholder was bound, "
                "before cntkgraph40)")
def replace_placeholders__some(C, r):
    r.touch("cntk.Function.replace_placeholders", "cntk.Function.arguments",
            "cntk.Function.placeholders", "cntk.Function.output", "cntk.Function.eval")
    x = C.input_variable((2,), name="x")
    p1, p2 = C.placeholder(name="p1"), C.placeholder(name="p2")
    f = C.plus(p1, p2)
    g = f.replace_placeholders({p1: x})
    q1, q2 = C.placeholder(name="q1"), C.placeholder(name="q2")
    h = C.plus(q1, C.sqrt(q2)).replace_placeholders({q2: C.sigmoid(x, name="s").output})
    res = {"arguments": [a.name for a in g.arguments],
           "placeholders": [p.name for p in g.placeholders],
           "nested arguments": [a.name for a in h.arguments],
           "nested placeholders": [p.name for p in h.placeholders]}
    res["output shape"] = outcome(lambda: list(g.output.shape), raised=builtin_type)
    y = C.input_variable((2,), name="y")
    done = g.replace_placeholders({p2: y})
    res["all bound arguments"] = [a.name for a in done.arguments]
    res["all bound output shape"] = list(done.output.shape)
    res["value"] = done.eval({x: r.randn(3, 2), y: r.randn(3, 2)})
    return res


@cntk_case(names=["cntk.layers.typing.Tensor", "cntk.layers.typing.SparseTensor",
                  "cntk.layers.typing.ParameterTensor", "cntk.layers.typing.Sequence",
                  "cntk.input_variable"],
           note="CNTK 2.7's own docstring examples (cntk/layers/typing.py, variables.py): a "
                "type may begin with its dtype (Tensor[np.float32, 13, 42]); it shows itself "
                "as written; calling one is a TypeError. Stadyn refused the dtype and its "
                "types were callable")
def typing__dtypes_and_abstract_types(C, r):
    typing = C.layers.typing
    ParameterTensor, Sequence = typing.ParameterTensor, typing.Sequence
    SparseTensor, Tensor = typing.SparseTensor, typing.Tensor
    # (made in this order: CNTK 2.7's Tensor keeps the last dtype it was given for the types
    # it makes after, Sequence[Tensor[2]] showing np.float64 after Tensor[np.float64, 3];
    # Stadyn does not copy that)
    made = {"Tensor[32]": Tensor[32], "Tensor[13,42]": Tensor[13, 42],
            "sparse": SparseTensor[5], "parameter": ParameterTensor[2, 3],
            "sequence": Sequence[Tensor[2]]}
    made["float32"] = Tensor[np.float32, 13, 42]
    made["float64"] = Tensor[np.float64, 3]
    res = {}
    for key in sorted(made):
        t = made[key]
        res[key] = [str(t), list(t.shape), bool(t.is_sparse),
                    [str(a.name) for a in t.dynamic_axes],
                    np.dtype(t.dtype).name if "dtype" in t else "none"]
        try:
            t()
            res[key + " called"] = "made"
        except TypeError as exc:
            res[key + " called"] = str(exc)
    x = C.input_variable(**Tensor[np.float64, 3])
    res["input dtype"] = [np.dtype(x.dtype).name, list(x.shape)]
    return res


@cntk_case(names=["cntk.Value.one_hot", "cntk.Value.ONE_HOT_SKIP", "cntk.Function.eval"],
           note="CNTK 2.7's own docstring example (cntk/core.py Value.one_hot): ONE_HOT_SKIP "
                "makes a row of zeros; a sample shape (k, n) takes k indices per step. Stadyn "
                "had no ONE_HOT_SKIP and took only a number of classes")
def value_one_hot__skip_and_sample_shape(C, r):
    r.touch("cntk.Value.one_hot", "cntk.Value.ONE_HOT_SKIP", "cntk.Function.eval")
    n = 6
    res = {"ONE_HOT_SKIP": int(C.Value.ONE_HOT_SKIP)}
    seq = C.sequence.input_variable(shape=n, is_sparse=True)
    z = C.times(seq, np.eye(n, dtype=np.float32))
    out = z.eval({seq: C.Value.one_hot([[1, C.Value.ONE_HOT_SKIP, 5], [4]], n)})
    res["sequences"] = [np.asarray(o) for o in out]
    plain = C.input_variable(shape=n, is_sparse=True)
    res["samples"] = C.times(plain, np.eye(n, dtype=np.float32)).eval(
        {plain: C.Value.one_hot([[C.Value.ONE_HOT_SKIP], [4]], n)})
    pairs = C.sequence.input_variable(shape=(2, n), is_sparse=True)
    out = C.times(pairs, np.eye(n, dtype=np.float32)).eval(
        {pairs: C.Value.one_hot([[1, 5, 3, 2], [4, 1]], (2, n))})
    res["sample shape (2, 6)"] = [np.asarray(o) for o in out]
    return res


@cntk_case(names=["cntk.NDArrayView.slice_view", "cntk.NDArrayView.from_dense",
                  "cntk.NDArrayView.asarray"],
           note="CNTK 2.7's own docstring example (cntk/core.py NDArrayView.slice_view): the "
                "extent is the slice's shape, for the last axes; a slice not contiguous in "
                "memory or not in the array is a ValueError. Stadyn had no slice_view")
def ndarrayview_slice_view(C, r):
    r.touch("cntk.NDArrayView.slice_view", "cntk.NDArrayView.from_dense",
            "cntk.NDArrayView.asarray")
    nd = C.NDArrayView.from_dense(r.randn(1, 1, 2, 3))
    res = {}
    for off, ext in (([0, 0, 0, 0], [2, 3]), ([0, 0, 1, 1], [1, 2]), ([0, 0, 1, 0], [3]),
                     ([0, 0, 0, 1], [1, 1, 2, 2]), ([0, 0, 0, 0], [1, 1, 2, 3]),
                     ([0, 0, 1, 2], [2])):
        key = "%s %s" % (off, ext)

        def sliced(off=off, ext=ext, key=key):
            view = nd.slice_view(off, ext)
            return {key: view.asarray(), key + " shape": list(view.shape)}
        res.update(outcome(sliced, raised=lambda exc, key=key: {key: builtin_type(exc)}))
    return res


@cntk_case(names=["cntk.Variable", "cntk.Parameter", "cntk.Constant", "cntk.input_variable",
                  "cntk.placeholder", "cntk.sequence.input_variable"],
           note="how CNTK 2.7 shows a Variable (its docstring examples print them): "
                "Input('a', [#], [3 x 4]), the dynamic axes (# the batch axis, * the default "
                "sequence axis) between the name and the shape, ??? for what a placeholder "
                "does not know. Stadyn showed Input('a', [3, 4])")
def variable_repr(C, r):
    r.touch("cntk.Variable", "cntk.Parameter", "cntk.Constant")
    x = C.input_variable((3, 4), name="a")
    s = C.sequence.input_variable(2, name="s")
    shown = {
        "input": x, "sequence": s, "scalar": C.input_variable((), name="sc"),
        "no batch axis": C.input_variable(3, dynamic_axes=[], name="nb"),
        "sparse": C.input_variable(5, is_sparse=True, name="sp"),
        "named axis": C.sequence.input_variable((2, 3), sequence_axis=C.Axis("myax"),
                                                name="m"),
        "placeholder": C.placeholder(name="p"),
        "placeholder with shape": C.placeholder(shape=(2,), name="q"),
        "parameter": C.parameter((2, 3), name="w"),
        "constant": C.constant(np.ones((2,), np.float32), name="c"),
        "output": C.plus(x, 1.0, name="pl").output,
        "sequence output": C.sigmoid(s, name="sg").output,
    }
    return dict((key, repr(v)) for key, v in shown.items())


@cntk_case(names=["cntk.Function.__str__", "cntk.ops.log", "cntk.ops.times",
                  "cntk.ops.combine"],
           note="how CNTK 2.7 prints a Function (its docstring examples print them): its "
                "name, the root's op name (Composite when the root reads other inputs than "
                "the Function's), the arguments' types as cntk.layers.typing writes them "
                "(Sequence[Tensor[2]], ParameterTensor[5], np.float64 for a float64 scalar), "
                "the outputs' types. Stadyn showed CompositeFunctionOpName(Input0: Tensor[1])")
def function_str(C, r):
    r.touch("cntk.Function.__str__")
    x = C.input_variable(1)
    a, b = C.input_variable((3, 4), name="a"), C.input_variable((4, 5), name="b")
    s = C.sequence.input_variable(2, name="s")
    shown = {
        "named": C.log(x, name="f"), "unnamed": C.log(x),
        "with a constant": C.element_times(x, 2.0),
        "composite": C.times(a, b) + 1.0, "named composite": C.exp(C.times(a, b), name="e"),
        "sequence": C.sigmoid(s), "with a parameter": C.plus(s, C.parameter((2,), name="p")),
        "two outputs": C.combine([C.sigmoid(s), C.tanh(s)]),
        "float64 scalar": C.input_variable((), dtype=np.float64, name="d") * 2,
        "no dynamic axis": C.sqrt(C.input_variable(5, dynamic_axes=[], name="nd")),
        "named sequence axis": C.sqrt(C.sequence.input_variable(
            3, sequence_axis=C.Axis("ax"), name="ax")),
    }
    return dict((key, str(f)) for key, f in shown.items())


@cntk_case(names=["cntk.input_variable", "cntk.parameter", "cntk.sequence.input_variable"],
           note="CNTK 2.7's own docstring example (cntk/variables.py VariableMixin._type): a "
                "Variable's type as one record (shape, dtype, needs_gradient, is_sparse, "
                "dynamic_axes), written as cntk.layers.typing writes types. Stadyn had no "
                "_type")
def variable_type_record(C, r):
    shown = {"input": C.input_variable(13, name="my_input"),
             "parameter": C.parameter((2, 3), name="w"),
             "sequence": C.sequence.input_variable(2, name="s"),
             "float64": C.input_variable((2, 2), dtype=np.float64, name="d")}
    res = {}
    for key in sorted(shown):
        t = shown[key]._type
        res[key] = [list(t.shape), np.dtype(t.dtype).name, bool(t.needs_gradient),
                    bool(t.is_sparse), [str(a.name) for a in t.dynamic_axes], str(t)]
    return res


@cntk_case(names=["cntk.Function.forward", "cntk.Function.eval",
                  "cntk.sequence.input_variable"],
           note="CNTK 2.7's own docstring example (cntk/ops/functions.py Function.forward): a "
                "SciPy csr_matrix per sequence, or one for a batch of samples, is fed as its "
                "dense rows. Stadyn raised ValueError ('setting an array element with a "
                "sequence')")
def scipy_sparse_fed(C, r):
    from scipy.sparse import csr_matrix
    r.touch("cntk.Function.forward", "cntk.Function.eval")
    v = C.sequence.input_variable(shape=(5,), is_sparse=True)
    f = C.times(v, np.eye(5, dtype=np.float32))
    _, fv = f.forward({v: [csr_matrix(np.float32([[0, 1, 0, 0, 0]])),
                           csr_matrix(np.float32([[0, 0, 1, 0, 0], [0, 0, 0, 0, 1]]))]})
    w = C.input_variable(shape=(5,), is_sparse=True)
    rows = csr_matrix(np.float32([[0, 1, 0, 0, 0], [0, 0, 0, 3, 0]]))
    return {"sequences": [np.asarray(o) for o in list(fv.values())[0]],
            "samples": C.times(w, np.eye(5, dtype=np.float32)).eval({w: rows})}


@cntk_case(names=["cntk.losses.squared_error"],
           note="the output and target broadcast per sample, as CNTK 2.7 broadcasts them; "
                "Stadyn broadcast the minibatches (review18: each sample against the whole "
                "batch of targets; a batch of 3 raised)")
def squared_error__broadcast_target(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.grad")
    res = {}
    for label, xs, ys in (("(2, 3) against (3,)", (2, 3), (3,)),
                          ("(3,) against (2, 3)", (3,), (2, 3)),
                          ("(4, 1) against (3,)", (4, 1), (3,))):
        x, y = C.input_variable(xs, needs_gradient=True), C.input_variable(ys)
        loss = C.squared_error(x, y)
        for n in (2, 3):
            a, b = r.randn(n, *xs), r.randn(n, *ys)
            res["%s batch %d" % (label, n)] = loss.eval({x: a, y: b})
            res["%s batch %d grad" % (label, n)] = loss.grad({x: a, y: b}, wrt=[x])
    return res
