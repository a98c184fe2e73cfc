"""Review F's list (cntkclone28): comparisons of Variables and Axes with what is neither, clones
CNTK 2.7 types (or refuses) over other shapes and types, graph walks and op edges.  Each result
is what CNTK 2.7 returned or raised; Stadyn differed before."""

import functools

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome

_returned = functools.partial(outcome, convert=as_returned, raised=as_raised)


@cntk_case(names=["cntk.Axis", "cntk.ops.combine", "cntk.layers.Dense",
                  "cntk.ops.parameter", "cntk.ops.placeholder", "cntk.ops.input_variable"],
           note="a Variable compared with what is no Variable (a number, a string, a waiting "
                "combine of several outputs) and an Axis compared with what is no Axis are "
                "SWIG's TypeErrors (Variable_eq, Axis_eq) in CNTK 2.7; None is False.  Stadyn "
                "returned False for C.Axis(0) == 3, an unapplied Dense's W == 3 and "
                "x == C.combine([w, p])")
def compare__not_a_variable(C, r, np):
    res = {}
    x = C.input_variable(3)
    w = C.parameter(3)
    p = C.placeholder()
    d = C.layers.Dense(3)
    waiting = C.combine([w, p])
    res["axis == 3"] = _returned(lambda: C.Axis(0) == 3)
    res["axis != 3"] = _returned(lambda: C.Axis(0) != 3)
    res["axis == name"] = _returned(lambda: C.Axis.default_batch_axis() == "defaultBatchAxis")
    res["axis == None"] = _returned(lambda: C.Axis(0) == None)  # noqa: E711
    res["axis in [3, axis]"] = _returned(lambda: C.Axis(0) in [3, C.Axis(0)])
    res["axis == axis"] = _returned(lambda: C.Axis(1) == C.Axis(1))
    res["unapplied W == 3"] = _returned(lambda: d.W == 3)
    res["unapplied W != 3"] = _returned(lambda: d.W != 3)
    res["unapplied W == None"] = _returned(lambda: d.W == None)  # noqa: E711
    res["unapplied W == W"] = _returned(lambda: d.W == d.W)
    res["unapplied W == x"] = _returned(lambda: d.W == x)
    res["3 in [unapplied W]"] = _returned(lambda: 3 in [d.W])
    res["combine([w, p]).outputs"] = len(waiting.outputs)
    res["combine([w, p]).output"] = _returned(lambda: str(waiting.output))
    res["x == combine([w, p])"] = _returned(lambda: x == waiting)
    res["x != combine([w, p])"] = _returned(lambda: x != waiting)
    res["combine([w, p]) == x"] = _returned(lambda: waiting == x)
    res["x in [combine([w, p])]"] = _returned(lambda: x in [waiting])
    res["x == combine([p])"] = _returned(lambda: x == C.combine([p]))
    res["x == combine([x, p])"] = _returned(lambda: x == C.combine([x, p]))
    return res


def _dtype_of(f):
    return {"shape": list(f.output.shape), "dtype": np.dtype(f.output.dtype).name}


@cntk_case(names=["cntk.ops.element_max", "cntk.ops.element_min", "cntk.ops.element_divide",
                  "cntk.ops.plus", "cntk.ops.equal", "cntk.ops.less", "cntk.ops.greater_equal",
                  "cntk.ops.not_equal", "cntk.Function.clone", "cntk.ops.constant"],
           note="element_max / element_min / element_divide of a float64 Variable and a float32 "
                "Constant: CNTK 2.7 builds them of other ops over placeholders for the operands "
                "(Function.cpp:1606-1631), so the Constant keeps its type and the inner op "
                "(Greater, Less, ElementTimes) refuses the pair, called directly and in a "
                "clone onto a float64 input; plus widens the Constant.  Stadyn took all three "
                "(a float64 result).  A comparison so cloned is float64, as CNTK's (Stadyn's "
                "was float32, the type it was made in)")
def element_max__float32_constant_over_float64(C, r, np):
    res = {}
    x = C.input_variable(3)
    x64 = C.input_variable(3, dtype=np.float64)
    c3 = C.constant(np.ones(3, np.float32))
    r.touch("cntk.Function.clone")
    for op in ["element_max", "element_min", "element_divide", "plus", "equal", "less",
               "greater_equal", "not_equal"]:
        f = getattr(C, op)
        res[op + " direct"] = _returned(lambda: _dtype_of(f(x64, c3)))
        res[op + " direct, constant first"] = _returned(lambda: _dtype_of(f(c3, x64)))
        res[op + " clone"] = _returned(
            lambda: _dtype_of(f(x, c3).clone(C.CloneMethod.share, {x: x64})))
    res["element_max of float64 numbers"] = _returned(
        lambda: _dtype_of(C.element_max(x64, np.ones(3, np.float32))))
    return res


def _typed(f):
    return {"shape": list(f.output.shape), "dtype": np.dtype(f.output.dtype).name}


def _fed(r, f, dtype=np.float32):
    """``f`` evaluated on seeded data for its arguments, in their order (two samples)."""
    return f.eval(dict((a, r.randn(2, *a.shape).astype(dtype)) for a in f.arguments))


@cntk_case(names=["cntk.ops.splice", "cntk.Function.clone", "cntk.ops.constant",
                  "cntk.ops.input_variable", "cntk.Function.eval",
                  "cntk.ops.parameter"],
           note="a clone of a splice calls CNTK 2.7's Splice again over the substitutes "
                "(its ranks, broadcasts and batch alignment are theirs): splice(x, c3) with c3 "
                "swapped for an input of 5 is [8], onto a float64 x [6] float64, the "
                "broadcast operand of splice(x(3), y(2, 1)) onto x(4) gives (3, 4), splice(y, c23) "
                "with a constant of (3,), (1, 3), () [2, 6], [2, 6], [2, 4]; a "
                "conflicting size is its ValueError.  Stadyn replayed the splice's inner ops "
                "with their old shapes and refused all of them.  A splice along "
                "Axis.new_leading_axis() stays one when called, cloned or frozen: (2, 3), "
                "(2, 2, 3), (2, 3), and onto (4, 3) CNTK's ValueError ('Conflicting "
                "dimensionality of axis 1'); Stadyn (mendE34's base) recorded axis 0 and "
                "re-spliced along the first axis: (6,), (4, 3), (6,)")
def splice__cloned_onto_other_shapes(C, r, np):
    res = {}
    r.touch("cntk.Function.clone", "cntk.Function.eval")
    x = C.input_variable(3)
    c3 = C.constant(np.arange(3, dtype=np.float32))
    f = C.splice(x, c3)
    five = C.input_variable(5)
    g = f.clone(C.CloneMethod.share, {c3: five})
    res["c3 -> input(5)"] = _typed(g)
    res["c3 -> input(5) eval"] = _fed(r, g)
    x64 = C.input_variable(3, dtype=np.float64)
    h = f.clone(C.CloneMethod.share, {x: x64})
    res["x -> float64"] = _typed(h)
    res["x -> float64 eval"] = _fed(r, h, np.float64)
    four = C.input_variable(4)
    res["x -> input(4)"] = _typed(f.clone(C.CloneMethod.share, {x: four}))
    y = C.input_variable((2, 1))
    b = C.splice(x, y, axis=0)
    res["broadcast"] = _typed(b)
    k = b.clone(C.CloneMethod.share, {x: four})
    res["broadcast, x -> input(4)"] = _typed(k)
    res["broadcast, x -> input(4) eval"] = _fed(r, k)
    y23 = C.input_variable((2, 3))
    c23 = C.constant(np.ones((2, 3), np.float32))
    s23 = C.splice(y23, c23, axis=-1)
    for shape in [(3,), (1, 3), ()]:
        res["splice(y, c23), a constant of %s" % (shape,)] = _typed(s23.clone(
            C.CloneMethod.share, {c23: C.constant(np.ones(shape, np.float32))}))
    row = C.input_variable((1, 3))
    m = C.splice(row, C.input_variable((2, 3)), axis=0)
    res["conflicting size"] = _returned(
        lambda: _typed(m.clone(C.CloneMethod.share, {row: C.input_variable((1, 4))})))
    # a splice along a new leading axis, called, cloned and frozen: the axis stays new
    v = C.input_variable(3)
    lead = C.splice(v, v * 2, axis=C.Axis.new_leading_axis())
    res["new leading axis, called"] = _typed(lead(C.input_variable(3)))
    xy = C.input_variable((2, 3))
    lc = C.splice(xy, C.constant(np.ones((2, 3), np.float32)), axis=C.Axis.new_leading_axis())
    cl = lc.clone(C.CloneMethod.clone, {xy: C.input_variable((2, 3))})
    res["new leading axis, cloned"] = _typed(cl)
    res["new leading axis, cloned eval"] = _fed(r, cl)
    lp = C.splice(v, C.parameter(3, init=2.0), axis=C.Axis.new_leading_axis())
    res["new leading axis, frozen"] = _typed(lp.clone(C.CloneMethod.freeze))
    res["new leading axis, onto (4, 3)"] = _returned(
        lambda: _typed(lc.clone(C.CloneMethod.share, {xy: C.input_variable((4, 3))})))
    return res


@cntk_case(names=["cntk.Function.clone", "cntk.layers.Dense", "cntk.layers.LayerNormalization",
                  "cntk.layers.BatchNormalization", "cntk.layers.default_options",
                  "cntk.ops.times", "cntk.ops.parameter", "cntk.ops.input_variable",
                  "cntk.Function.parameters", "cntk.Function.eval"],
           note="a clone (CloneMethod.clone) copies each parameter in its own dtype: float64 "
                "Dense, LayerNormalization, BatchNormalization (under default_options(dtype="
                "np.float64)) and times by a float64 parameter, cloned with and without a "
                "substitute input, are float64 with float64 parameters and compute what the "
                "original does in CNTK 2.7.  Stadyn (mendE34's base) copied them as float32 and "
                "refused ('operands with different DataTypes', naming its internal op)")
def clone__float64_parameters(C, r, np):
    res = {}
    r.touch("cntk.Function.clone", "cntk.Function.parameters", "cntk.Function.eval")
    x64 = C.input_variable(4, dtype=np.float64)
    makers = [("dense", lambda: C.layers.Dense(2)),
              ("ln", lambda: C.layers.LayerNormalization()),
              ("bn", lambda: C.layers.BatchNormalization())]
    nets = []
    for name, make in makers:
        with C.layers.default_options(dtype=np.float64):
            nets.append((name, make()(x64)))
    nets.append(("times", C.times(x64, C.parameter((4, 2), dtype=np.float64, init=0.5))))
    data = r.randn(3, 4).astype(np.float64)
    for name, y in nets:
        want = y.eval({x64: data})
        for method in ("clone", "freeze"):
            for subs in (0, 1):
                key = "%s %s%s" % (name, method, ", x substituted" if subs else "")

                def cloned(y=y, method=method, subs=subs, key=key):
                    swap = {x64: C.input_variable(4, dtype=np.float64)} if subs else {}
                    n = y.clone(getattr(C.CloneMethod, method), swap)
                    got = n.eval({n.arguments[0]: data})
                    return {"dtype": np.dtype(n.output.dtype).name,
                            "parameters": sorted(np.dtype(p.dtype).name
                                                 for p in n.parameters),
                            "same values": bool(np.allclose(got, want))}
                res[key] = _returned(cloned)
    return res


@cntk_case(names=["cntk.random.bernoulli", "cntk.random.bernoulli_like", "cntk.Function.eval"],
           note="a NaN mean passes CNTK 2.7's check (mean < 0 || mean > 1, Function.cpp:"
                "1509-1522) and every value is 1 (u <= 1 - NaN is false, CPUMatrixImpl.h:"
                "1163-1190); a mean outside [0, 1] is its RuntimeError (LogicError) as the op "
                "is made.  Stadyn refused NaN and raised ValueError for the others")
def bernoulli__nan_and_outside_mean(C, r, np):
    res = {}
    r.touch("cntk.Function.eval")
    for label, mean in (("nan", float("nan")), ("np.nan", np.nan), ("inf", float("inf")),
                        ("-inf", float("-inf")), ("1.5", 1.5), ("-0.5", -0.5)):
        res["bernoulli " + label] = _returned(
            lambda: C.random.bernoulli((50,), mean=mean, seed=1))
        if "returns" in res["bernoulli " + label]:
            res["bernoulli " + label] = C.random.bernoulli((50,), mean=mean, seed=1).eval()
    res["float64, nan"] = C.random.bernoulli((4,), dtype=np.float64, mean=float("nan"),
                                             seed=3).eval()
    x = C.input_variable(4)
    res["bernoulli_like nan"] = C.random.bernoulli_like(x, mean=float("nan")).eval(
        {x: np.zeros((2, 4), np.float32)})
    res["bernoulli_like 2"] = _returned(lambda: C.random.bernoulli_like(x, mean=2.0) and None)
    return res


@cntk_case(names=["cntk.metrics.classification_error", "cntk.Axis"],
           note="CNTK 2.7's Python hands a static C.Axis(k) on as the index k (sanitize_axis: "
                "both become C++'s Axis(-1 - k)) and axis=None as Axis.all_static_axes(), "
                "along which ClassificationError is 1 for a sample whose target differs "
                "anywhere from its maxima (Function.cpp:1844-1866).  Stadyn refused None and "
                "all_static_axes() and computed C.Axis(k) as another axis.  topN > 1 along any "
                "axis but -1 is CNTK's RuntimeError ('The topN feature is not supported along "
                "a specific axis', Function.cpp:1870-1872); Stadyn (mendE34's base) computed "
                "a number, or raised TypeError for None / all_static_axes()")
def classification_error__axis_objects_and_none(C, r, np):
    res = {}
    x = C.input_variable(4)
    y = C.input_variable(4)
    feed = {x: np.array([[1, 2, 3, 4], [4, 3, 2, 1], [1, 5, 5, 0]], np.float32),
            y: np.array([[0, 0, 0, 1], [0, 0, 1, 0], [0, 1, 0, 0]], np.float32)}
    for label, axis in (("None", None), ("Axis(0)", C.Axis(0)), ("0", 0), ("-1", -1),
                        ("Axis(-1)", C.Axis(-1)), ("all_static_axes", C.Axis.all_static_axes())):
        res["vector, axis " + label] = C.classification_error(x, y, axis=axis).eval(feed)
    x2 = C.input_variable((2, 3))
    y2 = C.input_variable((2, 3))
    eye = np.eye(3, dtype=np.float32)
    feed2 = {x2: np.array([[[0, 1, 2], [3, 4, 5]], [[5, 1, 2], [0, 4, 1]],
                           [[0, 9, 2], [3, 1, 5]]], np.float32),
             y2: np.stack([eye[[0, 2]], eye[[0, 1]], eye[[1, 2]]])}
    for label, axis in (("None", None), ("0", 0), ("Axis(0)", C.Axis(0)), ("1", 1),
                        ("Axis(1)", C.Axis(1)), ("all_static_axes", C.Axis.all_static_axes())):
        res["matrix, axis " + label] = C.classification_error(x2, y2, axis=axis).eval(feed2)
    # topN > 1 along any axis but the default -1 (C++'s Axis(0))
    for label, axis in (("None", None), ("0", 0), ("1", 1), ("-1", -1), ("Axis(0)", C.Axis(0)),
                        ("Axis(1)", C.Axis(1)), ("Axis(-1)", C.Axis(-1)),
                        ("all_static_axes", C.Axis.all_static_axes())):
        res["matrix, topN=2, axis " + label] = _returned(
            lambda: C.classification_error(x2, y2, axis=axis, topN=2).eval(feed2))
    for label, axis in (("None", None), ("0", 0), ("-1", -1), ("Axis(0)", C.Axis(0))):
        res["vector, topN=2, axis " + label] = _returned(
            lambda: C.classification_error(x, y, axis=axis, topN=2).eval(feed))
    return res


@cntk_case(names=["cntk.Function.replace_placeholders", "cntk.ops.combine",
                  "cntk.ops.placeholder", "cntk.Function.eval"],
           note="replace_placeholders keyed by a combine of one placeholder binds that "
                "placeholder, as CNTK 2.7's SWIG converts the one-output Function to its "
                "Variable; a combine of two is its TypeError.  Stadyn raised AttributeError "
                "for a waiting function's key")
def replace_placeholders__keyed_by_a_combine(C, r, np):
    res = {}
    r.touch("cntk.Function.replace_placeholders", "cntk.Function.eval")
    c3 = C.constant(np.arange(3, dtype=np.float32))
    data = r.randn(2, 3)
    for label, shape in (("shapeless", None), ("of 3", 3)):
        p = C.placeholder() if shape is None else C.placeholder(shape)
        x = C.input_variable(3)
        f = C.plus(p, c3)
        g = f.replace_placeholders({C.combine([p]): x})
        res[label + ": shape"] = list(g.output.shape)
        res[label + ": eval"] = g.eval({x: data})
        q = C.placeholder() if shape is None else C.placeholder(shape)
        s = C.placeholder() if shape is None else C.placeholder(shape)
        two = C.plus(q, s)
        res[label + ": combine of two"] = _returned(
            lambda: two.replace_placeholders({C.combine([q, s]): x}) and None)
    return res


def _uid_kind(uid):
    """A uid without its number (``NoOp12_Output_0``: ``NoOp_Output_``)."""
    return "".join(ch for ch in uid if not ch.isdigit())


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.Fold", "cntk.layers.RecurrenceFrom",
                  "cntk.logging.get_node_outputs", "cntk.layers.GRU"],
           note="a named recurrence (Recurrence, Fold, RecurrenceFrom) has CNTK 2.7's root "
                "NoOp, whose output's uid is NoOp<n>_Output_0 (unnamed: Block<n>_Output_0 "
                "of the Combine); Stadyn gave Block<n> for the named ones too")
def recurrence__named_output_uid(C, r, np):
    res = {}
    r.touch("cntk.Function.uid", "cntk.Variable.uid")
    x = C.sequence.input_variable(3)
    made = [("Recurrence", lambda name: C.layers.Recurrence(C.layers.GRU(2), name=name)(x)),
            ("Fold", lambda name: C.layers.Fold(C.layers.GRU(2), name=name)(x)),
            ("RecurrenceFrom", lambda name: C.layers.RecurrenceFrom(C.layers.GRU(2), name=name)(
                C.constant(np.zeros(2, np.float32)), x))]
    for label, make in made:
        for name in ("", "rec"):
            m = make(name)
            key = "%s%s" % (label, ", named" if name else "")
            res[key + ": output uid"] = _uid_kind(m.output.uid)
            res[key + ": root op"] = m.root_function.op_name
            res[key + ": node outputs"] = [_uid_kind(o.uid)
                                           for o in C.logging.get_node_outputs(m)][:3]
    return res


def _walked(nodes):
    return [getattr(n, "op_name", None) or "%s:%s" % (type(n).__name__, n.name) for n in nodes]


@cntk_case(names=["cntk.logging.graph.depth_first_search", "cntk.logging.graph.find_all_with_name",
                  "cntk.logging.graph.get_node_outputs", "cntk.layers.Sequential",
                  "cntk.layers.Dense"],
           note="a layer given its signature (update_signature) is walked as its Function: "
                "depth 0, 1 and -1 enter its Dense blocks as CNTK 2.7's walks do ('Dense', "
                "'Dense', 'Plus', 'Times', 'Parameter:W', ... at -1).  Stadyn (mendE34's base) "
                "walked it as a layer not applied yet: Variables for its Parameters at depth 0, "
                "and ValueError at any other depth")
def depth_first_search__layer_given_a_signature(C, r, np):
    r.touch("cntk.Function.update_signature")
    m = C.layers.Sequential([C.layers.Dense(4, name="a"), C.layers.Dense(2, name="b")])
    m.update_signature(3)
    res = {}
    for depth in (0, 1, -1):
        res["walk, depth %d" % depth] = _walked(
            C.logging.graph.depth_first_search(m, lambda n: True, depth=depth))
        res["W, depth %d" % depth] = len(C.logging.graph.find_all_with_name(m, "W", depth))
        res["outputs, depth %d" % depth] = [
            list(o.shape) for o in C.logging.graph.get_node_outputs(m, depth)]
    return res


@cntk_case(names=["cntk.Function.clone", "cntk.Function.constants", "cntk.Function.inputs",
                  "cntk.layers.LayerNormalization", "cntk.metrics.classification_error",
                  "cntk.sequence.first", "cntk.sequence.input_variable"],
           note="the constants CNTK 2.7's graph holds where Stadyn's op needs none "
                "(LayerNormalization's epsilon, classification_error's 1, sequence.first's 0 "
                "and 1) are a clone's too, by every method (freeze adds the frozen scale and "
                "bias).  Stadyn (mendE34's base) left them out of the clone: [] / [] / "
                "[(4,), (4,)] and one input fewer")
def clone__keeps_shown_constants(C, r, np):
    r.touch("cntk.Function.clone", "cntk.Function.constants", "cntk.Function.inputs")
    res = {}
    x = C.input_variable(4)
    y = C.layers.LayerNormalization(epsilon=0.1)(x)
    data = np.arange(8, dtype=np.float32).reshape(2, 4)
    for method in ("clone", "share", "freeze"):
        c = y.clone(getattr(C.CloneMethod, method), {x: C.input_variable(4, name="z")})
        res["layer norm, %s: constants" % method] = sorted(
            [list(k.shape), np.dtype(k.dtype).name] for k in c.constants)
        res["layer norm, %s: inputs" % method] = len(c.inputs)
        res["layer norm, %s: eval" % method] = c.eval({c.arguments[0]: data})
    labels = C.input_variable(4)
    ce = C.classification_error(x, labels)
    res["classification_error"] = [len(ce.constants),
                                   len(ce.clone(C.CloneMethod.clone).constants)]
    s = C.sequence.input_variable(3)
    first = C.sequence.first(s)
    res["sequence.first"] = [len(first.constants),
                             len(first.clone(C.CloneMethod.clone).constants)]
    return res


@cntk_case(names=["cntk.ops.argmax", "cntk.ops.argmin", "cntk.ops.swapaxes", "cntk.Axis"],
           note="argmax / argmin along a static C.Axis(k) and swapaxes of static Axis objects "
                "(an int beside one too) are CNTK 2.7's ops along the index k (sanitize_axis). "
                "Stadyn (mendE34's base) raised TypeError (int() of an Axis, Axis % int)")
def argmax_swapaxes__static_axis_objects(C, r, np):
    x = C.input_variable((2, 3))
    data = r.randn(2, 2, 3)
    res = {}
    for label, make in (("argmax Axis(1)", lambda: C.argmax(x, axis=C.Axis(1))),
                        ("argmax Axis(-1)", lambda: C.argmax(x, axis=C.Axis(-1))),
                        ("argmin Axis(0)", lambda: C.argmin(x, axis=C.Axis(0))),
                        ("swapaxes Axis(0), Axis(1)",
                         lambda: C.swapaxes(x, C.Axis(0), C.Axis(1))),
                        ("swapaxes Axis(1), 0", lambda: C.swapaxes(x, C.Axis(1), 0)),
                        ("swapaxes Axis(-1), Axis(0)",
                         lambda: C.swapaxes(x, C.Axis(-1), C.Axis(0)))):
        y = make()
        res[label + ": shape"] = list(y.shape)
        res[label] = y.eval({x: data})
    return res
