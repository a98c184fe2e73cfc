"""Where ``stadyn.compat.cntk``'s graph building did otherwise than CNTK 2.7 (cntkgraph40):
parameters with an inferred axis (``C.parameter((C.InferredDimension, 3))``), which CNTK
makes and lets the first ``times`` or element-wise op infer, and Stadyn refused."""

import functools

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome


_outcome = functools.partial(outcome, convert=as_returned, raised=as_raised)


def _shape(f):
    return list(f.shape)


@cntk_case(names=["cntk.ops.parameter", "cntk.ops.times", "cntk.ops.plus", "cntk.ops.minus",
                  "cntk.ops.element_times", "cntk.ops.element_divide", "cntk.ops.element_max",
                  "cntk.ops.pow", "cntk.ops.less", "cntk.ops.tanh",
                  "cntk.initializer.glorot_uniform", "cntk.Parameter.shape"],
           note="C.parameter with InferredDimension (-1) axes: CNTK 2.7 shows them as -1 ('? x "
                "3'), refuses .value (ValueError), and the first op that meets the parameter "
                "with a known shape fixes them and draws the init then: times(x, W) W's "
                "reduced axes from x's trailing ones (output_rank kept), the element-wise ops "
                "from the other operand aligned on the right (element_divide, element_max "
                "infer their left operand only); a graph still holding an unresolved one is "
                "refused when run (ValueError 'with unresolved shape', Stadyn refuses the op "
                "as it is made, the same type); a second times of another width is "
                "ValueError. Stadyn refused every such parameter with ValueError")
def inferred_parameter__as_cntk_infers(C, r, np):
    r.touch("cntk.Parameter.shape")
    inferred = C.InferredDimension
    data = np.linspace(-1, 1, 8).astype(np.float32).reshape(1, 2, 4)

    def times():
        W = C.parameter((inferred, 3), init=C.glorot_uniform(seed=7), name="W")
        before = {"shape": _shape(W), "repr": repr(W).replace("'W'", "'name'")}
        x = C.input_variable((2, 4))
        z = C.times(x, W)
        return {"before": before, "shape": _shape(z), "W": _shape(W), "value": W.value,
                "eval": z.eval({x: data}), "parameters": [_shape(p) for p in z.parameters],
                "same": bool(z.parameters[0] == W)}

    def times_ranks(shape, given, **kw):
        def made():
            W = C.parameter(shape, init=1.0)
            z = C.times(C.input_variable(given), W, **kw)
            return {"shape": _shape(z), "W": _shape(W)}
        return made

    def elementwise(op, shape, given, first=False):
        def made():
            p = C.parameter(shape, init=0.5)
            x = C.input_variable(given)
            z = op(p, x) if first else op(x, p)
            return {"shape": _shape(z), "p": _shape(p),
                    "eval": z.eval({x: np.ones((1,) + tuple(given), np.float32)})}
        return made

    def reused():
        W = C.parameter((inferred, 3), init=1.0)
        C.times(C.input_variable(5), W)
        return _shape(C.times(C.input_variable(6), W))

    def unresolved(build):
        def made():
            x = C.input_variable(4)
            return build(C.parameter((inferred,), init=1.0), x).eval(
                {x: np.ones((1, 4), np.float32)})
        return made

    return {
        "value before": _outcome(lambda: C.parameter((inferred, 3)).value),
        "times (2, 4) x (?, 3)": _outcome(times),
        "times (2, 4) x (?, ?, 3)": _outcome(times_ranks((inferred, inferred, 3), (2, 4))),
        "times (2, 4) x (?, 3, 2) output_rank 2": _outcome(
            times_ranks((inferred, 3, 2), (2, 4), output_rank=2)),
        "times default init": _outcome(lambda: (lambda W: (C.times(C.input_variable(2), W),
                                                           W.value)[1])(
            C.parameter((inferred, 3)))),
        "(2, 6) + (?,)": _outcome(elementwise(C.plus, (inferred,), (2, 6))),
        "(?, ?) + (3, 5)": _outcome(elementwise(C.plus, (inferred, inferred), (3, 5), True)),
        "(3, 1) * (?,)": _outcome(elementwise(C.element_times, (inferred,), (3, 1))),
        "(?,) * (3, 1)": _outcome(elementwise(C.element_times, (inferred,), (3, 1), True)),
        "(?,) + (2, free)": _outcome(elementwise(C.plus, (inferred,), (2, C.FreeDimension),
                                                 True)),
        "(4,) - (?,)": _outcome(elementwise(C.minus, (inferred,), (4,))),
        "pow (?,) (4,)": _outcome(elementwise(C.pow, (inferred,), (4,), True)),
        "less (4,) (?,)": _outcome(elementwise(C.less, (inferred,), (4,))),
        "element_divide (?,) (4,)": _outcome(elementwise(C.element_divide, (inferred,), (4,),
                                                         True)),
        "element_max (?,) (4,)": _outcome(elementwise(C.element_max, (inferred,), (4,), True)),
        "times reused for 6": _outcome(reused),
        "run element_divide (4,) (?,)": _outcome(unresolved(
            lambda p, x: C.element_divide(x, p))),
        "run element_max (4,) (?,)": _outcome(unresolved(lambda p, x: C.element_max(x, p))),
        "run tanh": _outcome(unresolved(lambda p, x: C.tanh(p) * x)),
        "run * 2": _outcome(unresolved(lambda p, x: (p * 2) * x)),
    }


@cntk_case(names=["cntk.ops.reduce_sum", "cntk.ops.reduce_mean", "cntk.ops.reduce_max",
                  "cntk.ops.reduce_min", "cntk.ops.reduce_prod", "cntk.ops.reduce_log_sum_exp",
                  "cntk.ops.reduce_l1", "cntk.ops.reduce_l2", "cntk.ops.reduce_sum_square",
                  "cntk.ops.placeholder", "cntk.ops.sequence.input_variable"],
           note="a reduction given an empty axis list (axis=[] or ()): CNTK 2.7 refuses it as "
                "it is made, RuntimeError 'ReduceElements: ... Empty axes argument provided.' "
                "(of a sequence, a scalar, a placeholder, keepdims=False too); Stadyn returned "
                "the operand unreduced (SILENT); axis=None reduces every axis of a sample")
def reduce__empty_axis_list(C, r, np):
    x = C.input_variable((2, 3))
    data = np.arange(6, dtype=np.float32).reshape(1, 2, 3) - 2
    res = {}
    for op in ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
               "reduce_log_sum_exp", "reduce_l1", "reduce_l2", "reduce_sum_square"]:
        fn = getattr(C, op)
        res[op + " []"] = _outcome(lambda: fn(x, axis=[]).eval({x: data}))
        res[op + " ()"] = _outcome(lambda: fn(x, axis=()).eval({x: data}))
        res[op + " None"] = _outcome(lambda: fn(x, axis=None).eval({x: data}))
    res["keepdims False"] = _outcome(lambda: _shape(C.reduce_sum(x, axis=[], keepdims=False)))
    res["sequence"] = _outcome(lambda: _shape(C.reduce_max(C.sequence.input_variable(3),
                                                           axis=[])))
    res["scalar"] = _outcome(lambda: _shape(C.reduce_min(C.reduce_sum(x), axis=[])))
    res["placeholder"] = _outcome(lambda: _shape(C.reduce_mean(C.placeholder(), axis=[])))
    return res


def _names(vs):
    return [v.name for v in vs]


@cntk_case(names=["cntk.ops.gather", "cntk.ops.times", "cntk.ops.times_transpose",
                  "cntk.ops.element_times", "cntk.ops.plus", "cntk.ops.placeholder",
                  "cntk.ops.functions.Function", "cntk.Function.placeholders",
                  "cntk.Function.arguments"],
           note="placeholders in the order CNTK 2.7's walk meets them: its Times, "
                "TransposeTimes and GatherOp take their operands swapped (C++ Times(right, "
                "left), GatherOp(indices, reference)), so a waiting gather(table, indices) "
                "lists ['indices', 'table'], times(a, b) ['b', 'a'], also under "
                "element_times and inside an untyped @C.Function; arguments keep the Python "
                "order. Stadyn listed the Python order everywhere")
def placeholders__in_cntk_operand_order(C, r, np):
    r.touch("cntk.Function.placeholders", "cntk.Function.arguments")

    @C.Function
    def gathered(table, indices):
        return C.gather(table, indices)

    a, b, c = C.placeholder(name="a"), C.placeholder(name="b"), C.placeholder(name="c")
    t, i = C.placeholder(name="table"), C.placeholder(name="indices")
    g = C.gather(t, i)
    return {
        "@Function gather placeholders": _names(gathered.placeholders),
        "@Function gather arguments": _names(gathered.arguments),
        "element_times(@Function, 2) placeholders": _names(
            C.element_times(gathered, 2).placeholders),
        "element_times(@Function, 2) arguments": _names(
            C.element_times(gathered, 2).arguments),
        "gather placeholders": _names(g.placeholders),
        "element_times(gather, 2) placeholders": _names(C.element_times(g, 2).placeholders),
        "element_times(gather, 2) arguments": _names(C.element_times(g, 2).arguments),
        "times placeholders": _names(C.times(a, b).placeholders),
        "times arguments": _names(C.times(a, b).arguments),
        "times_transpose placeholders": _names(C.times_transpose(a, b).placeholders),
        "plus(times, gather)": _names(C.plus(C.times(a, b), C.gather(c, a)).placeholders),
        "plus(c, times)": _names(C.plus(c, C.times(a, b)).placeholders),
        "plus": _names(C.plus(a, b).placeholders),
    }


@cntk_case(names=["cntk.ops.times", "cntk.ops.placeholder", "cntk.ops.parameter"],
           note="times of a placeholder made with shape () (which waits for its binding in "
                "Stadyn): CNTK 2.7 applies its Times rank rule as the op is made, a weight "
                "with an axis to reduce its RuntimeError 'Times: The left operand ... rank (0) "
                "must be >= #axes (1) being reduced over.'; a weight of output axes only is "
                "built, of the weight's shape (3,). Stadyn built both, shape (-2,) (unknown), "
                "and refused the first only when bound")
def times__placeholder_of_rank_0(C, r, np):
    def made(w, **kw):
        return lambda: _shape(C.times(C.placeholder(()), C.parameter(w, init=1.0), **kw))
    return {
        "() x (1, 3)": _outcome(made((1, 3))),
        "() x (2, 3)": _outcome(made((2, 3))),
        "() x (3,)": _outcome(made((3,))),
        "() x (2, 3) output_rank 2": _outcome(made((2, 3), output_rank=2)),
        "(2,) x (2, 3)": _outcome(lambda: _shape(C.times(C.placeholder((2,)),
                                                         C.parameter((2, 3), init=1.0)))),
    }


@cntk_case(names=["cntk.ops.plus", "cntk.ops.gather", "cntk.ops.element_times",
                  "cntk.ops.placeholder", "cntk.ops.functions.load_model",
                  "cntk.Function.save", "cntk.Variable.owner"],
           note="the owner of a waiting Function's output (an op over placeholders, an "
                "untyped file loaded): CNTK 2.7 gives the root op (Plus, Gather: uid that of "
                "root_function, primitive, not composite), and element_times(loaded, 2) lists "
                "the file's placeholders in its walk's order ['indices', 'table']. Stadyn "
                "gave the waiting composite (no uid: AttributeError) and the Python order")
def owner__of_a_waiting_output(C, r, np):
    r.touch("cntk.Variable.owner", "cntk.Function.save")

    def seen(f):
        o = f.output.owner
        return {"op_name": o.op_name, "uid is root's": o.uid == f.root_function.uid,
                "is_primitive": o.is_primitive, "is_composite": o.is_composite,
                "name": o.name}

    @C.Function
    def gathered(table, indices):
        return C.gather(table, indices)

    gathered.save("gathered.model")
    loaded = C.load_model("gathered.model")
    p = C.placeholder(name="p")
    return {
        "plus(p, 1)": _outcome(lambda: seen(C.plus(p, 1))),
        "relu(p) named": _outcome(lambda: seen(C.relu(p, name="r"))),
        "loaded": _outcome(lambda: seen(loaded)),
        "loaded placeholders": [v.name for v in loaded.placeholders],
        "element_times(loaded, 2) placeholders": [
            v.name for v in C.element_times(loaded, 2).placeholders],
        "element_times(loaded, 2) arguments": [
            v.name for v in C.element_times(loaded, 2).arguments],
    }


@cntk_case(names=["cntk.ops.element_times", "cntk.ops.minus", "cntk.ops.plus",
                  "cntk.ops.relu", "cntk.ops.placeholder", "cntk.Function.replace_placeholders"],
           note="a waiting element-wise op whose placeholders are bound in part by "
                "replace_placeholders: CNTK 2.7 infers its shape again from the values bound "
                "(its shape read before too), Stadyn kept (-2,) until every placeholder was "
                "bound")
def replace_placeholders__shape_inferred_again(C, r, np):
    r.touch("cntk.Function.replace_placeholders")

    def partly(op, value, read_before=True):
        p1, p2 = C.placeholder(name="p1"), C.placeholder(name="p2")
        f = op(p1, p2)
        before = _shape(f) if read_before else None
        f.replace_placeholders({p1: value})
        return {"before": before, "after": _shape(f), "placeholders": _names(f.placeholders)}

    return {
        "element_times, input (3, 2)": _outcome(lambda: partly(C.element_times,
                                                               C.input_variable((3, 2)))),
        "minus, parameter (4,)": _outcome(lambda: partly(C.minus, C.parameter((4,)))),
        "plus, unread, input (5,)": _outcome(lambda: partly(C.plus, C.input_variable(5),
                                                            False)),
        "relu(plus), input (2,)": _outcome(lambda: partly(lambda a, b: C.relu(C.plus(a, b)),
                                                          C.input_variable(2))),
    }


@cntk_case(names=["cntk.ops.parameter", "cntk.ops.times", "cntk.ops.plus",
                  "cntk.ops.input_variable"],
           note="a parameter with an inferred axis stays the same CNTK Variable once the first "
                "op fixes its shape: its hash is kept, so a dict or set keyed by it before "
                "(or by a copy.copy of it) finds it, and it equals model.parameters' handle; "
                "Stadyn (rmcg40) hashed it anew once inferred, so a dict keyed by it before "
                "lost it and a set held it twice")
def inferred_parameter__keeps_its_identity(C, r, np):
    import copy

    def via(build, make):
        p = make()
        before, second = hash(p), copy.copy(p)
        keyed, kept = {p: "p"}, {p}
        z = build(p)
        found = z.parameters[0]
        return {"hash kept": hash(p) == before, "copy hash": hash(second) == hash(found),
                "dict by it": keyed.get(p), "dict by model's": keyed.get(found),
                "dict by copy": keyed.get(second), "in set": found in kept,
                "set of the three": len({p, second, found}), "equal": bool(found == second),
                "shape": list(found.shape)}

    return {
        "times": via(lambda W: C.times(C.input_variable(4), W),
                     lambda: C.parameter((C.InferredDimension, 3), init=1.0)),
        "plus": via(lambda p: C.plus(p, C.input_variable((2, 6))),
                    lambda: C.parameter((C.InferredDimension,), init=0.5)),
    }


@cntk_case(names=["cntk.ops.times", "cntk.ops.times_transpose", "cntk.ops.gather",
                  "cntk.ops.element_times", "cntk.ops.minus", "cntk.ops.placeholder",
                  "cntk.Function.placeholders", "cntk.Function.arguments"],
           note="an op on placeholders given its operands by keyword in another order than "
                "its parameters' (times_transpose(right=b, left=a), gather(indices=b, "
                "reference=a)): CNTK 2.7 makes the op with each operand in its place, so "
                "placeholders walk right/indices first and arguments keep the parameters' "
                "order; Stadyn (rmcg40) listed both in the call's order, swapped")
def placeholders__keyword_operands_in_cntk_order(C, r, np):
    r.touch("cntk.Function.placeholders")
    r.touch("cntk.Function.arguments")
    res = {}
    for op, (first, second) in [("times", ("right", "left")),
                                ("times_transpose", ("right", "left")),
                                ("gather", ("indices", "reference")),
                                ("minus", ("right", "left"))]:
        a, b, c = (C.placeholder(name=n) for n in "abc")
        f = getattr(C, op)(**{first: b, second: a})
        g = C.element_times(f, c)
        res[op] = {"placeholders": [p.name for p in f.placeholders],
                   "arguments": [p.name for p in f.arguments],
                   "outer placeholders": [p.name for p in g.placeholders],
                   "outer arguments": [p.name for p in g.arguments]}
    return res


@cntk_case(names=["cntk.ops.parameter", "cntk.ops.element_select", "cntk.ops.clip",
                  "cntk.ops.input_variable", "cntk.Parameter.shape"],
           note="a parameter with inferred axes among element_select's or clip's operands: "
                "CNTK 2.7 (NaryElementwiseOpOutputShape, PrimitiveFunction.cpp:1419) takes "
                "the operands in turn against the shape of those before them, so one after "
                "an operand of a known shape is inferred (a number counts as shape ()), the "
                "first one is not and the graph is refused when run (ValueError 'unresolved "
                "shape'); Stadyn (rmcg40) refused every such parameter as the op was made")
def inferred_parameter__in_select_and_clip(C, r, np):
    r.touch("cntk.Parameter.shape")
    inferred = C.InferredDimension

    def run(build, given=(4,), shape=(inferred,)):
        def made():
            p = C.parameter(shape, init=0.5)
            x = C.input_variable(given)
            z = build(p, x)
            shapes = {"z": list(z.shape), "p": list(p.shape)}
            data = np.arange(int(np.prod(given)), dtype=np.float32).reshape((1,) + given)
            return {"shapes": shapes, "eval": z.eval({x: data})}
        return made

    return {
        "select(x, p, x)": _outcome(run(lambda p, x: C.element_select(x, p, x))),
        "select(x, x, p)": _outcome(run(lambda p, x: C.element_select(x, x, p))),
        "select(p, x, x)": _outcome(run(lambda p, x: C.element_select(p, x, x))),
        "select(x, p, x) (2, 3) (?, ?)": _outcome(run(
            lambda p, x: C.element_select(x, p, x), (2, 3), (inferred, inferred))),
        "select(x, p, x) (2, 3) (?,)": _outcome(run(
            lambda p, x: C.element_select(x, p, x), (2, 3))),
        "select(x, p, x) (2, 3) (1, ?)": _outcome(run(
            lambda p, x: C.element_select(x, p, x), (2, 3), (1, inferred))),
        "select(x, p, x) (2, 1) (?, ?)": _outcome(run(
            lambda p, x: C.element_select(x, p, x), (2, 1), (inferred, inferred))),
        "select(1, p, x)": _outcome(run(lambda p, x: C.element_select(1, p, x))),
        "select(x, 2, p)": _outcome(run(lambda p, x: C.element_select(x, 2.0, p))),
        "clip(x, p, 2)": _outcome(run(lambda p, x: C.clip(x, p, 2.0))),
        "clip(x, 0, p)": _outcome(run(lambda p, x: C.clip(x, 0.0, p))),
        "clip(p, 0, x)": _outcome(run(lambda p, x: C.clip(p, 0.0, x))),
        "clip(p, 0, 1)": _outcome(run(lambda p, x: C.clip(p, 0.0, 1.0) * x)),
    }


@cntk_case(names=["cntk.ops.parameter", "cntk.ops.optimized_rnnstack",
                  "cntk.ops.sequence.input_variable", "cntk.Parameter.shape",
                  "cntk.Parameter.value"],
           note="optimized_rnnstack's weights made with InferredDimension: CNTK 2.7 "
                "(PrimitiveFunction.cpp OptimizedRNNStack, RNNCommon.h GetNumParameters) "
                "gives them the shape (count / hidden_size, hidden_size), count cuDNN's number "
                "of weights for the operand's dimension, as the op is made (its CPU build then "
                "refuses to run the stack: only shapes compared); Stadyn (rmcg40) refused the "
                "parameter as the op was made (ValueError 'unresolved shape')")
def inferred_parameter__in_optimized_rnnstack(C, r, np):
    r.touch("cntk.Parameter.shape")
    r.touch("cntk.Parameter.value")

    def made(op, dim, hidden, layers, bidirectional, shape=None):
        def build():
            W = C.parameter(shape or (C.InferredDimension, hidden), init=0.1)
            z = C.optimized_rnnstack(C.sequence.input_variable(dim), W, hidden, layers,
                                     bidirectional=bidirectional, recurrent_op=op)
            return {"z": list(z.shape), "W": list(W.shape), "value": list(W.value.shape)}
        return build

    return {
        "lstm 3 -> 4": _outcome(made("lstm", 3, 4, 1, False)),
        "gru 3 -> 4, 2 layers, bidirectional": _outcome(made("gru", 3, 4, 2, True)),
        "rnnReLU 5 -> 2": _outcome(made("rnnReLU", 5, 2, 1, False)),
        "rnnTanh 2 -> 3, 3 layers": _outcome(made("rnnTanh", 2, 3, 3, False)),
        "lstm (?, ?)": _outcome(made("lstm", 3, 4, 1, False,
                                     (C.InferredDimension, C.InferredDimension))),
    }
