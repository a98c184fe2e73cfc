"""Ops called on placeholders without a shape (built once the shapes arrive), against
CNTK 2.7: what such a call does as it is called (its name, its checks) and what the Function
it returns exposes before it is bound."""

import re

from compat_harness import cntk_case


def _outcome(fn):
    """``fn()``'s value, or ``raises <built-in type>`` (Stadyn's errors subclass CNTK's)."""
    try:
        got = fn()
    except Exception as e:
        return "raises " + next(c.__name__ for c in type(e).__mro__
                                if c.__module__ == "builtins")
    return got


def _uidless(text):
    """``text`` with the numbers of uids masked (``Plus12_Output_0``: ``Plus#_Output_0``)."""
    return re.sub(r"\d+", "#", text)


@cntk_case(names=["cntk.ops.plus", "cntk.ops.relu", "cntk.ops.dropout", "cntk.ops.reduce_sum",
                  "cntk.random.uniform_like", "cntk.random.normal_like", "cntk.placeholder"],
           note="an op on a placeholder without a shape, its name given positionally "
                "(plus(p, 1, 'f')): CNTK 2.7 names the Function 'f' (its str 'f: Plus(...)', "
                "its output 'f').  Stadyn read the name given by keyword only and left it ''")
def deferred_call__name_given_positionally(C, r):
    r.touch("cntk.Function.name", "cntk.Function.output", "cntk.Variable.name")
    p = C.placeholder(name="p")
    calls = [("plus", lambda: C.plus(p, 1, "f1")), ("relu", lambda: C.relu(p, "f2")),
             ("dropout", lambda: C.dropout(p, 0.5, 3, "f3")),
             ("reduce_sum", lambda: C.reduce_sum(p, 0, True, "f4")),
             ("uniform_like", lambda: C.random.uniform_like(p, 0.0, 1.0, 5, "f5")),
             ("normal_like", lambda: C.random.normal_like(p, 0.0, 1.0, 5, "f6")),
             ("plus by keyword", lambda: C.plus(p, 1, name="f7"))]
    res = {}
    for label, call in calls:
        f = call()
        res[label] = [f.name, str(f), _uidless(f.output.name)]
    x = C.input_variable(2)
    res["bound"] = C.plus(p, 1, "f8").replace_placeholders({p: x}).name
    return res


@cntk_case(names=["cntk.ops.dropout", "cntk.placeholder"],
           note="dropout's rate outside [0, 1) on a placeholder without a shape: CNTK 2.7 "
                "refuses it as it is called (ValueError 'dropout_rate must be in the interval "
                "[0,1)').  Stadyn refused it on an input with a shape only, and built the "
                "placeholder's call")
def dropout__rate_refused_on_placeholder(C, r):
    res = {}
    for rate in (1.5, -0.1, 1.0, 0.0, 0.5):
        x = C.input_variable(2)
        res["input %g" % rate] = str(_outcome(lambda: C.dropout(x, rate).shape))
        res["placeholder %g" % rate] = str(_outcome(lambda: C.dropout(C.placeholder(),
                                                                      rate).shape))
    return res
