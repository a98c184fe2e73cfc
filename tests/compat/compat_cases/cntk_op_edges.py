"""CNTK 2.7's answers at the edges of its ops' domains: ``log`` of 0, of negative numbers and
of anything below 1e-37 (its -85.1, and the gradient taken from the output), and
``sequence.scatter`` of a value without a sequence axis (one step per sample), ``sequence.where``
and ``gather`` with counts above 1 (a new sequence longer than the condition) or taking no step
of a sequence (CNTK refuses the minibatch)."""

import numpy as np

from compat_harness import cntk_case


@cntk_case(names=["cntk.ops.log", "cntk.ops.top_k", "cntk.Function.eval", "cntk.Function.grad"],
           rtol=1e-6, atol=0.0,
           note="CNTK's Log gives -85.1 (float32's -85.1, in float64 too) below 1e-37f, 0 and "
                "negative numbers included, and its gradient is exp(-output): 9.09e36 there. "
                "Stadyn gave -inf and NaN (so the top_k docstring's entropy -x log x of 0 was "
                "NaN, and ranked second)")
def log_below_eps(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.grad")
    res = {}
    for dt in (np.float32, np.float64):
        x = C.input_variable(6, dtype=dt, needs_gradient=True)
        data = np.array([[0, -1, 1e-38, 1e-36, 2, 1e-37]], dt)
        f = C.log(x)
        res["log " + np.dtype(dt).name] = f.eval({x: data})
        res["grad " + np.dtype(dt).name] = f.grad({x: data})
    res["constant"] = C.log([0., 1.]).eval()
    x = C.input_variable(10)
    y = C.top_k(-x * C.log(x), 3)
    top = y.eval({x: np.arange(10, dtype=np.float32) * 0.1})
    res["top_k values"], res["top_k indices"] = top[y.outputs[0]], top[y.outputs[1]]
    res["inputs"] = [i.name for i in C.log(C.input_variable(2, name="u")).root_function.inputs]
    return res


@cntk_case(names=["cntk.sequence.scatter", "cntk.sequence.input_variable", "cntk.input_variable"],
           note="a value without a sequence axis scattered by a condition that takes one step "
                "of each sequence: CNTK puts it at that step (a sequence on the condition's "
                "axis); Stadyn read its batch axis as the sequence axis (its shape and values "
                "wrong). A constant (no batch axis): CNTK's ValueError")
def scatter_of_a_value_without_a_sequence_axis(C, r):
    v = C.input_variable(3)
    s = C.sequence.input_variable(1)
    y = C.sequence.scatter(v, s)
    res = {"shape": list(y.shape), "axes": len(y.dynamic_axes),
           "out": y.eval({v: np.array([[1, 2, 3], [4, 5, 6]], np.float32),
                          s: [np.array([[0], [1], [0]], np.float32),
                              np.array([[1]], np.float32)]})}
    try:
        C.sequence.scatter(C.constant(np.ones(3, np.float32)), s).eval(
            {s: [np.array([[0], [1]], np.float32)]})
        res["constant"] = "computed"
    except ValueError:
        res["constant"] = "ValueError"
    return res


@cntk_case(names=["cntk.sequence.where", "cntk.sequence.gather"],
           note="the condition's counts accumulate, negative ones too, and each new step needs "
                "the sum less a margin of the type's epsilon (CNTK's WhereNode): 1/3 of float32 "
                "takes every third step ([0, 3] of 6; Stadyn [0, 2, 5]), 0.1 every tenth, "
                "[2, -1, 1] gives [0, 0] (Stadyn [0, 0, 2]: it dropped negative counts)")
def where_counts_accumulate(C, r):
    res = {}
    for dt in (np.float32, np.float64):
        s = C.sequence.input_variable(1, dtype=dt)
        x = C.sequence.input_variable(2, dtype=dt)
        w, g = C.sequence.where(s), C.sequence.gather(x, s)
        for cond in ([1 / 3.] * 6, [0.1] * 20, [0.2] * 10, [1 / 7.] * 14, [-1, 1, 1],
                     [2, -1, 1], [1, -0.5, 0.5, 1], [1, -1, 1], [-0.5, 1, 1], [2, 0, 1]):
            c = np.array(cond, dt).reshape(-1, 1)
            key = "%s %d x %.4f" % (np.dtype(dt).name, len(cond), cond[0]) if \
                len(set(cond)) == 1 else "%s %s" % (np.dtype(dt).name, cond)
            res["where " + key] = w.eval({s: [c]})[0]
            res["gather " + key] = g.eval(
                {s: [c], x: [np.arange(2 * len(cond), dtype=dt).reshape(-1, 2)]})[0]
    return res


@cntk_case(names=["cntk.sequence.where", "cntk.sequence.gather", "cntk.sequence.scatter",
                  "cntk.Function.grad"],
           note="counts above 1 make a new sequence longer than the condition: CNTK's "
                "docstring example takes 9 steps from 5 ([2, 0, 3, 1, 3]), and the scatter of "
                "a gather by such counts puts the last of each step's copies back. Stadyn "
                "padded the new axis to the condition's length and refused the minibatch "
                "('pass a larger max_repeat', which sequence.where does not take)")
def where_counts_above_one(C, r):
    r.touch("cntk.Function.grad")
    s = C.sequence.input_variable(1)
    x = C.sequence.input_variable(2, needs_gradient=True)
    conds = [np.array([[2], [0], [3], [1], [3]], np.float32), np.array([[1], [4]], np.float32),
             np.array([[0.5], [2.5], [1]], np.float32)]
    xs = [np.arange(2 * len(c), dtype=np.float32).reshape(-1, 2) + 1 for c in conds]
    res = {"where": C.sequence.where(s).eval({s: conds})}
    g = C.sequence.gather(x, s)
    res["gather"] = g.eval({s: conds, x: xs})
    res["gather grad"] = C.reduce_sum(g * g).grad({s: conds, x: xs}, wrt=[x])
    res["scatter"] = C.sequence.scatter(C.sequence.gather(x, s), s).eval({s: conds, x: xs})
    return res


@cntk_case(names=["cntk.sequence.where", "cntk.sequence.gather"],
           note="a condition whose counts take no step of a sequence (all 0, or negative): "
                "CNTK 2.7 refuses the minibatch ('Sequences must be a least one frame long', "
                "a RuntimeError in CNTK, Stadyn's ShapeError), also when the other sequences "
                "take steps; Stadyn returned an empty sequence")
def where_without_steps(C, r):
    s = C.sequence.input_variable(1)
    x = C.sequence.input_variable(2)
    res = {}
    for key, conds in (("zeros", [[0, 0]]), ("negative", [[-1, 0]]),
                       ("one of two", [[0, 0], [1, 1]]), ("back to zero", [[1, -1]]),
                       ("negative then more", [[-1, 3]])):
        data = [np.array(c, np.float32).reshape(-1, 1) for c in conds]
        for op, f, feed in (("where", C.sequence.where(s), {s: data}),
                            ("gather", C.sequence.gather(x, s),
                             {s: data, x: [np.ones((len(c), 2), np.float32) for c in conds]})):
            try:
                res[op + " " + key] = [v.tolist() for v in f.eval(feed)]
            except Exception as e:  # noqa: BLE001 - CNTK's RuntimeError, Stadyn's ShapeError
                res[op + " " + key] = "refused: " + str("frame long" in str(e))
    return res


@cntk_case(names=["cntk.ops.log_add_exp", "cntk.ops.log", "cntk.Function.eval",
                  "cntk.Function.grad"],
           rtol=1e-6, atol=0.0,
           note="CNTK's LogAdd is max + log1p(exp(min - max)): log_add_exp(log(0), 0) is "
                "exp(-85.1), 1.1e-37, where log(1 + exp(...)) in float32 gave Stadyn 0; the "
                "gradients are sigmoid(a - b) and sigmoid(b - a)")
def log_add_exp_below_eps(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.grad")
    res = {"log of 0": C.log_add_exp(C.log(0.), 0.).eval()}
    for dt in (np.float32, np.float64):
        x = C.input_variable(7, dtype=dt, needs_gradient=True)
        y = C.input_variable(7, dtype=dt, needs_gradient=True)
        a = np.array([[-85.1, 0, 1e-8, 30, -np.inf, 5, -40]], dt)
        b = np.array([[0, -85.1, -1e-8, 0, 0, 5, -20]], dt)
        f = C.log_add_exp(x, y)
        key = np.dtype(dt).name
        res["value " + key] = f.eval({x: a, y: b})
        g = f.grad({x: a, y: b}, wrt=[x, y])
        res["grad x " + key], res["grad y " + key] = g[x], g[y]
    return res
