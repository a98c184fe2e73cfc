"""NNabla 1.39's ``RemoveFunctionModifier`` on a removed first function (rank 0) whose next
reader's first input is named ``'x'``: NNabla appends that input to the reader's input list,
so a reader of one input converts as usual, a reader of two whose first input is the removed
output gets one input ("needs at least 2 inputs"), and one whose removed input is its second
fails with an ``IndexError``.  What is compared: the converted graph's function types and
output values, or the error's type and NNabla's words for the missing inputs.
"""

import re

from compat_harness import nnabla_case

_GC = "nnabla.experimental.graph_converters."


def _converted(nn, GC, y):
    try:
        z = GC.GraphConverter([GC.RemoveFunctionModifier(["Identity"])]).convert(y)
        z.forward()
    except Exception as e:
        words = re.search(r"needs at least \d+ inputs \(given \d+\)", str(e))
        return [type(e).__name__, words.group(0) if words else ""]
    names = []
    z.visit(lambda f: names.append(f.info.type_name))
    return {"types": names, "value": z.d.copy()}


@nnabla_case(names=[_GC + "RemoveFunctionModifier", _GC + "RemoveFunctionModifier.modify",
                    _GC + "GraphConverter.convert"], rtol=1e-5, atol=1e-6)
def graph_converters__remove_first_function_named_x(nn, F, PF, r):
    r.touch(_GC + "RemoveFunctionModifier.modify", _GC + "GraphConverter.convert")
    GC = r.module("nnabla.experimental.graph_converters")
    x0 = nn.Variable.from_numpy_array(r.randn(2, 3))
    x1 = nn.Variable.from_numpy_array(r.randn(2, 3))

    def named(v, name):
        v.name = name
        return v

    builds = {
        # one-input reader: converted as without the special case
        "relu_reads_x": lambda: F.relu(named(F.identity(x0), "x")) * 2.0,
        # the removed output read by two functions (the newest is the next one)
        "two_readers": lambda: F.add2(F.relu(named(F.identity(x0), "x")),
                                      F.sigmoid(F.identity(x0))),
        # two-input readers given one input
        "affine_reads_x": lambda: PF.affine(named(F.identity(x0), "x"), 2, name="fc1"),
        "add2_reads_x_first": lambda: F.add2(named(F.identity(x0), "x"), x1),
        # the output named otherwise, or not the first function: no special case
        "affine_reads_y": lambda: PF.affine(named(F.identity(x0), "y"), 2, name="fc2"),
        "not_first": lambda: PF.affine(named(F.identity(x0 * 1.0), "x"), 2, name="fc3"),
        "add2_reads_x_second": lambda: F.add2(x1, named(F.identity(x0), "x")),
        # the reader's first input is a leaf named 'x', the removed output its second
        "leaf_x_first": lambda: F.add2(named(x1.get_unlinked_variable(), "x"),
                                       F.identity(x0)),
    }
    res = {}
    for key, build in builds.items():
        out = _converted(nn, GC, build())
        if isinstance(out, dict):
            res[key + " types"], res[key + " value"] = out["types"], out["value"]
        else:
            res[key + " error"] = out
    return res
