"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (twentieth round): the words of a
Function's and a waiting Function's (an op on a placeholder without a shape) refusals of
the wrong arguments."""

import re

from compat_harness import cntk_case


def _refusal(call):
    """What ``call()`` raised, as ``[type, first paragraph]`` (uid numbers masked), or
    ``"ok"``."""
    try:
        call()
    except Exception as e:      # (the built-in type and the words are compared)
        kind = next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")
        return [kind, re.sub(r"\d+_Output", "#_Output", str(e).split("\n\n")[0].strip())]
    return "ok"


@cntk_case(names=["cntk.Function.update_signature", "cntk.Function.argument_map",
                  "cntk.placeholder"],
           note="a waiting Function (relu of a placeholder without a shape) given two types, "
                "two operands or a name it lacks: CNTK 2.7 says 'CNTK Function expected 1 "
                "arguments, got 2' and \"got an unexpected keyword argument 'q'\", as for a "
                "Function with shapes; Stadyn said it in words of its own")
def waiting_function__wrong_arguments_refused_in_cntks_words(C, r):
    r.touch("cntk.ops.relu", "cntk.ops.plus", "cntk.input_variable",
            "cntk.Function.update_signature", "cntk.Function.argument_map")
    x = C.input_variable(3, name="x")
    res = {}
    for label, make in [("waiting", lambda: C.relu(C.placeholder(name="p"))),
                        ("shaped", lambda: C.relu(C.placeholder(3, name="p")))]:
        res[label] = [_refusal(lambda: make().update_signature(3, 4)),
                      _refusal(lambda: make().update_signature(q=3)),
                      _refusal(lambda: make()(x, x)),
                      _refusal(lambda: make()(q=x)),
                      _refusal(lambda: make().argument_map(1, 2)),
                      _refusal(lambda: make().argument_map(r=1))]
    p, q = C.placeholder(name="p"), C.placeholder(3, name="q")
    res["two, one given"] = [_refusal(lambda: C.plus(p, q).update_signature(3)),
                             _refusal(lambda: C.plus(p, q).argument_map(1)),
                             _refusal(lambda: C.plus(p, q)(x, p=x))]
    f = C.plus(x, 1.0)
    res["shaped inputs"] = [_refusal(lambda: f.argument_map(1, 2)),
                            _refusal(lambda: f.argument_map(r=1)), _refusal(lambda: f())]
    return res


@cntk_case(names=["cntk.Function.replace_placeholder", "cntk.placeholder"],
           note="replace_placeholder on a Function with no placeholder or two: CNTK 2.7 "
                "refuses it with 'ReplacePlaceholder called with a single replacement "
                "Variable ... but this Function ... has 0 placeholders ...'; Stadyn said "
                "'the Function has 0 placeholders, not one'")
def replace_placeholder__refused_in_cntks_words(C, r):
    r.touch("cntk.input_variable", "cntk.ops.plus", "cntk.ops.relu",
            "cntk.Function.replace_placeholder")
    x = C.input_variable(2, name="x")
    p, q = C.placeholder(name="p"), C.placeholder(2, name="q")
    return {"none": _refusal(lambda: C.plus(x, 1.0).replace_placeholder(x)),
            "two": _refusal(lambda: C.plus(p, q).replace_placeholder(x)),
            "one": _refusal(lambda: C.relu(C.placeholder(name="r")).replace_placeholder(x))}


def _bound_outcome(C, np, op, how):
    """``op`` on a placeholder made on a sequence axis, bound to an input without one (``how``:
    ``replace_placeholders`` in place, or calling the Function on it): the result's shape,
    dynamic axes and values, or the built-in type of the refusal."""
    p = C.placeholder((3,), dynamic_axes=C.Axis.default_input_variable_dynamic_axes(),
                      name="p")
    x = C.input_variable(3, name="x")
    try:
        f = op(p)
        if how == "replace":
            f.replace_placeholders({p: x})
        else:
            f = f(x)
        got = f.eval({x: np.arange(6, dtype=np.float32).reshape(2, 3)})
    except Exception as e:      # (whether it refuses is compared; the type, as known)
        return {"refused": next(c.__name__ for c in type(e).__mro__
                                if c.__module__ == "builtins")}
    return {"shape": list(f.shape), "dynamic axes": [str(a) for a in f.output.dynamic_axes],
            "arguments": [a.name for a in f.arguments], "value": np.asarray(got).tolist(),
            "printed": re.sub(r"\d+", "#", str(f)),
            "root inputs": [re.sub(r"\d+", "#", str(i)) for i in f.root_function.inputs]}


@cntk_case(names=["cntk.placeholder", "cntk.Function.replace_placeholders"],
           note="a placeholder made on a sequence axis bound to an input without one: CNTK "
                "2.7 takes it (the ops on it then have the input's dynamic axes: plus, "
                "reduce_sum over a static axis, times, a chain of them) and refuses the "
                "sequence ops (sequence.last, sequence.reduce_sum, past_value) as it is "
                "bound.  Stadyn refused the binding ('cannot take a variable of shape "
                "(1, 3)'); calling the Function on it, reduce_sum(p, 0) failed ('axis 2 out "
                "of range') and the sequence ops took the input; then refused them with its "
                "ShapeError where CNTK 2.7 raises RuntimeError (last, past_value)")
def sequence_placeholder__bound_to_a_non_sequence(C, r, np):
    r.touch("cntk.input_variable", "cntk.Axis.default_input_variable_dynamic_axes",
            "cntk.ops.plus", "cntk.ops.reduce_sum", "cntk.ops.times", "cntk.sequence.last",
            "cntk.sequence.reduce_sum", "cntk.sequence.past_value", "cntk.Function.eval",
            "cntk.Function.replace_placeholders", "cntk.Function.root_function",
            "cntk.Function.inputs")
    w = np.arange(6, dtype=np.float32).reshape(3, 2)
    ops = {"plus": lambda p: C.plus(p, 1.0), "reduce_sum 0": lambda p: C.reduce_sum(p, 0),
           "times": lambda p: C.times(p, w),
           "chain": lambda p: C.reduce_sum(C.relu(p * 2.0 - 3.0), 0, name="s"),
           "last": C.sequence.last, "sequence.reduce_sum": C.sequence.reduce_sum,
           "past_value": C.sequence.past_value}
    res = {}
    types = {}
    for label, op in ops.items():
        for how in ("replace", "call"):
            got = _bound_outcome(C, np, op, how)
            if "refused" in got:
                types[label + " " + how] = got["refused"]
                got = {"refused": True}
            res[label + ", " + how] = got
    res["sequence ops, refusal types"] = types
    return res
