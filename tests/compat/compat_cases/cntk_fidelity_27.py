"""CNTK 2.7's graph objects and calls where Stadyn's differed (cntkapi27): a clone validated
again over its substitutes' shapes and dtypes, Functions refused where CNTK wants Variables,
SWIG's refusals of NumPy integers for sizes and axes, a Variable compared with a number."""

import re

import numpy as np

from compat_harness import cntk_case


def _raised(fn):
    """``fn()``'s value, or what it raised: its built-in type and its first line less a
    Stadyn location in parentheses at the end and less the operands CNTK describes in a
    dtype refusal (its placeholders' numbers are of the process; Stadyn's words have none)."""
    try:
        got = fn()
    except Exception as e:
        kind = next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")
        words = str(e).split("\n")[0]
        at = words.find(" (clone at ")
        words = re.sub(r" passed operands '.*' with", " passed operands with", words)
        return ["raises", kind, words if at < 0 else words[:at]]
    return got


@cntk_case(names=["cntk.ops.splice", "cntk.CloneMethod"])
def clone__substitutes_give_their_shapes_and_dtypes(C, r):
    r.touch("cntk.ops.constant", "cntk.ops.input_variable", "cntk.Function.eval",
            "cntk.Function.arguments", "cntk.Function.shape", "cntk.ops.times",
            "cntk.ops.parameter", "cntk.ops.sigmoid", "cntk.Function.clone")
    x = C.input_variable(3, name="x")
    c3 = C.constant(np.arange(3, dtype=np.float32), name="c3")
    f = C.splice(x, c3)
    d = r.randn(2, 3)
    res = {"splice": list(f.shape)}
    for method in ("share", "freeze", "clone"):
        for n in (4, 1, 5):
            g = f.clone(getattr(C.CloneMethod, method),
                        {c3: C.constant(np.arange(n, dtype=np.float32) + 1)})
            res["%s, a constant of %d: shape" % (method, n)] = list(g.shape)
            res["%s, a constant of %d: value" % (method, n)] = g.eval({g.arguments[0]: d})
    res["the original after"] = f.eval({x: d})
    f0 = C.splice(x, c3, axis=0)
    g = f0.clone(C.CloneMethod.share, {c3: C.constant(np.ones(4, np.float32))})
    res["splice axis=0, a constant of 4"] = [list(g.shape), g.eval({g.arguments[0]: d})]
    # a float64 substitute (np.ones(4)'s constant) among float32 operands: CNTK's ValueError
    res["splice, a float64 constant"] = _raised(
        lambda: f.clone(C.CloneMethod.share, {c3: C.constant(np.ones(4))}))
    w = C.parameter((3, 2), init=1, name="w")
    h = C.times(x, w)
    res["times, a float64 input"] = _raised(lambda: h.clone(
        C.CloneMethod.share, {x: C.input_variable(3, dtype=np.float64)}))
    g = C.sigmoid(x).clone(C.CloneMethod.share, {x: C.input_variable(3, dtype=np.float64)})
    res["sigmoid, a float64 input"] = [list(g.shape), np.dtype(g.output.dtype).name]
    # a user's own reshape keeps its shape: CNTK's ValueError (Reshape: Operand
    # (sub-)dimensions '[4]' incompatible ...); splice's own line-up follows the substitute
    def reshaped():
        try:
            f.clone(C.CloneMethod.share, {c3: C.constant(np.ones(4, np.float32))})
            C.splice(x, C.reshape(c3, (3,))).clone(
                C.CloneMethod.share, {c3: C.constant(np.ones(4, np.float32))})
        except ValueError:
            return "ValueError"
        return "made"
    res["splice(x, reshape(c3, (3,))), a constant of 4"] = reshaped()
    y = C.input_variable(6, name="y")
    g = f.clone(C.CloneMethod.share, {x: y})
    res["splice, x for an input of 6"] = [list(g.shape), g.eval({y: r.randn(2, 6)})]
    # a float64 input for x: constant operands (C.constant, the 1 of x + 1) become Double,
    # as CNTK converts them; a constant reached through another op, a parameter, are refused
    x64, d64 = C.input_variable(3, dtype=np.float64), r.randn(2, 3).astype(np.float64)
    for label, fn in (("x + 1", lambda: x + 1), ("x * 2", lambda: x * 2),
                      ("1 - x", lambda: 1 - x),
                      ("x + constant(ones(3))", lambda: x + C.constant(np.ones(3, np.float32))),
                      ("pow(x, 2)", lambda: C.pow(x, 2)),
                      ("relu(x + 1) * 3", lambda: C.relu(x + 1) * 3),
                      ("times(x, constant)",
                       lambda: C.times(x, C.constant(np.ones((3, 2), np.float32)))),
                      ("x + c3 * 2", lambda: x + c3 * 2),
                      ("x + parameter", lambda: x + C.parameter(3, init=1))):
        def made(fn=fn):
            g = fn().clone(C.CloneMethod.share, {x: x64})
            return [list(g.shape), np.dtype(g.output.dtype).name, g.eval({x64: d64})]
        got = _raised(made)
        res["%s, a float64 input" % label] = got if got[0] != "raises" else got[:2]
    return res


@cntk_case(names=["cntk.ops.classification_error", "cntk.ops.top_k"])
def runs__functions_where_variables_are_wanted(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.backward", "cntk.Function.forward",
            "cntk.Function.grad", "cntk.ops.input_variable", "cntk.ops.sigmoid", "cntk.ops.combine",
            "cntk.Function.output", "cntk.Trainer.train_minibatch", "cntk.Trainer.test_minibatch")
    x = C.input_variable(3, name="x", needs_gradient=True)
    f = C.sigmoid(x)
    d = r.randn(2, 3)
    res = {
        "eval keyed by combine([x])": _raised(lambda: f.eval({C.combine([x]): d})),
        "eval keyed by a Function of x": _raised(lambda: f.eval({C.sigmoid(x): d})),
        "eval, outputs a Function": _raised(lambda: f.eval({x: d}, outputs=[C.combine([f])])),
        "grad wrt a Function": _raised(lambda: f.grad({x: d}, wrt=[C.combine([x])])),
    }
    state, _ = f.forward({x: d}, [f.output], keep_for_backward={f.output})
    seed = r.randn(2, 3)
    res["backward keyed by the Function"] = _raised(lambda: f.backward(state, {f: seed}, [x]))
    got = f.backward(state, {f.output: seed}, [x])
    res["backward keyed by its output"] = got[x]
    y = C.input_variable(5, name="y")
    lab = C.input_variable(5, name="lab")
    yd, ld = r.randn(3, 5), r.onehot(3, 5)
    for label, top in (("2", 2), ("True", True), ("np.int64(2)", np.int64(2)),
                       ("np.int32(2)", np.int32(2)), ("2.0", 2.0), ("-1", -1), ("0", 0),
                       ("False", False)):
        res["classification_error topN=" + label] = _raised(
            lambda: C.classification_error(y, lab, topN=top).eval({y: yd, lab: ld}))
    res["classification_error axis=1.0"] = _raised(
        lambda: C.classification_error(y, lab, axis=1.0))
    res["classification_error axis=np.float32(0)"] = _raised(
        lambda: C.classification_error(y, lab, axis=np.float32(0)))
    res["classification_error axis=np.int64(0)"] = _raised(
        lambda: C.classification_error(y, lab, axis=np.int64(0)).eval({y: yd, lab: ld}))
    for label, k in (("2", 2), ("np.int64(2)", np.int64(2)), ("2.0", 2.0)):
        res["top_k k=" + label] = _raised(lambda: C.top_k(y, k).outputs[0].eval({y: yd}))
    res["top_k axis=np.int64(0)"] = _raised(lambda: C.top_k(y, 2, axis=np.int64(0)).shape)
    # refused as the op is called, of a waiting operand too (CNTK's SWIG and C++ checks)
    w = C.relu(C.placeholder())
    for label, fn in (("top_k(waiting, np.int64(2))", lambda: C.top_k(w, np.int64(2))),
                      ("top_k(waiting, 2.0)", lambda: C.top_k(w, 2.0)),
                      ("top_k(waiting, 2, axis=np.int64(0))",
                       lambda: C.top_k(w, 2, axis=np.int64(0))),
                      ("classification_error(waiting, topN=np.int64(2))",
                       lambda: C.classification_error(w, lab, topN=np.int64(2))),
                      ("classification_error(waiting, topN=0)",
                       lambda: C.classification_error(w, lab, topN=0)),
                      ("classification_error(waiting, axis=1.0)",
                       lambda: C.classification_error(w, lab, axis=1.0))):
        got = _raised(fn)
        res[label] = got if isinstance(got, list) else "made"
    # a Trainer's and an Evaluator's minibatch keyed by a Function: CNTK's TypeError
    z = C.layers.Dense(3, init=1)(x)
    lab3 = C.input_variable(3, name="lab3")
    loss = C.squared_error(z, lab3)
    tr = C.Trainer(z, (loss, loss), [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    ev = C.eval.Evaluator(loss)
    res["train_minibatch keyed by combine([x])"] = _raised(
        lambda: tr.train_minibatch({C.combine([x]): d, lab3: d}))
    res["train_minibatch keyed by combine([lab3])"] = _raised(
        lambda: tr.train_minibatch({x: d, C.combine([lab3]): d}))
    res["test_minibatch keyed by combine([x])"] = _raised(
        lambda: tr.test_minibatch({C.combine([x]): d, lab3: d}))
    res["Evaluator.test_minibatch keyed by combine([x])"] = _raised(
        lambda: ev.test_minibatch({C.combine([x]): d, lab3: d}))
    res["train_minibatch keyed by x"] = _raised(lambda: tr.train_minibatch({x: d, lab3: d}))
    return res


@cntk_case(names=["cntk.input_variable", "cntk.placeholder", "cntk.Function.output"])
def variables__compared_with_what_is_no_variable(C, r):
    r.touch("cntk.layers.Dense", "cntk.layers.LSTM", "cntk.ops.relu", "cntk.ops.input_variable",
            "cntk.ops.sigmoid", "cntk.ops.constant",
            "cntk.ops.parameter", "cntk.ops.placeholder", "cntk.ops.tanh",
            "cntk.Function.output")
    x = C.input_variable(3, name="x")
    f = C.sigmoid(x)
    p = C.placeholder()
    waiting = C.sigmoid(p) + C.tanh(p)
    res = {
        "x == 3": _raised(lambda: x == 3),
        "x != 3": _raised(lambda: x != 3),
        "3 == x": _raised(lambda: 3 == x),
        "x == 'a'": _raised(lambda: x == "a"),
        "x == np.float32(3)": _raised(lambda: x == np.float32(3)),
        "x == None": _raised(lambda: x == None),        # noqa: E711 (the compare is the case)
        "x == x": _raised(lambda: x == x),
        "x in [1, 2]": _raised(lambda: x in [1, 2]),
        "x in [x]": _raised(lambda: x in [x]),
        "x == constant(3)": _raised(lambda: x == C.constant(3)),
        "f == 3": _raised(lambda: f == 3),
        "f.output == 3": _raised(lambda: f.output == 3),
        "parameter == 3": _raised(lambda: C.parameter((2,)) == 3),
        "constant == 3": _raised(lambda: C.constant(3) == 3),
        "waiting output == 3": _raised(lambda: waiting.output == 3),
        "waiting output == None": _raised(lambda: waiting.output == None),   # noqa: E711
        "waiting output == x": _raised(lambda: waiting.output == x),
    }
    # a waiting call, an unapplied layer and their outputs are Variables of the graph too
    # (other ones), compared both ways; a layer of two outputs is SWIG's TypeError
    w, d, lstm = C.relu(p), C.layers.Dense(2), C.layers.LSTM(2)
    rows = (("x == w", lambda: x == w), ("w == x", lambda: w == x),
            ("x != w", lambda: x != w), ("w != x", lambda: w != x),
            ("x == d", lambda: x == d), ("d == x", lambda: d == x),
            ("x == w.output", lambda: x == w.output), ("w.output == x", lambda: w.output == x),
            ("x == d.output", lambda: x == d.output), ("d.output == x", lambda: d.output == x),
            ("w.output == w", lambda: w.output == w), ("w == w.output", lambda: w == w.output),
            ("d.output == d", lambda: d.output == d), ("d == d.output", lambda: d == d.output),
            ("w.output == d", lambda: w.output == d), ("p == w", lambda: p == w),
            ("w == p", lambda: w == p), ("p == w.output", lambda: p == w.output),
            ("w.output == p", lambda: w.output == p), ("w == 3", lambda: w == 3),
            ("x in [w, x]", lambda: x in [w, x]), ("w in [x, w]", lambda: w in [x, w]),
            ("x in [d, x]", lambda: x in [d, x]), ("[x, w].index(w)", lambda: [x, w].index(w)),
            ("[w, x].index(x)", lambda: [w, x].index(x)),
            ("w.output in [x, w]", lambda: w.output in [x, w]),
            ("x in [d.output, w.output]", lambda: x in [d.output, w.output]),
            ("x == lstm", lambda: x == lstm), ("lstm == x", lambda: lstm == x))
    res.update((label, _raised(fn)) for label, fn in rows)
    return res


@cntk_case(names=["cntk.losses.fmeasure"])
def fmeasure__over_placeholders_is_made_of_waiting_ops(C, r):
    r.touch("cntk.ops.placeholder", "cntk.ops.input_variable", "cntk.Function.root_function",
            "cntk.Function.op_name", "cntk.Function.inputs", "cntk.Function.placeholders",
            "cntk.Function.replace_placeholders", "cntk.Function.eval", "cntk.Function.shape",
            "cntk.layers.Dense", "cntk.ops.sigmoid")
    p1, p2 = C.placeholder(), C.placeholder()
    fm = C.losses.fmeasure(p1, p2)
    root = fm.root_function
    res = {"root": [root.op_name, fm.op_name, fm.name, len(fm.outputs), list(fm.output.shape)],
           "root's inputs: placeholder, constant, output": [
               [i.is_placeholder, i.is_constant, i.is_output] for i in root.inputs],
           "placeholders": len(fm.placeholders),
           "beta=0.5: root": C.losses.fmeasure(p1, p2, beta=0.5).root_function.op_name,
           "over a placeholder and an input: root": C.losses.fmeasure(
               C.placeholder(), C.input_variable(3)).root_function.op_name}
    # bound to samples of rank 3: summed over every axis, as CNTK picked the axes when made
    o, t = C.input_variable((2, 2, 3)), C.input_variable((2, 2, 3))
    od, td = r.rand(2, 2, 2, 3), (r.rand(2, 2, 2, 3) > 0.5).astype(np.float32)
    g = fm.replace_placeholders({p1: o, p2: t})
    res["bound to rank 3: shape"] = list(g.shape)
    res["bound to rank 3: value"] = g.eval({o: od, t: td})
    res["made on rank 3: value"] = C.losses.fmeasure(o, t).eval({o: od, t: td})
    o1, t1 = C.input_variable(4), C.input_variable(4)
    g2 = C.losses.fmeasure(C.placeholder(), C.placeholder())(o1, t1)
    res["called on vectors"] = [g2.root_function.op_name, list(g2.shape),
                                g2.eval({o1: r.rand(3, 4), t1: r.onehot(3, 4)})]
    # a placeholder of shape (2, 2, 3) shows rank 3: per class, as made on inputs; a
    # shapeless one shows (-2,), of rank 1: against a target of rank 3 (or 2) CNTK's
    # AssertionError (its message empty: compared by kind), as the other way round
    p3 = C.placeholder((2, 2, 3))
    g3 = C.losses.fmeasure(p3, t)
    res["placeholder of shape (2, 2, 3): shape"] = list(g3.shape)
    res["placeholder of shape (2, 2, 3): value"] = g3.replace_placeholders({p3: o}).eval(
        {o: od, t: td})
    res["placeholder of shape (2, 2, 3), layer output"] = C.losses.fmeasure(
        C.sigmoid(p3), t).replace_placeholders({p3: o}).eval({o: od, t: td})
    t2 = C.input_variable((2, 3))
    for label, fn in (("shapeless placeholder, target of rank 3",
                       lambda: C.losses.fmeasure(C.placeholder(), t)),
                      ("output of rank 3, shapeless placeholder target",
                       lambda: C.losses.fmeasure(o, C.placeholder())),
                      ("shapeless placeholder, target of rank 2",
                       lambda: C.losses.fmeasure(C.placeholder(), t2)),
                      ("output of rank 3, target of rank 2", lambda: C.losses.fmeasure(o, t2)),
                      ("unapplied Dense, target of rank 2",
                       lambda: C.losses.fmeasure(C.layers.Dense((2, 3)), t2))):
        got = _raised(fn)
        res[label] = got[:2] if isinstance(got, list) else "made"
    res["shapeless placeholder, target of rank 1"] = C.losses.fmeasure(
        C.placeholder(), o1).root_function.op_name
    return res


def _words(fn):
    """What ``fn()`` raised: its built-in type and its first line less a hint of Stadyn's in
    parentheses at the end; or ``"made"``."""
    try:
        fn()
    except Exception as e:
        kind = next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")
        return [kind, re.sub(r" \([^()]*(\([^()]*\)[^()]*)*\)$", "", str(e).split("\n")[0])]
    return "made"


@cntk_case(names=["cntk.layers.default_options_for"],
           note="the betas' default_options_for(layer, init=...) gives the option to that "
                "layer; CNTK 2.7 has no default_options_for, so the real side gives it with "
                "default_options (the one layer made inside)")
def default_options_for__an_initializer_not_called_is_refused(C, r):
    r.touch("cntk.layers.Dense", "cntk.layers.Embedding", "cntk.initializer.uniform",
            "cntk.layers.default_options")
    L = C.layers
    if r.real:
        r.touch("cntk.layers.default_options_for")

    def made(layer, **options):
        def make():
            if r.real:
                with L.default_options(**options):
                    return layer(3)
            with L.default_options_for(layer, **options):
                return layer(3)
        return make

    return {
        "Dense, init=uniform": _words(made(L.Dense, init=C.initializer.uniform)),
        "Dense, init_bias=uniform": _words(made(L.Dense, init_bias=C.initializer.uniform)),
        "Embedding, init=uniform": _words(made(L.Embedding, init=C.initializer.uniform)),
        "Dense, init=uniform(1)": _words(made(L.Dense, init=C.initializer.uniform(1))),
    }


@cntk_case(names=["cntk.random.uniform", "cntk.random.uniform_like", "cntk.random.normal",
                  "cntk.random.normal_like"])
def random__uniform_ranges_and_infinite_scales(C, r):
    r.touch("cntk.ops.input_variable", "cntk.Function.eval", "cntk.initializer.normal",
            "cntk.initializer.truncated_normal", "cntk.ops.parameter", "cntk.Parameter.value")
    inf, nan = float("inf"), float("nan")
    x = C.input_variable(3, name="x")
    xd = r.randn(2, 3)
    res = {}
    for low, high in ((0.5, 0.25), (1, 1), (1e-7, 1e-8), (123456789, 1), (-1, -2), (0, 0)):
        res["uniform %r, %r" % (low, high)] = _raised(
            lambda: C.random.uniform((2, 3), low=low, high=high, seed=1).shape)
    res["uniform float64 1, 1"] = _raised(
        lambda: C.random.uniform((2, 3), low=1, high=1, seed=1, dtype=np.float64).shape)
    res["uniform_like 1, 1"] = _raised(lambda: C.random.uniform_like(x, low=1, high=1).shape)
    res["uniform_like 2, -1"] = _raised(lambda: C.random.uniform_like(x, low=2, high=-1).shape)
    for label, mean, scale in (("scale inf", 0, inf), ("mean inf", inf, 1), ("scale nan", 0, nan),
                               ("scale 0", 0, 0), ("scale -1", 0, -1)):
        res["normal " + label] = _raised(
            lambda: C.random.normal((2, 3), mean=mean, scale=scale, seed=1).eval())
    res["normal_like scale inf"] = _raised(
        lambda: C.random.normal_like(x, scale=inf, seed=1).eval({x: xd}))
    res["normal_like scale nan"] = _raised(
        lambda: C.random.normal_like(x, scale=nan, seed=1).eval({x: xd}))
    for kind in ("normal", "truncated_normal"):
        for dt in (np.float32, np.float64):
            for scale in (inf, nan):
                init = getattr(C.initializer, kind)(scale, seed=1)
                res["%s(%r) %s" % (kind, scale, np.dtype(dt).name)] = _raised(
                    lambda: np.asarray(C.parameter((2, 3), init=init, dtype=dt).value))
    return res


@cntk_case(names=["cntk.ops.placeholder"])
def block_root__of_a_waiting_call_or_a_layer_not_applied(C, r):
    r.touch("cntk.Function.block_root", "cntk.ops.classification_error",
            "cntk.ops.cross_entropy_with_softmax", "cntk.layers.Dense", "cntk.layers.LSTM")

    def refused(fn):
        """Its built-in type, and its words with the Function's description (placeholders
        of the process's numbering) left out."""
        got = _raised(fn)
        if isinstance(got, list):
            got[2] = re.sub(r"for a Function '.*' which", "for a Function ... which", got[2])
        return got

    p1, p2 = C.placeholder(), C.placeholder()
    return {
        "waiting classification_error": refused(
            lambda: C.classification_error(p1, p2).block_root),
        "waiting cross_entropy_with_softmax": refused(
            lambda: C.cross_entropy_with_softmax(p1, p2).block_root),
        "Dense not applied": refused(lambda: C.layers.Dense(3, name="d").block_root),
        "LSTM not applied": refused(lambda: C.layers.LSTM(3).block_root),
    }
