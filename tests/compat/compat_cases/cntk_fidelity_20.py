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
