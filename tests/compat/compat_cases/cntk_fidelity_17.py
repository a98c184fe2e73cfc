"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (seventeenth round):
``sequence.where`` and ``sequence.gather`` whose condition takes no step in a sequence; the
root of an unnamed ``Sequential`` whose last step is an op; the inside of a ``Dense``
block (``Plus(Times(x, W), b)``); a number operand of a binary op that waits (its
Constant, at once); a ``Fold`` over a placeholder without a shape; a recurrence's root's input
(the step's output); a placeholder of no dynamic axes bound to a sequence; and
``SequentialConvolution`` over sequences shorter than its window."""

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import outcome


def _refusal(fn, *clauses):
    """What ``fn()`` raised (its built-in type) and which of ``clauses`` its message holds
    (CNTK's words; Stadyn adds the op and the user's line)."""
    try:
        got = fn()
    except Exception as e:          # (the built-in type and CNTK's words are compared)
        kind = next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")
        return {"raises": kind, "says": [c for c in clauses if c in str(e)]}
    return {"returns": got if isinstance(got, list) else np.asarray(got).tolist()}


_NO_STEP = "AddSequence: Sequences must be a least one frame long."


@cntk_case(names=["cntk.sequence.where", "cntk.sequence.gather"],
           note="where / gather whose condition takes no step in a sequence (all zeros): CNTK "
                "2.7 raises RuntimeError 'AddSequence: Sequences must be a least one frame "
                "long.', alone or beside sequences that take steps, reduced or not.  Stadyn "
                "raised a ShapeError (a ValueError) of its own words")
def sequence__where_gather_no_step(C, r):
    r.touch("cntk.sequence.input_variable", "cntk.Function.eval", "cntk.sequence.reduce_sum")
    res = {}
    for title, data in [("alone", [np.zeros((3, 1), np.float32)]),
                        ("beside another", [np.zeros((3, 1), np.float32),
                                            np.ones((2, 1), np.float32)])]:
        c = C.sequence.input_variable(1)
        res["where, " + title] = _refusal(lambda: C.sequence.where(c).eval({c: data}), _NO_STEP)
        res["where reduced, " + title] = _refusal(
            lambda: C.sequence.reduce_sum(C.sequence.where(c)).eval({c: data}), _NO_STEP)
        x = C.sequence.input_variable(2, sequence_axis=c.dynamic_axes[1])
        rows = [np.ones((len(d), 2), np.float32) for d in data]
        res["gather, " + title] = _refusal(
            lambda: C.sequence.gather(x, c).eval({x: rows, c: data}), _NO_STEP)
    return res


def _kind(v):
    return ("input" if v.is_input else "placeholder" if v.is_placeholder else
            "parameter" if v.is_parameter else "constant" if v.is_constant else "output")


def _root(f, inside=True):
    """What a root function shows: op, name, block or not, inputs (name, shape, kind; a block's
    inside placeholders are Stadyn's actual arguments, so ``inside`` shows only whether it
    is an output) and outputs, and the op of the Function behind each input made by one."""
    return {"op": f.op_name, "name": f.name, "block": f.is_block,
            "uid": "".join(c for c in f.uid if not c.isdigit()),
            "inputs": [[i.name, list(i.shape),
                        ("output" if i.is_output else "leaf") if inside else _kind(i)]
                       for i in f.inputs],
            "outputs": [[o.name, list(o.shape)] for o in f.outputs],
            "made by": [i.owner.root_function.op_name if i.is_output else None
                        for i in f.inputs]}



def _walked(C, f):
    """The ops and leaves CNTK's depth-first search meets, through every block."""
    return [getattr(n, "op_name", None) or "%s %s" % (_kind(n), list(n.shape))
            for n in C.logging.graph.depth_first_search(f, lambda n: True, depth=-1)]


@cntk_case(names=["cntk.layers.Sequential", "cntk.Function.root_function"],
           note="an unnamed Sequential not applied yet whose last step is no layer ([Dense(3), "
                "relu]; [relu]; a Python function): CNTK 2.7's root is that step's op (ReLU, "
                "not a block) over the output of the steps before (over its placeholder "
                "'keep' for one step).  Stadyn raised AttributeError ('not modelled')")
def sequential__root_of_last_op(C, r):
    r.touch("cntk.layers.Dense", "cntk.ops.relu", "cntk.ops.softmax", "cntk.Function.op_name",
            "cntk.Function.inputs", "cntk.Function.outputs", "cntk.input_variable",
            "cntk.Function.is_block", "cntk.Function.name", "cntk.Function.uid",
            "cntk.Function.root_function")
    res = {}
    for title, steps in [("Dense, relu", lambda: [C.layers.Dense(3), C.relu]),
                         ("relu", lambda: [C.relu]),
                         ("Dense, softmax", lambda: [C.layers.Dense(3), C.softmax]),
                         ("Dense, relu, Dense", lambda: [C.layers.Dense(3), C.relu,
                                                         C.layers.Dense(2)]),
                         ("Dense, a function", lambda: [C.layers.Dense(3),
                                                        lambda x: C.sigmoid(x)])]:
        m = C.layers.Sequential(steps())
        res[title] = outcome(lambda: _root(m.root_function, inside=False))
        res[title + ", again"] = m.root_function.inputs[-1].uid == m.root_function.inputs[
            -1].uid
        z = m(C.input_variable(2))
        res[title + ", applied"] = outcome(lambda: _root(z.root_function, inside=False))
    return res


@cntk_case(names=["cntk.layers.Dense", "cntk.Function.block_root"],
           note="a Dense block's inside: CNTK 2.7 shows Plus(Times(x, W), b) (Stadyn computes "
                "one affine op: it showed 'Affine' over x, W, b), ReLU over it with an "
                "activation, Times alone without a bias; the depth-first search through the "
                "block meets Plus, Times, W, b.  (Inside the block CNTK's Times reads the "
                "block's placeholder, Stadyn's the actual argument: only the name and shape "
                "are compared.)")
def dense__block_root_plus_times(C, r):
    r.touch("cntk.input_variable", "cntk.Function.root_function", "cntk.Function.op_name",
            "cntk.Function.inputs", "cntk.Function.outputs", "cntk.Function.is_block",
            "cntk.Function.name", "cntk.Function.uid", "cntk.Function.eval", "cntk.ops.relu",
            "cntk.logging.graph.depth_first_search", "cntk.Function.parameters",
            "cntk.Function.block_root")
    x = C.input_variable(2)
    data = r.randn(2, 2)
    res = {}
    for title, layer in [("Dense", lambda: C.layers.Dense(3, init=0.5)),
                         ("Dense relu", lambda: C.layers.Dense(3, activation=C.relu,
                                                               init=0.5, init_bias=0.25)),
                         ("Dense (2, 3)", lambda: C.layers.Dense((2, 3), init=0.5)),
                         ("Dense, no bias", lambda: C.layers.Dense(3, bias=False, init=0.5))]:
        z = layer()(x)
        inside = z.root_function.block_root
        shown = [_root(inside)]
        while inside.inputs[0].is_output:
            inside = inside.inputs[0].owner
            shown.append(_root(inside))
        res[title + " inside"] = shown
        res[title + " walked"] = _walked(C, z)
        res[title + " parameters"] = [p.name for p in z.parameters]
        res[title + " eval"] = z.eval({x: data})
    return res


@cntk_case(names=["cntk.ops.plus", "cntk.ops.element_times", "cntk.Function.constants"],
           note="a number operand of a binary op that waits for its other operand's shape (a "
                "placeholder without one, a layer not applied yet): CNTK 2.7 makes it a "
                "float32 Constant as the op is called, listed at once in inputs / constants "
                "(and the root's inputs), the one the built graph holds (a value set on it "
                "counts), float32 until a float64 graph's first run.  Stadyn made it only when "
                "the graph was built (and refused + on a layer: TypeError)")
def binary__number_operand_constant(C, r):
    r.touch("cntk.placeholder", "cntk.input_variable", "cntk.Function.inputs",
            "cntk.Function.root_function", "cntk.Function.replace_placeholders",
            "cntk.Function.eval", "cntk.layers.Dense", "cntk.ops.relu", "cntk.Function.arguments",
            "cntk.ops.plus", "cntk.Function.constants", "cntk.ops.minus")

    def shown(f):
        root = f.root_function
        return {"inputs": [[i.name, list(i.shape), _kind(i)] for i in f.inputs],
                "constants": [[list(c.shape), str(c.dtype.__name__), c.value.tolist()]
                              for c in f.constants],
                "root inputs": [[i.name, list(i.shape), _kind(i)] for i in root.inputs],
                "root inputs made by": [i.owner.root_function.op_name if i.is_output else None
                                        for i in root.inputs],
                "arguments": [a.name for a in f.arguments]}
    res = {}
    p = C.placeholder(name="p")
    res["p + 2"] = outcome(lambda: shown(p + 2))
    res["2 * relu(p)"] = outcome(lambda: shown(C.element_times(2, C.relu(p))))
    res["p - 0.5"] = outcome(lambda: shown(C.minus(p, 0.5)))
    res["Dense + 2"] = outcome(lambda: shown(C.layers.Dense(3) + 2))
    f = p + 2
    f.constants[0].value = np.array(5, np.float32)
    x = C.input_variable(2)
    g = f.replace_placeholders({p: x})
    res["value set, built"] = g.eval({x: np.ones((1, 2), np.float32)})
    res["value set, built, constants"] = [c.value.tolist() for c in g.constants]
    q = C.placeholder(name="q")
    h = q * 3
    x64 = C.input_variable(2, dtype=np.float64)
    built = h(x64)
    res["float64: before a run"] = [str(c.dtype.__name__) for c in built.constants]
    res["float64: eval"] = built.eval({x64: np.ones((1, 2))})
    d = C.layers.Dense(2, init=1.0) + 2
    res["Dense + 2, applied"] = d(x).eval({x: np.ones((1, 2), np.float32)})
    return res


@cntk_case(names=["cntk.layers.Fold"],
           note="Fold applied to a placeholder without a shape: CNTK 2.7 makes a Function of "
                "unknown shape (root Combine, NoOp when named) that a call or "
                "replace_placeholders builds.  Stadyn raised AttributeError ('UnknownOutput' "
                "has no attribute 'parent')")
def fold__on_shapeless_placeholder(C, r):
    r.touch("cntk.placeholder", "cntk.sequence.input_variable", "cntk.ops.plus",
            "cntk.Function.shape", "cntk.Function.arguments", "cntk.Function.placeholders",
            "cntk.Function.root_function", "cntk.Function.op_name", "cntk.Function.eval",
            "cntk.Function.replace_placeholders", "cntk.Function.constants",
            "cntk.Function.inputs", "cntk.layers.GRU")
    x = C.sequence.input_variable(2)
    data = [np.arange(6, dtype=np.float32).reshape(3, 2), np.ones((1, 2), np.float32)]
    res = {}
    p = C.placeholder(name="p")
    f = outcome(lambda: C.layers.Fold(C.plus)(p))
    if isinstance(f, str):
        return {"made": f}
    res["made"] = "a Function"
    res["shape"] = list(f.shape)
    res["arguments"] = [[a.name, list(a.shape)] for a in f.arguments]
    res["placeholders"] = [[a.name, list(a.shape)] for a in f.placeholders]
    res["root"] = f.root_function.op_name
    res["constants"] = [[list(c.shape), c.value.tolist()] for c in f.constants]
    res["root inputs"] = [[i.name, list(i.shape), _kind(i)] for i in f.root_function.inputs]
    res["called"] = [f(x).shape, f(x).eval({x: data}).tolist()]
    g = f.replace_placeholders({p: x})
    res["replaced"] = [g.shape, g.eval({x: data}).tolist()]
    res["replaced constants"] = [[list(c.shape), c.value.tolist()] for c in g.constants]
    res["named, root"] = C.layers.Fold(C.plus, name="f")(C.placeholder()).root_function.op_name
    res["backwards"] = C.layers.Fold(C.plus, go_backwards=True)(C.placeholder())(x).eval(
        {x: data}).tolist()
    res["GRU, shape"] = list(C.layers.Fold(C.layers.GRU(3))(C.placeholder()).shape)
    return res


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.RecurrenceFrom"],
           note="a recurrence's root (a Combine; NoOp when named): CNTK 2.7's one input is the "
                "step's output inside the loop (an output of the recurrence's shape, owned by "
                "the step's op: Plus, a GRU / LSTM / RNNStep block; a Fold's Sequence::Slice), "
                "its arguments that output, no placeholder; so before it is applied and over a "
                "placeholder (of unknown shape).  Stadyn showed the recurrence's input there "
                "(its placeholder, with the step's parameters, over a placeholder; an "
                "AttributeError before it was applied)")
def recurrence__root_inputs(C, r):
    r.touch("cntk.sequence.input_variable", "cntk.placeholder", "cntk.ops.plus",
            "cntk.layers.GRU", "cntk.layers.LSTM", "cntk.layers.RNNStep", "cntk.layers.Fold",
            "cntk.Function.root_function", "cntk.Function.inputs", "cntk.Function.arguments",
            "cntk.Function.placeholders", "cntk.Function.op_name", "cntk.Function.outputs")

    def shown(root):
        return {"op": root.op_name, "name": root.name,
                "inputs": [[i.name, list(i.shape), _kind(i)] for i in root.inputs],
                "arguments": [[a.name, list(a.shape), _kind(a)] for a in root.arguments],
                "placeholders": len(root.placeholders),
                "outputs": [[o.name, list(o.shape)] for o in root.outputs],
                "made by": [i.owner.root_function.op_name if i.is_output else None
                            for i in root.inputs]}
    x = C.sequence.input_variable(2)
    res = {}
    for title, make in [("plus", lambda: C.layers.Recurrence(C.plus)),
                        ("GRU", lambda: C.layers.Recurrence(C.layers.GRU(3))),
                        ("LSTM", lambda: C.layers.Recurrence(C.layers.LSTM(3))),
                        ("RNNStep, named", lambda: C.layers.Recurrence(C.layers.RNNStep(3),
                                                                       name="r")),
                        ("Fold of plus", lambda: C.layers.Fold(C.plus)),
                        ("Fold of GRU", lambda: C.layers.Fold(C.layers.GRU(3)))]:
        layer = make()
        res[title + ", not applied"] = outcome(lambda: shown(layer.root_function))
        z = make()(x)
        res[title + ", applied"] = outcome(lambda: shown(z.root_function))
        w = make()(C.placeholder())
        res[title + ", over a placeholder"] = outcome(lambda: shown(w.root_function))
    start = C.layers.RecurrenceFrom(C.layers.GRU(3))
    res["RecurrenceFrom, not applied"] = outcome(lambda: shown(start.root_function))
    h0 = C.input_variable(3)
    z = C.layers.RecurrenceFrom(C.layers.GRU(3))(h0, x)
    res["RecurrenceFrom, applied"] = outcome(lambda: shown(z.root_function))
    return res


_KERNEL = "Convolution operation requires that kernel dim 3 <= input dim"
_MASK = "The first entry of a Value mask must be Valid or SequenceBegin"


@cntk_case(names=["cntk.layers.SequentialConvolution"],
           note="SequentialConvolution over sequences shorter than its window (3 steps): CNTK "
                "2.7 refuses a minibatch whose longest sequence is shorter (ValueError, padded "
                "or not), and a sequence left no step beside longer ones (RuntimeError); it "
                "computes the others.  Stadyn computed (pad=True) or refused the empty output "
                "after the run ('AddSequence ...')")
def sequential_convolution__shorter_than_the_window(C, r):
    r.touch("cntk.sequence.input_variable", "cntk.Function.eval")
    res = {}
    for title, lengths, pad in [("one of 2, pad=False", [2], False),
                                ("one of 2, pad=True", [2], True),
                                ("two of 2, pad=False", [2, 2], False),
                                ("4 and 2, pad=False", [4, 2], False),
                                ("4 and 2, pad=True", [4, 2], True),
                                ("one of 3, pad=False", [3], False),
                                ("4 and 3, pad=False", [4, 3], False)]:
        x = C.sequence.input_variable((1, 4))
        f = C.layers.SequentialConvolution((3, 2), 2, pad=pad, init=1.0)(x)
        data = [np.ones((n, 1, 4), np.float32) for n in lengths]
        res[title] = _refusal(lambda: [np.asarray(a).tolist() for a in f.eval({x: data})],
                              _KERNEL, _MASK, _NO_STEP)
    return res


@cntk_case(names=["cntk.placeholder", "cntk.Function.replace_placeholders"],
           note="a placeholder of a shape and no dynamic axes (placeholder((2,), "
                "dynamic_axes=[])) bound to a sequence input (replace_placeholders, or the "
                "Function called on it): CNTK 2.7 builds the graph on the sequences (a "
                "reduction per step), and on a batch input per sample.  Stadyn refused the "
                "sequence in replace_placeholders (ValueError 'cannot take a variable of "
                "shape') and, called on it or bound to a batch input, replayed the ops with "
                "their axes unchanged (reduce_sum summed across the batch: wrong numbers)")
def placeholder__no_dynamic_axes_bound_to_a_sequence(C, r):
    r.touch("cntk.sequence.input_variable", "cntk.input_variable", "cntk.ops.reduce_sum",
            "cntk.ops.relu", "cntk.Function.eval", "cntk.Function.shape",
            "cntk.Variable.dynamic_axes", "cntk.Variable.shape",
            "cntk.Function.replace_placeholders")
    x = C.sequence.input_variable(2)
    data = [np.arange(6, dtype=np.float32).reshape(3, 2), np.ones((1, 2), np.float32)]
    res = {}
    p = C.placeholder((2,), dynamic_axes=[], name="p")
    f = C.reduce_sum(p * 2)
    res["placeholder"] = [list(p.shape), len(p.dynamic_axes)]
    res["shape before"] = list(f.shape)
    res["replaced"] = outcome(lambda: [a.tolist() for a in f.replace_placeholders(
        {p: x}).eval({x: data})])
    q = C.placeholder((2,), dynamic_axes=[], name="q")
    res["called"] = outcome(lambda: [a.tolist() for a in C.reduce_sum(q * 2)(x).eval(
        {x: data})])
    s = C.placeholder((2,), dynamic_axes=[], name="s")
    g = C.relu(s - 1)
    res["relu, replaced"] = outcome(lambda: [a.tolist() for a in g.replace_placeholders(
        {s: x}).eval({x: data})])
    b = C.placeholder((2,), dynamic_axes=[], name="b")
    v = C.input_variable(2)
    res["on a batch input"] = outcome(lambda: C.reduce_sum(b * 2).replace_placeholders(
        {b: v}).eval({v: np.arange(4, dtype=np.float32).reshape(2, 2)}).tolist())
    return res
