"""Where ``stadyn.compat.cntk`` ran what CNTK 2.7 refuses to run (cntkfid19): a Function given
no data for an argument its outputs need, data given to a placeholder, a layer not applied
yet run, ``grad`` of a Function waiting for its placeholders."""

import numpy as np

from compat_harness import cntk_case


def _refusal(fn, *clauses):
    """What ``fn()`` raised (its built-in type) and which of ``clauses`` its message holds
    (CNTK's words; Stadyn adds the op and the user's line), else what it returned."""
    try:
        got = fn()
    except Exception as e:          # (the built-in type and CNTK's words are compared)
        kind = next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")
        return {"raises": kind, "says": [c for c in clauses if c in str(e)]}
    if isinstance(got, dict):
        return {"returns": sorted(np.asarray(v).tolist() for v in got.values())}
    return {"returns": np.asarray(got).tolist()}


_NOT_GIVEN = "have not been provided."
_UNKNOWN_TYPE = "Unknown DataType."
_EXPECTS = "function expects 1 arguments"
_NO_GRADIENT = "arguments have 'needs_gradient == True'"
_CLAUSES = (_NOT_GIVEN, _UNKNOWN_TYPE, _EXPECTS, _NO_GRADIENT)


@cntk_case(names=["cntk.Function.eval", "cntk.Function.forward", "cntk.Function.grad"],
           note="a run given no data for some arguments the requested outputs depend on: "
                "CNTK 2.7 raises ValueError 'Values for N required arguments '...', that the "
                "requested output(s) '...' depend on, have not been provided.' (eval, "
                "forward, grad; a combine asked for an output that does not need the "
                "argument runs).  Stadyn ran the graph on the argument's last data (or "
                "zeros)")
def function__required_arguments_missing(C, r):
    r.touch("cntk.input_variable", "cntk.ops.plus", "cntk.ops.combine", "cntk.Function.outputs",
            "cntk.Function.eval", "cntk.Function.forward", "cntk.Function.grad")
    x = C.input_variable(3, name="x")
    y = C.input_variable(3, name="y")
    w = C.input_variable(3, name="w")
    h = C.input_variable(3, name="h", needs_gradient=True)
    one = r.randn(1, 3)
    res = {}
    res["one of two"] = _refusal(lambda: (x + y).eval({x: one}), *_CLAUSES)
    res["two of three"] = _refusal(lambda: (x + y + w).eval({x: one}), *_CLAUSES)
    res["two of three, count"] = _refusal(lambda: (x + y + w).eval({x: one}),
                                          "Values for 2 required arguments")
    res["forward"] = _refusal(lambda: (x + y).forward({x: one}), *_CLAUSES)
    res["grad"] = _refusal(lambda: (h + y).grad({h: one}, wrt=[h]), *_CLAUSES)
    g = C.combine([x + 1, y * 2])
    res["combine"] = _refusal(lambda: g.eval({x: one}), *_CLAUSES)
    res["combine, an output given"] = _refusal(lambda: g.eval({x: one},
                                                              outputs=[g.outputs[0]]), *_CLAUSES)
    res["combine, all given"] = _refusal(lambda: g.eval({x: one, y: one}), *_CLAUSES)
    f = x + y
    res["given, then one missing"] = [_refusal(lambda: f.eval({x: one, y: one}), *_CLAUSES),
                                      _refusal(lambda: f.eval({y: one}), *_CLAUSES)]
    return res


@cntk_case(names=["cntk.placeholder", "cntk.Function.eval"],
           note="data given to a placeholder on a sequence axis (or the batch axis alone), "
                "which is in the graph until it is replaced: CNTK 2.7 raises RuntimeError "
                "'Unknown DataType.' (a placeholder has no data type), whether the data is "
                "a list of sequences, an array or the only argument's, and beside an input's "
                "data.  Stadyn evaluated the graph on the data")
def placeholder__sequence_axis_fed(C, r):
    r.touch("cntk.Axis.default_input_variable_dynamic_axes", "cntk.Axis.default_batch_axis",
            "cntk.Axis.default_dynamic_axis", "cntk.Function.forward", "cntk.input_variable",
            "cntk.Function.eval")
    res = {}
    seqs = [r.randn(2, 3)]
    for title, axes in [("default axes", lambda: C.Axis.default_input_variable_dynamic_axes()),
                        ("batch, sequence", lambda: [C.Axis.default_batch_axis(),
                                                     C.Axis.default_dynamic_axis()])]:
        p = C.placeholder((3,), dynamic_axes=axes(), name="p")
        res[title + ": sequences"] = _refusal(lambda: (p * 2).eval({p: seqs}), *_CLAUSES)
        res[title + ": array"] = _refusal(lambda: (p * 2).eval({p: r.randn(1, 2, 3)}),
                                          *_CLAUSES)
        res[title + ": only argument"] = _refusal(lambda: (p * 2).eval(r.randn(1, 2, 3)),
                                                  *_CLAUSES)
        res[title + ": forward"] = _refusal(lambda: (p * 2).forward({p: seqs}), *_CLAUSES)
        res[title + ": no data"] = _refusal(lambda: (p * 2).eval(), *_CLAUSES)
        x = C.sequence.input_variable(3, name="x")
        res[title + ": with an input"] = _refusal(lambda: (x + p).eval({x: seqs, p: seqs}),
                                                  *_CLAUSES)
    return res


@cntk_case(names=["cntk.layers.Dense", "cntk.Function.eval", "cntk.Function.grad"],
           note="running a layer not applied yet (a Function over its own placeholder), and "
                "grad of a Function waiting for its placeholders: CNTK 2.7 raises ValueError "
                "'function expects 1 arguments' without data, RuntimeError 'Unknown "
                "DataType.' with data (grad given wrt, too), and for grad without wrt "
                "ValueError \"None of the Function '...' arguments have 'needs_gradient == "
                "True'\".  Stadyn raised AttributeError (\"Dense has no 'eval'\", \"Deferred "
                "has no 'grad'\")")
def function__run_before_binding(C, r):
    r.touch("cntk.layers.Sequential", "cntk.Function.forward", "cntk.placeholder",
            "cntk.ops.relu", "cntk.Function.arguments", "cntk.Function.eval",
            "cntk.Function.grad")
    one = r.randn(1, 3)
    res = {}
    for title, make in [("Dense", lambda: C.layers.Dense(2)),
                        ("Sequential", lambda: C.layers.Sequential([C.layers.Dense(2),
                                                                    C.relu]))]:
        d = make()
        res[title + ": eval()"] = _refusal(lambda: d.eval(), *_CLAUSES)
        res[title + ": eval(data)"] = _refusal(lambda: d.eval(one), *_CLAUSES)
        res[title + ": forward(data)"] = _refusal(lambda: d.forward({d.arguments[0]: one}),
                                                  *_CLAUSES)
        res[title + ": grad(data)"] = _refusal(lambda: d.grad(one), *_CLAUSES)
        res[title + ": grad, str"] = _refusal(lambda: d.grad(one), str(d))
        res[title + ": grad({})"] = _refusal(lambda: d.grad({}), *_CLAUSES)
    for title, make in [("no shape", lambda: C.placeholder(name="p")),
                        ("no axes", lambda: C.placeholder((3,), dynamic_axes=[], name="p")),
                        ("batch axis", lambda: C.placeholder(
                            (3,), dynamic_axes=[C.Axis.default_batch_axis()], name="p"))]:
        p = make()
        f = C.relu(p)
        data = r.randn(3) if title == "no axes" else one
        res[title + ": grad(data)"] = _refusal(lambda: f.grad({p: data}), *_CLAUSES)
        res[title + ": grad, str"] = _refusal(lambda: f.grad({p: data}), str(f))
        res[title + ": grad(data, wrt)"] = _refusal(lambda: f.grad({p: data}, wrt=[p]),
                                                    *_CLAUSES)
        res[title + ": grad(data, wrt=[])"] = _refusal(lambda: f.grad({p: data}, wrt=[]),
                                                       *_CLAUSES)
        res[title + ": grad({})"] = _refusal(lambda: f.grad({}), *_CLAUSES)
        res[title + ": grad(None)"] = _refusal(lambda: f.grad(None), *_CLAUSES)
    return res


@cntk_case(names=["cntk.sequence.last", "cntk.sequence.first", "cntk.sequence.is_first",
                  "cntk.sequence.reduce_sum", "cntk.sequence.softmax",
                  "cntk.sequence.past_value", "cntk.sequence.slice"],
           note="a sequence op on an op over a placeholder made with the batch axis alone "
                "(p * 2, relu(p), p + an input): CNTK 2.7 refuses it at the call as it "
                "refuses the op on the placeholder itself (first, last, is_first, past_value, "
                "slice: RuntimeError '... (1 sequence axis and 1 batch axis) is not "
                "supported.'; reduce_sum, softmax: ValueError '... has no sequence axis or > 1 "
                "ordered dynamic axes.').  Stadyn refused it on the placeholder only and "
                "waited on the op")
def sequence_ops__on_an_op_over_a_batch_axis_placeholder(C, r):
    r.touch("cntk.placeholder", "cntk.Axis.default_batch_axis", "cntk.ops.relu",
            "cntk.input_variable")
    clauses = ("(1 sequence axis and 1 batch axis) is not supported.",
               "has no sequence axis or > 1 ordered dynamic axes.")
    ops = [("last", lambda v: C.sequence.last(v)), ("first", lambda v: C.sequence.first(v)),
           ("is_first", lambda v: C.sequence.is_first(v)),
           ("reduce_sum", lambda v: C.sequence.reduce_sum(v)),
           ("softmax", lambda v: C.sequence.softmax(v)),
           ("past_value", lambda v: C.sequence.past_value(v)),
           ("slice", lambda v: C.sequence.slice(v, 0, 1))]
    operands = [("p", lambda p: p), ("p * 2", lambda p: p * 2),
                ("relu(p)", lambda p: C.relu(p)),
                ("p + input", lambda p: p + C.input_variable(3))]
    res = {}
    for title, op in ops:
        for over, operand in operands:
            p = C.placeholder((3,), dynamic_axes=[C.Axis.default_batch_axis()], name="p")
            res[title + "(" + over + ")"] = _refusal(lambda: str(op(operand(p))), *clauses)
    return res
